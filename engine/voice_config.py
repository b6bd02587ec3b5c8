"""Typed hyper-parameters of a Style-Bert-VITS2 JP-Extra voice, read from its `config.json`.

The file format is upstream's (`configs/config_jp_extra.json`). Like upstream's pydantic model,
missing keys take the JP-Extra defaults and unknown keys are ignored, so configs written by
any Style-Bert-VITS2 / hayakoe version load. Only JP-Extra voices are supported: a `version`
that does not end with "JP-Extra" is rejected with an error naming the file.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import EngineError
from .json_types import JsonObject

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_LOGGER = logging.getLogger(__name__)

T = TypeVar("T", bound="DataclassInstance")


class ConfigError(EngineError, ValueError):
    """A voice `config.json` that cannot be used (names the file and the field)."""


@dataclass(frozen=True)
class DataConfig:
    """The `data` section: audio format, speakers and styles."""

    sampling_rate: int = 44100
    hop_length: int = 512
    filter_length: int = 2048
    add_blank: bool = True
    n_speakers: int = 1
    spk2id: dict[str, int] = field(default_factory=lambda: {"Dummy": 0})
    num_styles: int = 1
    style2id: dict[str, int] = field(default_factory=lambda: {"Neutral": 0})
    use_jp_extra: bool = False


@dataclass(frozen=True)
class ModelConfig:
    """The `model` section: network sizes (JP-Extra defaults)."""

    inter_channels: int = 192
    hidden_channels: int = 192
    filter_channels: int = 768
    n_heads: int = 2
    n_layers: int = 6
    kernel_size: int = 3
    p_dropout: float = 0.1
    resblock: str = "1"
    resblock_kernel_sizes: list[int] = field(default_factory=lambda: [3, 7, 11])
    resblock_dilation_sizes: list[list[int]] = field(
        default_factory=lambda: [[1, 3, 5], [1, 3, 5], [1, 3, 5]]
    )
    upsample_rates: list[int] = field(default_factory=lambda: [8, 8, 2, 2, 2])
    upsample_initial_channel: int = 512
    upsample_kernel_sizes: list[int] = field(default_factory=lambda: [16, 16, 8, 2, 2])
    gin_channels: int = 512
    use_spk_conditioned_encoder: bool = True
    bert_channels: int = 1024
    """Width of the BERT features fed to the text encoder. Not an upstream key (upstream
    hard-codes 1024); it exists so tests can pair a synthesizer with a tiny BERT."""


@dataclass(frozen=True)
class VoiceConfig:
    """A whole `config.json`."""

    version: str = "2.0-JP-Extra"
    model_name: str = "Dummy"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)

    # Values hard-coded in the JP-Extra constructor (not expressible in config.json).
    n_layers_trans_flow: int = 6
    n_flow_layer: int = 4
    flow_kernel_size: int = 5
    dp_filter_channels: int = 256
    n_vocab: int = 112
    n_tones: int = 12
    n_languages: int = 3
    style_dim: int = 256

    @property
    def hop_length(self) -> int:
        return self.data.hop_length

    @property
    def sample_rate(self) -> int:
        return self.data.sampling_rate

    @property
    def styles(self) -> list[str]:
        """Style names in row order of `style_vectors.npy`."""
        return [name for name, _ in sorted(self.data.style2id.items(), key=lambda kv: kv[1])]

    def to_dict(self) -> JsonObject:
        """The config in upstream JSON shape (only the keys this engine knows)."""
        return {
            "model_name": self.model_name,
            "version": self.version,
            "data": dataclasses.asdict(self.data),
            "model": dataclasses.asdict(self.model),
        }


def _build(cls: type[T], raw: Any, where: str) -> T:
    """Build dataclass `cls` from mapping `raw`, keeping only known keys."""
    if raw is None:
        return cls()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, got {type(raw).__name__}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        f = known.get(key)
        if f is None:
            continue
        kwargs[key] = _coerce(value, f, f"{where}.{key}")
    return cls(**kwargs)


def _coerce(value: Any, f: dataclasses.Field[Any], where: str) -> Any:
    if f.default is not dataclasses.MISSING:
        default = f.default
    elif f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    else:
        default = None
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return int(value)
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    if isinstance(default, dict):
        if not isinstance(value, Mapping) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value.values()
        ):
            raise ConfigError(f"{where}: expected an object of integers, got {value!r}")
        return {str(k): int(v) for k, v in value.items()}
    if isinstance(default, list):
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return value
    return value


def parse_config(raw: Mapping[str, object], source: str = "config.json") -> VoiceConfig:
    """Validate a decoded `config.json` mapping. `source` names the file in errors."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: top level must be an object")
    version = raw.get("version", VoiceConfig.version)
    if not isinstance(version, str) or not version.endswith("JP-Extra"):
        raise ConfigError(
            f"{source}: version {version!r} is not a JP-Extra model; only Style-Bert-VITS2 "
            "JP-Extra voices (version ending with 'JP-Extra') are supported"
        )
    model_name = raw.get("model_name", "Dummy")
    cfg = VoiceConfig(
        version=version,
        model_name=str(model_name),
        data=_build(DataConfig, raw.get("data"), f"{source}: data"),
        model=_build(ModelConfig, raw.get("model"), f"{source}: model"),
    )
    _check(cfg, source)
    return cfg


def _check(cfg: VoiceConfig, source: str) -> None:
    m = cfg.model
    if m.n_layers < 3:
        raise ConfigError(f"{source}: model.n_layers must be at least 3 (got {m.n_layers})")
    if m.hidden_channels % m.n_heads:
        raise ConfigError(f"{source}: model.hidden_channels must be divisible by model.n_heads")
    if m.inter_channels % 2:
        raise ConfigError(f"{source}: model.inter_channels must be even")
    if m.resblock not in ("1", "2"):
        raise ConfigError(f'{source}: model.resblock must be "1" or "2" (got {m.resblock!r})')
    if len(m.upsample_rates) != len(m.upsample_kernel_sizes):
        raise ConfigError(
            f"{source}: model.upsample_rates and model.upsample_kernel_sizes differ in length"
        )
    if len(m.resblock_kernel_sizes) != len(m.resblock_dilation_sizes):
        raise ConfigError(
            f"{source}: model.resblock_kernel_sizes and model.resblock_dilation_sizes differ in "
            "length"
        )
    product = 1
    for r in m.upsample_rates:
        product *= int(r)
    if product != cfg.data.hop_length:
        _LOGGER.warning(
            "%s: product of upsample_rates (%d) differs from data.hop_length (%d)",
            source,
            product,
            cfg.data.hop_length,
        )
    if not cfg.data.style2id:
        raise ConfigError(f"{source}: data.style2id is empty")


def load_config(path: str | Path) -> VoiceConfig:
    """Read and validate `config.json` at `path`."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON ({exc})") from None
    return parse_config(raw, str(path))
