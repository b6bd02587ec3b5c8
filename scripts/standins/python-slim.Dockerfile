# Stand-in for python:3.11-slim-bookworm, which no registry here can serve: Debian bookworm's
# own Python 3.11 with venv, answering to `python` like the official image. Its venvs get
# Debian's pip 23.0.1 (the official image bundles a newer one), the harder case for the
# recipes' `pip wheel` of source-only packages.
ARG DEBIAN_BASE=localhost/debian:bookworm
# hadolint ignore=DL3006
FROM ${DEBIAN_BASE}
ENV LANG=C.UTF-8
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
    && ln -s /usr/bin/python3 /usr/local/bin/python \
    && rm -rf /var/lib/apt/lists/*
CMD ["python3"]
