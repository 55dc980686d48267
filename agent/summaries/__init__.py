"""Pre-computed summaries (seed 000, Path B): per-section and chapter summaries, a book's global
summary, topics and table of contents (``builder``), who writes them (``writers``: a chat model
or the extractive writer), and the background worker that keeps them coming (``worker``).

May call: ``agent.config``, ``agent.prompts``, ``agent.text``, ``agent.models``, ``agent.db``.
"""
