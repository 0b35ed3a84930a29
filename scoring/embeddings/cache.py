"""``embed_cached``: embeddings stored in ``scoring.models.Embedding``, so re-scoring never re-embeds."""

import hashlib

import numpy as np

from .base import Embedder

CHUNK = 500  # hashes per lookup query and rows per insert


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stored_vectors(model: str, hashes: list[str]) -> dict[str, np.ndarray]:
    """The stored vectors of ``model`` for these content hashes (absent ones left out); never embeds."""
    from scoring.models import Embedding

    unique = list(dict.fromkeys(hashes))
    found: dict[str, np.ndarray] = {}
    for start in range(0, len(unique), CHUNK):
        rows = Embedding.objects.filter(model=model, content_hash__in=unique[start:start + CHUNK])
        for content, dim, blob in rows.values_list("content_hash", "dim", "vector"):
            vector = np.frombuffer(bytes(blob), dtype="<f4")
            if vector.shape[0] != dim:
                raise ValueError(f"stored embedding {model}/{content} has {vector.shape[0]} values, not {dim}")
            found[content] = vector
    return found


def embed_cached(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Vectors for ``texts`` (input order), embedding only those not yet stored for ``embedder.name``.

    Identical texts are embedded once. Lookups run in chunks of ``CHUNK`` hashes, new
    rows are bulk-inserted (a concurrent writer's row wins: the unique key ignores
    the conflict). Queries: ⌈unique/CHUNK⌉ lookups plus ⌈new/CHUNK⌉ inserts.
    """
    from scoring.models import Embedding

    hashes = [content_hash(t) for t in texts]
    first: dict[str, int] = {}
    for i, h in enumerate(hashes):
        first.setdefault(h, i)
    unique = list(first)
    found = stored_vectors(embedder.name, unique)
    missing = [h for h in unique if h not in found]
    if missing:
        fresh = embedder.embed([texts[first[h]] for h in missing])
        if fresh.shape[0] != len(missing):
            raise ValueError(f"{embedder.name} returned {fresh.shape[0]} vectors for {len(missing)} texts")
        new_rows = []
        for h, vector in zip(missing, fresh):
            vector = np.asarray(vector, dtype="<f4")
            found[h] = vector
            new_rows.append(Embedding(model=embedder.name, content_hash=h, dim=vector.shape[0],
                                      vector=vector.tobytes()))
        Embedding.objects.bulk_create(new_rows, batch_size=CHUNK, ignore_conflicts=True)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    dims = {found[h].shape[0] for h in unique}
    if len(dims) != 1:
        raise ValueError(f"embeddings stored under {embedder.name!r} have different sizes {sorted(dims)}")
    return np.stack([found[h] for h in hashes]).astype(np.float32, copy=False)
