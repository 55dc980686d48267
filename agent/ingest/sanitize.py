"""PII redaction before anything is stored or embedded (seed 002 section 2.3).

Emails, phone numbers, SSNs, payment card numbers (Luhn-checked) and long numeric ids are
replaced by ``[REDACTED_<KIND>]`` labels. The sensitivity level is HIGH when anything was
redacted, MEDIUM when softer identifiers (IP addresses, @handles) are dense, else LOW.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Sensitivity = Literal["HIGH", "MEDIUM", "LOW"]

# Order matters: the most specific patterns claim their characters first.
REDACTION_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("EMAIL", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
    ("SSN", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    ("CARD", re.compile(r"\b(?:\d[ -]?){12,18}\d\b")),
    (
        "PHONE",
        re.compile(
            # not inside a longer run of digit groups (card-like numbers, ids)
            r"(?<![\w+])(?<!\d[\s.-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])"
            r"\d{3,4}[\s.-]\d{3,4}\b(?![\s.-]?\d)"
        ),
    ),
    ("ID", re.compile(r"\b\d{9,}\b")),
]
SOFT_PATTERNS: list[re.Pattern[str]] = [
    re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b"),  # IPv4 addresses
    re.compile(r"(?<!\w)@[A-Za-z0-9_]{3,}"),  # social handles
]


@dataclass(frozen=True)
class Sanitized:
    """Redacted text and what the redaction found."""

    text: str
    redacted: bool
    counts: dict[str, int]


def _luhn_ok(number: str) -> bool:
    digits = [int(d) for d in re.sub(r"\D", "", number)]
    checksum = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        checksum += d
    return checksum % 10 == 0


def pii_spans(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping ``(start, end, kind)`` of redactable PII, in text order."""
    taken: list[tuple[int, int, str]] = []
    for kind, pattern in REDACTION_PATTERNS:
        for m in pattern.finditer(text):
            if kind == "CARD" and not _luhn_ok(m.group()):
                continue
            if any(m.start() < end and start < m.end() for start, end, _ in taken):
                continue
            taken.append((m.start(), m.end(), kind))
    return sorted(taken)


def pii_density(text: str) -> float:
    """Share of characters that belong to PII matches (redactable or soft)."""
    if not text:
        return 0.0
    covered = sum(end - start for start, end, _ in pii_spans(text))
    covered += sum(len(m.group()) for p in SOFT_PATTERNS for m in p.finditer(text))
    return covered / len(text)


def sanitize_text(text: str) -> Sanitized:
    """Replace every redactable PII span with its ``[REDACTED_<KIND>]`` label."""
    spans = pii_spans(text)
    if not spans:
        return Sanitized(text, False, {})
    out, last, counts = [], 0, {}
    for start, end, kind in spans:
        out.append(text[last:start])
        out.append(f"[REDACTED_{kind}]")
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    out.append(text[last:])
    return Sanitized("".join(out), True, counts)


def sensitivity_level(redacted: bool, density: float, medium_threshold: float) -> Sensitivity:
    """HIGH if anything was redacted, MEDIUM if PII-like text is dense, else LOW."""
    if redacted:
        return "HIGH"
    return "MEDIUM" if density > medium_threshold else "LOW"
