#!/bin/sh
# Entrypoint of the locally built PostgreSQL image: the official image's contract, reduced to what
# the benchmark stack uses. First start initialises PGDATA with POSTGRES_USER/POSTGRES_PASSWORD and
# creates POSTGRES_DB; every start then runs the server on all interfaces.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "error: POSTGRES_PASSWORD must be set" >&2
    exit 1
fi
mkdir -p "$PGDATA" /var/run/postgresql
chown -R postgres:postgres "$PGDATA" /var/run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    chown postgres "$pwfile"
    runuser -u postgres -- initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    runuser -u postgres -- pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    if [ "$POSTGRES_DB" != "postgres" ]; then
        runuser -u postgres -- psql -q -v ON_ERROR_STOP=1 --username="$POSTGRES_USER" --dbname=postgres \
            -c "CREATE DATABASE \"$POSTGRES_DB\""
    fi
    runuser -u postgres -- pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
if [ "${1:-postgres}" = "postgres" ]; then
    shift $(( $# > 0 ? 1 : 0 ))
    exec runuser -u postgres -- postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
