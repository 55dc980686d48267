"""A document's author on record: placeholders that tools write are no author."""

from __future__ import annotations

import pytest

from agent.ingest.document import usable_author


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("Jane Austen,", "Jane Austen"),
        ("  Lewis   Carroll ", "Lewis Carroll"),
        ("Steve Canny", "Steve Canny"),
        ("python-docx", None),  # python-docx's template
        ("Microsoft Office User", None),
        ("anonymous", None),
        ("Unknown", None),
        (" , ", None),
        ("", None),
        (None, None),
    ],
)
def test_usable_author(written, kept):
    assert usable_author(written) == kept
