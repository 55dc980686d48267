"""The figures of ``quire eval answers``: per system (the graph, the baseline) and route,
the shares and latencies of its scored answers, the report they make and its chart."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.charts import new_chart, save_chart
from bench.eval_answers_scoring import QuestionResult
from bench.metrics import mean, percentile


@dataclass
class RouteFigures:
    """One route's (or ``all``) figures for one system."""

    system: str
    route: str
    questions: int
    answerable: int
    unanswerable: int
    accuracy: float | None
    f1: float | None
    citation_validity: float | None
    citation_support: float | None
    refusal_rate: float | None
    latency_p50_s: float | None
    latency_mean_s: float | None
    tokens_mean: float | None
    answer_in_context: float | None = None
    """Of the answerable questions given passages, the share whose passages held an answer."""
    route_matches: int | None = None
    """Of the ``expected_routes`` questions that name a route, how many the graph took."""
    expected_routes: int = 0


@dataclass
class AnswersReport:
    """Everything ``quire eval answers`` prints and stores."""

    dataset: str
    model: str
    user: str
    database: str
    documents: list[dict]
    routes: list[RouteFigures]
    questions: list[QuestionResult]
    seconds: float
    notes: list[str] = field(default_factory=list)

    def rows(self, system: str) -> list[RouteFigures]:
        """One system's rows (per route, then ``all``)."""
        return [r for r in self.routes if r.system == system]

    def row(self, system: str, route: str) -> RouteFigures | None:
        """One system's row for one route (``all``: every question)."""
        return next((r for r in self.rows(system) if r.route == route), None)

    def as_dict(self) -> dict:
        """The report as plain JSON-ready data."""
        return asdict(self)


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def route_figures(system: str, route: str, rows: list[QuestionResult]) -> RouteFigures:
    """The figures of one system over ``rows`` (one route's questions, or all)."""
    answerable = [r for r in rows if not r.unanswerable]
    unanswerable = [r for r in rows if r.unanswerable]
    cited = sum(r.cited for r in rows)
    seconds = [r.seconds for r in rows]
    expected = [r for r in rows if r.expected_route]
    return RouteFigures(
        system=system,
        route=route,
        questions=len(rows),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        accuracy=_ratio(sum(r.match for r in rows), len(rows)),
        f1=round(mean([r.f1 or 0.0 for r in answerable]), 4) if answerable else None,
        citation_validity=_ratio(sum(r.cited_valid for r in rows), cited),
        citation_support=_ratio(
            sum(r.cited_supporting for r in answerable), sum(r.cited for r in answerable)
        ),
        refusal_rate=_ratio(sum(r.refused for r in unanswerable), len(unanswerable)),
        latency_p50_s=round(percentile(seconds, 50), 3) if seconds else None,
        latency_mean_s=round(mean(seconds), 3) if seconds else None,
        tokens_mean=round(mean([float(r.tokens) for r in rows]), 1) if rows else None,
        answer_in_context=_ratio(
            sum(bool(r.in_context) for r in answerable),
            sum(r.in_context is not None for r in answerable),
        ),
        route_matches=(
            sum(r.route == r.expected_route for r in expected)
            if expected and system != "baseline"
            else None
        ),
        expected_routes=len(expected),
    )


NO_TOOLS = "rag_no_tools"
SYSTEMS = ("rag", NO_TOOLS, "baseline")
"""The graph as configured, the graph with tool selection off (``--compare-tools``), and
the model without retrieval."""


def route_rows(results: list[QuestionResult], baseline: bool) -> list[RouteFigures]:
    """Per system present (``rag``, ``rag_no_tools``, then ``baseline`` when asked), a row
    per route taken, then ``all``; baseline rows are grouped by the route the graph took."""
    routes: list[RouteFigures] = []
    present = {r.system for r in results}
    for system in [s for s in SYSTEMS if s in present and (baseline or s != "baseline")]:
        mine = [r for r in results if r.system == system]
        for route in sorted({r.route for r in mine}):
            routes.append(route_figures(system, route, [r for r in mine if r.route == route]))
        routes.append(route_figures(system, "all", mine))
    return routes


METRICS = (
    ("accuracy", "match"),
    ("f1", "token F1"),
    ("citation_validity", "cit. valid"),
    ("citation_support", "cit. support"),
    ("refusal_rate", "refusal (unans.)"),
)


def plot_report(report: AnswersReport, path: Path) -> Path:
    """Grouped bars: every metric of the ``all`` row, graph vs baseline."""
    fig, ax = new_chart((10, 4.5))
    systems = [s for s in SYSTEMS if report.row(s, "all")]
    width = 0.8 / max(len(systems), 1)
    colors = {"rag": "#55a868", NO_TOOLS: "#4c72b0", "baseline": "#8c8c8c"}
    labels = {
        "rag": "Quire (retrieval)",
        NO_TOOLS: "Quire, tool selection off",
        "baseline": "baseline (no retrieval)",
    }
    for i, system in enumerate(systems):
        row = report.row(system, "all")
        values = [getattr(row, key) for key, _ in METRICS]
        xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(METRICS))]
        bars = ax.bar(
            xs,
            [v or 0.0 for v in values],
            width=width,
            color=colors[system],
            label=labels[system],
            zorder=2,
        )
        for bar, value in zip(bars, values, strict=True):
            ax.annotate(
                "n/a" if value is None else f"{value:.2f}",
                (bar.get_x() + bar.get_width() / 2, (value or 0.0) + 0.01),
                ha="center",
                va="bottom",
                fontsize=8,
            )
    ax.set_xticks(range(len(METRICS)), [label for _, label in METRICS])
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("share")
    n = report.row("rag", "all").questions if report.row("rag", "all") else 0
    ax.set_title(f"Answer quality, model {report.model}, {n} questions")
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=8)
    return save_chart(fig, path)
