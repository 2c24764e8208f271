-- Buzz relay schema, version 1 (protocol.md §15.1). Every statement is idempotent.
CREATE TABLE IF NOT EXISTS relay_meta (key text PRIMARY KEY, value text NOT NULL);

CREATE TABLE IF NOT EXISTS events (
  id          text    PRIMARY KEY,
  pubkey      text    NOT NULL,
  kind        integer NOT NULL,
  created_at  bigint  NOT NULL,
  content     text    NOT NULL,
  tags        jsonb   NOT NULL,
  sig         text    NOT NULL,
  raw         text    NOT NULL,
  h_tag       uuid,
  channel_id  uuid,
  d_tag       text,
  received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS events_kind_time   ON events (kind, created_at DESC, id);
CREATE INDEX IF NOT EXISTS events_author_time ON events (pubkey, kind, created_at DESC, id);
CREATE INDEX IF NOT EXISTS events_h_time      ON events (h_tag, kind, created_at DESC, id)
  WHERE h_tag IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_time        ON events (created_at DESC, id);
CREATE UNIQUE INDEX IF NOT EXISTS events_replaceable ON events (pubkey, kind)
  WHERE kind IN (0, 3) OR kind BETWEEN 10000 AND 19999;
CREATE UNIQUE INDEX IF NOT EXISTS events_addressable ON events (pubkey, kind, d_tag)
  WHERE kind BETWEEN 30000 AND 39999;

CREATE TABLE IF NOT EXISTS event_tags (
  event_id   text    NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  name       text    NOT NULL,
  value      text    NOT NULL,
  kind       integer NOT NULL,
  created_at bigint  NOT NULL
);
CREATE INDEX IF NOT EXISTS event_tags_lookup ON event_tags (name, value, created_at DESC);
CREATE INDEX IF NOT EXISTS event_tags_event  ON event_tags (event_id);

CREATE TABLE IF NOT EXISTS channels (
  channel_id       uuid    PRIMARY KEY,
  name             text    NOT NULL,
  about            text    NOT NULL DEFAULT '',
  visibility       text    NOT NULL CHECK (visibility IN ('open', 'private')),
  channel_type     text    NOT NULL CHECK (channel_type IN ('stream', 'forum')),
  ttl_seconds      integer,
  creator          text    NOT NULL,
  created_at       bigint  NOT NULL,
  archived         boolean NOT NULL DEFAULT false,
  archived_at      bigint,
  last_activity_at bigint  NOT NULL,
  create_event_id  text    NOT NULL
);

CREATE TABLE IF NOT EXISTS channel_members (
  channel_id uuid NOT NULL REFERENCES channels (channel_id),
  pubkey     text NOT NULL,
  role       text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'bot')),
  added_by   text NOT NULL,
  added_at   bigint NOT NULL,
  PRIMARY KEY (channel_id, pubkey)
);
CREATE INDEX IF NOT EXISTS channel_members_by_pubkey ON channel_members (pubkey);
