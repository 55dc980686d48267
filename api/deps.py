"""Request dependencies: the shared services and the user behind the bearer token."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header
from pydantic import BaseModel, model_validator

from agent.db.users import User, user_for_token
from agent.retrieval.time_window import InvalidTimeWindow, TimeWindow, parse_time_window
from agent.services import Services, get_services
from api.errors import ApiError


async def services_dep() -> Services:
    """The process-wide services (engine, settings, embedder)."""
    return await get_services()


async def current_user(
    services: Annotated[Services, Depends(services_dep)],
    authorization: Annotated[str | None, Header()] = None,
) -> User:
    """The user owning ``Authorization: Bearer <token>``; 401 without a valid one."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "unauthorized",
            "Send 'Authorization: Bearer <token>' (create one with 'quire users add NAME').",
            headers={"WWW-Authenticate": "Bearer"},
        )
    async with services.engine.begin() as conn:
        user = await user_for_token(conn, token.strip())
    if user is None:
        raise ApiError(
            401, "unauthorized", "Invalid or revoked token.", headers={"WWW-Authenticate": "Bearer"}
        )
    return user


ServicesDep = Annotated[Services, Depends(services_dep)]
UserDep = Annotated[User, Depends(current_user)]


def time_window(since: str | None, until: str | None) -> TimeWindow:
    """A request's ``since``/``until`` window; 422 ``invalid_time_window`` when a bound
    cannot be read or ``until`` is not after ``since``."""
    try:
        return parse_time_window(since, until)
    except InvalidTimeWindow as exc:
        raise ApiError(422, "invalid_time_window", str(exc)) from None


def text_problem(value: object) -> str | None:
    """Why ``value`` (a string, or strings nested in lists and dicts) cannot be stored as
    Postgres text: a NUL character or a lone surrogate; ``None`` when it can."""
    if isinstance(value, str):
        if "\x00" in value:
            return "text must not contain NUL (U+0000) characters"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "text must be valid Unicode (no lone surrogates)"
    elif isinstance(value, dict):
        return next(filter(None, map(text_problem, [*value.keys(), *value.values()])), None)
    elif isinstance(value, list):
        return next(filter(None, map(text_problem, value)), None)
    return None


class RequestBody(BaseModel):
    """A JSON request body whose text Postgres can store (otherwise 422 ``invalid_request``)."""

    @model_validator(mode="before")
    @classmethod
    def _storable_text(cls, data: object) -> object:
        problem = text_problem(data)
        if problem:
            raise ValueError(problem)
        return data
