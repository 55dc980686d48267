"""What Quire remembers: each chat's running summary (``conversation``), each user's
corrections (``corrections``), and earlier answers given as background (``previous_discussion``).

May call: ``agent.config``, ``agent.prompts``, ``agent.text``, ``agent.models``, ``agent.db``.
"""
