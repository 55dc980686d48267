"""Decode uploaded text (plain text, Markdown, HTML) in whatever encoding it was saved in.

Order: a byte-order mark, then a charset the file declares (HTML's ``<meta charset>``), then
UTF-16 without a BOM, strict UTF-8 (the common case, and ASCII), UTF-8 with a few corrupt
bytes, then charset-normalizer's best guess (Windows-1252, Windows-1251, Shift-JIS...). Bytes no text encoding fits, or that decode to
mostly control characters, are refused as binary: a clear error rather than a library of
mojibake. Text that was mojibake before it was saved (UTF-8 once read as Windows-1252 or
Latin-1, then written out again: "Â£850,000", "1990â€“1993") is repaired by ftfy, so its
amounts and names match the words a question uses.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from ftfy import fix_encoding

from agent.ingest.document import UnreadableDocument

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_BOM_NAMES = {"utf-8-sig": "utf-8", "utf-16": "utf-16", "utf-32": "utf-32"}
# C0 and C1 controls but tab, newline, vertical tab, form feed and carriage return
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
MAX_CONTROL_SHARE = 0.05
"""Above this share of control characters (NUL, C0, C1) decoded text is taken for binary."""
_SAMPLE_CHARS = 200_000
_CLOSE_CHAOS = 0.1
_NON_ASCII = re.compile("[^\x00-\x7f]")
_UTF8_MAJORITY = 4


@dataclass(frozen=True)
class DecodedText:
    """A file's text and the encoding it was read with (a Python codec name, e.g. ``cp1252``)."""

    text: str
    encoding: str


def decode_text(data: bytes, filename: str, declared: str | None = None) -> DecodedText:
    """The text of ``data`` and its encoding; :class:`UnreadableDocument` if it is not text.

    ``declared`` is a charset the file states about itself (HTML), tried after a BOM and
    before UTF-8; a declaration its bytes do not decode under is ignored.
    """
    decoded = _decode(data, declared)
    if decoded is None or _looks_binary(decoded.text):
        raise UnreadableDocument(
            f"{filename} looks like binary data, not text: no text encoding fits its bytes"
        )
    # NUL is valid UTF-8 but Postgres text cannot hold it (PDF text drops it likewise)
    return DecodedText(fix_encoding(decoded.text.replace("\x00", "")), decoded.encoding)


def _decode(data: bytes, declared: str | None) -> DecodedText | None:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return DecodedText(data.decode(codec), _BOM_NAMES[codec])
            except UnicodeDecodeError:
                return None
    for codec in dict.fromkeys(c for c in (declared, _utf16_order(data), "utf-8") if c):
        try:
            return DecodedText(data.decode(codec), _codec_name(codec))
        except (UnicodeDecodeError, LookupError):
            continue
    return _mostly_utf8(data) or _guess(data)


def _mostly_utf8(data: bytes) -> DecodedText | None:
    """UTF-8 with a few corrupt bytes (a truncated download, one bad paste) stays UTF-8.

    Guessing a legacy code page for it would garble every accented letter to fix one byte;
    the corrupt bytes become U+FFFD instead.
    """
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    wide = len(_NON_ASCII.findall(text)) - bad
    return DecodedText(text, "utf-8") if bad and wide >= _UTF8_MAJORITY * bad else None


def _utf16_order(data: bytes) -> str | None:
    """UTF-16 without a BOM: ASCII-range text has a NUL in every other byte."""
    sample = data[:4096]
    half = len(sample) // 2
    if half < 2:
        return None
    if sample[1::2].count(0) > 0.9 * half and sample[0::2].count(0) < 0.1 * half:
        return "utf-16-le"
    if sample[0::2].count(0) > 0.9 * half and sample[1::2].count(0) < 0.1 * half:
        return "utf-16-be"
    return None


def _guess(data: bytes) -> DecodedText | None:
    """charset-normalizer's most coherent decoding, or None when nothing fits.

    Short Western text fits several single-byte code pages nearly equally (charset-normalizer
    may rank Baltic cp1257 first for French); Windows-1252, the most common of them and the
    web's default for unlabelled text, wins whenever it fits about as well.
    """
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None or best.encoding is None:
        return None
    encoding = _codec_name(best.encoding)
    if any(
        _codec_name(m.encoding) in ("cp1252", "latin-1") and m.chaos <= best.chaos + _CLOSE_CHAOS
        for m in matches
    ) or _same_text(data, encoding, "cp1252"):
        encoding = "cp1252"
    try:
        return DecodedText(data.decode(encoding), encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _same_text(data: bytes, encoding: str, other: str) -> bool:
    """Do both codecs read ``data`` as the same text (German in cp1250 and cp1252)?"""
    try:
        return data.decode(encoding) == data.decode(other)
    except (UnicodeDecodeError, LookupError):
        return False


def _codec_name(codec: str) -> str:
    """Python's canonical name for a codec label (``iso-8859-1`` -> ``latin-1``)."""
    name = codecs.lookup(codec).name
    return {"iso8859-1": "latin-1", "utf-8-sig": "utf-8"}.get(name, name)


def _looks_binary(text: str) -> bool:
    """Mostly control characters: what an executable or an image decodes to."""
    sample = text[:_SAMPLE_CHARS]
    if not sample:
        return False
    controls = sum(1 for _ in _CONTROL.finditer(sample))
    return controls > MAX_CONTROL_SHARE * len(sample)
