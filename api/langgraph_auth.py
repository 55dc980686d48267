"""Authentication and resource authorization for the LangGraph server (``langgraph dev``).

Wired in langgraph.json as ``"auth": {"path": "./api/langgraph_auth.py:auth"}``.

* Every request needs ``Authorization: Bearer <token>`` with a Quire API token (from
  ``quire users add NAME``); the identity is the user's id, the display name their name.
* Threads, runs and user-created assistants are stamped with ``metadata.owner`` when
  created and every read, search, update or delete is filtered by it, so users never see
  each other's threads. Graph-defined assistants (``created_by: system``) are readable by
  everyone; crons are refused.
* A run always acts as its caller: the run-create handler overwrites ``context.user`` (the
  user name every Quire graph works for) with the authenticated user, whatever was sent.
  An ``ingest`` input ``path`` (a file on the server's disk) is refused (403) except for
  Studio; remote callers send ``content_base64`` + ``filename``, ``url`` or ``text``.
* LangGraph Studio: under ``langgraph dev`` the server itself accepts Studio's requests
  (header ``x-auth-scheme: langsmith``) as a ``StudioUser`` without a token. Quire treats
  that user as the local default user (``QUIRE_DEFAULT_USER``, "local"), the same user the
  CLI acts as, so Studio works locally and sees only that user's threads. Set
  ``"disable_studio_auth": true`` under ``auth`` in langgraph.json to make Studio send a
  token like everyone else.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

from agent.db.users import User, user_for_token
from agent.library.accounts import resolve_user
from agent.services import get_services
from api.inmem_thread_copies import mend_thread_copies

auth = Auth()
mend_thread_copies()  # this module is loaded by the server that runs the threads

OWNER = "owner"
"""Metadata key naming the user (id) a thread, run or assistant belongs to."""

_studio_user: User | None = None


def _unauthorized(message: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(
        status_code=401, detail=message, headers={"WWW-Authenticate": "Bearer"}
    )


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """The Quire user owning the bearer token; 401 without a valid one."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized(
            "Send 'Authorization: Bearer <token>' (create one with 'quire users add NAME')."
        )
    services = await get_services()
    async with services.engine.begin() as conn:
        user = await user_for_token(conn, token.strip())
    if user is None:
        raise _unauthorized("Invalid or revoked token.")
    return {"identity": str(user.id), "display_name": user.name, "permissions": []}


async def acting_user(ctx: Auth.types.AuthContext) -> tuple[str, str]:
    """``(owner id, user name)`` the request acts as: the token's user, or for LangGraph
    Studio under ``langgraph dev`` the local default user."""
    global _studio_user
    if isinstance(ctx.user, Auth.types.StudioUser):
        if _studio_user is None:
            services = await get_services()
            _studio_user = await resolve_user(services, services.settings.default_user)
        return str(_studio_user.id), _studio_user.name
    return ctx.user.identity, ctx.user.display_name


def _stamp(value: dict, owner: str) -> None:
    metadata = value.get("metadata")
    if not isinstance(metadata, dict):
        metadata = value["metadata"] = {}
    metadata[OWNER] = owner


# --- threads and runs ----------------------------------------------------------------------


@auth.on.threads.create
async def create_thread(ctx: Auth.types.AuthContext, value: Auth.types.ThreadsCreate):
    """A new thread belongs to its creator."""
    owner, _ = await acting_user(ctx)
    _stamp(value, owner)
    return {OWNER: owner}


@auth.on.threads.create_run
async def create_run(ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate):
    """A run on one's own thread (or a new one), acting as the caller whatever the
    request's ``context.user`` says."""
    owner, name = await acting_user(ctx)
    _stamp(value, owner)
    kwargs = value.get("kwargs")
    if isinstance(kwargs, dict):
        if not isinstance(ctx.user, Auth.types.StudioUser) and _reads_server_files(kwargs):
            raise Auth.exceptions.HTTPException(
                status_code=403,
                detail="The 'path' input reads the server's disk and is for local use only; "
                "send 'content_base64' and 'filename' instead.",
            )
        kwargs["context"] = {**(kwargs.get("context") or {}), "user": name}
        configurable = (kwargs.get("config") or {}).get("configurable")
        if isinstance(configurable, dict) and "user" in configurable:
            configurable["user"] = name  # the mirror of the context some runtimes keep
    return {OWNER: owner}


def _reads_server_files(kwargs: dict[str, Any]) -> bool:
    """Whether a run asks the ingest graph to read a path on the server."""
    sources = [kwargs.get("input"), ((kwargs.get("command") or {}).get("update"))]
    return any(isinstance(s, dict) and s.get("path") for s in sources)


@auth.on.threads.update
async def update_thread(ctx: Auth.types.AuthContext, value: Auth.types.ThreadsUpdate):
    """Only one's own threads, and their owner cannot be changed."""
    owner, _ = await acting_user(ctx)
    if isinstance(value.get("metadata"), dict):
        value["metadata"][OWNER] = owner
    return {OWNER: owner}


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: Any):
    """Reading, searching, deleting (and any other thread action): one's own threads."""
    owner, _ = await acting_user(ctx)
    return {OWNER: owner}


# --- assistants ----------------------------------------------------------------------------


@auth.on.assistants.create
async def create_assistant(ctx: Auth.types.AuthContext, value: Auth.types.AssistantsCreate):
    """A new assistant (a saved configuration) belongs to its creator."""
    owner, _ = await acting_user(ctx)
    _stamp(value, owner)
    return {OWNER: owner}


@auth.on.assistants.read
async def read_assistant(ctx: Auth.types.AuthContext, value: Auth.types.AssistantsRead):
    """The graphs' own assistants and one's own."""
    owner, _ = await acting_user(ctx)
    return {"$or": [{"created_by": "system"}, {OWNER: owner}]}


@auth.on.assistants.search
async def search_assistants(ctx: Auth.types.AuthContext, value: Auth.types.AssistantsSearch):
    """The graphs' own assistants and one's own."""
    owner, _ = await acting_user(ctx)
    return {"$or": [{"created_by": "system"}, {OWNER: owner}]}


@auth.on.assistants
async def own_assistants(ctx: Auth.types.AuthContext, value: Any):
    """Updating or deleting: one's own assistants only (never the graphs' own)."""
    owner, _ = await acting_user(ctx)
    if isinstance(value, dict) and isinstance(value.get("metadata"), dict):
        value["metadata"][OWNER] = owner
    return {OWNER: owner}


# --- store and everything else -------------------------------------------------------------


@auth.on.store
async def own_store_namespace(ctx: Auth.types.AuthContext, value: Any):
    """Store items live under the user's own namespace prefix."""
    owner, _ = await acting_user(ctx)
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != owner:
        value["namespace"] = (owner, *namespace)


@auth.on
async def deny_everything_else(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """Default deny (crons and any resource without a handler above)."""
    return False
