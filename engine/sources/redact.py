"""Keep secrets (Hub tokens, AWS keys, passwords in URLs) out of logs and error messages.

Every message this package builds about a source goes through `redact`, and every `Source`
exposes only a redacted `uri`. `RedactingFilter` lets an application (the server) scrub the
records of *other* libraries too (botocore, huggingface_hub) by attaching it to its handlers.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import traceback

MASK = "***"

# Environment variables whose values are secrets wherever they show up.
SECRET_ENV_VARS = (
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HUGGINGFACE_HUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
)

_secrets: set[str] = set()
_secrets_lock = threading.Lock()

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]+)@")
_SECRET_QUERY = re.compile(
    r"(?P<key>[?&;](?:token|access_token|auth|authorization|api[_-]?key|key|secret|password|"
    r"passwd|pwd|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token)=)"
    r"(?P<value>[^&;#\s\"']+)",
    re.IGNORECASE,
)
_BEARER = re.compile(
    r"(?P<key>\b(?:Bearer|token)\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE
)
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{16,}\b")
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")
# SigV4 pieces in botocore's debug output: "Credential=<key id>/<date>/...", "Signature=<hex>".
_SIGV4 = re.compile(r"(?P<key>\b(?:Credential|Signature)=)(?P<value>[^,/\s\"']+)")


def register_secret(secret: str | None) -> None:
    """Remember a secret (e.g. a token passed to a constructor) so `redact` masks it verbatim."""
    if secret and len(secret) >= 4:
        with _secrets_lock:
            _secrets.add(secret)


def _known_secrets() -> list[str]:
    found = [os.environ.get(name, "") for name in SECRET_ENV_VARS]
    with _secrets_lock:
        found.extend(_secrets)
    # Longest first so a secret that contains another is masked whole.
    return sorted({s for s in found if s and len(s) >= 4}, key=len, reverse=True)


def redact(text: object) -> str:
    """`text` as a string with every secret we know of, or can recognise, replaced by ***."""
    out = str(text)
    for secret in _known_secrets():
        out = out.replace(secret, MASK)
    out = _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", out)
    out = _SECRET_QUERY.sub(lambda m: m.group("key") + MASK, out)
    out = _BEARER.sub(lambda m: m.group("key") + MASK, out)
    out = _HF_TOKEN.sub("hf_" + MASK, out)
    out = _AWS_KEY_ID.sub(MASK, out)
    out = _SIGV4.sub(lambda m: m.group("key") + MASK, out)
    return out


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs secrets from a record's message and traceback.

    Attach it to *handlers* (not loggers) so that records propagated from any library pass
    through it: ``handler.addFilter(RedactingFilter())``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken %-format: leave it to the formatter to report
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = redact(text)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
