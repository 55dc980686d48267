"""Which path answers a message: cheap keyword rules, no model call (seed 000 priority)."""

from __future__ import annotations

import re
from typing import Literal

Route = Literal["direct", "general", "hybrid"]

_NAME = re.compile(
    r"\b(what('?s| is) your name|who are you|what should i call you|your name\??$|are you (a )?(bot|human|ai))\b",
    re.I,
)
_SMALL_TALK = re.compile(
    r"^(hi|hello|hey|hiya|howdy|yo|good (morning|afternoon|evening|night)|thanks|thank you|"
    r"thx|cheers|ok(ay)?|cool|great|nice|bye|goodbye|see you|how are you( doing)?|"
    r"what'?s up|sup)\b[\s!.,?]*(there|quire|again|so much|a lot)?[\s!.,?]*$",
    re.I,
)


def is_name_question(message: str) -> bool:
    """Does the user ask who the assistant is?"""
    return bool(_NAME.search(message.strip()))


def is_small_talk(message: str) -> bool:
    """Greetings, thanks and other short phrases that need no retrieval."""
    return bool(_SMALL_TALK.match(message.strip()))


def classify_route(message: str) -> Route:
    """``direct`` for the name question, ``general`` for small talk, else ``hybrid``."""
    if is_name_question(message):
        return "direct"
    if is_small_talk(message):
        return "general"
    return "hybrid"
