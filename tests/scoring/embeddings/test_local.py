"""all-MiniLM-L6-v2 in NumPy against vectors made by sentence-transformers on torch (see make_reference_vectors.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from scoring.embeddings import embedder_for
from scoring.embeddings.local import LocalEmbedder

REFERENCE = json.loads((Path(__file__).parent / "reference_vectors.json").read_text())


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return embedder_for("local:all-MiniLM-L6-v2")


def test_vectors_match_sentence_transformers(embedder):
    ours = embedder.embed(REFERENCE["sentences"])
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    cosines = (ours * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() >= 0.9999, cosines
    assert np.abs(ours - reference).max() < 1e-4


def test_rows_are_unit_float32_in_input_order(embedder):
    texts = ["a short one", "a considerably longer sentence about retrieval-augmented generation", "a short one"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[2], atol=1e-6)
    alone = embedder.embed([texts[1]])[0]
    assert float(alone @ vectors[1]) > 0.99999
    assert embedder.embed([]).shape == (0, 384)


def test_embedding_imports_neither_torch_nor_a_hub_client():
    code = ("import sys; from scoring.embeddings.local import LocalEmbedder; LocalEmbedder().embed(['x']); "
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'huggingface_hub') "
            "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, capture_output=True, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_specs_name_the_backends():
    assert embedder_for("") is embedder_for("local") is embedder_for("local:all-MiniLM-L6-v2")
    with pytest.raises(ValueError, match="unknown embedding backend"):
        embedder_for("local:bert-large")
