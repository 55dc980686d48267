"""Initial multi-user schema: users and tokens, documents, parent/child chunks with
pgvector embeddings and a BM25 keyword index, chats and messages, corrections, usage.

Revision ID: 0001
Revises:
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE users (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_tokens (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash    text NOT NULL UNIQUE,            -- sha256 of the token; the token itself is never stored
    label         text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_tokens_user_idx ON api_tokens(user_id);

-- One row: which embedding model filled this store, and its dimension.
CREATE TABLE embedding_store (
    id          smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    model       text NOT NULL,
    dimension   integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE documents (
    id               uuid PRIMARY KEY,
    user_id          uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    corpus           text NOT NULL DEFAULT 'default',
    title            text NOT NULL,
    author           text,
    source_uri       text,
    filename         text,
    file_type        text NOT NULL,
    doc_type         text NOT NULL,
    sensitivity      text NOT NULL DEFAULT 'LOW',
    content_hash     text NOT NULL,
    char_count       integer NOT NULL DEFAULT 0,
    page_count       integer,
    status           text NOT NULL DEFAULT 'ready',
    summary_status   text NOT NULL DEFAULT 'pending',
    global_summary   text,
    embedding_model  text NOT NULL,
    metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
    keyword_chunks   integer NOT NULL DEFAULT 0,   -- BM25 corpus statistics of this document
    keyword_tokens   bigint  NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, content_hash)
);
CREATE INDEX documents_user_idx ON documents(user_id, created_at DESC);
CREATE INDEX documents_source_idx ON documents(user_id, source_uri);

-- Sharing (seed 000 user_book_access): the grantee may search and cite, read-only.
CREATE TABLE document_access (
    document_id  uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    user_id      uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    is_visible   boolean NOT NULL DEFAULT true,
    granted_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (document_id, user_id)
);
CREATE INDEX document_access_user_idx ON document_access(user_id) WHERE is_visible;

CREATE TABLE parent_chunks (
    id               uuid PRIMARY KEY,
    document_id      uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_index      integer NOT NULL,
    text             text NOT NULL,
    chapter_title    text,
    section_title    text,
    page_start       integer,
    page_end         integer,
    content_hash     text NOT NULL,
    concise_summary  text,
    topic_labels     text[],
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX parent_chunks_document_idx ON parent_chunks(document_id, chunk_index);

-- Number of tokens a tsvector was built from (for BM25 document length).
CREATE FUNCTION quire_tsvector_length(tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest($1) $$;

CREATE TABLE child_chunks (
    id             uuid PRIMARY KEY,
    document_id    uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    parent_id      uuid REFERENCES parent_chunks(id) ON DELETE CASCADE,
    chunk_index    integer NOT NULL,
    text           text NOT NULL,
    chapter_title  text,
    section_title  text,
    page           integer,
    content_hash   text NOT NULL,
    embedding      vector,
    tsv            tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    token_count    integer GENERATED ALWAYS AS (quire_tsvector_length(to_tsvector('english', text))) STORED,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX child_chunks_document_idx ON child_chunks(document_id, chunk_index);
CREATE INDEX child_chunks_parent_idx ON child_chunks(parent_id);
CREATE INDEX child_chunks_tsv_idx ON child_chunks USING gin (tsv);

-- BM25 document frequencies per (term, document): IDF over any set of visible
-- documents is a sum, so the index stays exact per user, incremental and transactional.
CREATE TABLE keyword_terms (
    term         text NOT NULL,
    document_id  uuid NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    df           integer NOT NULL,
    PRIMARY KEY (term, document_id)
);
CREATE INDEX keyword_terms_document_idx ON keyword_terms(document_id);

CREATE TABLE chats (
    id                    uuid PRIMARY KEY,
    user_id               uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title                 text,
    document_id           uuid REFERENCES documents(id) ON DELETE SET NULL,
    conversation_summary  text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chats_user_idx ON chats(user_id, updated_at DESC);

CREATE TABLE chat_messages (
    id                   uuid PRIMARY KEY,
    chat_id              uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    user_id              uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    document_id          uuid REFERENCES documents(id) ON DELETE SET NULL,
    role                 text NOT NULL CHECK (role IN ('user', 'assistant')),
    content              text NOT NULL,
    route                text,
    retrieved_chunk_ids  uuid[],
    sources              text[],
    chunk_map            jsonb,
    citations            jsonb,
    tokens_used          integer,
    model_used           text,
    created_at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX chat_messages_chat_idx ON chat_messages(chat_id, created_at);

CREATE TABLE corrections (
    id               uuid PRIMARY KEY,
    user_id          uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    document_id      uuid REFERENCES documents(id) ON DELETE CASCADE,
    chat_message_id  uuid REFERENCES chat_messages(id) ON DELETE SET NULL,
    question         text,
    wrong_answer     text,
    correction       text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX corrections_user_idx ON corrections(user_id, created_at DESC);

CREATE TABLE usage_monthly (
    user_id            uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    month              date NOT NULL,
    chat_messages      integer NOT NULL DEFAULT 0,
    tokens_used        bigint NOT NULL DEFAULT 0,
    documents_ingested integer NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, month)
);
"""

DOWNGRADE = """
DROP TABLE IF EXISTS usage_monthly, corrections, chat_messages, chats, keyword_terms,
    child_chunks, parent_chunks, document_access, documents, embedding_store, api_tokens, users
    CASCADE;
DROP FUNCTION IF EXISTS quire_tsvector_length(tsvector);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
