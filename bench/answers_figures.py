"""The answer benchmark's figures: one row per asked question, one per path, and the
summary of a run (mismatched routes, where token counts came from)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphs.streaming import ANSWER_NODES

BEFORE_LOCAL: dict[str, tuple[float, float]] = {
    "hybrid": (7.9, 10.0),
    "deep_reasoning": (10.3, 22.0),
    "global_summary": (5.2, 14.0),
}
"""TTFT and total p50 (s) of the local model on 2 cores before the prompts were focused and
the prefix cache kept warm (README, issue 22): printed beside each run's figures."""


def before(path: str, model: str) -> str:
    """``TTFT / total`` before (s), for the local model's paths that were measured."""
    if model != "local" or path not in BEFORE_LOCAL:
        return ""
    ttft, total = BEFORE_LOCAL[path]
    return f"{ttft} / {total}"


@dataclass
class QuestionFigures:
    """One asked question (one repeat)."""

    path: str
    question: str
    run: int
    expected_route: str
    route: str | None
    expected_node: str
    answered_by: str | None
    """The answering node that ran (the last of :data:`ANSWER_NODES` in the turn)."""
    matches: bool
    ttft_s: float
    total_s: float
    streamed: bool
    """False: no answer token was streamed (the fixed ``direct`` reply); TTFT = answer ready."""
    tokens_in: int
    tokens_out: int
    model_calls: int
    tokens_source: str
    """``callback`` (usage of each call), ``tokens_used`` (state total, in ``tokens_out``) or
    ``none`` (no model call)."""
    tokens_used: int
    """The graph state's ``tokens_used`` (the answering call's total)."""
    stock_callback_models: int
    """Models ``get_usage_metadata_callback`` recorded usage for in the turn (module docs)."""
    model_used: str | None
    background_s: float
    """The conversation-summary update ``save`` left running, waited for after the turn."""
    background_tokens: int
    nodes: list[str]
    answer: str
    tokens_read: int = 0
    """Input tokens the model read before answering (its prefix cache held the rest)."""
    floor_s: float | None = None
    """The physical floor of the TTFT: ``tokens_read`` at llama.cpp's raw prompt speed."""
    ttft_over_floor: float | None = None
    raw_read_s: float | None = None
    """The same read done bare (:func:`bench.prompt_speed.raw_read_seconds`): the floor for a
    short read, which runs below the raw speed of a long prompt."""
    ttft_over_raw_read: float | None = None


@dataclass
class PathFigures:
    """One path's figures over its questions and repeats."""

    path: str
    questions: int
    runs: int
    ttft_p50_s: float | None = None
    total_p50_s: float | None = None
    total_max_s: float | None = None
    tokens_in_mean: float | None = None
    tokens_out_mean: float | None = None
    route_matches: int = 0
    floor_p50_s: float | None = None
    ttft_over_floor_p50: float | None = None
    raw_read_p50_s: float | None = None
    ttft_over_raw_read_p50: float | None = None
    skipped: str | None = None


@dataclass
class AnswersFigures:
    """Everything ``quire bench answers`` prints and stores."""

    database: str
    model: str
    repeat: int
    book: dict
    summary: dict
    paths: list[PathFigures]
    questions: list[QuestionFigures]
    mismatches: list[str]
    usage_source: str
    load_avg_before: list[float]
    load_avg_after: list[float]
    seconds: float
    notes: list[str] = field(default_factory=list)
    prompt_tokens_per_s: float | None = None
    """llama.cpp's raw prompt speed in this run (``None``: not the local model)."""

    def path(self, name: str) -> PathFigures:
        """The figures of one path."""
        return next(p for p in self.paths if p.path == name)


def _p50(values: list[float]) -> float:
    return round(float(np.percentile(values, 50)), 3)


def _tokens(got: dict, tokens_used: int) -> tuple[str, int, int]:
    """Where the turn's token counts come from, and tokens in and out (module docs of
    :mod:`bench.answers`)."""
    if got["calls"]:
        return "callback", got["tokens_in"], got["tokens_out"]
    if tokens_used:
        return "tokens_used", 0, tokens_used
    return "none", 0, 0


def _floor(got: dict, prompt_speed: float | None) -> tuple[float | None, float | None]:
    """The TTFT's floor (s) and the TTFT over it, when the model's speed is known."""
    read = got.get("tokens_read") or 0
    if not prompt_speed or not read or not got["streamed"]:
        return None, None
    floor = read / prompt_speed
    return round(floor, 3), round(got["ttft"] / floor, 3)


def question_figures(
    path: str,
    question: str,
    run: int,
    expected: tuple[str, str],
    got: dict,
    prompt_speed: float | None = None,
    raw_read_s: float | None = None,
) -> QuestionFigures:
    """One asked question's row from what :func:`bench.answers_turn.ask_once` returned;
    ``expected``: the route and the answering node the path should take; ``prompt_speed``:
    the model's raw prompt tokens/s (for the TTFT's floor); ``raw_read_s``: the seconds the
    same read took done bare."""
    floor, ratio = _floor(got, prompt_speed)
    over_raw = round(got["ttft"] / raw_read_s, 3) if raw_read_s and got["streamed"] else None
    route, node = expected
    state = got["state"]
    answered_by = next((n for n in reversed(got["nodes"]) if n in ANSWER_NODES), None)
    tokens_used = int(state.get("tokens_used") or 0)
    source, t_in, t_out = _tokens(got, tokens_used)
    return QuestionFigures(
        path=path,
        question=question,
        run=run,
        expected_route=route,
        route=state.get("route"),
        expected_node=node,
        answered_by=answered_by,
        matches=state.get("route") == route and answered_by == node,
        ttft_s=round(got["ttft"], 3),
        total_s=round(got["total"], 3),
        streamed=got["streamed"],
        tokens_in=t_in,
        tokens_out=t_out,
        model_calls=got["calls"],
        tokens_source=source,
        tokens_used=tokens_used,
        stock_callback_models=got["stock_models"],
        model_used=state.get("model_used"),
        background_s=round(got["background_s"], 3),
        background_tokens=got["background_tokens"],
        nodes=got["nodes"],
        answer=str(state.get("answer", ""))[:400],
        tokens_read=int(got.get("tokens_read") or 0),
        floor_s=floor,
        ttft_over_floor=ratio,
        raw_read_s=raw_read_s if over_raw else None,
        ttft_over_raw_read=over_raw,
    )


def describe(row: QuestionFigures) -> str:
    """One progress line for an asked question."""
    return (
        f"{row.path}: {row.question!r} -> route {row.route} via {row.answered_by}"
        f"{'' if row.matches else ' (MISMATCH)'}; TTFT {row.ttft_s} s, "
        f"total {row.total_s} s, tokens {row.tokens_in}/{row.tokens_out}"
        + (f", read {row.tokens_read} (floor {row.floor_s} s)" if row.floor_s else "")
        + (f", the same read bare {row.raw_read_s} s" if row.raw_read_s else "")
    )


def _path_figures(path: str, rows: list[QuestionFigures]) -> PathFigures:
    floors = [r.floor_s for r in rows if r.floor_s is not None]
    ratios = [r.ttft_over_floor for r in rows if r.ttft_over_floor is not None]
    raws = [r.raw_read_s for r in rows if r.raw_read_s is not None]
    over_raws = [r.ttft_over_raw_read for r in rows if r.ttft_over_raw_read is not None]
    return PathFigures(
        path=path,
        questions=len({r.question for r in rows}),
        runs=len(rows),
        ttft_p50_s=_p50([r.ttft_s for r in rows]),
        total_p50_s=_p50([r.total_s for r in rows]),
        total_max_s=round(max(r.total_s for r in rows), 3),
        tokens_in_mean=round(sum(r.tokens_in for r in rows) / len(rows), 1),
        tokens_out_mean=round(sum(r.tokens_out for r in rows) / len(rows), 1),
        route_matches=sum(r.matches for r in rows),
        floor_p50_s=_p50(floors) if floors else None,
        ttft_over_floor_p50=_p50(ratios) if ratios else None,
        raw_read_p50_s=_p50(raws) if raws else None,
        ttft_over_raw_read_p50=_p50(over_raws) if over_raws else None,
    )


def path_figures(
    questions: dict[str, list[str]], rows: list[QuestionFigures], skipped: dict[str, str]
) -> list[PathFigures]:
    """Each path's figures, in the order of ``questions`` (``skipped``: path -> why)."""
    paths: list[PathFigures] = []
    for path in questions:
        if path in skipped:
            paths.append(PathFigures(path, len(questions[path]), 0, skipped=skipped[path]))
            continue
        mine = [r for r in rows if r.path == path]
        if mine:
            paths.append(_path_figures(path, mine))
    return paths


def mismatches(rows: list[QuestionFigures]) -> list[str]:
    """A line for each question that took another route or answering node than expected."""
    return [
        f"{r.path}: {r.question!r} took route {r.route} via {r.answered_by}, "
        f"expected {r.expected_route} via {r.expected_node}"
        for r in rows
        if not r.matches
    ]


def usage_source(rows: list[QuestionFigures]) -> str:
    """Where the run's token counts came from (``callback+tokens_used``, ..., ``none``)."""
    sources = sorted({r.tokens_source for r in rows} - {"none"})
    return "+".join(sources) or "none"
