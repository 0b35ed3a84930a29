"""The openai embedding backend against the loopback server."""

import numpy as np

from scoring.embeddings import embedder_for
from scoring.models import JudgeConfig
from tests.support.fake_openai import Reply, fake_vector


def config(server, **extra):
    return JudgeConfig(name="emb", backend="openai", base_url=server.base_url, max_retries=2,
                       options={"backoff_base_seconds": 0.01, "backoff_max_seconds": 0.02}, **extra)


def test_rows_come_back_normalised_in_input_order_and_batched(fake_openai):
    embedder = embedder_for("openai:fake-embedder", config=config(fake_openai))
    embedder.batch_size = 2
    texts = ["one", "two", "three"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32 and embedder.dim == 16
    expected = np.asarray([fake_vector(t) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected, atol=1e-6)
    requests = fake_openai.requests
    assert [r.body["input"] for r in requests] == [["one", "two"], ["three"]]
    assert embedder.name == "openai:fake-embedder"


def test_rows_are_ordered_by_index_and_failures_retried(fake_openai):
    shuffled = Reply.embeddings([[0.0, 2.0], [3.0, 0.0]])
    shuffled.body["data"] = shuffled.body["data"][::-1]
    fake_openai.script(Reply.error(500), shuffled)
    vectors = embedder_for("openai:m", config=config(fake_openai)).embed(["first", "second"])
    assert np.allclose(vectors, [[0.0, 1.0], [1.0, 0.0]])
    assert len(fake_openai.requests) == 2
