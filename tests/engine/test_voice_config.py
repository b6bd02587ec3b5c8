"""engine/voice_config.py: a voice's `config.json` typed, with JP-Extra's defaults for what
is missing, unknown keys ignored and errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.voice_config import ConfigError, VoiceConfig, load_config, parse_config
from tests.helpers.paths import DATA

SMALL = DATA / "model_small"


def test_config_rules(tmp_path: Path) -> None:
    cfg = parse_config(
        {"version": "2.5.0-JP-Extra", "model": {"hidden_channels": 64, "whatever": 1}, "extra": {}}
    )
    assert cfg.model.hidden_channels == 64 and cfg.model.inter_channels == 192
    assert cfg.data.style2id == {"Neutral": 0} and cfg.n_layers_trans_flow == 6
    assert VoiceConfig().model.upsample_initial_channel == 512
    with pytest.raises(ConfigError, match="not a JP-Extra model"):
        parse_config({"version": "2.5.0"}, "voice/config.json")
    with pytest.raises(ConfigError, match=r"model\.n_heads: expected an integer"):
        parse_config({"version": "2.0-JP-Extra", "model": {"n_heads": "two"}})
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match=str(bad)):
        load_config(bad)
    small = load_config(SMALL / "config.json")
    assert small.styles == ["Neutral", "Happy", "Sad"] and small.sample_rate == 44100
