"""Text, Markdown and HTML uploads in encodings other than UTF-8 are read, and their encoding kept."""

from __future__ import annotations

import os

import pytest

from agent.ingest.document import UnreadableDocument
from agent.ingest.encoding import decode_text
from agent.ingest.parse import parse_bytes

ARTICLE = (
    "The café on the corner\n\n"
    "Its owner, a “naïve” painter from Besançon, sold crêpes for 3 € — or £2 — "
    "and kept a résumé of every guest’s order. The façade was repainted in 1998.\n\n"
    "Regulars remember the smell of brûlée and the noise of the espresso machine.\n"
)


def test_a_windows_1252_article_is_read_with_its_curly_quotes():
    doc = parse_bytes(ARTICLE.encode("cp1252"), "article.txt")
    assert doc.encoding == "cp1252"
    assert "“naïve” painter from Besançon" in doc.text and "3 € — or £2" in doc.text


@pytest.mark.parametrize("misread_as", ["cp1252", "latin-1"])
def test_text_saved_as_mojibake_is_repaired(misread_as):
    # UTF-8 once read as a single-byte code page, then saved again as UTF-8
    garbled = ARTICLE.encode("utf-8").decode(misread_as, errors="ignore")
    assert "Ã©" in garbled  # "café" had become "cafÃ©"
    doc = parse_bytes(garbled.encode("utf-8"), "article.txt")
    assert doc.encoding == "utf-8"
    assert "The café on the corner" in doc.text and "3 € — or £2" in doc.text
    assert "Ã" not in doc.text and "â€" not in doc.text


def test_text_that_only_looks_odd_is_left_as_it_is():
    text = "SÃO PAULO, the IRMÃOS ÂNGELO, Øresund, Ångström, ½ cup at 1° C; €10, £2 — as is."
    assert decode_text(text.encode("utf-8"), "f.txt").text == text
    assert decode_text(ARTICLE.encode("utf-8"), "f.txt").text == ARTICLE


def test_latin_1_without_curly_quotes_reads_the_same():
    text = "Les élèves de l'école étudient la géographie. Où est la bibliothèque? Ça va."
    decoded = decode_text(text.encode("latin-1"), "f.txt")
    assert decoded.text == text and decoded.encoding in ("cp1252", "latin-1")


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("Москва — столица России. Это текст в старой кодировке Windows.", "cp1251"),
        ("Zażółć gęślą jaźń. Łódź jest pięknym miastem w Polsce, a Kraków też.", "cp1250"),
        ("これは日本語のテキストです。東京は日本の首都です。", "shift_jis"),
    ],
)
def test_other_legacy_code_pages_keep_their_letters(text, codec):
    doc = parse_bytes(f"# Notes\n\n{text}\n".encode(codec), "notes.md")
    assert [p.text for p in doc.paragraphs] == ["Notes", text]
    assert doc.encoding not in (None, "utf-8")


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig", "utf-32"])
def test_unicode_with_or_without_a_bom(codec):
    doc = parse_bytes(ARTICLE.encode(codec), "article.txt")
    assert "“naïve” painter" in doc.text and doc.encoding.startswith("utf")


def test_plain_utf8_and_ascii_are_utf8_and_binary_formats_have_none():
    assert parse_bytes(ARTICLE.encode(), "a.txt").encoding == "utf-8"
    assert parse_bytes(b"Plain ASCII words only.", "a.md").encoding == "utf-8"


def test_utf8_with_one_corrupt_byte_stays_utf8():
    data = ARTICLE.encode() + b"\n\nA truncated d\xe9tail.\n"
    doc = parse_bytes(data, "a.txt")
    assert doc.encoding == "utf-8"
    assert "“naïve”" in doc.text and "d\ufffdtail" in doc.text


def test_html_without_a_declared_charset_is_detected():
    page = f"<html><body><p>{ARTICLE.splitlines()[2]}</p></body></html>".encode("cp1252")
    doc = parse_bytes(page, "page.html")
    assert doc.encoding == "cp1252" and "“naïve” painter" in doc.text
    declared = '<meta charset="windows-1251"><p>Москва — столица</p>'.encode("cp1251")
    assert parse_bytes(declared, "ru.html").text == "Москва — столица"


@pytest.mark.parametrize(
    "data",
    [
        os.urandom(32 * 1024),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(4096),
        b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 16,
        b"\x00" * 4096,
    ],
    ids=["random", "png", "elf", "nul"],
)
@pytest.mark.parametrize("name", ["upload.txt", "upload.md", "upload.html"])
def test_binary_garbage_is_refused_clearly(data, name):
    with pytest.raises(UnreadableDocument, match=f"{name} looks like binary data, not text"):
        parse_bytes(data, name)
