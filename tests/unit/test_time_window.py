"""Reading a ``since``/``until`` window: ISO dates and date-times, relative ages, ``all``,
and clear errors for anything else."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from agent.db.scope import SearchScope
from agent.retrieval.time_window import (
    InvalidTimeWindow,
    TimeWindow,
    parse_bound,
    parse_time_window,
)

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("24h", NOW - timedelta(hours=24)),
        ("48h", NOW - timedelta(hours=48)),
        ("7d", NOW - timedelta(days=7)),
        ("1w", NOW - timedelta(weeks=1)),
        ("90m", NOW - timedelta(minutes=90)),
        ("2025-03-01", datetime(2025, 3, 1, tzinfo=UTC)),
        ("2025-03-01T08:30:00Z", datetime(2025, 3, 1, 8, 30, tzinfo=UTC)),
        ("2025-03-01T08:30", datetime(2025, 3, 1, 8, 30, tzinfo=UTC)),
        ("2025-03-01T10:30:00+02:00", datetime(2025, 3, 1, 8, 30, tzinfo=UTC)),
        ("all", None),
        ("", None),
        (None, None),
    ],
)
def test_bounds(text, expected):
    assert parse_bound(text, now=NOW) == expected


def test_a_date_as_until_includes_that_whole_day():
    window = parse_time_window("2025-03-01", "2025-03-01", now=NOW)
    assert window.since == datetime(2025, 3, 1, tzinfo=UTC)
    assert window.until == datetime(2025, 3, 2, tzinfo=UTC)
    assert window.as_dict() == {
        "since": "2025-03-01T00:00:00+00:00",
        "until": "2025-03-02T00:00:00+00:00",
    }
    assert TimeWindow.from_dict(window.as_dict()) == window


@pytest.mark.parametrize(
    ("since", "until", "message"),
    [
        ("yesterday", None, "cannot read the time 'yesterday'"),
        ("2025-13-01", None, "cannot read the time '2025-13-01'"),
        (None, "3 fortnights", "cannot read the time '3 fortnights'"),
        ("2025-03-05", "2025-03-01", "'until' (2025-03-01) must be after 'since' (2025-03-05)"),
        ("24h", "48h", "must be after"),
    ],
)
def test_bad_windows_say_what_is_wrong(since, until, message):
    with pytest.raises(InvalidTimeWindow, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_time_window(since, until, now=NOW)


def test_a_window_narrows_a_scope_and_the_tighter_bound_wins():
    user = uuid.uuid4()
    window = parse_time_window("7d", "24h", now=NOW)
    scope = window.narrow(SearchScope(user_id=user))
    assert scope.created_after == NOW - timedelta(days=7)
    assert scope.created_before == NOW - timedelta(hours=24)
    assert scope.narrowed
    tighter = window.narrow(SearchScope(user_id=user, created_after=NOW - timedelta(days=2)))
    assert tighter.created_after == NOW - timedelta(days=2)
    assert TimeWindow().narrow(SearchScope(user_id=user)) == SearchScope(user_id=user)
    assert not SearchScope(user_id=user).narrowed
    sql, params = scope.visible_documents_sql()
    assert "d.created_at >= :scope_after" in sql and "d.created_at < :scope_before" in sql
    assert params["scope_before"] == NOW - timedelta(hours=24)
