"""Ingestion: a source in, a stored, searchable document out (seed 002 part 2).

Stages, one module each: ``sources``/``intake`` (files, folders, URLs through ``fetch``,
pasted text, transcripts, API uploads) -> ``parse`` (``pdf``, ``office``, ``html``, text into
a ``document.ParsedDocument``) -> ``detect`` (SENSITIVE, FAQ, BOOK or USER) -> ``sanitize``
(PII redaction) -> ``chunking`` (parents and children, sentence-aware via ``sentences``) ->
``pipeline`` (embed the children and store everything in one transaction) ; ``jobs`` runs
large uploads and URLs in the background. Errors: ``document`` and ``errors``.
May call: ``agent.config``, ``agent.db``, ``agent.models`` (the embedder), ``agent.services``,
``agent.summaries`` (to wake the summary worker), ``agent.library`` (a job's document).
"""
