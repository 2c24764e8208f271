# The agent layer of the docker env (orchestrator.md §5.8, §5.9): a task image plus this package
# in its own virtual environment at /opt/buzz/venv, so the task's own Python is untouched.
# Build argument BASE_IMAGE = the task image. Build context: this file as `Dockerfile` plus
# `wheelhouse/` for the task image's interpreter; built with no network (no registry access).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
# Installing under /opt needs root; agents run as root in the container (the verifier runs in a
# container of the task image itself, orchestrator.md §9.2).
USER root
COPY wheelhouse /tmp/buzz-wheelhouse
RUN python3 -m venv /opt/buzz/venv \
    && /opt/buzz/venv/bin/pip install --no-index --find-links /tmp/buzz-wheelhouse \
        --no-cache-dir --disable-pip-version-check --quiet buzz-orchestra \
    && rm -rf /tmp/buzz-wheelhouse
