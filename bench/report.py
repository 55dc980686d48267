"""``quire bench``: every benchmark in one run, and one Markdown report of all their figures.

The report holds ingestion throughput, retrieval latency (with the raw pgvector query),
answer latency per chat path, the HTTP load run, retrieval quality on SciFact and answer
quality on our own questions, each beside its target, and the machine and commit it ran on.
Each benchmark runs in its own database (``--quick`` runs use ``*_quick`` ones), so the
user's documents are never touched; one that fails is reported as failed and the rest go on.

Here: the report's frame and files. The plan is :mod:`bench.report_plan`, running the
benchmarks :mod:`bench.report_runners`, each benchmark's Markdown :mod:`bench.report_sections`.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from bench.common import machine
from bench.report_plan import BENCHMARKS, BenchPlan
from bench.report_runners import ANSWERS_DATASET, RUNNERS, SCIFACT, Section, run_benchmarks
from bench.report_sections import RENDERERS, markdown_table

__all__ = [
    "ANSWERS_DATASET",
    "BENCHMARKS",
    "RUNNERS",
    "SCIFACT",
    "TITLES",
    "BenchPlan",
    "Section",
    "markdown_table",
    "render_report",
    "run_benchmarks",
    "write_bench_report",
]

TITLES = {
    "ingest": "Ingestion",
    "retrieval": "Retrieval latency",
    "answers": "Answer latency per chat path",
    "load": "HTTP load",
    "eval-retrieval": "Retrieval quality (SciFact)",
    "eval-answers": "Answer quality (our questions)",
}


def render_report(sections: list[Section], plan: BenchPlan, host: dict | None = None) -> str:
    """The Markdown report of one ``quire bench`` run."""
    host = host or machine()
    kind = "quick run" if plan.quick else "full run"
    lines = [
        f"# Quire benchmarks ({kind})",
        "",
        markdown_table(
            ["machine", ""],
            [
                ["measured at", host.get("measured_at")],
                ["commit", host.get("commit")],
                ["CPU", f"{host.get('cpu')} ({host.get('cpus')} cores)"],
                ["memory", f"{host.get('memory_gib')} GiB"],
                ["platform", host.get("platform")],
                ["python", host.get("python")],
                ["load average at the start", host.get("load_avg")],
                ["answer model", plan.model],
            ],
        ),
        "",
        markdown_table(
            ["benchmark", "outcome", "seconds"],
            [
                [
                    TITLES[s.name],
                    "skipped" if s.skipped else ("**failed**" if s.error else "done"),
                    s.seconds,
                ]
                for s in sections
            ],
        ),
    ]
    for s in sections:
        if s.skipped:
            continue
        lines += ["", f"## {TITLES[s.name]}", ""]
        if s.error:
            lines.append(f"**Failed**: `{s.error}`")
            continue
        for block in RENDERERS[s.name](s.results):
            lines += [block, ""]
        lines += [f"![{TITLES[s.name]}]({w})" for w in s.written if w.endswith(".png")]
        if s.written:
            lines.append("Results: " + ", ".join(f"`{w}`" for w in s.written))
    return "\n".join(lines).rstrip() + "\n"


def write_bench_report(markdown: str, sections: list[Section], plan: BenchPlan, folder: Path):
    """Store the report as ``report.md`` (the latest) and a dated copy, with a JSON twin."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    stem = "report-quick" if plan.quick else "report"
    dated = folder / f"{stem}-{stamp}.md"
    dated.write_text(markdown, encoding="utf-8")
    (folder / f"{stem}.md").write_text(markdown, encoding="utf-8")
    payload = {
        "machine": machine(),
        "plan": plan.as_dict(),
        "sections": [asdict(s) for s in sections],
    }
    (folder / f"{stem}-{stamp}.json").write_text(json.dumps(payload, indent=2, default=str))
    return dated
