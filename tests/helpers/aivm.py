"""AivisHub voice files for tests, made the way published ones are.

`.aivmx`: our PyTorch JP-Extra network exported in the form of Style-Bert-VITS2's
`convert_onnx.py` (which AivisHub files come from, and which is on no package index):
AivisSpeech's input names and order (`x_tst`, `x_tst_lengths`, `sid`, `tones`, `language`,
`bert`, `style_vec`, then 0-d float scalars `length_scale`, `sdp_ratio`, `noise_scale`,
`noise_scale_w`), the seven outputs of upstream's `infer` (`output`, then the alignment,
`y_mask`, `z`, `z_p`, `m_p`, `logs_p`, unnamed), opset 18, noise drawn inside the graph
(RandomNormalLike), simplified by onnxslim. Its metadata is written by aivmlib itself.

`.aivm`: a Safetensors checkpoint with aivmlib's metadata in the header."""

from __future__ import annotations

import io
import json
import uuid as uuidlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from tests.helpers.paths import MODEL_SMALL

AIVIS_INPUTS = [
    "x_tst",
    "x_tst_lengths",
    "sid",
    "tones",
    "language",
    "bert",
    "style_vec",
    "length_scale",
    "sdp_ratio",
    "noise_scale",
    "noise_scale_w",
]
LICENSE = "ACML 1.0\n\nAivis Common Model License 1.0 (test text): credit the creators."


class AivisGraph(nn.Module):
    """Upstream JP-Extra `infer` as convert_onnx exports it: seven outputs."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        x,
        x_lengths,
        sid,
        tone,
        language,
        bert,
        style_vec,
        length_scale,
        sdp_ratio,
        noise_scale,
        noise_scale_w,
    ):
        from engine.model.layers import length_mask

        m = self.model
        enc = m.encode(x, x_lengths, sid, tone, language, bert, style_vec)
        logw = m.log_durations(enc, sdp_ratio, noise_scale_w, None)
        w_ceil = m.frames(logw, enc.x_mask, length_scale)
        y_lengths = torch.clamp_min(torch.sum(w_ceil, [1, 2]), 1).long()
        n_frames = y_lengths.max()
        y_mask = length_mask(y_lengths, n_frames).unsqueeze(1).to(enc.x_mask.dtype)
        cum = torch.cumsum(w_ceil.squeeze(1), -1)
        idx = torch.arange(n_frames, dtype=cum.dtype)
        upper = idx.view(1, 1, -1) < cum.unsqueeze(-1)
        lower = idx.view(1, 1, -1) < (cum - w_ceil.squeeze(1)).unsqueeze(-1)
        path = (upper & ~lower).to(enc.m_p.dtype) * enc.x_mask.transpose(1, 2) * y_mask  # [b,t,f]
        attn = path.transpose(1, 2).unsqueeze(1)  # [b, 1, f, t]
        m_p = torch.matmul(enc.m_p, path)
        logs_p = torch.matmul(enc.logs_p, path)
        z_p = m_p + torch.randn_like(m_p) * torch.exp(logs_p) * noise_scale
        z = m.flow.inverse(z_p, y_mask, g=enc.g)
        o = m.dec(z * y_mask, g=enc.g)
        return o, attn, y_mask, (z, z_p, m_p, logs_p)


def export_aivis_onnx(model: nn.Module, path: Path) -> Path:
    """Write `model` as AivisSpeech's ONNX graph (see the module doc), simplified."""
    import onnx
    import onnxslim

    cfg = model.config
    t = 20
    gen = torch.Generator().manual_seed(0)
    args = (
        torch.randint(1, cfg.n_vocab, (1, t), generator=gen),
        torch.tensor([t], dtype=torch.int64),
        torch.tensor([0], dtype=torch.int64),
        torch.randint(0, cfg.n_tones, (1, t), generator=gen),
        torch.ones(1, t, dtype=torch.int64),
        torch.randn(1, cfg.model.bert_channels, t, generator=gen),
        torch.randn(1, cfg.style_dim, generator=gen),
        torch.tensor(1.0),
        torch.tensor(0.0),
        torch.tensor(0.667),
        torch.tensor(0.8),
    )
    raw = path.with_suffix(".raw.onnx")
    model.eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            AivisGraph(model),
            args,
            str(raw),
            input_names=AIVIS_INPUTS,
            output_names=["output"],
            dynamic_axes={
                "x_tst": {0: "batch_size", 1: "x_tst_max_length"},
                "x_tst_lengths": {0: "batch_size"},
                "sid": {0: "batch_size"},
                "tones": {0: "batch_size", 1: "x_tst_max_length"},
                "language": {0: "batch_size", 1: "x_tst_max_length"},
                "bert": {0: "batch_size", 2: "x_tst_max_length"},
                "style_vec": {0: "batch_size"},
            },
            opset_version=18,
            do_constant_folding=True,
            dynamo=False,
        )
    slim = onnxslim.slim(onnx.load(str(raw)))
    raw.unlink()
    onnx.save(slim, str(path))
    return path


@dataclass
class Speaker:
    name: str
    local_id: int
    styles: dict[str, int]  # name -> row of the style vectors
    uuid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    """The speaker's UUID: a new version of a model keeps it (AivisSpeech's style IDs are
    made from it), so a spec written again as another version keeps it too."""


@dataclass
class Spec:
    """What to put in the manifest."""

    name: str
    speakers: list[Speaker]
    uuid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    version: str = "1.0.0"
    creators: list[str] = field(default_factory=lambda: ["Test Creator"])
    license: str | None = LICENSE


def aivm_metadata(config: dict, vectors: np.ndarray, spec: Spec):
    """aivmlib's `AivmMetadata` for a model with `config` (upstream config.json dict)."""
    import aivmlib
    from aivmlib.schemas.aivm_manifest import ModelArchitecture

    cfg = json.loads(json.dumps(config))
    cfg["data"]["spk2id"] = {s.name: s.local_id for s in spec.speakers}
    style2id: dict[str, int] = {}
    for s in spec.speakers:
        style2id.update(s.styles)
    cfg["data"]["style2id"] = style2id
    cfg["data"]["num_styles"] = len(style2id)
    buf = io.BytesIO()
    np.save(buf, vectors)
    meta = aivmlib.generate_aivm_metadata(
        ModelArchitecture.StyleBertVITS2JPExtra,
        io.BytesIO(json.dumps(cfg).encode()),
        io.BytesIO(buf.getvalue()),
    )
    meta.manifest.name = spec.name
    meta.manifest.uuid = uuidlib.UUID(spec.uuid)
    meta.manifest.version = spec.version
    meta.manifest.creators = list(spec.creators)
    meta.manifest.license = spec.license
    for sp_manifest, sp in zip(meta.manifest.speakers, spec.speakers, strict=True):
        # aivmlib gives every speaker every style (and names Neutral "ノーマル")
        sp_manifest.uuid = uuidlib.UUID(sp.uuid)  # aivmlib draws a new one each time
        rows = set(sp.styles.values())
        sp_manifest.styles = [st for st in sp_manifest.styles if st.local_id in rows]
    return meta


def write_aivmx(onnx_path: Path, out: Path, config: dict, vectors: np.ndarray, spec: Spec) -> Path:
    """`onnx_path` with aivmlib's metadata, as `out` (.aivmx)."""
    import aivmlib

    meta = aivm_metadata(config, vectors, spec)
    with onnx_path.open("rb") as f:
        data = aivmlib.write_aivmx_metadata(f, meta)
    out.write_bytes(data)
    return out


def write_aivm(checkpoint: Path, out: Path, config: dict, vectors: np.ndarray, spec: Spec) -> Path:
    """The Safetensors `checkpoint` with aivmlib's metadata, as `out` (.aivm)."""
    import aivmlib

    meta = aivm_metadata(config, vectors, spec)
    with checkpoint.open("rb") as f:
        data = aivmlib.write_aivm_metadata(f, meta)
    out.write_bytes(data)
    return out


def small_model(
    *, n_speakers: int, bert_channels: int = 1024, seed: int = 0, decoder_channels: int = 0
):
    """(model, config dict, style vectors): model_small's size with random weights, audible;
    `decoder_channels` widens the decoder (its `upsample_initial_channel`; 0: model_small's)."""
    from engine.model import JPExtraSynthesizer
    from engine.voice_config import parse_config

    cfg = json.loads((MODEL_SMALL / "config.json").read_text())
    cfg["model"]["bert_channels"] = bert_channels
    if decoder_channels:
        cfg["model"]["upsample_initial_channel"] = decoder_channels
    cfg["data"]["n_speakers"] = n_speakers
    torch.manual_seed(seed)
    model = JPExtraSynthesizer(parse_config(cfg))
    with torch.no_grad():
        model.dp.proj.bias.fill_(1.0)
        for p in model.dec.parameters():
            p.mul_(1.5)
    model.eval()
    vectors = np.load(MODEL_SMALL / "style_vectors.npy").astype(np.float32)
    return model, cfg, vectors


def save_checkpoint(model: nn.Module, path: Path) -> Path:
    from safetensors.torch import save_file

    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path))
    return path


@dataclass(frozen=True)
class AivmFixtures:
    """The test files (BERT width 64, like the layout root's test BERT)."""

    one: Path
    """.aivmx, one speaker with three styles (Neutral written as ノーマル by aivmlib)."""
    multi: Path
    """.aivmx, two speakers: "Alice" (ノーマル, Happy) and "Bob" (Sad, Happy)."""
    aivm: Path
    """.aivm, one speaker ("Carol": Angry, Calm; no Neutral)."""
    one_spec: Spec
    multi_spec: Spec
    aivm_spec: Spec
    graphs: Path
    """Folder with the plain ONNX graphs (`one.onnx`, `multi.onnx`, no metadata) and
    checkpoints (`one.safetensors`), for writing damaged files."""
    configs: dict[str, dict]
    vectors: np.ndarray


BERT_WIDTH = 64


def build_fixtures(root: Path) -> AivmFixtures:
    """Make the test files under `root` (two ONNX exports: about a minute)."""
    torch.set_num_threads(1)
    root.mkdir(parents=True, exist_ok=True)
    graphs = root / "graphs"
    graphs.mkdir(exist_ok=True)
    voices = root / "voices"
    voices.mkdir(exist_ok=True)
    one_model, one_cfg, vectors = small_model(n_speakers=1, bert_channels=BERT_WIDTH, seed=1)
    multi_model, multi_cfg, _ = small_model(n_speakers=2, bert_channels=BERT_WIDTH, seed=2)
    export_aivis_onnx(one_model, graphs / "one.onnx")
    export_aivis_onnx(multi_model, graphs / "multi.onnx")
    save_checkpoint(one_model, graphs / "one.safetensors")
    one_spec = Spec(
        "Tsukuyomi Test",
        [Speaker("つくよみ", 0, {"Neutral": 0, "Happy": 1, "Sad": 2})],
        creators=["Test Creator"],
    )
    multi_spec = Spec(
        "ふたり",  # no ASCII in the name: the voices are named from the uuid
        [
            Speaker("Alice", 0, {"Neutral": 0, "Happy": 1}),
            Speaker("Bob", 1, {"Sad": 2, "Happy": 1}),
        ],
        creators=["Duo Maker"],
        license="CC0 1.0 Universal",
    )
    aivm_spec = Spec(
        "Carol Voice",
        [Speaker("Carol", 0, {"Angry": 2, "Calm": 1})],
        creators=["Carol Creator"],
        license="ACML-NC 1.0\n\nNon-commercial use only.",
    )
    write_aivmx(graphs / "one.onnx", voices / "tsukuyomi.aivmx", one_cfg, vectors, one_spec)
    write_aivmx(graphs / "multi.onnx", voices / "futari.aivmx", multi_cfg, vectors, multi_spec)
    write_aivm(graphs / "one.safetensors", voices / "carol.aivm", one_cfg, vectors, aivm_spec)
    return AivmFixtures(
        voices / "tsukuyomi.aivmx",
        voices / "futari.aivmx",
        voices / "carol.aivm",
        one_spec,
        multi_spec,
        aivm_spec,
        graphs,
        {"one": one_cfg, "multi": multi_cfg},
        vectors,
    )
