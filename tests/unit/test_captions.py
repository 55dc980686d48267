"""Caption files (agent.ingest.captions): WebVTT and SRT read as transcripts, one paragraph
per speaker turn, without cue numbers, timings or markup."""

from __future__ import annotations

import pytest

from agent.ingest.parse import UnreadableDocument, parse_bytes

MEETING_VTT = """\ufeffWEBVTT
Kind: captions

NOTE recorded on the launch call

STYLE
::cue { color: yellow }

launch-1
00:00:01.000 --> 00:00:05.000 align:start
<v Dana>Welcome everyone.</v>
<v Dana>Today we decide the launch date.</v>

00:00:05.500 --> 00:00:10.000
<v.loud Lee Park>Marketing needs <00:00:07.000><c.hl>three weeks</c>,
so I propose the fourteenth of March.

00:10.500 --> 00:14.000
<v Dana>Agreed &amp; settled. Priya owns the press release.
"""

ROLLING_SRT = """1
00:00:01,000 --> 00:00:03,000
<i>the river rose</i>

2
00:00:03,000 --> 00:00:05,000
the river rose
{\\an8}over the bridge at dawn

3
00:00:05,000 --> 00:00:07,000
over the bridge at dawn
and the ferry stopped
"""


def test_a_webvtt_meeting_is_a_transcript_of_speaker_turns():
    doc = parse_bytes(MEETING_VTT.encode(), "launch-call.vtt")
    assert doc.file_type == "transcript" and doc.title == "launch call"
    assert [p.text for p in doc.paragraphs] == [
        "Dana: Welcome everyone. Today we decide the launch date.",
        "Lee Park: Marketing needs three weeks, so I propose the fourteenth of March.",
        "Dana: Agreed & settled. Priya owns the press release.",
    ]
    # no header, note, style, cue id or timing reaches the text
    for left_out in ("WEBVTT", "Kind", "recorded", "cue", "launch-1", "-->", "00:"):
        assert left_out not in doc.text


def test_srt_cues_are_joined_and_a_rolling_captions_repeats_read_once():
    doc = parse_bytes(ROLLING_SRT.encode(), "flood.srt")
    assert [p.text for p in doc.paragraphs] == [
        "the river rose over the bridge at dawn and the ferry stopped"
    ]
    assert doc.file_type == "transcript"


def test_cues_run_together_without_blank_lines_are_still_cut_at_each_timing():
    crammed = (
        "1\n00:00:01,000 --> 00:00:02,000\nThe tide turns at noon.\n"
        "2\n00:00:02,500 --> 00:00:04,000\nThe boats wait for it.\n"
    )
    [paragraph] = parse_bytes(crammed.encode(), "harbour.srt").paragraphs
    assert paragraph.text == "The tide turns at noon. The boats wait for it."


def test_a_long_turn_goes_on_in_new_paragraphs_and_cueless_files_are_unreadable():
    cues = "\n\n".join(
        f"{n}\n00:{n // 60:02d}:{n % 60:02d},000 --> 00:{n // 60:02d}:{n % 60:02d},900\n"
        f"Sentence number {n} of a long lecture about tides and moons."
        for n in range(1, 120)
    )
    paragraphs = parse_bytes(cues.encode(), "lecture.srt").paragraphs
    assert len(paragraphs) > 2 and all(len(p.text) < 1_700 for p in paragraphs)
    assert "Sentence number 119 " in paragraphs[-1].text
    with pytest.raises(UnreadableDocument, match="no extractable text"):
        parse_bytes(b"WEBVTT\n\nNOTE nothing was said\n", "silence.vtt")
