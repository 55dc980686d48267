"""``library_versions``: a counter per user, raised whenever what the user can see changes.

Every search checks its in-memory BM25 copy and its cached results against a fingerprint of
the visible library. That fingerprint was a digest of every visible document and its
version: a read of 10,000 rows (~20 ms) per search for a 1M-chunk library. A counter kept by
triggers is one index read, and no writer can forget it: any insert, delete or update of a
document's visibility, filters or BM25 totals raises its owner's counter and the counter of
every user it is shared with; any change to a share raises the grantee's.

The triggers are deferred to commit, so the counter's row lock is held only while a
transaction commits, never through a long ingest. There is no foreign key to ``users``: a
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
    version  bigint NOT NULL
);

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
BEGIN
    PERFORM quire_raise_library_versions(
        ARRAY[OLD.user_id, NEW.user_id]
        || ARRAY(SELECT a.user_id FROM document_access a WHERE a.document_id = doc_id)
    );
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
