"""``library_versions``: a counter per user, raised whenever what the user can see changes,
and the number of searchable chunks the user owns.

Every search checks its in-memory BM25 copy and its cached results against a fingerprint of
the visible library. That fingerprint was a digest of every visible document and its
version: a read of 10,000 rows (~20 ms) per search for a 1M-chunk library. A counter kept by
triggers is one index read, and no writer can forget it: any insert, delete or update of a
document's visibility, filters or BM25 totals raises its owner's counter and the counter of
every user it is shared with; any change to a share raises the grantee's.

The triggers are deferred to commit, so the counter's row lock is held only while a
transaction commits, never through a long ingest. The same triggers keep each owner's count of
ready chunks, which tells dense search whether a library is small enough to scan exactly
without listing its documents (10 ms for 10,000). There is no foreign key to ``users``: a
user being deleted would fail it at commit (their documents' triggers still fire).

Revision ID: 0014
Revises: 0013
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE library_versions (
    user_id  uuid PRIMARY KEY,
    version  bigint NOT NULL,
    chunks   bigint NOT NULL DEFAULT 0   -- child chunks of the user's ready documents
);
INSERT INTO library_versions (user_id, version, chunks)
SELECT user_id, 1, sum(keyword_chunks) FROM documents WHERE status = 'ready' GROUP BY user_id;

-- Users are locked in id order, so two commits never wait on each other in a cycle.
CREATE FUNCTION quire_raise_library_versions(users uuid[]) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO library_versions AS v (user_id, version)
    SELECT DISTINCT u, 1 FROM unnest(users) u WHERE u IS NOT NULL ORDER BY u
    ON CONFLICT (user_id) DO UPDATE SET version = v.version + 1
$$;

CREATE FUNCTION quire_document_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    doc_id uuid := coalesce(NEW.id, OLD.id);
    chunks_before bigint := CASE WHEN OLD.status = 'ready' THEN OLD.keyword_chunks ELSE 0 END;
    chunks_after bigint := CASE WHEN NEW.status = 'ready' THEN NEW.keyword_chunks ELSE 0 END;
BEGIN
    PERFORM quire_raise_library_versions(
        ARRAY[OLD.user_id, NEW.user_id]
        || ARRAY(SELECT a.user_id FROM document_access a WHERE a.document_id = doc_id)
    );
    -- each event carries its own OLD and NEW, so a row changed twice adds up correctly
    IF chunks_before <> 0 THEN
        UPDATE library_versions SET chunks = chunks - chunks_before WHERE user_id = OLD.user_id;
    END IF;
    IF chunks_after <> 0 THEN
        UPDATE library_versions SET chunks = chunks + chunks_after WHERE user_id = NEW.user_id;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION quire_access_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM quire_raise_library_versions(ARRAY[OLD.user_id, NEW.user_id]);
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER documents_library_version
AFTER INSERT OR DELETE OR UPDATE OF user_id, status, corpus, doc_type, created_at, updated_at,
    keyword_chunks, keyword_tokens
ON documents DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION quire_document_changed();

CREATE CONSTRAINT TRIGGER document_access_library_version
AFTER INSERT OR DELETE OR UPDATE ON document_access DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION quire_access_changed();
"""

DOWNGRADE = r"""
DROP TRIGGER IF EXISTS document_access_library_version ON document_access;
DROP TRIGGER IF EXISTS documents_library_version ON documents;
DROP FUNCTION IF EXISTS quire_access_changed();
DROP FUNCTION IF EXISTS quire_document_changed();
DROP FUNCTION IF EXISTS quire_raise_library_versions(uuid[]);
DROP TABLE IF EXISTS library_versions;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
