"""The embedder interface: texts in, unit-length float32 rows out."""

from abc import ABC, abstractmethod

import numpy as np


class EmbeddingError(RuntimeError):
    """An embedding backend could not produce vectors (a remote endpoint that failed for good)."""


class Embedder(ABC):
    """Maps texts to L2-normalised float32 vectors, one row per text, in input order.

    ``name`` identifies the vectors (it keys the ``Embedding`` cache): two embedders
    with the same name must produce interchangeable vectors.
    """

    name: str = ""
    dim: int = 0  # 0 until known (a remote model reveals it with its first answer)

    @abstractmethod
    def embed(self, texts: list[str]) -> np.ndarray:
        """An ``(len(texts), dim)`` float32 array of unit-length rows."""


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (an all-zero row stays zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
