"""LangChain tools over ``agent`` functions (knowledge search, web search): wrappers only.
May import ``agent``; never ``graphs``, ``api`` or ``bench``.
"""
