"""The Home Assistant add-on's static files: config, build, translations, s6 service tree.

What would break an install or confuse a user: an option without a schema or a
translation, a schema range the server rejects, a default that differs from what the
server does without the option, a copy of a shared file that went stale, or an s6 service
that s6-rc cannot start.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import fields
from pathlib import Path

import pytest
import tomllib
import yaml

from engine.voice_backend import SynthesisOptions
from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.settings import build_parser

ADDON = REPO_ROOT / "addon"
S6 = ADDON / "rootfs" / "etc" / "s6-overlay" / "s6-rc.d"

# option → the server flag it feeds (the service script's contract; see test_addon_service)
OPTION_FLAGS = {
    "voices": "--voice",
    "default_voice": "--default-voice",
    "default_style": "--default-style",
    "speed": "--speed",
    "sentence_silence": "--sentence-silence",
    "sdp_ratio": "--sdp-ratio",
    "noise": "--noise",
    "noise_w": "--noise-w",
    "style_weight": "--style-weight",
    "pitch_scale": "--pitch-scale",
    "intonation_scale": "--intonation-scale",
    "streaming": "--no-streaming",
    "samples_per_chunk": "--samples-per-chunk",
    "max_text_length": "--max-text-length",
    "max_queue": "--max-queue",
    "rewrite": "--no-rewrite",
    "precision": "--precision",
    "playback_guard": "--playback-guard",
    "volume": "--volume",
    "loudness": "--loudness",
    "lead_silence": "--lead-silence",
    "tail_silence": "--tail-silence",
    "output_rate": "--output-rate",
    "chime": "--chime",
    "presets": "--preset",
    "user_dictionary": "--user-dict",
    "user_words": "--user-dict",  # written to /data/user_words.json
    "bert_source": "--bert-source",
    "hf_token": "--hf-token",  # passed as $HF_TOKEN, which the server reads in its place
    "engine_api_token": "--engine-api-token-file",  # a file under /data, never argv
    "openai_voices": "--openai-voice",
    "debug_logging": "--debug",
}


def _yaml(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def config() -> dict:
    return _yaml(ADDON / "config.yaml")


@pytest.fixture(scope="module")
def project_version() -> str:
    with (REPO_ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]["version"]


def _server_flags() -> set[str]:
    return {s for action in build_parser()._actions for s in action.option_strings}


def test_config_declares_an_aarch64_and_amd64_wyoming_addon(config, project_version):
    assert set(config["arch"]) == {"aarch64", "amd64"}
    assert config["discovery"] == ["wyoming"]
    assert "10200/tcp" in config["ports"]
    assert config["init"] is False, "s6-overlay v3 must be PID 1 (init: false)"
    assert "share" in [m.split(":")[0] for m in config["map"]], "user voices live in /share/hayakoe"
    assert re.fullmatch(r"[a-z0-9_]+", config["slug"])
    assert str(config["version"]) == project_version
    # The Supervisor pulls the image the release workflow pushes for each architecture
    # (tagged with `version`) instead of building on the device.
    assert config["image"] == f"ghcr.io/wyoming-hayakoe/{{arch}}-addon-{config['slug']}"


def test_every_option_has_a_schema_and_the_schema_nothing_more(config):
    assert set(config["options"]) <= set(config["schema"])
    assert set(config["schema"]) == set(OPTION_FLAGS), "update OPTION_FLAGS and the service test"


def test_every_option_maps_to_a_real_server_flag(config):
    flags = _server_flags()
    missing = {opt: flag for opt, flag in OPTION_FLAGS.items() if flag not in flags}
    assert not missing, f"add-on options whose server flag does not exist: {missing}"


def _range(schema: str) -> tuple[str, str | None, str | None] | None:
    m = re.fullmatch(r"(float|int)(?:\(([^,]*),([^)]*)\))?\??", schema)
    if not m:
        return None
    return m.group(1), (m.group(2) or None), (m.group(3) or None)


def test_every_value_the_schema_allows_at_its_bounds_is_accepted_by_the_server(config):
    parser = build_parser()
    checked = 0
    for option, schema in config["schema"].items():
        rng = _range(str(schema))
        if rng is None:
            continue
        kind, low, high = rng
        flag = OPTION_FLAGS[option]
        for bound in (low, high):
            if bound is None:
                continue
            value = float(bound) if kind == "float" else int(bound)
            args = parser.parse_args([flag, str(value)])
            assert getattr(args, flag[2:].replace("-", "_")) == pytest.approx(value), option
            checked += 1
    assert checked >= 10


def test_option_defaults_fit_their_schema_and_match_the_server_behaviour(config):
    schema = config["schema"]
    options = config["options"]
    for option, default in options.items():
        kind = str(schema[option]) if not isinstance(schema[option], list) else "list"
        if kind.startswith("float"):
            assert isinstance(default, float), option
        elif kind.startswith("int"):
            assert isinstance(default, int), option
        elif kind.startswith("bool"):
            assert isinstance(default, bool), option
        elif kind == "list":
            assert isinstance(default, list) and all(isinstance(v, str) for v in default)
        rng = _range(kind)
        if rng and rng[1] is not None:
            assert float(rng[1]) <= default, option
        if rng and rng[2] is not None:
            assert default <= float(rng[2]), option
    # Untouched switches behave like the server without flags.
    assert options["streaming"] is True and options["rewrite"] is True
    assert options["debug_logging"] is False
    # A speed of 1.0 is the engine's own default: passing it changes nothing.
    assert options["speed"] == SynthesisOptions().speed
    # The default voices need nothing but the network once: an official voice, and the
    # embedded one (no download) so the add-on speaks even when the Hub is unreachable.
    from engine import EMBEDDED_VOICE_NAME

    assert EMBEDDED_VOICE_NAME in options["voices"]


@pytest.mark.parametrize("language", ["en", "ja"])
def test_translations_name_and_describe_every_option(config, language):
    tr = _yaml(ADDON / "translations" / f"{language}.yaml")
    conf = tr["configuration"]
    assert set(conf) == set(config["schema"]), f"{language}.yaml options differ from the schema"
    for option, entry in conf.items():
        assert entry.get("name") and entry.get("description"), f"{language}.yaml: {option}"
    assert set(tr.get("network", {})) == set(config["ports"])


def test_english_translation_quotes_the_engine_defaults():
    """Descriptions say "Empty: X" for options whose default the voice decides; X must be
    the engine's default, or users are told the wrong thing."""
    conf = _yaml(ADDON / "translations" / "en.yaml")["configuration"]
    defaults = {f.name: f.default for f in fields(SynthesisOptions)}
    quoted = 0
    for option, entry in conf.items():
        m = re.search(r"Empty: ([0-9.]+)\.", entry["description"])
        if m and option in defaults:
            assert float(m.group(1)) == defaults[option], option
            quoted += 1
    assert quoted >= 5


def test_build_uses_debian_bases_for_both_arches_and_the_project_version(project_version):
    build = _yaml(ADDON / "build.yaml")
    assert set(build["build_from"]) == {"aarch64", "amd64"}
    for arch, image in build["build_from"].items():
        assert image.startswith(f"ghcr.io/home-assistant/{arch}-base-debian:"), image
    assert str(build["args"]["WYOMING_HAYAKOE_VERSION"]) == project_version
    dockerfile = (ADDON / "Dockerfile").read_text()
    assert "ARG BUILD_FROM" in dockerfile and "ARG WYOMING_HAYAKOE_VERSION" in dockerfile


def test_copies_of_shared_files_are_identical():
    """The Supervisor builds with addon/ as the context, so these are copies; they must not
    drift from the originals the Docker images use."""
    assert (ADDON / "requirements.txt").read_bytes() == (
        REPO_ROOT / "docker" / "requirements-cpu.txt"
    ).read_bytes()
    assert (ADDON / "requirements-sdist.txt").read_bytes() == (
        REPO_ROOT / "docker" / "requirements-sdist.txt"
    ).read_bytes()
    assert (ADDON / "rootfs" / "usr" / "local" / "bin" / "hayakoe-healthcheck").read_bytes() == (
        REPO_ROOT / "docker" / "healthcheck.py"
    ).read_bytes()
    assert os.access(ADDON / "rootfs" / "usr" / "local" / "bin" / "hayakoe-healthcheck", os.X_OK)


def test_the_voice_library_lives_in_data_and_backups_keep_its_voices_and_list(config):
    """The panel's installs go to /data/library (the service script's flag; the server's
    parser reads it in test_addon_service.py); backups leave out the cache and unfinished
    downloads only, so the list (library.json) and its files come back with a backup."""
    script = (ADDON / "rootfs/etc/s6-overlay/s6-rc.d/wyoming-hayakoe/run").read_text()
    assert '--library-dir "${data_dir}/library"' in script
    excluded = config["backup_exclude"]
    assert "cache/*" in excluded and "library/.partial/*" in excluded
    for kept in ("library/library.json", "library/voice-0123abcd-1.0.0.aivmx", "user_words.json"):
        assert not any(fnmatch.fnmatch(kept, pattern) for pattern in excluded), kept
    assert fnmatch.fnmatch("library/.partial/cli-1-x.aivmx", "library/.partial/*")
    docs = (ADDON / "DOCS.md").read_text(encoding="utf-8")
    assert "/data/library" in docs and "library.json" in docs


def test_s6_service_tree_is_complete():
    bundle = {p.name for p in (S6 / "user" / "contents.d").iterdir()}
    assert bundle == {"wyoming-hayakoe", "discovery"}
    for service in bundle:
        folder = S6 / service
        kind = (folder / "type").read_text().strip()
        assert kind in {"longrun", "oneshot"}, service
        if kind == "longrun":
            scripts = [folder / "run", folder / "finish"]
        else:
            up = (folder / "up").read_text().strip()
            assert up == f"/etc/s6-overlay/s6-rc.d/{service}/run", "up must run the script"
            scripts = [folder / "run"]
        for script in scripts:
            assert os.access(script, os.X_OK), f"{script} is not executable"
            assert script.read_text().startswith("#!/command/with-contenv bashio\n"), script
        for dep in (folder / "dependencies.d").iterdir():
            assert dep.name == "base" or (S6 / dep.name / "type").is_file(), dep
    assert (S6 / "discovery" / "dependencies.d" / "wyoming-hayakoe").exists()
    assert (S6 / "wyoming-hayakoe" / "dependencies.d" / "base").exists()


def test_repository_file_lets_the_store_find_the_addon(config):
    """The add-on store reads repository.yaml at the repository's root, then every folder
    holding a config.yaml."""
    repo = _yaml(REPO_ROOT / "repository.yaml")
    assert repo["name"] and repo["url"].startswith("https://") and repo["maintainer"]
    assert config["url"].startswith(repo["url"])


def test_changelog_has_an_entry_for_the_current_version(project_version):
    assert f"## {project_version}" in (ADDON / "CHANGELOG.md").read_text()


def test_docs_explain_every_option():
    docs = (ADDON / "DOCS.md").read_text()
    for option in OPTION_FLAGS:
        assert f"`{option}`" in docs, f"DOCS.md does not explain {option}"


def test_stop_waits_for_the_drain() -> None:
    """s6 and the Supervisor must wait longer than the server drains answers in flight
    (SIGTERM → up to --drain-timeout s), or Home Assistant cuts an announcement short on
    every add-on restart (s6-overlay's default grace is 3 s, the Supervisor's 10 s)."""
    from wyoming_hayakoe.settings import DEFAULT_DRAIN_TIMEOUT

    dockerfile = (ADDON / "Dockerfile").read_text("utf-8")
    found = re.search(r"S6_SERVICES_GRACETIME=(\d+)", dockerfile)
    assert found, "addon/Dockerfile sets no S6_SERVICES_GRACETIME"
    grace_s = int(found.group(1)) / 1000
    assert grace_s > DEFAULT_DRAIN_TIMEOUT
    config = yaml.safe_load((ADDON / "config.yaml").read_text("utf-8"))
    assert config.get("timeout", 10) > grace_s
