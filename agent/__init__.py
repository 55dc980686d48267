"""Quire's domain core: configuration, models, storage, ingestion, retrieval, answering."""

__version__ = "0.1.0"
