"""Pre-computed summaries (per section, chapter and book, versioned by model), document
tags, and transcripts.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE documents
    ADD COLUMN tags                text[] NOT NULL DEFAULT '{}',
    ADD COLUMN summary_model       text,             -- the model that wrote global_summary
    ADD COLUMN summary_done        integer NOT NULL DEFAULT 0,
    ADD COLUMN summary_total       integer NOT NULL DEFAULT 0,
    ADD COLUMN summary_error       text,
    ADD COLUMN summary_updated_at  timestamptz;

ALTER TABLE parent_chunks ADD COLUMN summary_model text;

CREATE TABLE chapter_summaries (
    document_id    uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chapter_index  integer NOT NULL,
    chapter_title  text,
    summary        text NOT NULL,
    topic_labels   text[] NOT NULL DEFAULT '{}',
    model          text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (document_id, chapter_index)
);

-- Seed 002's transcript store: the document row holds the indexed text, this row the parts.
CREATE TABLE transcripts (
    document_id   uuid PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
    raw_text      text NOT NULL,
    refined_text  text,
    echotag       text,
    echodate      timestamptz NOT NULL DEFAULT now()
);

-- Documents that need summaries, for the background worker.
CREATE INDEX documents_summary_todo_idx ON documents(created_at)
    WHERE summary_status IN ('pending', 'running');
"""

DOWNGRADE = r"""
DROP INDEX IF EXISTS documents_summary_todo_idx;
DROP TABLE IF EXISTS transcripts, chapter_summaries;
ALTER TABLE parent_chunks DROP COLUMN summary_model;
ALTER TABLE documents DROP COLUMN tags, DROP COLUMN summary_model, DROP COLUMN summary_done,
    DROP COLUMN summary_total, DROP COLUMN summary_error, DROP COLUMN summary_updated_at;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
