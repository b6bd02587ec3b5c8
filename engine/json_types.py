"""JSON as the engine keeps it (stamps, reports, configs): the types, a leaf module."""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]
"""A value `json.loads` can give."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object."""
