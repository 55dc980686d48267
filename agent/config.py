"""Every tunable of Quire in one pydantic-settings object (env prefix ``QUIRE_``, ``.env``).

Defaults follow the seed documents: thresholds and chunk counts of the three-path
brain (seed 000), chunk sizes and RRF weights (seed 002), context limits (seeds 001/004).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from agent.keywords import GLOBAL_SUMMARY_KEYWORDS, REASONING_KEYWORDS


class Settings(BaseSettings):
    """Quire configuration. Every field can be set as ``QUIRE_<NAME>`` or in ``.env``."""

    model_config = SettingsConfigDict(
        env_prefix="QUIRE_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    # --- where things live -------------------------------------------------------------
    home: Path = Field(default=Path(".quire"), description="Data folder: database, model cache.")
    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("QUIRE_DATABASE_URL", "DATABASE_URL"),
        description="External Postgres (with pgvector). Unset: embedded server in the data folder.",
    )
    database_name: str = "quire"
    db_pool_size: int = 5
    embedded_shared_buffers_mb: int | None = Field(
        default=None,
        ge=16,
        description="shared_buffers of the embedded server in MiB. Unset: an eighth of the "
        "machine's memory, 128-1024 (Postgres' own default, 128, cannot hold the vector index "
        "of a large library).",
    )

    # --- models ------------------------------------------------------------------------
    assistant_name: str = "Quire"
    chat_model: str = Field(
        default="local", description="'local', 'extractive', 'openai:<model>' or any provider."
    )
    reasoning_model: str | None = None  # Path C's (deep reasoning) model; unset: the chat model
    embedding_model: str = Field(default="local", description="'local' or 'openai:<model>'.")
    local_embedding: Literal["packaged", "int8-dynamic"] = Field(
        default="packaged", description="MiniLM file of a new library (README: The embedder)."
    )
    local_chat_threads: int = 2
    local_chat_n_ctx: int = 4096
    local_chat_max_tokens: int = 640  # a deep-reasoning answer runs to ~480 tokens
    local_chat_seed: int = Field(default=42, description="Sampling seed per call (-1: random).")
    # the 1.5B model samples no hotter (README: Fast, grounded answers; at 0.7 it strays)
    local_chat_max_temperature: float = Field(default=0.1, ge=0.0)
    local_chat_file: str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    local_chat_n_batch: int = 512
    # MB of recent prompts' KV state the model process keeps (a follow-up resumes its chat's
    # last exchange after other calls ran in between); 0: only the last prompt's
    local_chat_prompt_cache_mb: int = Field(default=1024, ge=0)
    local_chat_warm_prompts: bool = True  # a server caches the system prompts at start
    local_chat_warm_books: int = Field(default=3, ge=0)  # and the last-summarized overviews
    local_model_url: str | None = Field(
        default=None,
        description="URL of a running local model server (agent.model_server.process or any "
        "OpenAI-compatible llama.cpp server). Unset: Quire starts and supervises its own.",
    )
    local_model_port: int = Field(default=0, ge=0)  # of the model server Quire starts; 0: any
    local_model_kernels: Literal["auto", "avx512", "portable"] = Field(
        default="auto",
        description="llama.cpp build of the model process: 'auto' tries the AVX-512 build on "
        "CPUs that have it and keeps it only once it has answered; 'portable': AVX2 only.",
    )
    local_model_start_timeout_seconds: float = Field(default=180.0, gt=0)  # load and answer
    temperature_specific: float = 0.7  # Path A
    temperature_summary: float = 0.4  # Path B
    temperature_reasoning: float = 0.5  # Path C
    temperature_general: float = 0.7
    chat_timeout_seconds: float = Field(  # routing, retrieval and model calls; not saving
        default=120.0, gt=0, description="Time limit of a chat turn: past it, 504 model_timeout."
    )
    embed_batch_size: int = 128  # P&P: 52.1 s (32: 57.6, 256: 53.6); int8-dynamic: 64-256 level
    embed_max_tokens: int = 256

    # --- web search (SerpAPI) ----------------------------------------------------------
    serpapi_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("QUIRE_SERPAPI_API_KEY", "SERPAPI_API_KEY"),
        description="SerpAPI key for the web_search tool. Unset: web search is not offered.",
    )
    web_search_results: int = Field(default=5, description="Web results per search (SerpAPI num).")
    web_search_timeout_seconds: float = 10.0  # time limit of one web search request

    # --- chunking (seed 002 part 2) -----------------------------------------------------
    long_form_min_chars: int = 8000
    long_form_min_paragraphs: int = 5
    faq_min_questions: int = 2
    faq_many_questions: int = 3
    faq_question_ratio: float = 0.10
    parent_min_chars: int = 2000
    parent_max_chars: int = 3500
    child_min_chars: int = 400
    child_max_chars: int = 700
    child_overlap_sentences: int = 2
    user_chunk_min_chars: int = 400
    user_chunk_max_chars: int = 800
    user_overlap_sentences: int = 1
    sensitive_chunk_min_chars: int = 225
    sensitive_chunk_max_chars: int = 450
    faq_max_chars: int = 8000
    pii_density_sensitive: float = 0.015
    pii_density_medium: float = 0.005

    # --- URL ingestion -----------------------------------------------------------------
    allow_private_urls: bool = False  # URL ingestion may reach loopback and private addresses
    url_max_bytes: int = 20_000_000  # the largest download URL ingestion accepts
    url_timeout_seconds: float = 15.0  # one URL fetch in all, redirects included

    # --- HTTP API ingestion ------------------------------------------------------------
    api_max_upload_bytes: int = Field(
        default=50 * 1024 * 1024, description="Largest upload (bytes) the API accepts (413 over)."
    )
    api_sync_ingest_bytes: int = Field(
        default=1024 * 1024,
        description="Uploads up to this size (bytes) are ingested inline (201); larger: a job (202).",
    )
    max_pdf_pages: int = Field(
        default=2000,
        description="PDFs with more pages are refused (413 too_large) before any text is read.",
    )
    max_unzipped_bytes: int = Field(
        default=200 * 1024 * 1024,
        description="DOCX/PPTX archives declaring a larger total unpacked size are refused "
        "(413 too_large) before anything is decompressed (zip bomb guard).",
    )
    max_document_chars: int = Field(
        default=20_000_000,
        description="Documents with more characters of text are refused (413 too_large).",
    )
    api_ingest_concurrency: int = 2  # ingest jobs one API process runs at a time (others wait)
    api_job_stale_seconds: int = Field(
        default=300,
        description="A running ingest job silent this long (at least 60 s) lost its process: "
        "it is run again once, then failed.",
    )

    # --- retrieval (seeds 000, 002, 004) -----------------------------------------------
    # adaptive: per-query score fusion (agent/retrieval/fusion.py); rrf: weighted RRF (rrf_k)
    fusion: Literal["adaptive", "rrf"] = "adaptive"  # SciFact hybrid nDCG@10 (RRF: 0.705)
    fusion_drop_depth: int = Field(default=10, ge=2)
    fusion_min_share: float = Field(default=0.15, ge=0.0, le=0.5)
    rrf_k: int = 60
    vector_weight: float = 0.5
    keyword_weight: float = 0.5
    candidates_per_retriever: int = 40
    max_children_per_parent: int = 1
    mmr_lambda: float = 0.5  # relevance (fused scores, min-max scaled) vs diversity; 1 = off
    mmr_pool_factor: int = 4
    top_k_specific: int = 5
    threshold_specific: float = 0.7
    top_k_general: int = 10
    threshold_general: float = 0.5
    top_k_deep: int = 15
    threshold_deep: float = 0.6
    threshold_fallback: float = 0.3
    # no chunk similar enough: one of the fused best holding a sentence this near still counts
    threshold_sentence: float = 0.5
    # once a chunk clears the threshold, the fused ranking fills down to this (>= it: filter)
    threshold_admitted_floor: float | None = 0.5
    threshold_admitted_floor_local: float | None = 0.5  # not Path C, not a continued follow-up
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    bm25_full_list_postings: int = Field(
        20_000,
        description="BM25 over a whole library reads every posting of a query term that "
        "occurs in at most this many visible chunks, and only the best-impact ones of "
        "commoner terms (measured on 100k chunks: 99.97% of the exact top-10 score mass).",
    )
    bm25_top_postings: int = Field(
        1_000, description="Postings read, best impact first, for a term commoner than that."
    )
    bm25_rescore: int = Field(
        250, description="Best candidates whose BM25 score is then computed exactly."
    )
    bm25_memory_index: bool = Field(
        True,
        description="Score BM25 from an in-memory copy of each user's postings, checked "
        "against Postgres on every search (exact, ~1-2 ms on 100k chunks); off: score in SQL.",
    )
    bm25_memory_max_postings: int = Field(
        50_000_000,
        description="Postings the in-memory BM25 copies of one process may hold (~8 bytes "
        "each); least recently used users are dropped first.",
    )
    bm25_memory_sync_tokens: int = Field(
        250_000,
        description="A search loads new or changed documents up to this many tokens itself; "
        "bigger loads (a whole library after a restart) run in the background while SQL scores.",
    )
    hnsw_m: int = 16
    hnsw_ef_construction: int = 64
    hnsw_ef_search: int = 64

    # --- ReAct tool selection (seed 003) ----------------------------------------------------
    tool_selection: bool | None = Field(
        default=None,
        description="Path A: after retrieval the model decides to answer from the passages or "
        "call a tool first. Unset: on for hosted models, off for the local one (measured worse).",
    )
    max_tool_calls: int = Field(default=2, description="Tool calls allowed per turn.")
    previous_discussion_k: int = Field(
        default=3,
        description="Earlier turns of the user's chats given as background (seed 001; "
        "+0.2 same chat, +0.1 recent); 0 turns it off, and turns are no longer embedded.",
    )

    # --- retrieval pipeline (seed 002 steps 1-8, seed 001 metrics) ------------------------
    query_expansion: bool = Field(
        default=False, description="Rewrite the question into up to 3 more queries (LLM)."
    )
    intent_expansion: bool = Field(
        default=True, description="Classify the intent first and rewrite per intent."
    )
    max_queries: int = 4
    rerank_enabled: bool = Field(
        default=False,
        description="LLM rerank: the local model scores each passage by query likelihood "
        "(how likely it finds the query as the passage's question); other models score all "
        "passages 0-10 in one call.",
    )
    rerank_candidates: int = Field(
        default=20, description="First-stage chunks the reranker scores (the rest keep order)."
    )
    rerank_top_n: int = 5
    rerank_weight: float = Field(
        default=0.5,
        description="Final score = w * relevance (0..1) + (1 - w) * 2 / (2 + first-stage rank); "
        "1: relevance alone, 0: no rerank. Chosen on 90 SciFact queries with the local model "
        "(10 candidates): 0.5 was the best weight over them (hybrid nDCG@10 0.720, "
        "blended 0.744, relevance alone 0.720).",
    )
    rerank_passage_chars: int = Field(
        default=400,
        description="Characters of each passage the local reranker reads (cut at a word "
        "boundary); its cost grows with them (~2 s a passage of 400 on 2 cores).",
    )
    time_decay_half_life_days: float | None = Field(
        default=None, description="Favour recent documents: score * exp(-age/half-life)."
    )
    time_decay_floor: float = 0.5
    tag_boost_factor: float = Field(
        default=0.2,
        description="Transcript chunks whose tags match the query: score * (1 + f*overlap).",
    )
    authority_tie_ratio: float = 0.02  # scores this close tie: documents before transcripts
    skip_listings: bool = True  # no tables of contents as passages (agent.retrieval.listings)
    retrieval_timeout_seconds: float = 3.5
    search_cache_ttl_seconds: float = 900.0
    search_cache_size: int = 1024

    # --- context building --------------------------------------------------------------
    parent_context_chars: int = 1600
    max_context_chars: int = 8000
    local_max_context_chars: int = Field(
        default=2400, description="Smaller context budget for the CPU model (prompt reading cost)."
    )
    local_top_k: int = Field(
        default=2,
        description="Passages for the 1.5B local model: it is easily misled by distractors "
        "(measured: 2 passages answered a probe 3/3, 4 passages 1/3).",
    )
    # Path C on the CPU model (~400 tokens; answer in context 38/58; 15 in 2,400 chars: 35)
    local_top_k_deep: int = 3
    local_deep_context_chars: int = 1700
    # a chapter's stored summary and cited passages on the CPU model (2,400: 524 tokens read,
    # 6.7 s to the first token; 1,300: 393, 3.7 s at 119 tokens/s; 1,100: under 4 s at 100)
    local_chapter_context_chars: int = Field(default=1100, ge=400)
    # each passage cut to its best-matching sentences and their neighbours before the model
    # reads it (agent.retrieval.focus; picked from the window of its parent around it)
    focus_context: bool = True
    drop_invented_claims: bool = True  # answer sentences naming what no passage holds
    wider_search: bool = Field(
        default=True,
        description="Path A: when the first passages do not say the answer, search once more "
        "past them and answer again before saying it was not found (hosted models).",
    )
    # the same for the CPU model: measured on the book set, none of its 5 "not found"
    # answers came right and one became a wrong one, for ~5 s each (README: A second look)
    local_wider_search: bool = False
    # Path A: an answer only restating the question is written on from its own sentence
    # (", namely …") before it is "not found" (the local model: agent.chat.restated_answer)
    finish_restated: bool = True
    focus_sentences: int = Field(default=2, ge=1)
    focus_neighbours: int = Field(default=2, ge=0)
    # the most characters one focused passage keeps for the CPU model: its neighbours
    # farthest from the best sentences go first (0: as long as the passage's window)
    local_focus_passage_chars: int = Field(default=900, ge=0)
    # a question of one content word ("Who is Dinah?"): its passages up to the first holding it
    local_lone_word: bool = True
    # the local model rewrites follow-ups for search (~2 s before the first token); off: the
    # last question's key terms are added. Hosted models always rewrite.
    local_rewrite_follow_ups: bool = False
    # a follow-up continues its chat's last grounded exchange (agent.chat.follow_up) while
    # the whole stays under this many characters; 0: always a fresh prompt
    follow_up_max_chars: int = Field(default=7000, ge=0)
    citation_preview_chars: int = 200
    dedupe_sentences: bool = True
    sentence_overlap_ratio: float = Field(
        default=0.8, description="Jaccard word overlap at which a context sentence is a repeat."
    )
    compress_context: bool = Field(
        default=False, description="LLM keeps only the sentences a question needs ([Partial])."
    )
    snippet_chars: int = 400

    # --- pre-computed summaries --------------------------------------------------------
    summary_model: str | None = Field(
        default=None,
        description="Model that writes book summaries ('extractive' needs none); default: chat model.",
    )
    summary_max_tokens: int = 220
    summaries_in_background: bool = Field(
        default=True,
        description="The API / LangGraph server summarizes new books in a background task.",
    )
    summary_chapter_input_chars: int = 6000
    summary_global_input_chars: int = Field(
        default=10_000, description="Cap on the chapter summaries a global summary reads."
    )
    summary_parents_per_part: int = Field(default=8, description="Sections per part (no chapters).")
    toc_max_chapters: int = 30
    toc_max_topics: int = 50

    # --- routing -----------------------------------------------------------------------
    reasoning_keywords: list[str] = Field(default_factory=lambda: list(REASONING_KEYWORDS))
    global_summary_keywords: list[str] = Field(
        default_factory=lambda: list(GLOBAL_SUMMARY_KEYWORDS)
    )

    # --- memory and corrections -----------------------------------------------------------
    history_messages: int = 10  # recent messages used as history when a chat has no summary
    conversation_summary_chars: int = 1200  # cap on a chat's running conversation summary
    correction_min_similarity: float = 0.2  # cosine floor for a correction to count as relevant
    max_corrections: int = Field(default=3, description="Corrections put in the system prompt.")

    # --- users -------------------------------------------------------------------------
    monthly_message_limit: int | None = Field(
        default=None, description="Chat turns a user may have per month (unset: unlimited)."
    )
    default_user: str = "local"
    api_max_question_chars: int = 8000  # longest question the HTTP API accepts (characters)
    checkpoint_pool_size: int = Field(
        default=10, description="Postgres connections for the API's chat checkpointer."
    )

    @property
    def data_dir(self) -> Path:
        """The data folder as an absolute path (created on demand)."""
        path = self.home.expanduser().resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def model_cache_dir(self) -> Path:
        """Folder for assembled model files."""
        path = self.data_dir / "models"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def context_budget(self, model_name: str, mode: str = "specific") -> int:
        """Characters of retrieved context to give a model for a ``specific``, ``deep`` or
        ``chapter`` request: smaller for the CPU model."""
        if model_name != "local":
            return self.max_context_chars
        local = {"deep": self.local_deep_context_chars, "chapter": self.local_chapter_context_chars}
        return local.get(mode, self.local_max_context_chars)

    def focus_passage_chars(self, model_name: str) -> int | None:
        """Most characters one focused passage keeps: capped for the CPU model only."""
        return (self.local_focus_passage_chars or None) if model_name == "local" else None

    def discussion_budget(self, model_name: str) -> int:
        """Characters of earlier discussion in a prompt; none for the 1.5B CPU model, which
        copied earlier answers from it instead of reading the passages (measured)."""
        return 0 if model_name == "local" else 1200

    def top_k(self, model_name: str, mode: str = "specific") -> int:
        """Passages for a specific (seed: 5) or deep question (seed: 15); fewer on the CPU."""
        if mode == "deep":
            return self.local_top_k_deep if model_name == "local" else self.top_k_deep
        return self.local_top_k if model_name == "local" else self.top_k_specific


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment and ``.env``."""
    return Settings()
