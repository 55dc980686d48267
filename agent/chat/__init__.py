"""Answering a chat message: which path takes it, what the model is given, what is saved.

A turn, step by step (the ``chat`` graph's nodes call these):

* ``turn``: the start of a turn: the user, the chat, the book in scope, the route
  (``routing``: keyword rules) and the user's relevant corrections;
* ``overview``: Path B's prompt from a book's stored summary or table of contents (``books``:
  which book a question is about);
* ``retrieval_step``: Path A/C retrieval: documents, earlier discussions and numbered
  questions (``question_lookup``) searched side by side, the context and citation payloads;
  the ``search_knowledge`` tool call;
* ``tool_selection``: the ReAct decision (answer now, or call a tool);
* ``web``: web results for a current-events question and the ``web_search`` tool call;
* ``cited_answer``: the answer from the turn's evidence with guarded citations, or the
  not-covered reply;
* ``answering``: model messages, cited answers and the state update of a finished answer;
* ``finished_turn``: saving the turn and updating the chat's memory (in the background);
* ``turn_log``: the rows of a turn (save, monthly limit, open a chat); ``records``: a user's
  chats.

May call: ``agent.config``, ``agent.prompts``, ``agent.text``, ``agent.models``, ``agent.db``,
``agent.retrieval``, ``agent.memory``, ``agent.library``, ``agent.web_search``. Never the graphs,
the API or the tools that call it.
"""
