"""The subcommands of ``wyoming-hayakoe``: their names and summaries, and where each lives.

A leaf: the settings (``--help``), `__main__` (dispatch) and the configuration reference read
it without importing the commands, which import the settings.
"""

from __future__ import annotations

COMMANDS_PACKAGE = "wyoming_hayakoe.commands"
"""The package that holds one module per subcommand."""

SUBCOMMANDS: dict[str, str] = {
    "export": "Export a voice to ONNX (and quantize) into hayakoe's layout",
    "download": "Download voices (and the BERT) into the cache for offline use",
    "export-bert": "Export the BERT to ONNX (fp32 and int8)",
    "dict": "Check a user dictionary file (dict check FILE...): every bad line is reported",
    "quantize": "Make a voice's int8 graphs and check them against fp32 (fidelity gate)",
    "library": "List, add and remove the voices of a stopped server's voice library",
    "say": "Speak text once: to a WAV file, stdout or the sound card (here or via a server)",
}
"""Subcommand → one-line summary (shown by ``wyoming-hayakoe --help``)."""


def module_name(subcommand: str) -> str:
    """The module that implements `subcommand`."""
    return f"{COMMANDS_PACKAGE}.{subcommand.replace('-', '_')}"
