"""The library's refusals and failures as domain errors: a `Code` (what the page shows in
its own language), one English sentence, and the field at fault. No HTTP status here: the
web layer's one table (`wyoming_hayakoe.web.library`) maps a code to a status, the CLI maps
it to an exit status, a job keeps it as its ``error_code``."""

from __future__ import annotations

from enum import Enum

from ..errors import HayakoeError

__all__ = ["Code", "LibraryError"]


class Code(str, Enum):
    """What went wrong, in a word the page can translate (docs/web.md lists them)."""

    NAME_INVALID = "name_invalid"
    NAME_TAKEN = "name_taken"
    ALREADY_INSTALLED = "already_installed"
    NOT_IN_LIBRARY = "not_in_library"
    CONFIGURED_VOICE = "configured_voice"
    IN_USE = "in_use"
    SOURCE_INVALID = "source_invalid"
    FILE_INVALID = "file_invalid"
    NOT_SUPPORTED = "not_supported"
    MEMORY = "memory"
    HUB_UNREACHABLE = "hub_unreachable"
    SOURCE_UNREACHABLE = "source_unreachable"
    """Hugging Face (an official or ``hf://`` voice) could not be reached."""
    HUB_ERROR = "hub_error"
    TOO_LARGE = "too_large"
    DISK_FULL = "disk_full"
    QUEUE_FULL = "queue_full"
    BERT_MISSING = "bert_missing"
    JOB_NOT_FOUND = "job_not_found"
    JOB_ENDED = "job_ended"
    JOB_BUSY = "job_busy"
    THROTTLED = "throttled"
    LIBRARY_OFF = "library_off"
    LOAD_FAILED = "load_failed"
    INTERNAL = "internal"

    def __str__(self) -> str:
        return str(self.value)


class LibraryError(HayakoeError):
    """A library request refused or a job failed: `code`, one sentence, the field at fault
    (None when no one field is)."""

    def __init__(self, code: Code, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
