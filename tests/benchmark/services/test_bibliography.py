import pytest

from benchmark.models import BibEntry
from benchmark.services.bibliography import bib_entries_upsert

pytestmark = pytest.mark.django_db


def test_records_match_by_doi_then_arxiv_then_title_and_fill_missing_fields():
    first = bib_entries_upsert([{"title": "Attention Is All You Need", "arxiv_id": "1706.03762"}])[0]
    again = bib_entries_upsert([
        {"title": "attention is all you need", "doi": "10.5555/3295222.3295349", "year": 2017},
        {"title": "Something else", "arxiv_id": "1706.03762"},
    ])
    assert [e.pk for e in again] == [first.pk, first.pk]
    first.refresh_from_db()
    assert first.doi == "10.5555/3295222.3295349" and first.year == 2017
    assert BibEntry.objects.count() == 1


def test_a_record_whose_doi_belongs_to_a_different_arxiv_work_is_not_merged_into_it():
    # DeepScholar-bench's citations.csv gives one arXiv paper the DOI of another (line 6460)
    owner = bib_entries_upsert([{"title": "Paper A", "arxiv_id": "2101.00001", "doi": "10.1000/a"}])[0]
    other = bib_entries_upsert([{"title": "Paper B", "arxiv_id": "2202.00002", "doi": "10.1000/a"}])[0]
    assert other.pk != owner.pk
    other.refresh_from_db()
    owner.refresh_from_db()
    assert (other.arxiv_id, other.doi, other.extra) == ("2202.00002", "", {"conflicting_doi": "10.1000/a"})
    assert (owner.title, owner.doi) == ("Paper A", "10.1000/a")


def test_the_same_title_with_different_dois_stays_two_works():
    a, b = bib_entries_upsert([
        {"title": "A Survey of Things", "doi": "10.1000/x"},
        {"title": "A Survey of Things", "doi": "10.1000/y"},
    ])
    assert a.pk != b.pk and {a.doi, b.doi} == {"10.1000/x", "10.1000/y"}
