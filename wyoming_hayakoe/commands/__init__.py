"""Subcommands of ``wyoming-hayakoe`` (``export``, ``download``, ``export-bert``, ``dict``,
``quantize``, ``say``).

Each is a module ``wyoming_hayakoe.commands.<name_with_underscores>`` with
``main(argv: list[str]) -> int``; `wyoming_hayakoe.__main__` dispatches to it by the first
argument. Without a subcommand the program is the server.
"""

from __future__ import annotations

SUBCOMMANDS: dict[str, str] = {
    "export": "Export a voice to ONNX (and quantize) into hayakoe's layout",
    "download": "Download voices (and the BERT) into the cache for offline use",
    "export-bert": "Export the BERT to ONNX (fp32 and int8)",
    "dict": "Check a user dictionary file (dict check FILE...): every bad line is reported",
    "quantize": "Make a voice's int8 graphs and check them against fp32 (fidelity gate)",
    "say": "Speak text once: to a WAV file, stdout or the sound card (here or via a server)",
}
"""Subcommand → one-line summary (shown by ``wyoming-hayakoe --help``)."""


def module_name(subcommand: str) -> str:
    """The module that implements `subcommand`."""
    return f"{__name__}.{subcommand.replace('-', '_')}"
