#!/usr/bin/env bash
# Builds the project's container images for real, without Docker or a registry, and runs them:
# Debian's buildah (with runc) builds the Dockerfiles, podman runs the results. Base images
# no registry here can serve are made locally: Debian bookworm with debootstrap, and from it
# stand-ins for Home Assistant's add-on base and for python:3.11-slim-bookworm
# (scripts/standins/). tests/deploy/test_images.py drives it; people can too.
#
#   scripts/build-images.sh setup          check the tools, write the engine configuration
#   scripts/build-images.sh bases          debootstrap → localhost/debian:bookworm, stand-ins
#   scripts/build-images.sh addon          addon/Dockerfile  → $ADDON_IMAGE
#   scripts/build-images.sh image          Dockerfile.arm64 (native architecture, no baked
#                                          voices) → $IMAGE
#   scripts/build-images.sh all            the three above
#   scripts/build-images.sh serve-addon PORT   the add-on's s6 service script in $ADDON_IMAGE,
#                                          options from $ADDON_OPTIONS, on 127.0.0.1:PORT
#   scripts/build-images.sh serve-image PORT   $IMAGE's entry point on 127.0.0.1:PORT
#   scripts/build-images.sh exec NAME CMD...   run CMD in a container started by serve-*
#   scripts/build-images.sh podman ARGS... podman with this script's storage and engine settings
#   scripts/build-images.sh health NAME    the image's HEALTHCHECK, once (podman healthcheck run)
#   scripts/build-images.sh stop NAME      stop a container started by serve-*
#   scripts/build-images.sh sizes          sizes of the built images
#   scripts/build-images.sh clean          remove $WORK (all images, layers and the rootfs)
#
# Needs root, `apt-get install buildah podman runc debootstrap` (`--install` runs it), and
# Debian's archive and PyPI from the build steps (the host's CA bundle and a pip.conf that
# points at it are mounted into every RUN step, so a TLS-intercepting proxy works).
# Environment:
#   WORK           engine storage, rootfs and logs (default /var/tmp/wyoming-hayakoe-oci);
#                  kept between runs, so rebuilds reuse cached layers
#   MIRROR         Debian mirror for debootstrap (default: the host's, else deb.debian.org)
#   ADDON_IMAGE    default localhost/wyoming-hayakoe-addon:test
#   IMAGE          default localhost/wyoming-hayakoe:test
#   ADDON_OPTIONS  options.json for serve-addon (default: only the embedded voice)
#   PYTHON         the Python that builds the project's wheel (default python3; needs setuptools)
#   ARCH           Debian architecture of the bases and the add-on (default: this machine's).
#                  Another one (arm64 on x86) runs under QEMU user-mode emulation: it needs
#                  qemu-user-static with its binfmt handler registered (binfmt-support);
#                  the interpreter is copied into the base, so the registration's flags do not
#                  matter, and containers get an ARM /proc/cpuinfo (ONNX Runtime reads it).
#                  Images and bases then carry the architecture in their tag (…-arm64).
# Timings go to $WORK/timings.log (one line per step, seconds).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-/var/tmp/wyoming-hayakoe-oci}"
NATIVE_ARCH="$(dpkg --print-architecture)"
ARCH="${ARCH:-${NATIVE_ARCH}}"
# native builds keep plain names; another architecture gets it in every tag
SUFFIX=""
[[ "${ARCH}" == "${NATIVE_ARCH}" ]] || SUFFIX="-${ARCH}"
ADDON_IMAGE="${ADDON_IMAGE:-localhost/wyoming-hayakoe-addon:test${SUFFIX}}"
IMAGE="${IMAGE:-localhost/wyoming-hayakoe:test}"
DEBIAN_IMAGE="localhost/debian:bookworm${SUFFIX}"
HA_BASE_IMAGE="localhost/home-assistant-base-standin:bookworm${SUFFIX}"
# The short name Dockerfile.arm64's FROM resolves to: a local image of that name, no pull.
PYTHON_IMAGE=localhost/python:3.11-slim-bookworm
HOST_CA=/etc/ssl/certs/ca-certificates.crt
PACKAGES=(buildah podman runc debootstrap)

log() { printf '[build-images] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# timed LABEL CMD...: runs CMD, appends "LABEL<TAB>SECONDS<TAB>rc" to $WORK/timings.log
timed() {
    local label=$1 start rc=0
    shift
    start=$(date +%s.%N)
    "$@" || rc=$?
    printf '%s\t%.1f\t%s\n' "${label}" "$(echo "$(date +%s.%N) - ${start}" | bc)" "${rc}" \
        >> "${WORK}/timings.log"
    log "${label}: rc=${rc} in $(tail -1 "${WORK}/timings.log" | cut -f2) s"
    return "${rc}"
}

missing_tools() {
    local tool out=()
    for tool in "${PACKAGES[@]}" bc; do
        command -v "${tool}" > /dev/null 2>&1 || out+=("${tool}")
    done
    printf '%s\n' "${out[@]}"
}

cmd_setup() {
    if [[ "${1:-}" == "--install" ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${PACKAGES[@]}" bc > /dev/null
    fi
    local missing
    missing="$(missing_tools)"
    [[ -z "${missing}" ]] || die "missing: ${missing//$'\n'/ } (apt-get install ${PACKAGES[*]} bc)"
    [[ "$(id -u)" == 0 ]] || die "needs root (buildah and podman here run rootful)"
    mkdir -p "${WORK}"
    # Storage and engine settings of our own: nothing in /etc/containers is changed.
    cat > "${WORK}/storage.conf" << EOF
[storage]
driver = "overlay"
graphroot = "${WORK}/storage"
runroot = "${WORK}/run"
EOF
    # crun (Debian's default runtime) refuses hosts with a hybrid cgroup v1/v2 layout; podman's
    # default ulimits are refused where CAP_SYS_RESOURCE is not in the bounding set.
    cat > "${WORK}/containers.conf" << 'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32767:32767"]

[engine]
runtime = "runc"
EOF
    # pip in RUN steps trusts the host's CA bundle (mounted read-only next to this file).
    cat > "${WORK}/pip.conf" << 'EOF'
[global]
cert = /etc/ssl/host-ca-certificates.crt
EOF
}

engine_env() {
    [[ -f "${WORK}/containers.conf" ]] || cmd_setup
    export CONTAINERS_STORAGE_CONF="${WORK}/storage.conf" CONTAINERS_CONF="${WORK}/containers.conf"
    export BUILDAH_ISOLATION=oci
}

# Read-only mounts into every RUN step: the CA bundle and the pip.conf that names it.
BUILD_MOUNTS=()
build_mounts() {
    BUILD_MOUNTS=(-v "${HOST_CA}:/etc/ssl/host-ca-certificates.crt:ro"
        -v "${WORK}/pip.conf:/etc/pip.conf:ro")
}

have_image() { buildah inspect --type image "$1" > /dev/null 2>&1; }

debian_mirror() {
    local mirror="${MIRROR:-}"
    if [[ -z "${mirror}" && -f /etc/apt/sources.list.d/debian.sources ]]; then
        mirror="$(awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}' \
            /etc/apt/sources.list.d/debian.sources)"
    fi
    printf '%s' "${mirror:-http://deb.debian.org/debian}"
}

cmd_bases() {
    engine_env
    build_mounts
    local arch="${ARCH}" rootfs
    rootfs="${WORK}/rootfs-bookworm-${arch}"
    if ! have_image "${DEBIAN_IMAGE}"; then
        if [[ ! -x "${rootfs}/bin/bash" ]]; then
            rm -rf "${rootfs}"
            if [[ "${arch}" == "${NATIVE_ARCH}" ]]; then
                timed debootstrap debootstrap --variant=minbase bookworm "${rootfs}" \
                    "$(debian_mirror)" > "${WORK}/debootstrap.log" 2>&1 \
                    || die "debootstrap failed; see ${WORK}/debootstrap.log"
            else
                foreign_debootstrap "${rootfs}"
            fi
            # like the official images: no package cache or lists in the base
            rm -rf "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/cache/apt/*.bin \
                "${rootfs}"/var/lib/apt/lists/*
            mkdir -p "${rootfs}/var/lib/apt/lists/partial"
        fi
        tar --numeric-owner -C "${rootfs}" -cf "${WORK}/rootfs.tar" .
        # This buildah has no `import`: an empty container, the tarball unpacked into it.
        local ctr
        ctr="$(buildah from scratch)"
        buildah add "${ctr}" "${WORK}/rootfs.tar" / > /dev/null
        buildah config --os linux --arch "${arch}" --cmd '["bash"]' \
            --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${ctr}"
        timed debian-commit buildah commit --quiet --rm "${ctr}" "${DEBIAN_IMAGE}" > /dev/null
        rm -f "${WORK}/rootfs.tar"
    fi
    # Home Assistant's base: the test stand-in of bashio next to the stand-in Dockerfile.
    local ctx="${WORK}/ctx-ha-base"
    rm -rf "${ctx}" && mkdir -p "${ctx}"
    cp "${ROOT}/scripts/standins/ha-base.Dockerfile" "${ROOT}/scripts/standins/with-contenv" \
        "${ROOT}/tests/stubs/bashio" "${ROOT}/tests/stubs/bashio-lib.sh" \
        "${ROOT}/tests/stubs/bashio_json.py" "${ctx}/"
    timed ha-base-standin buildah bud --quiet --layers --force-rm --format docker \
        --arch "${ARCH}" --build-arg "DEBIAN_BASE=${DEBIAN_IMAGE}" \
        -f "${ctx}/ha-base.Dockerfile" -t "${HA_BASE_IMAGE}" "${ctx}" > /dev/null
    # Dockerfile.arm64's base: native only (its short name cannot carry an architecture)
    if [[ -z "${SUFFIX}" ]]; then
        timed python-standin buildah bud --quiet --layers --force-rm --format docker \
            "${BUILD_MOUNTS[@]}" -f "${ROOT}/scripts/standins/python-slim.Dockerfile" \
            -t "${PYTHON_IMAGE}" "${ROOT}/scripts/standins" > /dev/null
    fi
}

# The binfmt handler the kernel runs for ARCH's programs (its interpreter path).
binfmt_interpreter() {
    local name
    case "${ARCH}" in
        arm64) name=qemu-aarch64 ;;
        armhf) name=qemu-arm ;;
        *) name="qemu-${ARCH}" ;;
    esac
    local entry="/proc/sys/fs/binfmt_misc/${name}"
    if [[ ! -f "${entry}" ]] || ! grep -q '^enabled' "${entry}"; then
        die "no binfmt handler ${name} (apt-get install qemu-user-static binfmt-support)"
    fi
    sed -n 's/^interpreter //p' "${entry}"
}

# debootstrap for another architecture: unpack, then the second stage inside the rootfs
# under QEMU. The interpreter sits at the path the binfmt entry names, inside the rootfs, so
# it is found in chroots and containers alike (a handler registered without the F flag
# looks it up there).
foreign_debootstrap() {
    local rootfs=$1 interpreter
    interpreter="$(binfmt_interpreter)"
    timed debootstrap-foreign debootstrap --variant=minbase --arch="${ARCH}" --foreign \
        bookworm "${rootfs}" "$(debian_mirror)" > "${WORK}/debootstrap.log" 2>&1 \
        || die "debootstrap failed; see ${WORK}/debootstrap.log"
    mkdir -p "${rootfs}$(dirname "${interpreter}")"
    cp -L "${interpreter}" "${rootfs}${interpreter}"
    timed debootstrap-second-stage chroot "${rootfs}" /debootstrap/debootstrap --second-stage \
        >> "${WORK}/debootstrap.log" 2>&1 \
        || die "debootstrap's second stage failed; see ${WORK}/debootstrap.log"
}

# An ARM /proc/cpuinfo for emulated containers: ONNX Runtime parses it at import and
# crashes on the host's x86 one.
arm_cpuinfo() {
    local file="${WORK}/cpuinfo-arm64" n
    : > "${file}"
    for n in 0 1 2 3; do
        printf 'processor\t: %s\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n' "${n}"
        printf 'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n'
        printf 'CPU part\t: 0xd08\nCPU revision\t: 3\n\n'
    done >> "${file}"
    printf '%s' "${file}"
}

# A wheel of the checkout (what the release archive would install), for the add-on build,
# printed as DIGEST/FILE under $WORK/dist. The wheel is mounted into the build, not copied, so
# the layer cache cannot see its contents: the digest in its path (part of the RUN line) can.
# Fixed timestamps make the same sources give the same digest.
project_wheel() {
    local dist="${WORK}/dist" build="${WORK}/dist-build"
    rm -rf "${build}" && mkdir -p "${build}" "${dist}"
    SOURCE_DATE_EPOCH=315532800 "${PYTHON:-python3}" -m pip wheel --quiet --no-deps \
        --no-build-isolation --no-cache-dir -w "${build}" "${ROOT}" > "${WORK}/wheel.log" 2>&1 \
        || die "building the project's wheel failed; see ${WORK}/wheel.log"
    local wheels=("${build}"/wyoming_hayakoe-*.whl) digest
    [[ -f "${wheels[0]}" ]] || die "no wheel in ${build}"
    digest="$(sha256sum "${wheels[0]}" | cut -c1-16)"
    mkdir -p "${dist}/${digest}"
    mv "${wheels[0]}" "${dist}/${digest}/"
    printf '%s/%s' "${digest}" "$(basename "${wheels[0]}")"
}

cmd_addon() {
    engine_env
    build_mounts
    have_image "${HA_BASE_IMAGE}" || cmd_bases
    local wheel version
    wheel="$(project_wheel)"
    version="$(sed -n 's/^ *WYOMING_HAYAKOE_VERSION: *//p' "${ROOT}/addon/build.yaml")"
    # The Supervisor's build: addon/ is the context, BUILD_FROM and the version from
    # build.yaml. Only the project's source differs: the checkout's wheel, not the archive.
    timed "addon${SUFFIX}" buildah bud --layers --force-rm --format docker "${BUILD_MOUNTS[@]}" \
        --arch "${ARCH}" -v "${WORK}/dist:/tmp/hayakoe-dist:ro" \
        --build-arg "BUILD_FROM=${HA_BASE_IMAGE}" \
        --build-arg "WYOMING_HAYAKOE_VERSION=${version}" \
        --build-arg "WYOMING_HAYAKOE_PACKAGE=/tmp/hayakoe-dist/${wheel}" \
        -t "${ADDON_IMAGE}" "${ROOT}/addon" > "${WORK}/addon-build${SUFFIX}.log" 2>&1 \
        || die "add-on build failed; last lines of ${WORK}/addon-build${SUFFIX}.log:
$(tail -25 "${WORK}/addon-build${SUFFIX}.log")"
}

cmd_image() {
    [[ -z "${SUFFIX}" ]] || die "image: Dockerfile.arm64 is built natively only (ARCH=${ARCH})"
    engine_env
    build_mounts
    have_image "${PYTHON_IMAGE}" || cmd_bases
    # Dockerfile.arm64 as written, for the machine's own architecture; VOICES empty because
    # baking official voices needs the Hugging Face Hub (the embedded voice is always there).
    timed image buildah bud --layers --force-rm --format docker "${BUILD_MOUNTS[@]}" \
        --build-arg VOICES= -f "${ROOT}/Dockerfile.arm64" -t "${IMAGE}" "${ROOT}" \
        > "${WORK}/image-build.log" 2>&1 \
        || die "Dockerfile.arm64 build failed; last lines of ${WORK}/image-build.log:
$(tail -25 "${WORK}/image-build.log")"
}

cmd_serve_addon() {
    local port="${1:?usage: serve-addon PORT [NAME]}" name="${2:-hayakoe-addon-${1}}"
    engine_env
    local options="${ADDON_OPTIONS:-${WORK}/addon-options.json}"
    if [[ -z "${ADDON_OPTIONS:-}" ]]; then
        printf '%s\n' '{"voices": ["openjtalk-mei"], "speed": 1.0, "streaming": true,' \
            ' "rewrite": true, "debug_logging": false}' > "${options}"
    fi
    # What the Supervisor's s6 would start: the service's run script, with the add-on's
    # options in /data/options.json; the host's network, so 127.0.0.1:PORT reaches it.
    local emulated=()
    [[ -z "${SUFFIX}" ]] || emulated=(--arch "${ARCH}" -v "$(arm_cpuinfo):/proc/cpuinfo:ro")
    exec podman run --rm --name "${name}" --network host --no-healthcheck "${emulated[@]}" \
        -v "${options}:/data/options.json:ro" -e "HAYAKOE_ADDON_PORT=${port}" \
        -e HF_HUB_OFFLINE=1 --entrypoint /etc/s6-overlay/s6-rc.d/wyoming-hayakoe/run \
        "${ADDON_IMAGE}"
}

cmd_serve_image() {
    local port="${1:?usage: serve-image PORT [NAME]}" name="${2:-hayakoe-image-${1}}"
    shift $(($# < 2 ? $# : 2))
    engine_env
    exec podman run --rm --name "${name}" --network host \
        -e "HAYAKOE_URI=tcp://127.0.0.1:${port}" "${IMAGE}" "$@"
}

cmd_exec() {
    engine_env
    exec podman exec "$@"
}

cmd_podman() {
    engine_env
    exec podman "$@"
}

cmd_health() {
    engine_env
    exec podman healthcheck run "${1:?usage: health NAME}"
}

cmd_stop() {
    engine_env
    podman stop --time 10 "${1:?usage: stop NAME}" > /dev/null 2>&1 || true
    podman rm --force "${1}" > /dev/null 2>&1 || true
}

cmd_sizes() {
    engine_env
    podman images --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' \
        | grep -E "^(${ADDON_IMAGE}|${IMAGE}|${HA_BASE_IMAGE}|${PYTHON_IMAGE}|${DEBIAN_IMAGE})\s"
}

cmd_clean() {
    engine_env
    buildah rm --all > /dev/null 2>&1 || true
    podman rm --all --force > /dev/null 2>&1 || true
    # overlay mounts under storage/ must go before the folder can
    buildah rmi --all --force > /dev/null 2>&1 || true
    umount -R "${WORK}/storage/overlay" 2> /dev/null || true
    rm -rf "${WORK}"
}

main() {
    local command="${1:-all}"
    shift || true
    case "${command}" in
        setup) cmd_setup "$@" ;;
        bases) cmd_bases ;;
        addon) cmd_addon ;;
        image) cmd_image ;;
        all) cmd_bases && cmd_addon && cmd_image && cmd_sizes ;;
        serve-addon) cmd_serve_addon "$@" ;;
        serve-image) cmd_serve_image "$@" ;;
        exec) cmd_exec "$@" ;;
        health) cmd_health "$@" ;;
        podman) cmd_podman "$@" ;;
        stop) cmd_stop "$@" ;;
        sizes) cmd_sizes ;;
        clean) cmd_clean ;;
        missing-tools) missing_tools ;;
        -h | --help | help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' ;;
        *) die "unknown command: ${command} (see --help)" ;;
    esac
}

main "$@"
