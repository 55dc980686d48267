import json

from agent.retrieval.citations import cited_ids
from agent.retrieval.retriever import QuireRetriever
from tools.knowledge_search import knowledge_search_tool


async def test_retriever_returns_cited_documents_for_the_user_only(
    services, alice_reader, new_user
):
    user, _ = alice_reader
    docs = await QuireRetriever(user_id=user.id, k=3).ainvoke("the Mock Turtle")
    assert len(docs) == 3
    assert all(d.metadata["id"].startswith("#chk_") for d in docs)
    assert any("Mock Turtle" in d.page_content for d in docs)
    stranger = await new_user("stranger")
    assert await QuireRetriever(user_id=stranger.id).ainvoke("the Mock Turtle") == []


async def test_knowledge_search_tool_gives_citable_passages(services, alice_reader):
    user, _ = alice_reader
    search = knowledge_search_tool(user.id, k=2)
    assert search.name == "search_knowledge"
    result = json.loads(await search.ainvoke({"query": "Dinah the cat"}))
    ids = [c["id"] for c in result["citations"]]
    assert len(ids) == 2 and set(cited_ids(result["answerHints"])) == set(ids)
    assert all(len(c["snippet"]) <= 400 for c in result["citations"])
    assert any("Dinah" in c["snippet"] for c in result["citations"])
    meta = result["searchMetadata"]
    assert meta["resultsFound"] == 2 and meta["queriesUsed"] == 1
    assert meta["fallbackLayer"] == "hybrid" and "retrieve" in meta["stagesMs"]
