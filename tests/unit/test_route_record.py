"""What a turn records about its route: the reason as the turn ended, the confidence of
its answer, and the web fallback rules (pure functions of the graph's state)."""

import pytest

from agent.chat.route_record import (
    WEB_FALLBACK_REASON,
    answer_confidence,
    falls_back_to_web,
    no_web_answer,
    overview_fallback,
    routing_record,
)


def _retrieved(layer: str, similarity: float | None, threshold: float = 0.7, **extra) -> dict:
    return {
        "route": "hybrid",
        "route_reason": "specific question",
        "search_mode": "specific",
        "relevant": layer not in ("any_embedded", "any_chunk", "none"),
        "retrieval": {"layer": layer, "threshold": threshold, "query_type": "specific"},
        "retrieved": [{"id": "#chk_00000001", "similarity": similarity}],
        "model_used": "investigator_extractive",
        **extra,
    }


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (_retrieved("hybrid", 0.85), "high"),
        (_retrieved("vector", 0.80), "high"),
        (_retrieved("hybrid", 0.74), "medium"),
        (_retrieved("low_threshold", 0.95), "medium"),
        (_retrieved("any_embedded", 0.2), "low"),
        (_retrieved("none", None), "low"),
        ({"route": "direct", "model_used": "direct_response"}, "n/a"),
        ({"route": "general", "model_used": "general_extractive"}, "n/a"),
        (
            {"route": "global_summary", "model_used": "global_summary_path", "sources": ["A"]},
            "high",
        ),
        (
            {"route": "global_summary", "model_used": "toc_fallback_path", "sources": ["A"]},
            "medium",
        ),
        ({"route": "web_search", "model_used": "no_context_response"}, "n/a"),
        (
            {
                "route": "web_search",
                "model_used": "web_search_x",
                "web_results": [{}],
                "citations": [{"id": "#web_1"}],
            },
            "medium",
        ),
        ({"route": "web_search", "model_used": "web_search_x", "citations": []}, "low"),
    ],
)
def test_confidence(state, expected):
    assert answer_confidence(state) == expected


def test_record_of_a_specific_answer():
    record = routing_record(_retrieved("hybrid", 0.9))
    assert record == {
        "route": "hybrid",
        "reason": "specific question",
        "mode": "specific",
        "confidence": "high",
    }


def test_record_of_a_fixed_reply_has_no_mode():
    state = {"route": "direct", "route_reason": "name question: a fixed reply", "retrieval": {}}
    record = routing_record({**state, "search_mode": "", "model_used": "direct_response"})
    assert record["mode"] is None and record["confidence"] == "n/a"
    assert record["reason"] == "name question: a fixed reply"


def test_the_web_after_a_miss_says_why_and_only_with_a_key():
    missed = _retrieved("any_embedded", 0.2, web_plan="fallback")
    assert falls_back_to_web(missed)
    assert not falls_back_to_web({**missed, "web_plan": "unavailable"})
    assert not falls_back_to_web(_retrieved("hybrid", 0.9, web_plan="fallback"))
    on_web = {**missed, "route": "web_search", "citations": [{"id": "#web_1"}]}
    assert routing_record(on_web)["reason"] == WEB_FALLBACK_REASON


def test_without_a_key_a_miss_says_web_search_is_not_configured():
    missed = _retrieved("any_embedded", 0.2, web_plan="unavailable")
    answer = no_web_answer(missed)
    assert answer is not None and answer.route == "hybrid"
    assert "don't seem to cover" in answer.text and "not configured" in answer.text
    assert no_web_answer({**missed, "web_plan": ""}) is None
    assert no_web_answer({**missed, "web_plan": "fallback"}) is None


def test_tools_called_are_part_of_the_reason():
    state = _retrieved("hybrid", 0.9, tool_log=[{"tool": "search_knowledge"}])
    assert routing_record(state)["reason"] == "specific question; tools called: search_knowledge"


def test_overview_fallback_changes_route_mode_and_reason():
    update = overview_fallback()
    assert update["route"] == "hybrid" and update["search_mode"] == "general"
    assert "nothing stored" in update["route_reason"]
