"""API routes: chats."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["chats"])
