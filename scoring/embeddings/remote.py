"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint.

Same transport rules as the judges (``scoring.judges.transport``): our own retries
with backoff and ``Retry-After``, the SDK's retries off, and the per-endpoint limit
on calls in flight. Texts go in batches of ``batch_size``; rows come back in input
order (by the ``index`` the server reports), L2-normalised.
"""

import random

import numpy as np

from scoring.judges.transport import GiveUp, RetryPolicy, call_with_retries, endpoint_url, make_client

from .base import Embedder, EmbeddingError, normalize_rows


class OpenAIEmbedder(Embedder):
    def __init__(self, model: str, *, config=None, batch_size: int = 256) -> None:
        if not model:
            raise ValueError("an openai embedder needs a model name: 'openai:<model>'")
        self.model = model
        self.name = f"openai:{model}"
        self.config = config
        self.batch_size = batch_size
        self.endpoint = endpoint_url(config)
        self.limit = int(getattr(config, "max_concurrency", 4) or 4)
        self.policy = RetryPolicy.from_config(config)
        self.client = make_client(config)
        self.calls = 0
        self._rng = random.Random()

    def embed(self, texts: list[str]) -> np.ndarray:
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            try:
                response, _ = call_with_retries(
                    lambda timeout: self.client.embeddings.create(model=self.model, input=batch, timeout=timeout),
                    policy=self.policy, endpoint=self.endpoint, limit=self.limit, rng=self._rng,
                )
            except GiveUp as failure:
                raise EmbeddingError(f"{self.name} at {self.endpoint}: {failure.reason}") from failure
            self.calls += 1
            data = sorted(response.data, key=lambda item: item.index)
            if len(data) != len(batch):
                raise EmbeddingError(f"{self.name} returned {len(data)} vectors for {len(batch)} texts")
            rows.append(np.asarray([item.embedding for item in data], dtype=np.float32))
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = normalize_rows(np.concatenate(rows))
        self.dim = matrix.shape[1]
        return matrix
