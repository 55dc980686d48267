"""The attribute a "how <adjective>" question asks about, in the words a table or a
description names it by: "How tall does Shepherd's Thimble usually get?" is answered by the
row under "Typical height", which holds no word of the question but the plant's name.

The keyword side searches for these words beside the question's own (the embedder may
miss the row too: a table row reads nothing like a question), and a focused passage keeps
the sentence or the row that holds them. Only adjectives that name one measure are mapped;
"how much" and "how many" ask for amounts of anything.
"""

from __future__ import annotations

import re

_MEASURES: dict[str, tuple[str, ...]] = {
    "tall": ("height",),
    "high": ("height", "altitude", "elevation"),
    "long": ("length", "duration"),
    "far": ("distance",),
    "old": ("age",),
    "heavy": ("weight",),
    "wide": ("width",),
    "deep": ("depth",),
    "big": ("size",),
    "large": ("size",),
    "fast": ("speed",),
    "often": ("frequency",),
}
_HOW = re.compile(r"\bhow\s+(" + "|".join(_MEASURES) + r")\b", re.IGNORECASE)


def attribute_words(question: str) -> list[str]:
    """The measures ``question`` asks about ("how tall" -> ``["height"]``), in order."""
    found: list[str] = []
    for m in _HOW.finditer(question):
        found += [w for w in _MEASURES[m.group(1).lower()] if w not in found]
    return found


def with_attribute_words(question: str) -> str:
    """``question`` with the measures it asks about after it, for the keyword side."""
    words = attribute_words(question)
    return f"{question} {' '.join(words)}" if words else question
