"""``quire bench answers`` logic with the extractive model, one question per path, in the
test database (its own user)."""

from __future__ import annotations

import uuid


async def test_bench_answers_every_path_extractive(services):
    from agent.models import chat_model
    from agent.web_search import web_search_available
    from bench.answers import EXPECTED, QUESTIONS, bench_answers, collect_usage

    # the usage collector sees the extractive model's streamed usage
    with collect_usage() as usage:
        async for _ in chat_model("extractive", services.settings, 0.0).astream("Who is Dinah?"):
            pass
    assert usage.calls == 1 and usage.input_tokens > 0 and usage.output_tokens > 0

    user = f"bench-answers-test-{uuid.uuid4().hex[:6]}"
    questions = {path: asked[:1] for path, asked in QUESTIONS.items()}
    figures = await bench_answers(
        services, model="extractive", questions=questions, user=user, warmup=False
    )

    assert [p.path for p in figures.paths] == list(QUESTIONS)
    assert figures.book["chunks"] > 0 and figures.book["status"] == "ingested"
    assert figures.summary["model"] == "extractive" and figures.summary["chars"] > 0
    web = web_search_available(services.settings)
    for p in figures.paths:
        if p.path == "web_search" and not web:
            assert p.skipped == "not configured" and p.runs == 0
            continue
        assert p.skipped is None and p.runs == 1 and p.route_matches == 1, figures.mismatches
        assert 0 < p.ttft_p50_s <= p.total_p50_s <= p.total_max_s
    assert figures.mismatches == []
    # the floor needs the local model's measured prompt speed
    assert figures.prompt_tokens_per_s is None
    assert all(r.floor_s is None for r in figures.questions)
    for row in figures.questions:
        route, node = EXPECTED[row.path]
        assert (row.route, row.answered_by) == (route, node)
        assert 0 < row.ttft_s <= row.total_s
        assert row.answer
        if row.path in ("direct", "unanswered"):  # a fixed reply: no model call, none streamed
            assert not row.streamed and row.tokens_source == "none"
        else:
            assert row.streamed and row.tokens_source == "callback"
            assert row.tokens_in > 0 and row.tokens_out > 0
    assert figures.path("global_summary").tokens_in_mean > 0
    assert len(figures.load_avg_before) == 3 and figures.database == services.settings.database_name

    # a second run reuses the book and its summary
    again = await bench_answers(
        services,
        model="extractive",
        questions={"hybrid": QUESTIONS["hybrid"][:1]},
        user=user,
        warmup=False,
    )
    assert again.book["status"] == "duplicate" and again.summary["reused"]
    assert again.path("hybrid").route_matches == 1


def test_the_floor_is_the_tokens_read_at_the_raw_prompt_speed():
    from bench.answers_figures import before, path_figures, question_figures

    got = {
        "state": {"route": "hybrid", "tokens_used": 300, "answer": "Dinah #chk_0a1b2c3d."},
        "nodes": ["route", "retrieve", "generate", "save"],
        "ttft": 2.3,
        "streamed": True,
        "total": 4.0,
        "calls": 1,
        "tokens_in": 500,
        "tokens_out": 20,
        "tokens_read": 100,
        "stock_models": 0,
        "background_s": 0.0,
        "background_tokens": 0,
    }
    row = question_figures("hybrid", "Who is Dinah?", 0, ("hybrid", "generate"), got, 50.0)
    assert (row.tokens_read, row.floor_s, row.ttft_over_floor) == (100, 2.0, 1.15)
    unknown = question_figures("hybrid", "Who is Dinah?", 0, ("hybrid", "generate"), got)
    assert unknown.floor_s is None and unknown.ttft_over_floor is None
    [path] = path_figures({"hybrid": ["Who is Dinah?"]}, [row], {})
    assert (path.floor_p50_s, path.ttft_over_floor_p50) == (2.0, 1.15)
    assert before("hybrid", "local") == "7.9 / 10.0" and before("hybrid", "extractive") == ""
    # beside it, the same read done bare: a short read's own floor
    bare = question_figures("hybrid", "Who is Dinah?", 0, ("hybrid", "generate"), got, 50.0, 2.0)
    assert (bare.raw_read_s, bare.ttft_over_raw_read, bare.floor_s) == (2.0, 1.15, 2.0)
    [path] = path_figures({"hybrid": ["Who is Dinah?"]}, [bare, row], {})
    assert (path.raw_read_p50_s, path.ttft_over_raw_read_p50) == (2.0, 1.15)
    direct = question_figures(
        "direct", "Name?", 0, ("direct", "direct"), {**got, "streamed": False}, 50.0, 2.0
    )
    assert direct.raw_read_s is None and direct.ttft_over_raw_read is None


async def test_the_bare_read_is_only_measured_on_the_local_model(settings):
    from bench.prompt_speed import raw_read_seconds

    assert await raw_read_seconds("extractive", settings, cached=400, read=60) is None
    assert await raw_read_seconds("local", settings, cached=400, read=0) is None
