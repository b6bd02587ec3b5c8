#!/usr/bin/env bash
# Entry point of the wyoming-hayakoe images.
#
#   (no arguments, or flags)  run the server with the baked voices, then the given flags
#   download ...              run `wyoming-hayakoe download ...` (the cache is $HAYAKOE_CACHE)
#   library ...               run `wyoming-hayakoe library ...` (the server's voice library,
#                             $HAYAKOE_CACHE/library unless --library-dir says otherwise)
#   anything else             run that command (for example `bash`)
#
# Environment: HAYAKOE_URI (default tcp://0.0.0.0:10200), HAYAKOE_DEVICE (cpu or cuda),
# HAYAKOE_CACHE (voice cache), HAYAKOE_VOICES (voices baked at build time, NAME or
# NAME=SOURCE, separated by spaces or commas; set it empty to load only the flags' voices).
set -euo pipefail

case "${1:-}" in
    "" | -*) ;;
    download | library) exec wyoming-hayakoe "$@" ;;
    *) exec "$@" ;;
esac

args=(--uri "${HAYAKOE_URI:-tcp://0.0.0.0:10200}" --device "${HAYAKOE_DEVICE:-cpu}")
if [[ -n "${HAYAKOE_CACHE:-}" ]]; then
    args+=(--cache-dir "${HAYAKOE_CACHE}")
fi
baked="${HAYAKOE_VOICES:-}"
voices=()
read -r -a voices <<< "${baked//,/ }"
for voice in "${voices[@]}"; do
    args+=(--voice "${voice}")
done

exec wyoming-hayakoe "${args[@]}" "$@"
