"""Caption files (WebVTT ``.vtt``, SubRip ``.srt``) read as transcripts.

A caption file is a meeting's, a lecture's or a video's words cut into cues of a few seconds,
each under a timing line ("00:00:05.500 --> 00:00:10.000"), often with a cue number above it
and markup inside (``<v Dana>``, ``<i>``, a word's own timestamp). Read as plain text, every
cue would be a paragraph of timings and half a sentence. Here the cues' words are joined into
one paragraph per speaker turn ("Dana: Welcome everyone. Today we decide…"), and a cue line
that repeats the one before it (rolling captions show each line twice) is read once. The
document's file type is ``transcript``, as for transcripts stored through the API, so in a
tie of scores the passages of other documents rank first (seed 002).
"""

from __future__ import annotations

import html
import re

from agent.ingest.document import Paragraph, ParsedDocument

_TIME = r"(?:\d{1,2}:)?\d{1,2}:\d{2}[.,]\d{1,3}"
_TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}")
_VOICE = re.compile(r"<v(?:\.[^\s>]*)?\s+([^>]+)>")
_MARKUP = re.compile(r"</?[^>\n]*>|\{\\[^}]*\}")  # tags, word timestamps, SSA overrides
_BLOCK_END = re.compile(r"\n[ \t]*\n")
_CUE_NUMBER = re.compile(r"^\s*\d+\s*$")

TURN_CHARS = 1_500
"""Characters after which one speaker's turn goes on in a new paragraph (at a cue's end)."""


def _cues(text: str) -> list[tuple[str | None, list[str]]]:
    """``(speaker, lines)`` of each cue, in order; blocks without a timing line (the header,
    ``NOTE``, ``STYLE`` and ``REGION`` blocks) are not cues."""
    cues: list[tuple[str | None, list[str]]] = []
    normalized = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    for block in _BLOCK_END.split(normalized):
        lines = block.strip("\n").split("\n")
        timings = [i for i, line in enumerate(lines) if _TIMING.match(line)]
        # cues run together without a blank line (a hand-edited SRT): each ends before the
        # next timing line, and before the number above it
        for n, start in enumerate(timings):
            end = timings[n + 1] if n + 1 < len(timings) else len(lines)
            if end < len(lines) and end - 1 > start and _CUE_NUMBER.match(lines[end - 1]):
                end -= 1
            cue = _cue(lines[start + 1 : end])
            if cue[1]:
                cues.append(cue)
    return cues


def _cue(lines: list[str]) -> tuple[str | None, list[str]]:
    """A cue's speaker (its first ``<v Name>``) and its lines without markup."""
    speaker = None
    words: list[str] = []
    for line in lines:
        voice = _VOICE.search(line)
        if voice and speaker is None:
            speaker = " ".join(voice.group(1).split())
        said = " ".join(html.unescape(_MARKUP.sub("", line)).split())
        if said:
            words.append(said)
    return speaker, words


def parse_captions(text: str, default_title: str) -> ParsedDocument:
    """A caption file as a transcript: one paragraph per speaker turn (see the module
    docs). No cue with words gives a document without paragraphs (unreadable)."""
    paragraphs: list[Paragraph] = []
    turn: list[str] = []
    current: str | None = None
    previous = ""

    def close() -> None:
        if turn:
            said = " ".join(turn)
            paragraphs.append(Paragraph(f"{current}: {said}" if current else said))
            turn.clear()

    for speaker, lines in _cues(text):
        if speaker is not None and speaker != current or sum(map(len, turn)) > TURN_CHARS:
            close()
            current = speaker if speaker is not None else current
        for line in lines:
            if line != previous:  # rolling captions show each line in two cues
                turn.append(line)
            previous = line
    close()
    return ParsedDocument(
        title=default_title,
        file_type="transcript",
        paragraphs=paragraphs,
        metadata={"type": "transcript"},
    )
