"""Quoted blocks (an email's reply, a Markdown block quote) read without their "> " marks."""

from __future__ import annotations

from agent.ingest.document import unquoted
from agent.ingest.parse import parse_bytes

THREAD = """From: Rosalind <r@example.org>
Subject: Re: October booking

That's agreed: I've paid the deposit this morning.

On Wed, 27 Aug 2025 at 16:40, Callum wrote:
> Our usual deposit is 25%, which would be £1,104,
> but let's call it a round £1,100.
>
> Best, Callum
"""


def test_an_emails_quoted_reply_reads_as_its_words():
    texts = [p.text for p in parse_bytes(THREAD.encode(), "thread.txt").paragraphs]
    assert (
        "On Wed, 27 Aug 2025 at 16:40, Callum wrote: Our usual deposit is 25%, which would be "
        "£1,104, but let's call it a round £1,100. Best, Callum"
    ) in texts
    assert not any(t.startswith(">") or " > " in t for t in texts)


def test_a_markdown_block_quote_keeps_its_list_items_apart():
    md = (
        "# Changelog\n\n## 3.0.0\n\n> **Breaking changes.** Several APIs go.\n>\n"
        "> - `merge()` is renamed `overlay()`.\n> - Python 3.10 is the minimum.\n"
    )
    texts = [p.text for p in parse_bytes(md.encode(), "CHANGELOG.md").paragraphs]
    assert texts[2:] == [
        "Breaking changes. Several APIs go.",
        "- merge() is renamed overlay().",
        "- Python 3.10 is the minimum.",
    ]


def test_a_line_that_only_starts_with_a_greater_than_sign_keeps_it():
    block = "Prices rose by\n> 50% last year\nacross the board."
    assert unquoted(block) == block
