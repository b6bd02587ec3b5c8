"""Reading the metadata of AivisHub voice files (`.aivmx`, `.aivm`) without loading weights.

Both formats carry three string entries (the AIVM specification, reference implementation
`aivmlib`, MIT): `aivm_manifest` (JSON: name, uuid, version, creators, license,
architecture, speakers and their styles), `aivm_hyper_parameters` (the Style-Bert-VITS2
`config.json`) and `aivm_style_vectors` (base64 of the `.npy` bytes).

- `.aivmx` is an ONNX model: the entries are its `metadata_props` (ModelProto field 14).
  They are found by walking the protobuf's top-level fields and skipping the others by
  their length, so the graph (hundreds of MB) is never parsed here.
- `.aivm` is a Safetensors file: the entries are the `__metadata__` of its JSON header.

Every problem is an `AivmFileError` naming the file and the reason. Sizes are bounded
(`MAX_METADATA_BYTES`, like aivmlib's header limit) before anything is read into memory.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import EngineError
from ..json_types import JsonObject
from ..voice_config import ConfigError, VoiceConfig, parse_config

_LOGGER = logging.getLogger(__name__)

AIVMX_SUFFIX = ".aivmx"
AIVM_SUFFIX = ".aivm"
SUFFIXES = (AIVMX_SUFFIX, AIVM_SUFFIX)

MAX_METADATA_BYTES = 100 * 1024 * 1024
"""The most metadata (a Safetensors header, or one ONNX metadata entry) read from a file:
aivmlib's own limit for the header. Voice samples and icons make manifests large, but
not this large."""

MANIFEST_KEY = "aivm_manifest"
HYPER_PARAMETERS_KEY = "aivm_hyper_parameters"
STYLE_VECTORS_KEY = "aivm_style_vectors"

JP_EXTRA = "Style-Bert-VITS2 (JP-Extra)"
MANIFEST_MAJOR = "1"
MAX_STYLE_ID = 31
_SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


class AivmFileError(EngineError, ValueError):
    """An `.aivmx` / `.aivm` file that cannot be used; the message names the file and why."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


def is_aivm_path(text: str | Path) -> bool:
    """Whether `text` (a path or URI) names an AivisHub voice file by its suffix."""
    name = str(text).rsplit("/", 1)[-1].split("#", 1)[0].lower()
    return name.endswith(SUFFIXES)


@dataclass(frozen=True)
class AivmStyle:
    name: str
    local_id: int
    """Row of the style vectors (= the config's style2id value)."""


@dataclass(frozen=True)
class AivmSpeaker:
    name: str
    uuid: str
    local_id: int
    """The model's speaker id (`sid`, = the config's spk2id value)."""
    styles: tuple[AivmStyle, ...]

    @property
    def style2id(self) -> dict[str, int]:
        return {s.name: s.local_id for s in self.styles}


@dataclass(frozen=True)
class AivmManifest:
    manifest_version: str
    name: str
    uuid: str
    version: str
    architecture: str
    model_format: str
    creators: tuple[str, ...]
    license: str | None
    description: str
    speakers: tuple[AivmSpeaker, ...]


@dataclass(frozen=True)
class AivmMetadata:
    """Everything an AivisHub file says about itself (no weights)."""

    path: Path
    kind: str
    """"aivmx" (ONNX) or "aivm" (Safetensors)."""
    manifest: AivmManifest
    hyper_parameters: Mapping[str, object]
    """The decoded `aivm_hyper_parameters` (upstream `config.json` shape)."""
    config: VoiceConfig
    style_vectors: np.ndarray
    """float32 [styles, 256]."""

    @property
    def stamp(self) -> str:
        """What derived cache files are made from: `<uuid>@<version>`."""
        return f"{self.manifest.uuid}@{self.manifest.version}"

    def speaker_config(self, speaker: AivmSpeaker) -> VoiceConfig:
        """The model's config with `speaker`'s styles (manifest names, style-vector rows)."""
        data = replace(
            self.config.data,
            style2id=speaker.style2id,
            num_styles=len(speaker.styles),
            spk2id={speaker.name: speaker.local_id},
        )
        return replace(self.config, model_name=self.manifest.name, data=data)

    def model_config(self) -> VoiceConfig:
        """The config of the whole model: every style of every speaker, by row (a name
        that two rows share is told apart as `name#row`)."""
        rows: dict[int, str] = {}
        for sp in self.manifest.speakers:
            for st in sp.styles:
                rows.setdefault(st.local_id, st.name)
        style2id: dict[str, int] = {}
        for row, name in sorted(rows.items()):
            style2id[name if name not in style2id else f"{name}#{row}"] = row
        data = replace(self.config.data, style2id=style2id, num_styles=len(style2id))
        return replace(self.config, model_name=self.manifest.name, data=data)


# -- raw entries -----------------------------------------------------------------------


def _read_varint(f: BinaryIO, path: Path, what: str) -> int:
    shift = 0
    value = 0
    while True:
        b = f.read(1)
        if not b:
            raise AivmFileError(path, f"truncated ONNX file (ends inside {what})")
        value |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return value
        shift += 7
        if shift > 63:
            raise AivmFileError(path, f"not an ONNX file (bad varint in {what})")


def _parse_entry(data: bytes, path: Path) -> tuple[str, str]:
    """A StringStringEntryProto: field 1 key, field 2 value."""
    f = io.BytesIO(data)
    out = {1: b"", 2: b""}
    while f.tell() < len(data):
        tag = _read_varint(f, path, "a metadata entry")
        field, wire = tag >> 3, tag & 7
        if wire != 2:
            raise AivmFileError(path, "corrupted ONNX metadata entry (unexpected field type)")
        n = _read_varint(f, path, "a metadata entry")
        chunk = f.read(n)
        if len(chunk) < n:
            raise AivmFileError(path, "corrupted ONNX metadata entry (runs past its end)")
        if field in out:
            out[field] = chunk
    try:
        return out[1].decode("utf-8"), out[2].decode("utf-8")
    except UnicodeDecodeError:
        raise AivmFileError(path, "corrupted ONNX metadata entry (not UTF-8)") from None


def read_onnx_metadata_props(path: Path) -> dict[str, str]:
    """The `metadata_props` of the ONNX model at `path`, reading only them."""
    size = path.stat().st_size
    props: dict[str, str] = {}
    saw_graph = False
    with path.open("rb") as f:
        while f.tell() < size:
            tag = _read_varint(f, path, "a field tag")
            field, wire = tag >> 3, tag & 7
            if field == 0:
                raise AivmFileError(path, "not an ONNX file (field number 0)")
            if wire == 0:
                _read_varint(f, path, f"field {field}")
            elif wire == 1:
                f.seek(8, io.SEEK_CUR)
            elif wire == 5:
                f.seek(4, io.SEEK_CUR)
            elif wire == 2:
                n = _read_varint(f, path, f"field {field}")
                left = size - f.tell()
                if n > left:
                    what = "the graph" if field == 7 else f"field {field}"
                    raise AivmFileError(
                        path, f"truncated: {what} needs {n} bytes, only {left} are left"
                    )
                if field == 14:
                    if n > MAX_METADATA_BYTES:
                        raise AivmFileError(
                            path,
                            f"a metadata entry of {n} bytes is over the "
                            f"{MAX_METADATA_BYTES // (1024 * 1024)} MiB limit",
                        )
                    key, value = _parse_entry(f.read(n), path)
                    props[key] = value
                else:
                    saw_graph |= field == 7
                    f.seek(n, io.SEEK_CUR)
            else:
                raise AivmFileError(path, f"not an ONNX file (wire type {wire} at field {field})")
            if f.tell() > size:
                raise AivmFileError(path, f"truncated ONNX file (ends inside field {field})")
    if not saw_graph:
        raise AivmFileError(path, "not an ONNX model (it has no graph)")
    return props


def read_safetensors_header(path: Path) -> tuple[JsonObject, int]:
    """(header JSON, offset of the tensor data) of the Safetensors file at `path`."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise AivmFileError(path, "truncated: too short for a Safetensors header")
        (n,) = struct.unpack("<Q", head)
        if n > MAX_METADATA_BYTES:
            raise AivmFileError(
                path,
                f"Safetensors header of {n} bytes is over the "
                f"{MAX_METADATA_BYTES // (1024 * 1024)} MiB limit (not an .aivm file?)",
            )
        if n < 2 or 8 + n > size:
            raise AivmFileError(
                path, f"truncated: the header needs {n} bytes, the file has {size - 8} after 8"
            )
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AivmFileError(path, f"corrupted Safetensors header ({exc})") from None
    if not isinstance(header, dict):
        raise AivmFileError(path, "corrupted Safetensors header (not a JSON object)")
    end = max(
        (
            int(v["data_offsets"][1])
            for k, v in header.items()
            if k != "__metadata__" and isinstance(v, dict) and "data_offsets" in v
        ),
        default=0,
    )
    if 8 + n + end > size:
        raise AivmFileError(
            path, f"truncated: the tensors need {end} bytes, the file has {size - 8 - n}"
        )
    return header, 8 + n


def read_raw_metadata(path: Path) -> tuple[str, dict[str, str]]:
    """(kind, the string entries) of an `.aivmx` or `.aivm` file."""
    path = Path(path)
    if not path.is_file():
        raise AivmFileError(path, "no such file")
    suffix = path.suffix.lower()
    if suffix == AIVMX_SUFFIX:
        return "aivmx", read_onnx_metadata_props(path)
    if suffix == AIVM_SUFFIX:
        header, _ = read_safetensors_header(path)
        meta = header.get("__metadata__")
        if not isinstance(meta, dict):
            raise AivmFileError(path, "the Safetensors header has no __metadata__ (not an .aivm)")
        return "aivm", {str(k): str(v) for k, v in meta.items()}
    raise AivmFileError(path, f"not an AivisHub voice file (suffix {path.suffix!r})")


# -- typed metadata --------------------------------------------------------------------


def _str(raw: Mapping[str, object], key: str, path: Path, *, required: bool = True) -> str:
    value = raw.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise AivmFileError(path, f"manifest field {key!r} is missing or not a string")
    return value


def _int(raw: Mapping[str, object], key: str, path: Path, where: str) -> int:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AivmFileError(path, f"{where}: {key!r} must be a non-negative integer, got {value!r}")
    return value


def parse_manifest(text: str, path: Path) -> AivmManifest:
    """The typed manifest (checks what this engine relies on)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AivmFileError(path, f"aivm_manifest is not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise AivmFileError(path, "aivm_manifest is not a JSON object")
    mv = raw.get("manifest_version")
    if not isinstance(mv, str) or mv.split(".")[0] != MANIFEST_MAJOR:
        raise AivmFileError(
            path, f"unknown manifest version {mv!r} (this server reads AIVM manifest 1.x)"
        )
    if mv != "1.0":
        _LOGGER.warning("%s: manifest version %s is newer than 1.0; reading it as 1.0", path, mv)
    arch = _str(raw, "model_architecture", path)
    if arch != JP_EXTRA:
        raise AivmFileError(
            path,
            f"model architecture {arch!r} is not supported: only {JP_EXTRA!r} voices run here",
        )
    uuid = _str(raw, "uuid", path)
    if not _UUID.match(uuid):
        raise AivmFileError(path, f"manifest uuid {uuid!r} is not a UUID")
    version = _str(raw, "version", path)
    if not _SEMVER.match(version):
        raise AivmFileError(path, f"manifest version {version!r} is not a SemVer version")
    creators = raw.get("creators") or []
    if not isinstance(creators, list) or not all(isinstance(c, str) for c in creators):
        raise AivmFileError(path, "manifest field 'creators' must be a list of strings")
    license_text = raw.get("license")
    if license_text is not None and not isinstance(license_text, str):
        raise AivmFileError(path, "manifest field 'license' must be a string")
    speakers_raw = raw.get("speakers")
    if not isinstance(speakers_raw, list) or not speakers_raw:
        raise AivmFileError(path, "the manifest lists no speakers")
    speakers: list[AivmSpeaker] = []
    for i, sp in enumerate(speakers_raw):
        where = f"speakers[{i}]"
        if not isinstance(sp, dict):
            raise AivmFileError(path, f"{where} is not an object")
        styles_raw = sp.get("styles")
        if not isinstance(styles_raw, list) or not styles_raw:
            raise AivmFileError(path, f"{where} has no styles")
        styles: list[AivmStyle] = []
        for j, st in enumerate(styles_raw):
            if not isinstance(st, dict):
                raise AivmFileError(path, f"{where}.styles[{j}] is not an object")
            name = _str(st, "name", path)
            sid = _int(st, "local_id", path, f"{where}.styles[{j}]")
            if sid > MAX_STYLE_ID:
                raise AivmFileError(
                    path, f"style {name!r} has local_id {sid}, past the AIVM limit {MAX_STYLE_ID}"
                )
            if any(s.name == name for s in styles):
                raise AivmFileError(path, f"{where} lists style {name!r} twice")
            styles.append(AivmStyle(name, sid))
        speakers.append(
            AivmSpeaker(
                _str(sp, "name", path),
                str(sp.get("uuid") or ""),
                _int(sp, "local_id", path, where),
                tuple(styles),
            )
        )
    return AivmManifest(
        manifest_version=mv,
        name=_str(raw, "name", path),
        uuid=uuid.lower(),
        version=version,
        architecture=arch,
        model_format=_str(raw, "model_format", path, required=False),
        creators=tuple(creators),
        license=license_text,
        description=_str(raw, "description", path, required=False),
        speakers=tuple(speakers),
    )


def decode_style_vectors(text: str, path: Path) -> np.ndarray:
    """`aivm_style_vectors` (base64 of `.npy` bytes) as float32 [styles, dim]."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise AivmFileError(path, f"aivm_style_vectors is not base64 ({exc})") from None
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise AivmFileError(path, f"aivm_style_vectors is not a .npy array ({exc})") from None
    if not isinstance(arr, np.ndarray) or arr.ndim != 2 or arr.shape[0] < 1:
        shape = list(getattr(arr, "shape", []))
        raise AivmFileError(path, f"aivm_style_vectors must be [styles, dim], got shape {shape}")
    if not np.issubdtype(arr.dtype, np.floating) or not np.isfinite(arr).all():
        raise AivmFileError(path, "aivm_style_vectors must hold finite floating-point values")
    return arr.astype(np.float32)


def read_metadata(path: str | Path) -> AivmMetadata:
    """Read and check an `.aivmx` / `.aivm` file's metadata (see the module doc)."""
    path = Path(path)
    kind, props = read_raw_metadata(path)
    if MANIFEST_KEY not in props:
        raise AivmFileError(path, "no aivm_manifest in the file (not an AivisHub voice?)")
    manifest = parse_manifest(props[MANIFEST_KEY], path)
    if HYPER_PARAMETERS_KEY not in props:
        raise AivmFileError(path, "no aivm_hyper_parameters (the model's config) in the file")
    try:
        hp = json.loads(props[HYPER_PARAMETERS_KEY])
    except json.JSONDecodeError as exc:
        raise AivmFileError(path, f"aivm_hyper_parameters is not valid JSON ({exc})") from None
    try:
        config = parse_config(hp, f"{path}: aivm_hyper_parameters")
    except ConfigError as exc:
        raise AivmFileError(path, str(exc).removeprefix(f"{path}: ")) from None
    if STYLE_VECTORS_KEY not in props or not props[STYLE_VECTORS_KEY].strip():
        raise AivmFileError(path, "no aivm_style_vectors in the file (the styles cannot be used)")
    vectors = decode_style_vectors(props[STYLE_VECTORS_KEY], path)
    if vectors.shape[1] != config.style_dim:
        raise AivmFileError(
            path,
            f"style vectors are {vectors.shape[1]} wide, the model takes {config.style_dim}",
        )
    n_speakers = max(1, config.data.n_speakers)
    for sp in manifest.speakers:
        if sp.local_id >= n_speakers:
            raise AivmFileError(
                path,
                f"speaker {sp.name!r} has local_id {sp.local_id}, but the model has "
                f"{n_speakers} speaker(s)",
            )
        for st in sp.styles:
            if st.local_id >= len(vectors):
                raise AivmFileError(
                    path,
                    f"style {st.name!r} of speaker {sp.name!r} has local_id {st.local_id}, past "
                    f"the style vectors ({len(vectors)} rows)",
                )
    return AivmMetadata(path, kind, manifest, hp, config, vectors)


def license_summary(license_text: str | None, limit: int = 80) -> str:
    """A one-line name for the manifest's license text (its first non-empty line)."""
    if not license_text or not license_text.strip():
        return "no license given (ask the creators before using it)"
    first = next(line for line in license_text.splitlines() if line.strip())
    first = first.strip().lstrip("#").strip()
    return first if len(first) <= limit else first[: limit - 1] + "…"
