# The docker stack's relay image (orchestrator.md §5.3, §5.9).
# Build context: this file as `Dockerfile` plus `wheelhouse/`, the wheelhouse for the base image's
# interpreter (this package's wheel and every runtime dependency as binary wheels). The
# orchestrator builds it with no network, so nothing here may reach a package registry.
FROM python:3.12-slim-bookworm
COPY wheelhouse /tmp/buzz-wheelhouse
# A virtual environment, so the same steps work whether or not the base image's Python is
# marked externally managed (Debian's is).
RUN python3 -m venv /opt/buzz/venv \
    && /opt/buzz/venv/bin/pip install --no-index --find-links /tmp/buzz-wheelhouse \
        --no-cache-dir --disable-pip-version-check --quiet buzz-orchestra \
    && rm -rf /tmp/buzz-wheelhouse
ENV PATH=/opt/buzz/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    BUZZ_BIND_ADDR=0.0.0.0:3600
EXPOSE 3600
CMD ["buzz-relay", "serve"]
