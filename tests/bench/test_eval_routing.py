"""``quire eval routing``: the labelled routing set through the chat graph with the default
setup (extractive model, no web key), in the test database (Postgres)."""

from __future__ import annotations

import json
from collections import Counter

from sqlalchemy import text

from agent.web_search import web_search_available
from bench.eval_routing import ROUTING_SET, evaluate_routing, load_routing_set
from tests.support.programs import quire
from tests.support.samples import alice_chapters

READER = "routing-reader"
"""The user owning the set's books (the LangGraph server test uses the same ingestion)."""

CLASSES = {
    "name",
    "small_talk",
    "book_summary",
    "all_books_summary",
    "specific",
    "broad",
    "reasoning",
    "web_request",
    "chapter",
    "trap",
}


def test_routing_set_is_large_real_and_covers_every_class():
    items = load_routing_set(ROUTING_SET)
    counts = Counter(i.cls for i in items)
    assert len(items) >= 80 and counts["trap"] >= 20
    assert set(counts) >= CLASSES, counts
    assert all(i.books and all(p.is_file() for p in i.books) for i in items)
    assert len({i.message for i in items}) == len(items)  # no message twice


async def test_routing_accuracy_with_the_default_setup(services):
    assert not web_search_available(services.settings)  # the default setup: no web key
    items = load_routing_set(ROUTING_SET)
    report = await evaluate_routing(services, items, user=READER)
    misses = [(m.message, m.route, m.mode, m.reason) for m in report.misses]
    assert report.row("all").messages == len(items)
    assert report.row("all").accuracy >= 0.95, misses
    assert report.row("trap").accuracy == 1.0, misses
    # without a key no turn leaves the documents, and every turn says why and how sure
    assert not [r.message for r in report.results if r.route == "web_search"]
    assert all(r.reason and r.confidence for r in report.results)
    fresh = [r for r in report.results if r.cls in ("fresh_facts", "web_request")]
    assert all("not configured" in r.reason for r in fresh), [r.reason for r in fresh]
    assert {r.confidence for r in report.results if r.cls in ("name", "small_talk")} == {"n/a"}
    written = report.as_dict()
    assert written["classes"][-1]["cls"] == "all" and len(written["results"]) == len(items)


async def test_cli_prints_accuracy_per_class_in_a_throw_away_database(services, tmp_path):
    """``quire eval routing --json`` in its own process on a small set (two chapters of
    Alice), in a fresh database it drops afterwards; exit 0 and the figures per class."""
    book = tmp_path / "alice-1-2.txt"
    book.write_text(alice_chapters("CHAPTER I.", "CHAPTER III."), encoding="utf-8")
    rows = [
        ("What is your name?", "name", "direct"),
        ("thanks!", "small_talk", "general"),
        ("Who is Dinah?", "specific", "hybrid"),
        ("Why is everything so queer today?", "trap", "deep_reasoning"),
        ("What is the latest news about AI?", "fresh_facts", "hybrid"),
    ]
    dataset = tmp_path / "routing.jsonl"
    dataset.write_text(
        "\n".join(
            json.dumps({"message": m, "class": c, "books": [str(book)], "route": r})
            for m, c, r in rows
        )
    )
    run = quire("eval", "routing", "--dataset", str(dataset), "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    figures = {c["cls"]: c for c in report["classes"]}
    assert list(figures) == ["name", "small_talk", "specific", "trap", "fresh_facts", "all"]
    assert figures["all"]["accuracy"] == 1.0 and figures["all"]["messages"] == len(rows)
    assert report["database"].startswith("quire_eval_routing_")
    async with services.engine.connect() as conn:
        left = await conn.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": report["database"]}
        )
        assert left.first() is None  # dropped afterwards
    assert not report["misses"]
    latest = next(r for r in report["results"] if r["cls"] == "fresh_facts")
    assert "not configured" in latest["reason"]
    still_there = quire("eval", "routing", "--dataset", str(tmp_path / "none.jsonl"))
    assert still_there.returncode == 2 and "is not a file" in still_there.stderr
