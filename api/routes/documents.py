"""API routes: documents."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["documents"])
