"""Sample texts several test modules ingest or parse."""

from __future__ import annotations

import uuid

CREATURES = ["walrus", "carpenter", "gryphon", "dormouse", "caterpillar", "duchess"]


def book_text(chapters: int = 3, paragraphs: int = 14) -> str:
    """A small book with CHAPTER headings; unique per call so it is never a duplicate."""
    tag = uuid.uuid4().hex[:8]
    parts = [f"The Tale of {tag}\n\n"]
    for c in range(1, chapters + 1):
        parts.append(f"CHAPTER {c}.\n\n")
        for p in range(paragraphs):
            who = CREATURES[(c + p) % len(CREATURES)]
            parts.append(
                f"In paragraph {p} of chapter {c} the {who} walked along the shore of {tag}. "
                f"The {who} spoke at length about oysters, tides and the price of sealing wax. "
                f"Nobody who listened to the {who} could say whether the story was true. "
                f"Later the {who} sat down on a rock and counted the waves until evening.\n\n"
            )
    return "".join(parts)


PII_HEAVY = (
    "Contact list. John: john.smith@example.com, 555-123-4567, SSN 123-45-6789. "
    "Mary: mary@corp.io, (555) 987-6543, card 4111 1111 1111 1111. "
    "Account 123456789012 belongs to Bob, bob@x.org, +1 212 555 0199."
)


# Plain numbered exam (no "Q6:" / "Question 6:" marks, no question marks), so it is stored
# as ~400-800 character flat chunks and the long answer to question 6 spans several.
Q6 = (
    "Question 6 – Explain how a pilot uses the tidal stream atlas when planning an evening "
    "arrival. [10 marks]\n\n"
    "Answer: The pilot first finds the hour of high water at the reference port and writes "
    "it at the top of the passage plan. Each page of the atlas shows the streams for one hour "
    "before or after that high water, so the pilot numbers the pages to match the clock times "
    "of the arrival. For every leg of the approach the pilot reads the arrow nearest the track "
    "and notes the direction and the rate at neaps and at springs. The rate for the actual "
    "day is found by interpolating between the neap and spring figures with the tidal range "
    "of that day. The pilot then draws the stream vector for each hour and lays off the course "
    "to steer so that the ship stays on the planned track across the bar. Particular care is "
    "taken near the breakwater heads, where the ebb sets strongly across the entrance and can "
    "push a slow ship onto the rocks. If the evening arrival falls near the turn of the tide, "
    "the pilot prefers slack water and may ask the master to reduce speed and wait at the "
    "anchorage. This is why the atlas is checked twice, once at the berth and once again at "
    "the fairway buoy."
)


Q7 = (
    "Question 7 – Describe what a pilot should do when a kelp raft fouls the bow thruster. "
    "[4 marks]\n\n"
    "Answer: Stop the thruster at once, tell the bridge team, and continue with tug assistance "
    "until the kelp can be cleared alongside."
)


EXAM = "\n\n".join(
    [
        "Harbour Pilot Certification: Practice Exam",
        "Answer every question in full sentences. Marks are shown in brackets.",
        "Question 1 – Name the lights a pilot boat shows at night. [2 marks]",
        "Answer: A white light over a red light at the masthead, with sidelights and a "
        "sternlight when under way.",
        "Question 2 – State the minimum under-keel clearance for a laden tanker in the channel. "
        "[2 marks]",
        "Answer: One metre, or ten percent of the draught, whichever is greater.",
        "Question 3 – Name the signal flag a pilot boat flies by day. [1 mark]",
        "Answer: Flag H, white and red, meaning that a pilot is on board.",
        "Question 4 – Explain when the harbour master closes the bar to deep-draught ships. "
        "[3 marks]",
        "Answer: When the swell at the bar buoy exceeds the published limit, or in fog that "
        "hides the leading lights.",
        "Question 5 – Describe the duties of the mooring gang on arrival. [3 marks]",
        "Answer: They take the head and stern lines, report when all lines are fast, and keep "
        "clear of the bights.",
        Q6,
        Q7,
        "Question 8 – Name the document the pilot signs before leaving the ship. [1 mark]",
        "Answer: The pilot card, countersigned by the master.",
    ]
)


def alice_chapters(first: str, last: str) -> str:
    """Alice in Wonderland from the heading ``first`` ("CHAPTER I.") up to, not including,
    the heading ``last``: a real book's text, a fraction of the time to embed."""
    from tests.support.paths import ALICE

    lines = ALICE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == first)
    end = next(i for i, ln in enumerate(lines) if ln.strip() == last)
    return "\n".join(lines[start:end])
