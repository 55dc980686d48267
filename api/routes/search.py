"""API routes: search."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["search"])
