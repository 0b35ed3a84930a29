"""Sentence embeddings for the judges and metrics: a small interface, two backends, a database cache.

* ``Embedder.embed(texts) -> (n, d) float32``, rows L2-normalised;
* ``embedder_for(spec, config=None)`` builds one from ``JudgeConfig.embedding_backend``:
  ``""``/``"local"``/``"local:all-MiniLM-L6-v2"`` — all-MiniLM-L6-v2 in NumPy, offline
  (``scoring.embeddings.local``); ``"openai:<model>"`` — an OpenAI-compatible
  embeddings endpoint (``scoring.embeddings.remote``), at the configuration's base_url;
* ``embed_cached(embedder, texts)`` reads and stores ``scoring.models.Embedding`` rows.
"""

import threading

from .base import Embedder, EmbeddingError, normalize_rows
from .cache import content_hash, embed_cached, stored_vectors

DEFAULT_SPEC = "local:all-MiniLM-L6-v2"
_LOCAL_NAMES = {"", "local", "local:all-MiniLM-L6-v2", "local:sentence-transformers/all-MiniLM-L6-v2"}
_local = None
_local_lock = threading.Lock()


def embedder_for(spec: str = "", *, config=None) -> Embedder:
    """The embedder a spec names; unknown specs are an error naming the ones that exist."""
    spec = (spec or "").strip()
    if spec in _LOCAL_NAMES:
        global _local
        with _local_lock:
            if _local is None:
                from .local import LocalEmbedder

                _local = LocalEmbedder()
            return _local
    if spec.startswith("openai:"):
        from .remote import OpenAIEmbedder

        return OpenAIEmbedder(spec.removeprefix("openai:"), config=config)
    raise ValueError(f"unknown embedding backend {spec!r}: use '' or {DEFAULT_SPEC!r} (offline) "
                     "or 'openai:<model>' (an OpenAI-compatible endpoint)")


__all__ = [
    "DEFAULT_SPEC", "Embedder", "EmbeddingError", "content_hash", "embed_cached", "embedder_for", "normalize_rows",
    "stored_vectors",
]
