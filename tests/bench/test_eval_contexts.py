"""``quire eval contexts``: whether a turn's passages hold the answer, and the answer's rank
among the fused candidates, with no chat model called (the test database, a short note)."""

from __future__ import annotations

import json
import uuid

from bench.eval_answers_data import load_dataset
from tests.support.programs import quire

NOTE = (
    "Greyholm Point Lighthouse.\n\n"
    "The lighthouse keeper, Iolo Owen, lit the lamp every evening at dusk with a brass taper.\n\n"
    "In winter the harbour froze and the fishing boats stayed in for six weeks.\n\n"
    "The keeper's cat, a grey tabby called Smoke, slept on the warm pipes of the oil store.\n\n"
    "Repairs to the pier took the whole spring after the great storm of 1903.\n"
)


def _dataset(tmp_path) -> object:
    (tmp_path / "note.txt").write_text(NOTE, encoding="utf-8")
    rows = [
        {"question": "What is the keeper's cat called?", "answers": ["Smoke"]},
        {"question": "What does the keeper light the lamp with?", "answers": ["brass taper"]},
        # the note never says it: out of every context and every candidate
        {"question": "Who paid for the pier repairs?", "answers": ["the harbour board"]},
        {"question": "What is the capital of Peru?", "answers": [], "unanswerable": True},
        {
            "question": "Compare the keeper and his cat.",
            "answers": ["keeper"],
            "expected_route": "deep_reasoning",
        },
    ]
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(json.dumps({**r, "document": "note.txt"}) for r in rows) + "\n")
    return path


async def test_context_holds_the_answer_and_ranks_it(services, tmp_path):
    from bench.eval_contexts import check_contexts

    items = load_dataset(_dataset(tmp_path))
    report = await check_contexts(
        services, items, model="local", user=f"eval-contexts-{uuid.uuid4().hex[:6]}", depth=10
    )
    checks = {c.question: c for c in report.checks}
    # unanswerable and deep-reasoning questions are not this check's
    assert report.skipped == 2 and len(checks) == 3
    cat = checks["What is the keeper's cat called?"]
    assert cat.in_context and cat.rank is not None and cat.rank <= 2 and cat.passages >= 1
    assert checks["What does the keeper light the lamp with?"].in_context
    unsaid = checks["Who paid for the pier repairs?"]
    assert not unsaid.in_context and unsaid.rank is None
    figures = report.as_dict()
    assert figures["in_context"] == 2 and figures["not_ranked"] == 1
    assert figures["rank_within"]["10"] == 2 and figures["mean_context_chars"] > 0


def _drop(settings, database: str) -> None:
    """Drop the CLI run's own database (on the test server)."""
    import psycopg
    from psycopg import sql

    from agent.db.server import server_url, with_database

    admin = with_database(server_url(settings), "postgres").libpq
    with psycopg.connect(admin, autocommit=True) as conn:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        conn.execute(drop)


async def test_cli_reports_the_counts_and_refuses_a_missing_set(services, tmp_path):
    """In its own process and database, under a settings override; a missing set is exit 2."""
    database = f"quire_eval_contexts_{uuid.uuid4().hex[:6]}"
    run = quire(
        "eval", "contexts", "--dataset", str(_dataset(tmp_path)), "--database", database,
        "--set", "local_top_k=1", "--json",
    )  # fmt: skip
    try:
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert report["checked"] == 3 and report["in_context"] == 2
        assert all(q["passages"] <= 1 for q in report["questions"])  # local_top_k=1 applied
    finally:
        _drop(services.settings, database)
    wrong = quire("eval", "contexts", "--dataset", str(tmp_path / "none.jsonl"))
    assert wrong.returncode == 2 and "is not a file" in wrong.stderr
    unknown = quire("eval", "contexts", "--dataset", str(tmp_path / "set.jsonl"), "--set", "x=1")
    assert unknown.returncode == 2 and "settings field" in unknown.stderr
