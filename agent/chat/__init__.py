"""Answering a chat message: which path takes it, what the model is given, what is saved.

Owns routing (``routing``), the book a question is about (``books``), Path B overviews
(``overview``), numbered-question lookup, model messages and cited answers (``answering``),
ReAct tool selection, and saving a finished turn (``turn_log``, ``records``).
May call: ``agent.config``, ``agent.prompts``, ``agent.text``, ``agent.models``, ``agent.db``,
``agent.retrieval``, ``agent.memory``, ``agent.library``, ``agent.web_search``. Never the graphs,
the API or the tools that call it.
"""
