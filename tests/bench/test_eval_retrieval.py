"""Retrieval evaluation: BEIR metrics on hand-computed cases, and the eval end to end."""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path

import pytest

from bench.eval_retrieval import load_beir, rank_documents
from bench.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k

# --- metrics ------------------------------------------------------------------------------


def test_ndcg_binary_hand_computed():
    # relevant b (rank 2) and d (rank 4) retrieved, e never: DCG = 1/log2(3) + 1/log2(5),
    # ideal DCG over all three relevant = 1 + 1/log2(3) + 1/log2(4)
    ranked = ["a", "b", "c", "d"]
    qrels = {"b": 1, "d": 1, "e": 1}
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 0.5)
    assert ndcg_at_k(ranked, qrels, 10) == pytest.approx(expected)
    assert ndcg_at_k(ranked, qrels, 10) == pytest.approx(0.498189, abs=1e-6)


def test_ndcg_graded_gain_is_linear():
    # trec_eval / pytrec_eval gain = rel (not 2^rel - 1)
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )
    assert ndcg_at_k(["a", "b"], {"a": 2, "b": 1}, 10) == pytest.approx(1.0)


def test_ndcg_perfect_and_empty():
    assert ndcg_at_k(["x", "y"], {"x": 1}, 10) == pytest.approx(1.0)
    assert ndcg_at_k([], {"x": 1}, 10) == 0.0
    assert ndcg_at_k(["x"], {"x": 0}, 10) == 0.0  # judged non-relevant only
    # ideal DCG is cut at k too: 12 relevant, all retrieved first -> 1.0
    many = {f"d{i}": 1 for i in range(12)}
    assert ndcg_at_k([f"d{i}" for i in range(12)], many, 10) == pytest.approx(1.0)


def test_cutoffs():
    ranked = [f"n{i}" for i in range(10)] + ["hit"]  # the relevant doc at rank 11
    qrels = {"hit": 1, "missing": 1}
    assert ndcg_at_k(ranked, qrels, 10) == 0.0
    assert mrr_at_k(ranked, qrels, 10) == 0.0
    assert mrr_at_k(ranked, qrels, 11) == pytest.approx(1 / 11)
    assert recall_at_k(ranked, qrels, 10) == 0.0
    assert recall_at_k(ranked, qrels, 100) == pytest.approx(0.5)


def test_mrr_and_recall_hand_computed():
    ranked = ["a", "b", "c", "d"]
    qrels = {"b": 1, "d": 1, "e": 1}
    assert mrr_at_k(ranked, qrels, 10) == pytest.approx(0.5)
    assert recall_at_k(ranked, qrels, 100) == pytest.approx(2 / 3)
    assert mrr_at_k(["c"], {"c": 1}, 10) == 1.0
    assert recall_at_k(["a"], {}, 100) == 0.0


def test_percentile_interpolates():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([5.0], 95) == 5.0
    assert percentile([10.0, 20.0], 95) == pytest.approx(19.5)


def test_rank_documents_uses_best_chunk_and_skips_unknown():
    d1, d2, d3, stray = (uuid.uuid4() for _ in range(4))
    mapping = {d1: ["x"], d2: ["y", "z"], d3: ["w"]}
    # chunks: d2, d1, d2 again (ignored), an unknown document, d3
    assert rank_documents([d2, d1, d2, stray, d3], mapping) == ["y", "z", "x", "w"]


# --- a tiny BEIR data set -----------------------------------------------------------------------

TOPICS = [
    ("Volcanic magma chambers", "basaltic magma, lava flows and caldera collapse near Etna"),
    ("Emperor penguin colonies", "penguin huddles on Antarctic sea ice during winter blizzards"),
    ("Honeybee waggle dance", "foraging honeybees signal nectar sources with the waggle dance"),
    ("Coral reef bleaching", "coral bleaching after marine heatwaves on the Great Barrier Reef"),
    ("Tardigrade desiccation", "tardigrades survive desiccation by forming a tun state"),
    ("Insulin receptor signalling", "insulin receptor phosphorylation drives glucose uptake"),
    (
        "Malaria parasite transmission",
        "Plasmodium falciparum gametocytes infect Anopheles mosquitoes",
    ),
    ("Gut microbiome diversity", "fibre intake raises gut microbiome diversity and butyrate"),
    ("Telomere shortening", "telomerase activity and telomere attrition in ageing fibroblasts"),
    ("CRISPR off-target editing", "Cas9 guide RNA mismatches cause off-target cleavage"),
    ("Circadian clock genes", "PER and CRY proteins repress CLOCK BMAL1 in the circadian loop"),
    ("Lithium battery dendrites", "lithium dendrites pierce separators in fast charging batteries"),
    ("Glacier mass balance", "Himalayan glacier mass balance measured with satellite altimetry"),
    ("Dopamine reward prediction", "midbrain dopamine neurons encode reward prediction error"),
    ("Zebrafish fin regeneration", "zebrafish regenerate amputated fins through a blastema"),
    ("Prion protein misfolding", "misfolded prion protein seeds amyloid in scrapie"),
    ("Antibiotic resistant staphylococcus", "MRSA acquires mecA conferring methicillin resistance"),
    ("Photosynthesis in C4 grasses", "C4 maize concentrates carbon dioxide in bundle sheath cells"),
    ("Exoplanet transit photometry", "Kepler detects exoplanets by transit photometry dips"),
    ("Monarch butterfly migration", "monarch butterflies migrate to overwintering sites in Mexico"),
    ("Vitamin D and rickets", "vitamin D deficiency causes rickets and soft bones in children"),
    ("Sleep spindles and memory", "thalamic sleep spindles consolidate declarative memory"),
    (
        "Hepatitis C protease inhibitors",
        "NS3 protease inhibitors cure chronic hepatitis C infection",
    ),
    ("Octopus camouflage", "octopus chromatophores change skin colour for camouflage"),
    ("Permafrost methane release", "thawing permafrost releases methane from Arctic peatland"),
    ("Statins and cholesterol", "statins inhibit HMG-CoA reductase lowering LDL cholesterol"),
    ("Bat echolocation", "bats emit ultrasonic calls for echolocation of moths"),
    ("Tau tangles in Alzheimer disease", "hyperphosphorylated tau forms neurofibrillary tangles"),
    ("Quantum dot solar cells", "lead sulfide quantum dots harvest infrared light in solar cells"),
    (
        "Wolf reintroduction in Yellowstone",
        "wolves reshaped elk grazing and willow growth in Yellowstone",
    ),
]
FILLER = (
    "We describe the study design, the measurements and the statistical analysis. "
    "Results were consistent across replicates and robust to the choice of model. "
    "These findings motivate further work with larger samples and longer follow-up."
)
QUERIES = {
    "q1": ("Do penguins huddle on sea ice in Antarctic winter?", {"d1": 1}),
    "q2": ("Cas9 guide RNA mismatches cause off-target cleavage", {"d9": 1}),
    "q3": ("dopamine neurons encode reward prediction error", {"d13": 1}),
    "q4": ("how do bats use ultrasonic echolocation to hunt moths", {"d26": 1}),
    "q5": ("insulin receptor and glucose uptake; statins and LDL", {"d5": 1, "d25": 1}),
}


def write_tiny_beir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    with (folder / "corpus.jsonl").open("w") as fh:
        for i, (title, key) in enumerate(TOPICS):
            body = f"This paper examines {key}. {FILLER} In short, {key} was observed."
            fh.write(json.dumps({"_id": f"d{i}", "title": title, "text": body}) + "\n")
    with (folder / "queries.jsonl").open("w") as fh:
        for qid, (question, _) in QUERIES.items():
            fh.write(json.dumps({"_id": qid, "text": question, "metadata": {}}) + "\n")
        fh.write(json.dumps({"_id": "unjudged", "text": "not in the qrels"}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{r}" for q, (_, rels) in QUERIES.items() for d, r in rels.items()]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return folder


def test_load_beir_keeps_judged_queries(tmp_path):
    data = load_beir(write_tiny_beir(tmp_path / "tiny"), "test")
    assert len(data.corpus) == len(TOPICS)
    assert list(data.queries) == list(QUERIES)  # header skipped, unjudged query dropped
    assert data.qrels["q5"] == {"d5": 1, "d25": 1}
    assert data.document_text("d0").startswith("Volcanic magma chambers\n\nThis paper")


async def test_eval_end_to_end_on_tiny_set(services, tmp_path):
    from bench.eval_retrieval import run_retrieval_eval, write_report

    folder = write_tiny_beir(tmp_path / "tiny")
    user = f"eval-{uuid.uuid4().hex[:6]}"
    report = await run_retrieval_eval(
        services,
        folder,
        user=user,
        corpus="tiny",
        modes=["bm25", "dense", "hybrid", "hybrid-mmr"],
        cache_dir=tmp_path / "eval",
    )
    assert report.index.documents == len(TOPICS)
    assert report.index.ingested == len(TOPICS) and not report.index.failed
    assert report.index.chunks >= len(TOPICS)
    for mode in report.modes:
        assert mode.queries == len(QUERIES), mode
        assert mode.ndcg_at_10 > 0.5, mode
        assert mode.recall_at_100 > 0.5, mode
        assert mode.mrr_at_10 > 0.5, mode
        assert mode.timed_out == 0 and mode.failures == 0
        assert mode.latency_p50_ms > 0
    bm25 = report.modes[0]
    assert bm25.per_query["q2"]["top"][0] == "d9"  # shares its rare words with d9 only

    def bm25_slice(**slice_of_queries):
        return run_retrieval_eval(
            services,
            folder,
            user=user,
            corpus="tiny",
            modes=["bm25"],
            cache_dir=tmp_path / "eval",
            **slice_of_queries,
        )

    # a rerun reuses the cached mapping: nothing is ingested again
    again = await bm25_slice(limit=2)
    assert again.index.from_cache and again.index.ingested == 0
    assert again.index.indexed_seconds == report.index.seconds
    assert again.modes[0].queries == 2
    assert report.target_met("hybrid") is not None  # whole split: a verdict
    assert again.target_met("bm25") is None  # 2 of 5 queries: no verdict
    assert again.modes[0].per_query == {
        q: bm25.per_query[q] | {"ms": again.modes[0].per_query[q]["ms"]} for q in ("q1", "q2")
    }

    # a held-out slice: queries after the first two
    held_out = await bm25_slice(limit=2, offset=2)
    assert list(held_out.modes[0].per_query) == list(bm25.per_query)[2:4]

    json_path, png_path = write_report(report, tmp_path / "out")
    written = json.loads(json_path.read_text())
    assert written["results"]["modes"][2]["mode"] == "hybrid"
    assert written["results"]["published"][0]["ndcg_at_10"] == pytest.approx(0.6647)
    assert png_path.read_bytes()[:4] == b"\x89PNG"
