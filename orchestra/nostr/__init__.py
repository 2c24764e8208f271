"""The Nostr protocol core: keys, events, kinds, tags, filters, wire messages, NIP-19, NIP-42,
NIP-44 and Buzz memory encoding.

Pure functions and value objects only: nothing here opens a socket, a file or a database, so the
relay, the client library and the agents share one implementation of every protocol rule.
"""
