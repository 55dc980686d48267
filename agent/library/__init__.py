"""A user's library as the entry points see it: accounts, own and shared documents, the chunk
viewer's record of one citation, and the month's usage.

May call: ``agent.config``, ``agent.db``, ``agent.ingest`` (deleting a document's files and
jobs), ``agent.refusals``. Every function takes the acting user and reads only what that user
may see.
"""
