"""The ``since``/``until`` window of a search or chat turn (seed 002's hard time filter).

Each bound is an ISO date (``2024-05-01``), an ISO date-time (``2024-05-01T12:00:00Z``;
without a zone: UTC), a relative age (``24h``, ``48h``, ``7d``, ``1w``, ``90m``: that long
before now) or ``all`` (no bound). ``since`` keeps documents created at or after it,
``until`` those created before it; a date alone as ``until`` includes that whole day.
The window narrows a :class:`~agent.db.scope.SearchScope` (``created_after`` /
``created_before``), so every retrieval query applies it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

from agent.db.scope import SearchScope

_RELATIVE = re.compile(r"(\d+)\s*(m|min|h|d|w)", re.IGNORECASE)
_UNITS = {"m": "minutes", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_HINT = "use an ISO date or date-time (2024-05-01, 2024-05-01T12:00Z), 24h, 48h, 7d, 1w or all"


class InvalidTimeWindow(ValueError):
    """A bound that cannot be read, or an ``until`` before the ``since``."""


@dataclass(frozen=True)
class TimeWindow:
    """Absolute bounds: documents created in ``[since, until)`` (``None``: open)."""

    since: datetime | None = None
    until: datetime | None = None

    @property
    def is_set(self) -> bool:
        """Whether either bound narrows anything."""
        return self.since is not None or self.until is not None

    def as_dict(self) -> dict[str, str | None]:
        """ISO bounds for the turn's metadata (``None``: open)."""
        return {
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
        }

    @classmethod
    def from_dict(cls, data: dict | None) -> TimeWindow:
        """The window :meth:`as_dict` wrote (an empty or missing one: no window)."""
        data = data or {}
        return cls(
            since=datetime.fromisoformat(data["since"]) if data.get("since") else None,
            until=datetime.fromisoformat(data["until"]) if data.get("until") else None,
        )

    def narrow(self, scope: SearchScope) -> SearchScope:
        """``scope`` restricted to this window too (the tighter bound wins)."""
        if not self.is_set:
            return scope
        after = [t for t in (scope.created_after, self.since) if t is not None]
        before = [t for t in (scope.created_before, self.until) if t is not None]
        return replace(
            scope,
            created_after=max(after) if after else None,
            created_before=min(before) if before else None,
        )


def scope_window(scope: SearchScope) -> dict[str, str | None]:
    """The window a scope applies, as :meth:`TimeWindow.as_dict` writes it."""
    return TimeWindow(scope.created_after, scope.created_before).as_dict()


def parse_bound(value: str | None, *, end: bool = False, now: datetime | None = None):
    """One bound as an aware UTC datetime, or ``None`` for none/empty/``all``.

    ``end``: the value is an ``until``, so a date alone means the end of that day.
    Raises :class:`InvalidTimeWindow` for anything else.
    """
    text = (value or "").strip()
    if not text or text.lower() == "all":
        return None
    now = now or datetime.now(UTC)
    relative = _RELATIVE.fullmatch(text)
    if relative:
        amount, unit = int(relative.group(1)), _UNITS[relative.group(2).lower()]
        return now - timedelta(**{unit: amount})
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start + timedelta(days=1) if end else start
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidTimeWindow(f"cannot read the time {text!r}: {_HINT}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_time_window(
    since: str | None = None, until: str | None = None, now: datetime | None = None
) -> TimeWindow:
    """The window from a ``since`` and an ``until`` (each optional; see the module docs).

    Raises :class:`InvalidTimeWindow` for an unreadable bound or an ``until`` at or before
    the ``since``."""
    now = now or datetime.now(UTC)
    window = TimeWindow(parse_bound(since, now=now), parse_bound(until, end=True, now=now))
    if window.since and window.until and window.until <= window.since:
        raise InvalidTimeWindow(
            f"'until' ({until}) must be after 'since' ({since}): the window would be empty"
        )
    return window
