import numpy as np
import pytest

from scoring.embeddings import Embedder, content_hash, embed_cached, normalize_rows
from scoring.embeddings import cache as cache_module
from scoring.models import Embedding


class CountingEmbedder(Embedder):
    """Deterministic vectors from text hashes; counts calls and texts embedded."""

    name = "test:counting"
    dim = 8

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts):
        self.calls += 1
        self.texts.extend(texts)
        rows = [np.random.default_rng(int(content_hash(t)[:8], 16)).normal(size=self.dim) for t in texts]
        return normalize_rows(np.asarray(rows).reshape(len(texts), self.dim))


pytestmark = pytest.mark.django_db


def test_identical_texts_are_embedded_once_and_a_second_pass_embeds_nothing(django_assert_max_num_queries):
    embedder = CountingEmbedder()
    texts = ["alpha", "beta", "alpha", "gamma", "beta"]
    first = embed_cached(embedder, texts)
    assert embedder.calls == 1 and embedder.texts == ["alpha", "beta", "gamma"]
    assert first.shape == (5, 8) and first.dtype == np.float32
    assert np.array_equal(first[0], first[2]) and np.array_equal(first[1], first[4])
    assert Embedding.objects.filter(model="test:counting").count() == 3

    with django_assert_max_num_queries(1):
        second = embed_cached(embedder, texts)
    assert embedder.calls == 1
    assert np.array_equal(first, second)


def test_only_new_texts_are_embedded_and_queries_stay_bounded(django_assert_max_num_queries, monkeypatch):
    monkeypatch.setattr(cache_module, "CHUNK", 10)
    embedder = CountingEmbedder()
    embed_cached(embedder, [f"text {i}" for i in range(25)])
    embedder.texts.clear()
    with django_assert_max_num_queries(3 + 1):  # ⌈30/10⌉ lookups + one insert batch for the 5 new texts
        vectors = embed_cached(embedder, [f"text {i}" for i in range(30)])
    assert embedder.texts == [f"text {i}" for i in range(25, 30)]
    assert vectors.shape == (30, 8)


def test_vectors_are_kept_per_model():
    one, other = CountingEmbedder(), CountingEmbedder()
    other.name = "test:other"
    embed_cached(one, ["same text"])
    embed_cached(other, ["same text"])
    assert other.calls == 1
    row = Embedding.objects.get(model="test:counting", content_hash=content_hash("same text"))
    assert row.dim == 8 and len(bytes(row.vector)) == 32


def test_an_empty_request_makes_no_call():
    embedder = CountingEmbedder()
    assert embed_cached(embedder, []).shape == (0, 8) and embedder.calls == 0
