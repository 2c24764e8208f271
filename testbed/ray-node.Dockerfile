# A Ray node for `orchestra benchmark --executor ray` (docs/scale-out.md): the relay image's
# layout (this package in /opt/buzz/venv) plus the `ray` extra and bubblewrap, so a node runs
# its own embedded stack (PostgreSQL from pgserver, buzz-relay) and local-env agent trees.
# Build context: this file as `Dockerfile` plus `wheelhouse/` holding the wheels of
# `buzz-orchestra[ray]` for the base image's interpreter, e.g.
#   pip wheel --wheel-dir wheelhouse '.[ray]' && docker build -f testbed/ray-node.Dockerfile .
# Every node and the driver must install the same buzz-orchestra version (checked at preflight).
FROM python:3.12-slim-bookworm
RUN apt-get update \
    && apt-get install --no-install-recommends -y bubblewrap util-linux procps \
    && rm -rf /var/lib/apt/lists/*
COPY wheelhouse /tmp/buzz-wheelhouse
RUN python3 -m venv /opt/buzz/venv \
    && /opt/buzz/venv/bin/pip install --no-index --find-links /tmp/buzz-wheelhouse \
        --no-cache-dir --disable-pip-version-check --quiet 'buzz-orchestra[ray]' \
    && rm -rf /tmp/buzz-wheelhouse
# pgserver's PostgreSQL refuses to run as root: nodes run as an ordinary user
RUN useradd --create-home --uid 1000 ray
USER ray
ENV PATH=/opt/buzz/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ORCHESTRA_NODE_DIR=/tmp/buzz-node
WORKDIR /home/ray
