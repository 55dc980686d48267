"""Which documents a request may read: always the user's own plus those shared with them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class SearchScope:
    """The filters every retrieval query runs under. ``user_id`` is mandatory."""

    user_id: uuid.UUID
    document_ids: tuple[uuid.UUID, ...] | None = None
    corpus: str | None = None
    doc_types: tuple[str, ...] | None = None
    include_shared: bool = True

    def visible_documents_sql(self) -> tuple[str, dict]:
        """A SELECT of visible document ids (column ``id``) and its bind parameters."""
        params: dict = {"scope_user": self.user_id}
        access = "d.user_id = :scope_user"
        if self.include_shared:
            access = (
                "(d.user_id = :scope_user OR EXISTS (SELECT 1 FROM document_access a"
                " WHERE a.document_id = d.id AND a.user_id = :scope_user AND a.is_visible))"
            )
        clauses = [access, "d.status = 'ready'"]
        if self.document_ids is not None:
            clauses.append("d.id = ANY(:scope_docs)")
            params["scope_docs"] = list(self.document_ids)
        if self.corpus is not None:
            clauses.append("d.corpus = :scope_corpus")
            params["scope_corpus"] = self.corpus
        if self.doc_types is not None:
            clauses.append("d.doc_type = ANY(:scope_types)")
            params["scope_types"] = list(self.doc_types)
        return "SELECT d.id FROM documents d WHERE " + " AND ".join(clauses), params
