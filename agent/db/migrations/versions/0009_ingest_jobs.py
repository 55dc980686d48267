"""Ingest jobs for the HTTP API, and a lookup index for citation ids.

An upload too large to ingest inline, or a URL, becomes a row in ``ingest_jobs`` that any
API process can report on. The row carries what is needed to run it (the uploaded bytes in
``payload``, the URL and options in ``request``), so a job left behind by a process that
died can be run again by another; ``payload`` is cleared when the job ends.

Citation ids are ``#chk_`` + the first 8 hex of md5(chunk id); the expression index turns
resolving one (``GET /api/chunks/chk_xxxxxxxx``) into an index probe.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE ingest_jobs (
    id             uuid PRIMARY KEY,
    user_id        uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind           text NOT NULL CHECK (kind IN ('upload', 'url')),
    status         text NOT NULL DEFAULT 'queued'
                   CHECK (status IN ('queued', 'running', 'done', 'failed')),
    stage          text,
    done           integer NOT NULL DEFAULT 0,
    total          integer NOT NULL DEFAULT 0,
    document_id    uuid REFERENCES documents(id) ON DELETE SET NULL,
    error_code     text,
    error_message  text,
    request        jsonb NOT NULL DEFAULT '{}'::jsonb,  -- filename or url, title, tags, corpus
    payload        bytea,                               -- the uploaded bytes until the job ends
    attempts       integer NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()   -- also the running job's heartbeat
);
CREATE INDEX ingest_jobs_user_idx ON ingest_jobs(user_id, created_at DESC);
CREATE INDEX ingest_jobs_open_idx ON ingest_jobs(status, updated_at)
    WHERE status IN ('queued', 'running');

CREATE INDEX child_chunks_citation_idx ON child_chunks ((substr(md5(id::text), 1, 8)));
"""

DOWNGRADE = """
DROP INDEX IF EXISTS child_chunks_citation_idx;
DROP TABLE IF EXISTS ingest_jobs;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
