"""An answer continued from words put in the model's mouth, in the model process.

OpenAI's chat API has no way to start the assistant's reply with given words: llama-cpp's
server closes the last message's turn. Here the chat is rendered with the model's own chat
template, the words are appended after the assistant's turn opens, and llama.cpp writes on
from them. The prompt up to those words is the one the turn's answer just read, so the KV
cache holds it and only the new words are read. The app reaches this over HTTP
(:func:`agent.model_server.client.continue_reply`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.model_server.scoring import chat_prompt


class ChatTurn(BaseModel):
    """One message of the chat being continued."""

    role: Literal["system", "user", "assistant"]
    content: str


class ContinueRequest(BaseModel):
    """A chat, and the words the assistant's reply starts with."""

    messages: list[ChatTurn] = Field(min_length=1, max_length=64)
    prefix: str = Field(min_length=1, max_length=2000)
    max_tokens: int = Field(default=64, ge=1, le=512)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    stop: list[str] = Field(default_factory=lambda: ["\n"], max_length=8)


def continue_reply_sync(llama: Any, body: ContinueRequest) -> dict:
    """What the model writes after ``body.prefix`` as the reply to ``body.messages``, and
    the tokens it wrote (blocking; the caller holds the model's lock)."""
    tokens = chat_prompt(llama, [m.model_dump() for m in body.messages])
    tokens += llama.tokenize(body.prefix.encode("utf-8"), add_bos=False, special=False)
    result = llama.create_completion(
        prompt=tokens,
        max_tokens=body.max_tokens,
        temperature=body.temperature,
        stop=body.stop,
    )
    return {"text": result["choices"][0]["text"], "usage": result.get("usage") or {}}
