"""Subcommands of ``wyoming-hayakoe`` (``export``, ``download``, ``export-bert``, ``dict``,
``quantize``, ``say``).

Each is a module ``wyoming_hayakoe.commands.<name_with_underscores>`` with
``main(argv: list[str]) -> int``; `wyoming_hayakoe.__main__` dispatches to it by the first
argument (the table is `wyoming_hayakoe.subcommands`). Without a subcommand the program is
the server.
"""
