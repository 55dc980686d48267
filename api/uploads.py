"""Reading a ``multipart/form-data`` upload from a byte stream, within a size limit.

The body is parsed as it arrives: reading stops at the first byte over the limit (and
before any byte when ``Content-Length`` already says too much), and a file whose name has
an unsupported extension is refused as soon as its part's headers are in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from python_multipart.multipart import MultipartParser, parse_options_header

from agent.ingest.document import UnsupportedDocument, Upload
from agent.ingest.parse import file_type_for
from agent.refusals import Refused

MAX_FIELDS_BYTES = 64 * 1024
"""All the form's text fields (title, tags, corpus) together."""
MAX_PARTS = 16
_OVERHEAD = MAX_FIELDS_BYTES + 16 * 1024
"""Body bytes beyond the file itself that a legitimate form may need (fields, boundaries)."""


def too_large(max_bytes: int) -> Refused:
    """The refusal for an upload over ``max_bytes``."""
    return Refused("too_large", f"the upload is larger than the limit of {max_bytes:,} bytes")


def _base_name(raw: bytes) -> str:
    name = raw.decode("utf-8", "replace").replace("\\", "/").rsplit("/", 1)[-1]
    return name.strip()


class _Collector:
    """Parser callbacks: gather the file part's bytes and the text fields, within limits."""

    def __init__(self, file_field: str, max_bytes: int) -> None:
        self.file_field = file_field
        self.max_bytes = max_bytes
        self.filename: str | None = None
        self.data = bytearray()
        self.fields: dict[str, str] = {}
        self.error: Refused | None = None
        self._parts = 0
        self._field_bytes = 0
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._disposition = b""
        self._name: str | None = None
        self._is_file = False
        self._value = bytearray()

    def _fail(self, refusal: Refused) -> None:
        if self.error is None:
            self.error = refusal

    def on_part_begin(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            self._fail(Refused("invalid_source", f"the form has more than {MAX_PARTS} parts"))
        self._disposition, self._name, self._is_file = b"", None, False
        self._value = bytearray()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        if bytes(self._header_name).lower() == b"content-disposition":
            self._disposition = bytes(self._header_value)
        self._header_name, self._header_value = bytearray(), bytearray()

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        self._name = options.get(b"name", b"").decode("utf-8", "replace")
        self._is_file = self._name == self.file_field
        if not self._is_file:
            return
        if self.filename is not None:
            self._fail(Refused("invalid_source", f"send one '{self.file_field}' only"))
            return
        self.filename = _base_name(options.get(b"filename", b""))
        if not self.filename:
            self._fail(Refused("invalid_source", "the uploaded file has no file name"))
            return
        try:
            file_type_for(self.filename)
        except UnsupportedDocument as exc:
            self._fail(Refused("unsupported_type", str(exc)))

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.error is not None:
            return
        if self._is_file:
            if len(self.data) + (end - start) > self.max_bytes:
                self._fail(too_large(self.max_bytes))
                return
            self.data += data[start:end]
            return
        self._field_bytes += end - start
        if self._field_bytes > MAX_FIELDS_BYTES:
            self._fail(Refused("too_large", "the form's text fields are too long"))
            return
        self._value += data[start:end]

    def on_part_end(self) -> None:
        if not self._is_file and self._name and self.error is None:
            self.fields[self._name] = self._value.decode("utf-8", "replace")

    def callbacks(self) -> dict:
        """The callbacks in the shape :class:`MultipartParser` takes."""
        names = (
            "on_part_begin",
            "on_header_field",
            "on_header_value",
            "on_header_end",
            "on_headers_finished",
            "on_part_data",
            "on_part_end",
        )
        return {name: getattr(self, name) for name in names}


async def read_upload(
    content_type: str | None,
    content_length: str | None,
    stream: AsyncIterator[bytes],
    *,
    max_bytes: int,
    file_field: str = "file",
) -> Upload:
    """Parse a multipart body and return its ``file_field`` file and text fields.

    Raises :class:`Refused`: ``too_large`` as soon as the file passes ``max_bytes``,
    ``unsupported_type`` for a file name Quire cannot read, ``invalid_source`` for a body
    that is not a multipart form with exactly one file.
    """
    kind, options = parse_options_header(content_type or "")
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise Refused(
            "invalid_source", f"send multipart/form-data with the document as '{file_field}'"
        )
    try:
        declared = int(content_length) if content_length else None
    except ValueError:
        declared = None
    if declared is not None and declared > max_bytes + _OVERHEAD:
        raise too_large(max_bytes)  # refused before reading a byte
    collector = _Collector(file_field, max_bytes)
    parser = MultipartParser(boundary, collector.callbacks())
    received = 0
    try:
        async for chunk in stream:
            received += len(chunk)
            if received > max_bytes + _OVERHEAD:
                raise too_large(max_bytes)
            parser.write(chunk)
            if collector.error is not None:
                raise collector.error
        parser.finalize()
    except ValueError as exc:  # python-multipart's parse errors
        if isinstance(exc, Refused):
            raise
        raise Refused("invalid_source", f"the multipart body is malformed: {exc}") from None
    if collector.error is not None:
        raise collector.error
    if collector.filename is None:
        raise Refused("invalid_source", f"the form has no '{file_field}' file")
    return Upload(collector.filename, bytes(collector.data), collector.fields)
