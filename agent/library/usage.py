"""A user's usage this month, as the API reports it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date

from sqlalchemy import text

from agent.db import chats
from agent.services import Services


@dataclass(frozen=True)
class MonthUsage:
    """Chat turns and tokens counted for one month, with the user's monthly turn limit."""

    month: str
    """``YYYY-MM``."""
    chat_messages: int
    tokens: int
    monthly_limit: int | None

    def as_dict(self) -> dict:
        """The API's ``usage`` object."""
        return {
            "month": self.month,
            "chat_messages": self.chat_messages,
            "tokens": self.tokens,
            "monthly_limit": self.monthly_limit,
        }


async def month_usage(services: Services, user_id: uuid.UUID) -> MonthUsage:
    """This month's counters (the same month ``record_usage`` writes to) and the user's
    limit (their own, else the default)."""
    month = date.today().replace(day=1)
    async with services.engine.connect() as conn:
        limit = await chats.monthly_limit(conn, user_id, services.settings.monthly_message_limit)
        row = (
            await conn.execute(
                text(
                    "SELECT chat_messages, tokens_used FROM usage_monthly "
                    "WHERE user_id = :u AND month = :m"
                ),
                {"u": user_id, "m": month},
            )
        ).first()
    return MonthUsage(
        month=month.strftime("%Y-%m"),
        chat_messages=int(row.chat_messages) if row else 0,
        tokens=int(row.tokens_used) if row else 0,
        monthly_limit=limit,
    )
