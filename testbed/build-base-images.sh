#!/usr/bin/env bash
# Builds local stand-ins for the base images this project names, for machines whose Docker engine
# cannot reach an image registry (orchestrator.md §5.9): a Debian bookworm root filesystem made by
# debootstrap from the Debian mirror, imported with `docker import`.
#   python:3.12-slim-bookworm      Debian's python3 (3.11) with venv and pip
#   buzz-orchestra/postgres:local  Debian's PostgreSQL 15 behind the official image's contract
#                                  (POSTGRES_DB/USER/PASSWORD, port 5432, pg_isready, PGDATA volume);
#                                  also tagged postgres:16-bookworm when no such image exists, so the
#                                  compose file works unchanged.
# Images that already exist are kept. Needs root, debootstrap and a running Docker engine.
set -euo pipefail

mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
python_tag=python:3.12-slim-bookworm
postgres_tag=buzz-orchestra/postgres:local
postgres_alias=postgres:16-bookworm
here=$(cd "$(dirname "$0")" && pwd)

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

if have_image "$python_tag" && have_image "$postgres_tag"; then
    have_image "$postgres_alias" || docker tag "$postgres_tag" "$postgres_alias"
    echo "base images present: $python_tag $postgres_tag"
    exit 0
fi

work=$(mktemp -d /var/tmp/buzz-base-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

import_rootfs() { # import_rootfs DIR TAG CHANGE...
    local dir=$1 tag=$2
    shift 2
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb
    tar --numeric-owner -C "$dir" -c . | docker import "$@" - "$tag" >/dev/null
    echo "built $tag"
}

rootfs=$work/python
echo "debootstrap bookworm (python) from $mirror ..."
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    exit 1
}
ln -sf /usr/bin/python3 "$rootfs/usr/local/bin/python"
common_changes=(
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    --change 'ENV LANG=C.UTF-8'
)
have_image "$python_tag" || import_rootfs "$rootfs" "$python_tag" "${common_changes[@]}" --change 'CMD ["python3"]'

if ! have_image "$postgres_tag"; then
    echo "installing postgresql into a copy of the root filesystem ..."
    cp -a "$rootfs" "$work/postgres"
    pg=$work/postgres
    cp /etc/resolv.conf "$pg/etc/resolv.conf"
    chroot "$pg" /bin/sh -c 'DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15' \
        >"$work/postgres.log" 2>&1 || {
        tail -20 "$work/postgres.log" >&2
        exit 1
    }
    install -m 0755 "$here/postgres-entrypoint.sh" "$pg/usr/local/bin/docker-entrypoint.sh"
    for tool in pg_isready psql initdb postgres pg_ctl; do
        ln -sf "/usr/lib/postgresql/15/bin/$tool" "$pg/usr/local/bin/$tool"
    done
    mkdir -p "$pg/var/lib/postgresql/data" "$pg/var/run/postgresql"
    chroot "$pg" chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
    import_rootfs "$pg" "$postgres_tag" "${common_changes[@]}" \
        --change 'ENV PGDATA=/var/lib/postgresql/data' \
        --change 'VOLUME /var/lib/postgresql/data' \
        --change 'EXPOSE 5432' \
        --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
        --change 'CMD ["postgres"]'
fi
have_image "$postgres_alias" || docker tag "$postgres_tag" "$postgres_alias"
