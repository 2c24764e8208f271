"""The Buzz relay (`buzz-relay`): a Nostr relay with Buzz channels on PostgreSQL (protocol.md)."""
