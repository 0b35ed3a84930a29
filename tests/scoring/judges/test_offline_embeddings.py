"""The offline judge's vectors: computed once per text (database cache), one length-sorted pass per job,
and equal to the vectors the judge computed chunk by chunk before (cosine ≥ 0.9999)."""

import csv

import numpy as np
import pytest

from scoring.embeddings import Embedder
from scoring.embeddings.local import LocalEmbedder, load_model
from scoring.judges import JudgeCall
from scoring.judges import offline_judge
from scoring.judges.offline_claims import candidate_texts
from scoring.judges.offline_judge import OfflineJudge
from scoring.models import Embedding, JudgeConfig

pytestmark = pytest.mark.django_db


class CountingLocal(Embedder):
    """The shipped MiniLM, counting the passes and texts it is asked for."""

    name = LocalEmbedder.name
    dim = LocalEmbedder.dim

    def __init__(self) -> None:
        self.passes: list[int] = []

    def embed(self, texts):
        self.passes.append(len(texts))
        return LocalEmbedder().embed(texts)


@pytest.fixture
def fresh_memo(monkeypatch):
    monkeypatch.setattr(offline_judge, "MEMO", offline_judge._VectorMemo())


@pytest.fixture
def report_and_sources(datasets) -> tuple[str, list[str]]:
    """A released DeepScholar report and three abstracts of documents cited in the release."""
    folder = datasets / "deepscholar-bench"
    report = (folder / "system_outputs" / "storm" / "0" / "storm_gen_article_polished.md").read_text(encoding="utf-8")
    with open(folder / "citations.csv", encoding="utf-8", newline="") as rows:
        abstracts = [row["cited_paper_abstract"] for row in csv.DictReader(rows) if len(row["cited_paper_abstract"]) > 400]
    return report[:3000], abstracts[:3]  # the report's opening: enough sentences, a test's time


def nugget_calls(report: str, sources: list[str]) -> list[JudgeCall]:
    calls = [JudgeCall("deepscholar.citation_support", {"sentence": f"The method improves recall [{i}].",
                                                        "source": source}) for i, source in enumerate(sources)]
    calls += [JudgeCall("deepscholar.nugget_support", {"report": report, "nuggets": [
        {"id": 1, "text": "Retrieval augments generation."}, {"id": 2, "text": "Agents plan before searching."}]})]
    return calls


def test_a_job_is_embedded_in_one_pass_and_a_second_configuration_embeds_nothing(report_and_sources, fresh_memo):
    report, sources = report_and_sources
    calls = nugget_calls(report, sources)
    embedder = CountingLocal()
    first = OfflineJudge(JudgeConfig(name="a", backend="offline", max_concurrency=2), embedder=embedder)
    answers = [answer for _, answer in sorted(first.answer_as_completed(calls))]
    assert all(answer.ok for answer in answers), [answer.error for answer in answers]
    assert len(embedder.passes) == 1  # every call's texts at once, not one pass per chunk of 2 calls
    assert Embedding.objects.filter(model=embedder.name).count() == embedder.passes[0]

    offline_judge.MEMO = offline_judge._VectorMemo()  # another process: nothing remembered in memory
    second = OfflineJudge(JudgeConfig(name="b", backend="offline", prompt_version="v2", max_concurrency=5),
                          embedder=embedder)
    again = [answer for _, answer in sorted(second.answer_as_completed(calls))]
    assert len(embedder.passes) == 1  # a new configuration and prompt over the same texts: read, not embedded
    assert [answer.data for answer in again] == [answer.data for answer in answers]


def test_vectors_equal_those_computed_chunk_by_chunk(report_and_sources, fresh_memo):
    report, sources = report_and_sources
    texts = list(dict.fromkeys(candidate_texts(report) + [t for s in sources for t in candidate_texts(s)]))[:120]
    judge = OfflineJudge(JudgeConfig(name="a", backend="offline"))
    judge.vectors_of(texts)
    offline_judge.MEMO = offline_judge._VectorMemo()
    stored = judge.vectors_of(texts)  # read back from the database
    model = load_model()
    before = np.concatenate([model.encode(texts[i:i + 7]) for i in range(0, len(texts), 7)])  # c01d2af's batches
    cosines = np.sum(stored * before, axis=1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(before, axis=1))
    assert len(texts) == 120 and cosines.min() >= 0.9999
