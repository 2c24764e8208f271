"""PostgreSQL storage of the relay: schema, group-committed writes, filter queries (protocol.md §15)."""
