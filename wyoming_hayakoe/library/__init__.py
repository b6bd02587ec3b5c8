"""The voice library: voices installed, removed and updated while the server runs (from
AivisHub, Hugging Face or an upload), kept in one folder with one small state file
(`state`), installed as jobs (`jobs`) by `manager.Library`; `options` holds its flags.

Modules: `options` (flags → `LibrarySettings`), `state` (the state file, atomic, locked,
watched), `hub` (AivisHub's API: page URL / UUID → model → checked download), `sources`
(what the user typed → where from; no arbitrary URL), `memory` (the guard), `jobs` (an
install's progress), `manager` (`Library`)."""

from .options import LibrarySettings

__all__ = ["LibrarySettings"]
