"""Retrieval: the search pipeline (candidates -> fusion and ranking -> reads), citations and
context assembly.

May call agent.config, agent.db, agent.models, agent.prompts, agent.text,
agent.ingest.sentences, agent.model_server (for rerank) and agent.services (the shared
services a search runs on).
"""
