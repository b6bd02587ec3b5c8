# Stand-in for Home Assistant's add-on base (ghcr.io/home-assistant/<arch>-base-debian:bookworm),
# which no registry here can serve: Debian bookworm plus the parts the add-on's scripts need
# from it. bashio is the project's test stand-in (tests/stubs: it reads the options from
# /data/options.json, logs to stderr, records discovery to a file) and `/command/with-contenv`
# (s6-overlay's environment wrapper, the scripts' interpreter line) just runs its arguments.
# No s6-overlay: scripts/build-images.sh starts the service's run script directly.
ARG DEBIAN_BASE=localhost/debian:bookworm
# hadolint ignore=DL3006
FROM ${DEBIAN_BASE}
COPY bashio bashio-lib.sh bashio_json.py /usr/lib/bashio-standin/
COPY with-contenv /command/with-contenv
RUN ln -s /usr/lib/bashio-standin/bashio /usr/bin/bashio \
    && mkdir -p /data
CMD ["bash"]
