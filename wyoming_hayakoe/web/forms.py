"""The page's multipart forms (an upload to the voice library) read so that a form aiohttp
cannot parse is a 400 naming the part, not a 500.

aiohttp raises `BadHttpMessage` for a part header it cannot parse (a raw line break inside a
header value: ``filename="a<CR><LF>b.aivmx"``, a control character in a header's name) and
`ValueError` for a form without a boundary, a body that does not begin with one or ends
before its closing one, a nested form without a boundary. `read_form` gives the same
`MultipartReader` with those turned into `ApiError` (400 ``bad_request``, ``field``: the
part's name when it is known, else ``form``; the message names the part by its place, 1 for
the first).
"""

from __future__ import annotations

from aiohttp import BodyPartReader, MultipartReader, web
from aiohttp.http_exceptions import BadHttpMessage

from .errors import ApiError

__all__ = ["FormReader", "read_form"]


def _unreadable(index: int, name: str | None, why: str) -> ApiError:
    named = f" ({name!r})" if name else ""
    return ApiError(400, "bad_request", f"form part {index}{named}: {why}", name or "form")


class _Part(BodyPartReader):
    """A part of a `FormReader`: content it cannot read (the body ends before the part's
    boundary) an `ApiError` naming the part."""

    index = 0
    """The part's place in the form (1 for the first), set by `FormReader.next`."""

    async def read_chunk(self, size: int = BodyPartReader.chunk_size) -> bytes:
        try:
            return await super().read_chunk(size)
        except ValueError as exc:
            raise _unreadable(
                self.index, self.name, f"its content cannot be read ({exc})"
            ) from None


class FormReader(MultipartReader):
    """aiohttp's reader of a multipart body; what it cannot parse an `ApiError`."""

    part_reader_cls = _Part
    multipart_reader_cls = MultipartReader  # a nested form: skipped by the page, read plainly

    _count = 0

    async def next(self) -> MultipartReader | BodyPartReader | None:
        self._count += 1
        try:
            part = await super().next()
        except BadHttpMessage as exc:
            why = f"its headers cannot be read (a line break inside a value?): {exc.message}"
            raise _unreadable(self._count, None, why) from None
        except ValueError as exc:
            raise _unreadable(self._count, None, f"cannot be read ({exc})") from None
        if isinstance(part, _Part):
            part.index = self._count
        return part


async def read_form(request: web.Request) -> FormReader:
    """The request's multipart body, as `request.multipart()` reads it, within the same
    bounds; a form without a boundary is an `ApiError` (400, ``form``)."""
    try:
        return FormReader(
            request.headers,
            request.content,
            client_max_size=request.client_max_size,
            max_field_size=request.protocol.max_field_size,
            max_headers=request.protocol.max_headers,
            max_size_error_cls=web.HTTPRequestEntityTooLarge,
        )
    except ValueError as exc:
        raise ApiError(400, "bad_request", f"the form cannot be read: {exc}", "form") from None
