"""API routes: sharing."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["sharing"])
