"""LangGraph graphs (``chat``, ``ingest``, ``search``): wiring only. Each node is a few lines
that call ``agent``; the streaming contract (``streaming``) and the checkpointer live here.
May import ``agent`` and ``tools``; never ``api`` or ``bench``.
"""
