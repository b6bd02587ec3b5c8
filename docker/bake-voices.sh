#!/usr/bin/env bash
# Bakes voices into an image at build time (the "voices" stage of Dockerfile.arm64 and
# Dockerfile.amd64): `wyoming-hayakoe download` fetches the BERT and each voice into
# $HAYAKOE_CACHE, which the final stage copies, so the running container needs no network.
#
# Inputs (build arguments passed as environment):
#   VOICES       voices to bake, separated by spaces or commas: NAME or NAME=SOURCE
#   DEVICE       cpu (ONNX files) or cuda (PyTorch files)
#   BERT_SOURCE  optional source URI of the BERT (default: the engine's)
#   INT8         1: also bake each voice's int8 decoder graphs and fidelity report into the
#                cache (`wyoming-hayakoe quantize`, CPU images only; minutes per voice), so
#                that `--precision auto` needs no calibration at the first start
# Secrets (BuildKit `--mount=type=secret`, read from $HAYAKOE_SECRETS_DIR, default /run/secrets):
#   hf_token     Hugging Face token for private or gated repositories
#   aws          AWS shared-credentials file for s3:// sources
# The token is read from the secret file by the download command: it is never an argument
# (visible in `ps`) nor in the environment, and the script fails if it finds it written
# anywhere under the cache.
set -euo pipefail

cache="${HAYAKOE_CACHE:?HAYAKOE_CACHE must name the folder to bake voices into}"
secrets="${HAYAKOE_SECRETS_DIR:-/run/secrets}"
mkdir -p "${cache}"

wanted="${VOICES:-}"
voices=()
read -r -a voices <<< "${wanted//,/ }"
if [[ ${#voices[@]} -eq 0 ]]; then
    echo "bake-voices: VOICES is empty; only the embedded voice will be available" >&2
    exit 0
fi

args=(download --device "${DEVICE:-cpu}" --cache-dir "${cache}")
for voice in "${voices[@]}"; do
    args+=(--voice "${voice}")
done
if [[ -n "${BERT_SOURCE:-}" ]]; then
    args+=(--bert-source "${BERT_SOURCE}")
fi

token=""
if [[ -s "${secrets}/hf_token" ]]; then
    token="$(tr -d '[:space:]' < "${secrets}/hf_token")"
    args+=(--hf-token-file "${secrets}/hf_token")
fi
if [[ -s "${secrets}/aws" ]]; then
    export AWS_SHARED_CREDENTIALS_FILE="${secrets}/aws"
fi

echo "bake-voices: baking ${voices[*]} (device ${DEVICE:-cpu}) into ${cache}" >&2
wyoming-hayakoe "${args[@]}"

if [[ "${INT8:-0}" == "1" && "${DEVICE:-cpu}" == "cpu" ]]; then
    official="$(python -c 'from engine import OFFICIAL_SOURCE; print(OFFICIAL_SOURCE)')"
    for voice in "${voices[@]}"; do
        name="${voice%%=*}"
        source="${voice#*=}"
        if [[ "${source}" == "${voice}" ]]; then
            source=""  # an official voice: the engine's default source
        fi
        if [[ "${name}" == "openjtalk-mei" ]]; then
            continue  # the embedded voice has no neural decoder
        fi
        qargs=(quantize "${source:-${official}}" --name "${name}" --cache-dir "${cache}")
        if [[ -n "${BERT_SOURCE:-}" ]]; then
            qargs+=(--bert-source "${BERT_SOURCE}")
        fi
        if [[ -n "${token}" ]]; then
            qargs+=(--hf-token-file "${secrets}/hf_token")
        fi
        echo "bake-voices: int8 graphs for ${name} (calibration and fidelity gate)" >&2
        wyoming-hayakoe "${qargs[@]}"
    done
fi

if [[ -n "${token}" ]] && grep -rqF -- "${token}" "${cache}"; then
    echo "bake-voices: the Hugging Face token was written under ${cache}; refusing to bake it" >&2
    exit 1
fi
