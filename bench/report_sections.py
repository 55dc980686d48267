"""The Markdown of each benchmark's section in the ``quire bench`` report: its figures
(the JSON it stored) in tables, each beside its target."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("|", "\\|")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _verdict(met: bool | None) -> str:
    return "-" if met is None else ("met" if met else "**not met**")


def _ingest_md(results: list[dict]) -> list[str]:
    rows = [
        [
            r["file"],
            r["chunks"],
            r["total_s"],
            r["parse_s"],
            r["chunk_s"],
            r["embed_s"],
            r["store_s"],
            r["chunks_per_s"],
            r["throughput_ratio"],
            _verdict(r["throughput_ratio"] >= 0.8),
        ]
        for r in results
    ]
    headers = ["file", "chunks", "total s", "parse", "chunk", "embed", "store", "chunks/s"]
    return [
        markdown_table([*headers, "pipeline/raw embedder", "target >= 0.8"], rows),
        "Stage columns are seconds; the ratio divides the raw embedder's time on the same "
        "chunks by the pipeline's.",
    ]


def _retrieval_md(r: dict) -> list[str]:
    b = r["build"]
    rows = [
        [f["operation"], f["p50_ms"], f["p95_ms"], f["mean_ms"], f["max_ms"]]
        for f in r["latencies"]
    ]
    hybrid_p95 = next(f["p95_ms"] for f in r["latencies"] if f["operation"] == "hybrid")
    lines = [
        f"Corpus: {b['child_chunks']} child chunks in {b['documents']} documents, "
        f"{r['corpus']['target_chunks']} of them the searching user's, among "
        f"{r['corpus']['users']} users; {r['queries']} queries, k {r['k']}.",
        markdown_table(["operation", "p50 ms", "p95 ms", "mean ms", "max ms"], rows),
        markdown_table(
            ["target", "figure", "verdict"],
            [
                [
                    f"hybrid p95 <= {r['hybrid_p95_target_ms']:g} ms",
                    f"{hybrid_p95} ms",
                    _verdict(r["meets_p95_target"]),
                ],
                [
                    f"hybrid search p95 <= {r['ratio_target']:g}x raw pgvector top-k "
                    "(both given the query vector, k the depth hybrid reads; the "
                    "embedding is shown apart)",
                    f"{r.get('search_over_raw_candidates_p95')}x (over raw top-{r.get('k')}: "
                    f"{r.get('search_over_raw_p95')}x; hybrid with the embedding over the "
                    f"embedding + raw: {r.get('hybrid_over_raw_question_p95')}x, over raw "
                    f"alone: {r['hybrid_over_raw_p95']}x)",
                    _verdict(r["meets_ratio_target"]),
                ],
                ["hits from other users", r["foreign_hits"], _verdict(r["foreign_hits"] == 0)],
            ],
        ),
        "Hybrid stages, p50 ms: "
        + ", ".join(f"{k} {v}" for k, v in r["hybrid_stages_p50_ms"].items())
        + ".",
    ]
    if r.get("bm25_memory_load_s") is not None:
        lines.append(
            f"In-memory BM25 copy: {r['bm25_memory_postings']} postings loaded in "
            f"{r['bm25_memory_load_s']} s (once per process; SQL scores meanwhile)."
        )
    from bench.retrieval_crowd import crowded_summary  # imported late like the bench itself

    crowded = crowded_summary(r.get("crowded_reads_p50_ms", {}), r.get("crowd_documents", 0))
    if crowded:
        lines.append(crowded[0].upper() + crowded[1:] + ".")
    return lines


def _answers_md(r: dict) -> list[str]:
    from bench.answers_figures import before

    rows = []
    for p in r["paths"]:
        if p["skipped"]:
            rows.append([p["path"], p["questions"], f"skipped: {p['skipped']}", *[""] * 10])
            continue
        rows.append(
            [
                p["path"],
                p["questions"],
                p["ttft_p50_s"],
                p.get("floor_p50_s") or "",
                p.get("ttft_over_floor_p50") or "",
                p.get("raw_read_p50_s") or "",
                p.get("ttft_over_raw_read_p50") or "",
                p["total_p50_s"],
                before(p["path"], r["model"]),
                p["total_max_s"],
                p["tokens_in_mean"],
                p["tokens_out_mean"],
                f"{p['route_matches']}/{p['runs']}",
            ]
        )
    headers = ["path", "questions", "TTFT p50 s", "floor p50 s", "TTFT/floor"]
    headers += ["bare read p50 s", "TTFT/bare read", "total p50 s"]
    headers += ["before: TTFT / total", "total max s"]
    return [
        f"Model `{r['model']}`, book {r['book']['title']} ({r['book']['chunks']} chunks); "
        f"global summary by the {r['summary']['writer']} writer; raw prompt speed "
        f"{r.get('prompt_tokens_per_s')} tokens/s (the floor: tokens read before the first "
        "answer token at that speed; the bare read: the same read sent to the model with "
        "nothing in front, the floor of a short read).",
        markdown_table([*headers, "tokens in", "tokens out", "routed as expected"], rows),
        f"Load average {r['load_avg_before']} before, {r['load_avg_after']} after.",
    ]


def _load_md(r: dict) -> list[str]:
    rows = [
        [x["route"], x["requests"], x["errors"], x["p50_ms"], x["p95_ms"], x["max_ms"]]
        for x in r["routes"]
    ]
    return [
        f"{r['clients']} clients as {r['users']} users for {r['seconds']} s, model "
        f"`{r['model']}`: {r['requests']} requests ({r['requests_per_s']}/s), "
        f"**{r['errors']} errors**.",
        markdown_table(["route", "requests", "errors", "p50 ms", "p95 ms", "max ms"], rows),
        f"Asks answered {r['asks_ok']}; usage counter {r['usage_chat_messages']}; message rows "
        f"{r['assistant_rows']} assistant / {r['user_rows']} user: "
        + ("counters match." if r["counters_match"] else "**counters do not match**."),
    ]


def _eval_retrieval_md(r: dict) -> list[str]:
    verdicts = r.get("target_verdicts", {})
    rows = [
        [
            m["mode"],
            m["queries"],
            f"{m['ndcg_at_10']:.4f}",
            f"{m['recall_at_100']:.3f}",
            f"{m['mrr_at_10']:.4f}",
            m["latency_p50_ms"],
            m["latency_p95_ms"],
            (
                f">= {r['targets'][m['mode']]:.2f}: {_verdict(verdicts.get(m['mode']))}"
                if m["mode"] in r["targets"]
                else "-"
            ),
        ]
        for m in r["modes"]
    ]
    i = r["index"]
    whole = r["split_queries"] and all(m["queries"] >= r["split_queries"] for m in r["modes"])
    lines = [
        f"{i['documents']} documents, {i['chunks']} chunks; {r['split_queries']} judged "
        f"queries ({r['split']} split)"
        + ("." if whole else "; a part of the queries, so no target verdict."),
        markdown_table(
            ["mode", "queries", "nDCG@10", "R@100", "MRR@10", "p50 ms", "p95 ms", "target"],
            rows,
        ),
        markdown_table(
            ["published (BEIR SciFact test)", "nDCG@10"],
            [[p["method"], f"{p['ndcg_at_10']:.4f}"] for p in r["published"]],
        ),
    ]
    if r["dataset"] != "scifact":
        lines.append(
            "A slice of SciFact (its judged documents plus random others) scores higher than "
            "the whole corpus, so it gets no target verdict; compare modes with each other, "
            "not with the published figures."
        )
    return lines


def _eval_answers_md(r: dict) -> list[str]:
    base = {x["route"]: x for x in r["routes"] if x["system"] == "baseline"}
    rows = []
    for x in (x for x in r["routes"] if x["system"] == "rag"):
        b = base.get(x["route"], {})
        rows.append(
            [
                x["route"],
                x["questions"],
                "-"
                if x["route_matches"] is None
                else f"{x['route_matches']}/{x['expected_routes']}",
                f"{_pct(x['accuracy'])} / {_pct(b.get('accuracy'))}",
                f"{_pct(x['f1'])} / {_pct(b.get('f1'))}",
                _pct(x["citation_validity"]),
                _pct(x["citation_support"]),
                f"{_pct(x['refusal_rate'])} / {_pct(b.get('refusal_rate'))}",
                f"{x['latency_p50_s']} / {b.get('latency_p50_s', '-')}",
                f"{x['tokens_mean']} / {b.get('tokens_mean', '-')}",
            ]
        )
    headers = ["route", "n", "routed", "match", "token F1", "citation validity"]
    return [
        f"Model `{r['model']}`, {len(r['questions']) // 2} questions; cells read Quire / the "
        "same model without retrieval.",
        markdown_table(
            [*headers, "citation support", "refusal (unanswerable)", "p50 s", "tokens"], rows
        ),
    ]


RENDERERS: dict[str, Callable[[Any], list[str]]] = {
    "ingest": _ingest_md,
    "retrieval": _retrieval_md,
    "answers": _answers_md,
    "load": _load_md,
    "eval-retrieval": _eval_retrieval_md,
    "eval-answers": _eval_answers_md,
}
