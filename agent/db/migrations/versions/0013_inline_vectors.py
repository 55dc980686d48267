"""Chunk vectors stored inline (``STORAGE MAIN``), not in the TOAST table.

A child chunk row (text, tsvector, a 1.5 KB vector) passes the 2 KB TOAST threshold, and the
vector column, ``EXTERNAL`` as pgvector declares it, was the first moved out of line: an
exact scan then read ~8 pages a vector (225 ms for 10k chunks, measured). ``MAIN`` keeps the
vector in the row and moves the text and tsvector out instead (still out of line as a last
resort, so a large embedder's vectors fit). Rows written from now on; existing ones move
when rewritten.

Revision ID: 0013
Revises: 0012
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE child_chunks ALTER COLUMN embedding SET STORAGE MAIN")


def downgrade() -> None:
    op.execute("ALTER TABLE child_chunks ALTER COLUMN embedding SET STORAGE EXTERNAL")
