#!/usr/bin/env bash
# The arm64 Debian root the ARM evidence runs in (benchmarks/arm/evidence.py), made once:
# debootstrap of bookworm arm64 (second stage under qemu-user-static through binfmt_misc),
# a venv with ONNX Runtime's aarch64 wheel (the host's version) and numpy, and the host's
# dynamically linked qemu-aarch64 (the one that loads TCG plugins; the static one cannot)
# with its x86-64 libraries under /opt/qemu-host, so it runs inside the root's chroot with
# any -cpu model.
#
#   sudo bash benchmarks/arm/root.sh            # about 10 minutes (the second stage is emulated)
#   sudo XNNPACK=1 bash benchmarks/arm/root.sh  # also ExecuTorch's runtime (issue 49), ~3 GB more
#
# Variables: ARM64_ROOT (default /var/tmp/wyoming-hayakoe-arm64-evidence), ORT_VERSION (default:
# the host venv's onnxruntime), HOST_PYTHON (default .venv/bin/python, else python3), MIRROR,
# XNNPACK (1: executorch $EXECUTORCH_VERSION and torch $TORCH_VERSION, aarch64 wheels from
# PyPI, installed by the host's pip, not emulated, into /opt/xnnpack-site, which a .pth file
# adds to the venv; PyPI's aarch64 torch is the CUDA build, ~2.6 GB with its nvidia-* wheels).
# Needs root and apt (Debian host): qemu-user qemu-user-static debootstrap binfmt-support.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROJECT=$(cd "$HERE/../.." && pwd)
ARM64_ROOT=${ARM64_ROOT:-/var/tmp/wyoming-hayakoe-arm64-evidence}
VENV=/opt/venv-evidence
HOST_PYTHON=${HOST_PYTHON:-$PROJECT/.venv/bin/python}
[ -x "$HOST_PYTHON" ] || HOST_PYTHON=python3
ORT_VERSION=${ORT_VERSION:-$("$HOST_PYTHON" -c 'import onnxruntime; print(onnxruntime.__version__)')}

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
[ "$(id -u)" = 0 ] || { log "needs root (debootstrap, chroot, binfmt_misc)"; exit 1; }

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
[ -x /usr/bin/qemu-aarch64-static ] || need+=(qemu-user-static)
[ -x /usr/bin/qemu-aarch64 ] || need+=(qemu-user)
command -v update-binfmts >/dev/null || need+=(binfmt-support)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
# qemu-plugin.h (for insn_count.c) is in no binary package: evidence.py takes it from Debian's
# qemu source package (`apt-get source --download-only qemu`), which needs a deb-src entry
if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    . /etc/os-release
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$VERSION_CODENAME" >/etc/apt/sources.list.d/wyoming-hayakoe-deb-src.sources
    apt-get update -qq
fi
[ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64
grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64

if [ ! -x "$ARM64_ROOT/usr/bin/python3" ] || [ -d "$ARM64_ROOT/debootstrap" ]; then
    if [ -z "${MIRROR:-}" ]; then
        MIRROR=$({ grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
                   grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'
                 } | grep -E '/debian/?$' | head -1 || true)
        MIRROR=${MIRROR:-http://deb.debian.org/debian}
    fi
    if [ ! -d "$ARM64_ROOT/debootstrap" ]; then
        log "debootstrap (first stage) → $ARM64_ROOT"
        debootstrap --arch=arm64 --foreign --variant=minbase \
            --include=python3,python3-venv,python3-pip,ca-certificates bookworm "$ARM64_ROOT" "$MIRROR"
    fi
    log "debootstrap (second stage, emulated)"
    chroot "$ARM64_ROOT" /debootstrap/debootstrap --second-stage
fi

# pip inside reaches the package index as the host does (its configuration and CAs)
cp /etc/resolv.conf "$ARM64_ROOT/etc/resolv.conf"
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$ARM64_ROOT/etc/pip.conf"
if [ -d /etc/xdg/pip ]; then mkdir -p "$ARM64_ROOT/etc/xdg/pip" && cp -r /etc/xdg/pip/. "$ARM64_ROOT/etc/xdg/pip/"; fi
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$ARM64_ROOT/usr/local/share/ca-certificates/"
    chroot "$ARM64_ROOT" update-ca-certificates >/dev/null
fi
inside_env=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt)
while IFS= read -r v; do inside_env+=("$v"); done < <(env | grep '^PIP_' || true)
# onnxruntime (and pytorch/cpuinfo) crash at import on qemu's pass-through of the host's
# x86 /proc/cpuinfo: an ARM one for the install's import check (evidence.py mounts its own)
mountpoint -q "$ARM64_ROOT/proc" || mount -t proc proc "$ARM64_ROOT/proc"
trap 'umount "$ARM64_ROOT/proc/cpuinfo" 2>/dev/null || true; umount "$ARM64_ROOT/proc" 2>/dev/null || true' EXIT
printf 'processor\t: 0\nFeatures\t: fp asimd cpuid\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\n' \
    >"$ARM64_ROOT/tmp/cpuinfo-arm"
mount --bind "$ARM64_ROOT/tmp/cpuinfo-arm" "$ARM64_ROOT/proc/cpuinfo"
if [ ! -x "$ARM64_ROOT$VENV/bin/python" ]; then
    log "venv $VENV"
    chroot "$ARM64_ROOT" /usr/bin/env -i "${inside_env[@]}" python3 -m venv "$VENV"
fi
log "onnxruntime==$ORT_VERSION numpy (aarch64 wheels)"
chroot "$ARM64_ROOT" /usr/bin/env -i "${inside_env[@]}" "$VENV/bin/pip" install -q \
    --only-binary=:all: "onnxruntime==$ORT_VERSION" numpy
chroot "$ARM64_ROOT" /usr/bin/env -i "${inside_env[@]}" "$VENV/bin/python" -c \
    'import onnxruntime, numpy, platform; print(platform.machine(), "onnxruntime", onnxruntime.__version__, "numpy", numpy.__version__)'

if [ -n "${XNNPACK:-}" ]; then
    # ExecuTorch's Python runtime links libtorch and imports torch; executorch's other
    # requirements (pandas, hydra, tokenizers...) are for export, not for running a program
    site=$ARM64_ROOT/opt/xnnpack-site
    plat=(--platform manylinux2014_aarch64)
    for v in $(seq 17 40); do plat+=(--platform "manylinux_2_${v}_aarch64"); done
    log "executorch==${EXECUTORCH_VERSION:-1.5.1} torch==${TORCH_VERSION:-2.13.0} → $site"
    pip_target=(python3 -m pip install -q --target "$site" "${plat[@]}" --python-version 3.11
        --implementation cp --abi cp311 --only-binary=:all: --upgrade)
    "${pip_target[@]}" "torch==${TORCH_VERSION:-2.13.0}"
    "${pip_target[@]}" --no-deps "executorch==${EXECUTORCH_VERSION:-1.5.1}" flatbuffers \
        typing-extensions pyyaml ruamel.yaml packaging tabulate
    echo /opt/xnnpack-site >"$ARM64_ROOT$VENV/lib/python3.11/site-packages/xnnpack-site.pth"
    chroot "$ARM64_ROOT" /usr/bin/env -i "${inside_env[@]}" "$VENV/bin/python" -c \
        'import torch, executorch.runtime; print("torch", torch.__version__, "executorch runtime ok")'
fi

# the host's qemu-aarch64 (dynamically linked, TCG plugins) and its libraries, runnable in the chroot
bundle=$ARM64_ROOT/opt/qemu-host
rm -rf "$bundle" && mkdir -p "$bundle/lib"
cp /usr/bin/qemu-aarch64 "$bundle/qemu-aarch64"
ldd /usr/bin/qemu-aarch64 | awk '/=>/ {print $3} /ld-linux/ {print $1}' | while IFS= read -r lib; do
    [ -f "$lib" ] && cp -L "$lib" "$bundle/lib/"
done
qemu-aarch64 --version | head -1 >"$bundle/VERSION"
log "ready: $ARM64_ROOT ($(cat "$bundle/VERSION"))"
