#!/usr/bin/env bash
# The bashio functions the add-on's scripts use, answering from files instead of the
# Supervisor, for tests (JSON handled by bashio_json.py: no jq needed). Same semantics as
# bashio for the cases the scripts meet:
#   bashio::config KEY   string → the string, bool → true/false, number → as printed,
#                        array → one element per line (empty array → nothing),
#                        missing or null → the default ("null")
# Environment:
#   BASHIO_STUB_OPTIONS    the add-on's options JSON (default /data/options.json)
#   BASHIO_STUB_DISCOVERY  file that bashio::discovery appends {"service", "config"} lines to
#   BASHIO_STUB_DISCOVERY_FAIL=1  makes bashio::discovery fail
# A function the scripts call but this file lacks fails the run ("command not found").

_STUB_DIR="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"

_stub_options() {
    printf '%s' "${BASHIO_STUB_OPTIONS:-/data/options.json}"
}

declare -A _STUB_CONFIG=()
_STUB_CONFIG_LOADED=0

# Reads the options file once, rendering each value as bashio::config prints it.
_stub_load_config() {
    local key value
    while IFS= read -r -d '' key && IFS= read -r -d '' value; do
        _STUB_CONFIG["${key}"]="${value}"
    done < <(python3 "${_STUB_DIR}/bashio_json.py" options "$(_stub_options)")
    _STUB_CONFIG_LOADED=1
}

bashio::config() {
    local key="${1}"
    local default_value="${2:-null}"
    if [[ "${_STUB_CONFIG_LOADED}" == "0" ]]; then
        _stub_load_config
    fi
    local result="${_STUB_CONFIG[${key}]-null}"
    if [[ "${result}" == "null" ]]; then
        printf '%s' "${default_value}"
    else
        printf '%s' "${result}"
    fi
}

bashio::config.exists() {
    [[ "$(bashio::config "${1}")" != "null" ]]
}

bashio::config.has_value() {
    local value
    value="$(bashio::config "${1}")"
    [[ "${value}" != "null" && -n "${value}" ]]
}

bashio::config.is_empty() {
    local value
    value="$(bashio::config "${1}")"
    [[ "${value}" == "null" || -z "${value}" ]]
}

bashio::config.true() {
    [[ "$(bashio::config "${1}")" == "true" ]]
}

bashio::config.false() {
    [[ "$(bashio::config "${1}")" == "false" ]]
}

bashio::var.has_value() {
    [[ -n "${1:-}" ]]
}

bashio::var.true() {
    [[ "${1:-}" == "true" ]]
}

bashio::var.false() {
    [[ "${1:-}" == "false" ]]
}

# bashio::var.json KEY VALUE [KEY VALUE...]: a JSON object of strings ("^VALUE": raw JSON).
bashio::var.json() {
    python3 "${_STUB_DIR}/bashio_json.py" object "$@"
}

bashio::discovery() {
    local service="${1}"
    local config="${2}"
    if [[ "${BASHIO_STUB_DISCOVERY_FAIL:-0}" == "1" ]]; then
        return 1
    fi
    python3 "${_STUB_DIR}/bashio_json.py" discovery "${service}" "${config}" \
        >> "${BASHIO_STUB_DISCOVERY:?}"
    printf '%s\n' "stub-uuid"
}

_stub_log() {
    local level="${1}"
    shift
    printf '[%s] %s\n' "${level}" "$*" >&2
}

bashio::log.trace() { :; }
bashio::log.debug() { _stub_log DEBUG "$@"; }
bashio::log.info() { _stub_log INFO "$@"; }
bashio::log.notice() { _stub_log NOTICE "$@"; }
bashio::log.warning() { _stub_log WARNING "$@"; }
bashio::log.error() { _stub_log ERROR "$@"; }
bashio::log.fatal() { _stub_log FATAL "$@"; }

bashio::exit.nok() {
    if [[ $# -gt 0 ]]; then
        bashio::log.fatal "$*"
    fi
    exit 1
}

bashio::exit.ok() {
    exit 0
}

# Load the options now, in the script's own shell: calls inside $(...) then read the cache.
if [[ -f "$(_stub_options)" ]]; then
    _stub_load_config
fi
