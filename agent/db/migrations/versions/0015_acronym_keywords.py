"""Acronyms that are English stop words ("DO", "IT", "WHO", "CAN", "OR") keep a keyword.

Postgres's ``english`` configuration drops "do", "it", "who" and the rest of its stop words,
in any case, so a lab notebook's "DO (mg/L): 5.9" row had no keyword for "What was the DO
reading at S4?", nor "IT" for "Who runs IT support?". ``quire_keyword_text`` rewrites such a
word written in capitals (two or three letters) to a word of its own ("DO" -> "doacronym")
before the text is made a tsvector; lower-case "do" stays a stop word. Chunks and chat turns
are indexed through it, questions are searched through it, and every keyword posting and
term count is rebuilt from the new tsvectors (the library versions' triggers then invalidate
every cached search and in-memory keyword copy).

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# the Postgres ``english`` stop words of two and three letters, in capitals
_STOP = (
    "AM|AN|AS|AT|BE|BY|DO|HE|IF|IN|IS|IT|ME|MY|NO|OF|ON|OR|SO|TO|UP|WE|"
    "ALL|AND|ANY|ARE|BUT|CAN|DID|DON|FEW|FOR|HAD|HAS|HER|HIM|HIS|HOW|ITS|NOR|NOT|NOW|OFF|"
    "OUR|OUT|OWN|SHE|THE|TOO|WAS|WHO|WHY|YOU"
)

_KEYWORD_TEXT = rf"""
CREATE OR REPLACE FUNCTION quire_keyword_text(body text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT regexp_replace(body, '\m({_STOP})\M', '\1acronym', 'g')
$$;
"""


def _rebuild(through_function: bool) -> str:
    """The SQL that re-derives the chunks' and turns' tsvectors (through
    ``quire_keyword_text`` or from the plain text) and every keyword posting and term count
    from them."""
    expression, turn = "text", "question || ' ' || answer"
    if through_function:
        expression, turn = f"quire_keyword_text({expression})", f"quire_keyword_text({turn})"
    return f"""
ALTER TABLE child_chunks DROP COLUMN token_count, DROP COLUMN tsv;
ALTER TABLE child_chunks
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', {expression})) STORED,
    ADD COLUMN token_count integer
        GENERATED ALWAYS AS (quire_tsvector_length(to_tsvector('english', {expression}))) STORED;
CREATE INDEX child_chunks_tsv_idx ON child_chunks USING gin (tsv);

ALTER TABLE chat_turn_embeddings DROP COLUMN tsv;
ALTER TABLE chat_turn_embeddings
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', {turn})) STORED;
CREATE INDEX chat_turn_embeddings_tsv_idx ON chat_turn_embeddings USING gin (tsv);

DELETE FROM keyword_postings;
DELETE FROM keyword_terms;
DELETE FROM keyword_owner_terms;
INSERT INTO keyword_postings (user_id, term, document_id, chunk_id, tf, chunk_tokens, impact)
SELECT user_id, term, document_id, chunk_id, tf, chunk_tokens,
       tf / (tf + 1.2 * (0.25 + 0.75 * chunk_tokens / 60.0))
FROM (SELECT d.user_id, u.lexeme AS term, c.document_id, c.id AS chunk_id,
             coalesce(array_length(u.positions, 1), 1) AS tf, c.token_count AS chunk_tokens
      FROM child_chunks c JOIN documents d ON d.id = c.document_id, unnest(c.tsv) u) p;
INSERT INTO keyword_terms (term, document_id, df)
SELECT u.lexeme, c.document_id, count(*) FROM child_chunks c, unnest(c.tsv) u
GROUP BY u.lexeme, c.document_id;
INSERT INTO keyword_owner_terms (user_id, term, df)
SELECT d.user_id, t.term, sum(t.df) FROM keyword_terms t JOIN documents d ON d.id = t.document_id
GROUP BY d.user_id, t.term;
UPDATE documents d SET keyword_tokens = s.tokens
FROM (SELECT document_id, coalesce(sum(token_count), 0) AS tokens
      FROM child_chunks GROUP BY document_id) s
WHERE d.id = s.document_id AND d.keyword_tokens IS DISTINCT FROM s.tokens;
"""


def upgrade() -> None:
    op.execute(_KEYWORD_TEXT)
    op.execute(_rebuild(through_function=True))


def downgrade() -> None:
    op.execute(_rebuild(through_function=False))
    op.execute("DROP FUNCTION IF EXISTS quire_keyword_text(text)")
