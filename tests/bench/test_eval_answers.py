"""``quire eval answers`` logic: metrics by hand, and a short run with the extractive model
in the test database (Alice only, its own user)."""

from __future__ import annotations

import json
import uuid

import pytest

from bench.eval_answers import (
    best_f1,
    contains_match,
    is_refusal,
    load_dataset,
)
from tests.support.paths import DATA

DATASET = DATA / "answers.jsonl"


def test_metrics_by_hand():
    assert best_f1("the Cheshire Cat #chk_0123abcd", ["Cheshire Cat"]) == 1.0
    assert best_f1("a cat", ["Cheshire Cat", "dog"]) == 2 * 0.5 * 1.0 / 1.5
    assert contains_match("Her cat is DINAH.", ["dinah"]) and not contains_match("no", ["x"])
    assert is_refusal("Your documents don't seem to cover this.")
    assert is_refusal("anything", "no_context_response") and not is_refusal("Dinah.")
    assert is_refusal("The budget is not explicitly stated in the provided passages.")
    assert is_refusal("The passages do not specifically mention which GPU was used.")
    assert not is_refusal("He was not given a new contract, and left for Gillingham.")
    # contracted refusals, as the 1.5B model writes them
    assert is_refusal("Your documents don't contain enough information to answer this.")
    assert is_refusal("Your documents don't say which GPU was used to train the models.")
    assert not is_refusal("He wasn't given a new contract, so he left for Gillingham.")


def test_answer_in_context_tells_a_reading_miss_from_a_retrieval_miss():
    from bench.eval_answers_data import Item
    from bench.eval_answers_scoring import score

    item = Item(question="Who is Alice's cat?", answers=["Dinah"], documents=[])
    common = dict(system="rag", route="hybrid", model_used="local", chunk_map={}, citations=[])
    shown = ["Alice had a cat called Dinah.", "The Rabbit ran."]
    read_wrong = score(item, answer="The Rabbit.", shown=shown, seconds=1, tokens=1, **common)
    assert read_wrong.in_context is True and not read_wrong.match
    missed = score(item, answer="The Rabbit.", shown=shown[1:], seconds=1, tokens=1, **common)
    assert missed.in_context is False
    assert score(item, answer="x", shown=None, seconds=1, tokens=1, **common).in_context is None


def test_dataset_loads_and_resolves_documents():
    items = load_dataset(DATASET)
    assert len(items) >= 60 and sum(i.unanswerable for i in items) >= 10
    assert all(p.is_file() for i in items for p in i.documents)
    other = load_dataset(DATA / "answers-misc.jsonl")  # text, PDF and PPTX files
    assert len(other) >= 25 and sum(i.unanswerable for i in other) >= 3
    assert {p.suffix for i in other for p in i.documents} == {".txt", ".pdf", ".pptx"}
    assert all(p.is_file() for i in other for p in i.documents)
    # near misses: the article says something close to each, never the thing asked
    near = load_dataset(DATA / "answers-near-misses.jsonl")
    assert len(near) >= 9 and all(i.unanswerable and not i.answers for i in near)
    assert all(p.is_file() for i in near for p in i.documents)
    # PDFs of py-pdf's samples; a transcript, a recipe and a web page written for these tests
    samples = load_dataset(DATA / "answers-pdf-samples.jsonl")
    formats = load_dataset(DATA / "answers-formats.jsonl")
    assert {p.suffix for i in formats for p in i.documents} == {".vtt", ".md", ".html"}
    # forty SciFact abstracts, every question over all of them
    abstracts = load_dataset(DATA / "answers-abstracts.jsonl")
    assert all(len(i.documents) == 40 for i in abstracts)
    for extra in (samples, formats, abstracts):
        assert sum(i.unanswerable for i in extra) >= 4 and sum(bool(i.answers) for i in extra) >= 9
        assert all(p.is_file() for i in extra for p in i.documents)


async def test_eval_answers_extractive(services, tmp_path):
    from bench.eval_answers import evaluate_answers, write_report

    items = load_dataset(DATASET)
    alice = [i for i in items if not i.unanswerable and i.documents[0].name.startswith("alice")]
    unanswerable = next(i for i in items if i.unanswerable)
    chosen = alice[:5] + [unanswerable]
    report = await evaluate_answers(
        services, chosen, model="extractive", user=f"eval-answers-{uuid.uuid4().hex[:6]}"
    )
    rag, baseline = report.rows("rag"), report.rows("baseline")
    assert [r.route for r in rag][-1] == "all" and len(rag) >= 2
    total = report.row("rag", "all")
    assert total.questions == len(chosen) and total.unanswerable == 1
    assert total.citation_validity == 1.0  # the citation guard
    assert total.accuracy is not None and total.latency_p50_s > 0
    assert total.answer_in_context is not None  # Alice's passages were read
    assert report.row("baseline", "all").questions == len(chosen) and baseline
    assert len(report.questions) == 2 * len(chosen)
    assert report.documents[0]["chunks"] > 0

    json_path, png_path = write_report(report, tmp_path / "eval")
    written = json.loads(json_path.read_text())
    assert {r["system"] for r in written["results"]["routes"]} == {"rag", "baseline"}
    assert png_path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.local_model
async def test_eval_answers_local_model_keeps_citations_valid(services):
    """Three questions on the real local model: cited ids all resolve, the unanswerable one
    is refused, and an answerable one is matched (the baseline's plumbing is the extractive
    test's: here it would only add three model calls)."""
    from bench.eval_answers import evaluate_answers

    items = load_dataset(DATASET)
    alice = [i for i in items if not i.unanswerable and i.documents[0].name.startswith("alice")]
    unanswerable = next(i for i in items if i.unanswerable)
    # the watch and "DRINK ME": matched in every full local eval run (the hookah, asked here
    # before, was missed in one: one sampled word of a 1.5B model is not a stable test)
    chosen = [alice[1], alice[2], unanswerable]
    report = await evaluate_answers(
        services, chosen, model="local", user=f"eval-local-{uuid.uuid4().hex[:6]}", baseline=False
    )
    rag = report.row("rag", "all")
    assert rag.citation_validity == 1.0
    assert rag.refusal_rate == 1.0
    rows = [q for q in report.questions if q.system == "rag" and not q.unanswerable]
    assert sum(q.match for q in rows) >= 1, [q.answer for q in rows]
    # an answer cites what it says; an honest "couldn't find" cites nothing
    assert all(q.cited > 0 or is_refusal(q.answer) for q in rows), [q.answer for q in rows]


async def test_eval_answers_goes_on_past_a_document_too_short_to_summarize(services, tmp_path):
    """Data sets of short articles are common: a document without sections gets no summary,
    is noted, and its questions are still asked."""
    from bench.eval_answers import evaluate_answers

    (tmp_path / "bakery.txt").write_text(
        "The corner bakery sells rye bread on market days. Its oven was built in 1911."
    )
    (tmp_path / "set.jsonl").write_text(
        json.dumps(
            {
                "question": "When was the bakery oven built?",
                "answers": ["1911"],
                "document": "bakery.txt",
            }
        )
        + "\n"
    )
    items = load_dataset(tmp_path / "set.jsonl")
    report = await evaluate_answers(
        services, items, model="extractive", user=f"eval-short-{uuid.uuid4().hex[:6]}"
    )
    assert "too short" in report.documents[0]["summary"]["skipped"]
    rag = [q for q in report.questions if q.system == "rag"]
    assert len(rag) == 1 and rag[0].match, rag[0].answer


async def test_a_stopped_eval_goes_on_from_its_kept_answers(services, tmp_path):
    """Rows are kept as each question is answered; ``resume`` asks only the questions a
    stopped run had not answered in full, and refuses a file of another run."""
    from bench.eval_answers import evaluate_answers
    from bench.eval_answers_checkpoint import Checkpoint

    items = load_dataset(DATASET)
    alice = [i for i in items if not i.unanswerable and i.documents[0].name.startswith("alice")]
    chosen = alice[:3]
    user = f"eval-resume-{uuid.uuid4().hex[:6]}"
    path, header = tmp_path / "run.partial.jsonl", {"dataset": "x", "model": "extractive"}

    first = await evaluate_answers(
        services,
        chosen[:2],
        model="extractive",
        user=user,
        checkpoint=Checkpoint(path, header, False),
    )
    with path.open("a") as out:
        out.write('{"question": "cut sho')  # the run was stopped mid-line
    asked = []
    resumed = await evaluate_answers(
        services,
        chosen,
        model="extractive",
        user=user,
        checkpoint=Checkpoint(path, header, True),
        log=asked.append,
    )
    assert sum("kept from the earlier run" in line for line in asked) == 2
    assert [q.question for q in resumed.questions] == [
        q for i in chosen for q in (i.question, i.question)
    ]
    assert resumed.questions[:4] == first.questions  # the kept rows, as they were
    assert any("2 of 3 questions" in note for note in resumed.notes)
    # a fresh (not resumed) run starts the file over; another run's file is refused
    assert len(Checkpoint(path, header, False).kept) == 0
    with pytest.raises(ValueError, match="another run"):
        Checkpoint(path, {**header, "model": "local"}, True)
