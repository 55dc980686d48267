"""``quire bench``: every benchmark, tiny, into one Markdown report (real runs, own databases)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.paths import ALICE
from tests.support.programs import quire


def _tiny_plan(**changes):
    from bench.report import BenchPlan

    return BenchPlan.quick_plan(
        "extractive",
        ingest_files=[ALICE],
        retrieval_chunks=1000,
        retrieval_queries=10,
        retrieval_pool=200,
        load_clients=3,
        load_seconds=2.0,
        eval_slice=(5, 20),
        answers_stride=17,
        **changes,
    )


async def test_every_benchmark_lands_in_one_report(services, tmp_path):
    from bench.report import (
        BENCHMARKS,
        TITLES,
        render_report,
        run_benchmarks,
        write_bench_report,
    )

    plan = _tiny_plan()
    sections = await run_benchmarks(plan)
    assert [s.name for s in sections] == list(BENCHMARKS)
    failed = {s.name: s.error for s in sections if s.error}
    assert not failed, failed
    by_name = {s.name: s for s in sections}

    markdown = render_report(sections, plan)
    for name in BENCHMARKS:
        assert f"## {TITLES[name]}" in markdown
    assert re.search(r"\| commit \| [0-9a-f]{7,} \|", markdown)
    assert "| CPU |" in markdown and "| memory |" in markdown
    # figures come from the runs, not from the template
    ingest = by_name["ingest"].results[0]
    assert ingest["file"] == ALICE.name and f"| {ingest['chunks']} |" in markdown
    hybrid = next(
        f for f in by_name["retrieval"].results["latencies"] if f["operation"] == "hybrid"
    )
    assert f"{hybrid['p95_ms']} ms" in markdown
    assert by_name["retrieval"].results["foreign_hits"] == 0
    load = by_name["load"].results
    assert load["errors"] == 0 and load["counters_match"] and "counters match." in markdown
    answers = by_name["eval-answers"].results
    total = next(r for r in answers["routes"] if r["system"] == "rag" and r["route"] == "all")
    assert total["questions"] == len(range(0, 68, 17)) and total["citation_validity"] in (1.0, None)
    assert "so it gets no target verdict" in markdown  # a slice is not the whole corpus
    assert set(by_name["eval-retrieval"].results["target_verdicts"].values()) == {None}
    assert "![Answer quality (our questions)](" in markdown  # the eval plots are shown
    for section in sections:
        assert all(Path(w).is_file() for w in section.written), section

    written = write_bench_report(markdown, sections, plan, tmp_path / "bench")
    assert written.read_text() == markdown
    assert (tmp_path / "bench" / "report-quick.md").read_text() == markdown
    twin = json.loads(written.with_suffix(".json").read_text())
    assert [s["name"] for s in twin["sections"]] == list(BENCHMARKS)
    assert twin["plan"]["quick"] is True


async def test_a_failing_benchmark_is_reported_and_the_rest_go_on(services, monkeypatch):
    from bench import report as bench_report
    from bench import report_runners

    async def broken(plan, log):
        raise RuntimeError("embedder exploded")

    monkeypatch.setitem(report_runners.RUNNERS, "ingest", broken)
    plan = _tiny_plan(skip=frozenset(bench_report.BENCHMARKS) - {"ingest", "load"})
    sections = await bench_report.run_benchmarks(plan)
    outcome = {s.name: (s.skipped, s.error) for s in sections}
    assert outcome["ingest"] == (False, "RuntimeError: embedder exploded")
    assert outcome["load"] == (False, None) and outcome["retrieval"] == (True, None)
    markdown = bench_report.render_report(sections, plan)
    assert "**Failed**: `RuntimeError: embedder exploded`" in markdown
    assert "## HTTP load" in markdown and "## Retrieval latency" not in markdown


def test_cli_refuses_an_unknown_benchmark():
    done = quire("bench", "--skip", "nope")
    assert done.returncode == 2
    assert "unknown benchmark nope" in done.stderr
