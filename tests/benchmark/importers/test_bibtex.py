import pytest

from benchmark.importers.bibtex import parse_bibtex
from benchmark.importers.catalogue import run_import
from benchmark.models import BibEntry
from tests.factories import BibEntryFactory

from . import assert_rejected, model_counts

pytestmark = pytest.mark.django_db

BIB = r"""Free text before the entries is a comment, even with an email: me@example.org.

@string{acl = "Proceedings of the " # "Annual Meeting of the ACL"}
@comment{ this {nested} block is ignored }
@preamble{ "\newcommand{\noopsort}[1]{}" }

@inproceedings{devlin2019bert,
  title     = {{BERT}: Pre-training of Deep Bidirectional Transformers for Language Understanding},
  author    = "Devlin, Jacob and Chang, Ming-Wei",
  booktitle = acl,
  year      = 2019,
  month     = jun,
  doi       = {https://doi.org/10.18653/V1/N19-1423},
}

@article(schutze2008,
  title = "Introduction to Information Retrieval by Sch{\"u}tze and {\emph{others}}",
  journal = {Cambridge {University} Press},
  year = {2008a},
  eprint = {0801.12345}, archivePrefix = {arXiv}
)

@misc{notitle, howpublished = {\url{http://example.org}}}
"""


def test_parser_reads_strings_comments_nested_braces_and_concatenation():
    entries = parse_bibtex(BIB, file="refs.bib")
    assert [(e.type, e.key, e.line) for e in entries] == [
        ("inproceedings", "devlin2019bert", 7), ("article", "schutze2008", 16), ("misc", "notitle", 23)]
    bert = entries[0].fields
    assert bert["title"] == "{BERT}: Pre-training of Deep Bidirectional Transformers for Language Understanding"
    assert bert["booktitle"] == "Proceedings of the Annual Meeting of the ACL"
    assert (bert["year"], bert["month"]) == ("2019", "June")
    assert entries[1].fields["title"] == 'Introduction to Information Retrieval by Sch{\\"u}tze and {\\emph{others}}'


def test_import_stores_entries_and_reimport_reuses_them(tmp_path):
    path = tmp_path / "refs.bib"
    path.write_text(BIB, encoding="utf-8")
    result = run_import("bibtex", path)
    assert result.counts["bib entry"] == {"created": 2}
    assert "refs.bib, line 23: skipped @misc{notitle} without a usable title" in result.messages

    bert = BibEntry.objects.get(doi="10.18653/v1/n19-1423")
    assert bert.title.startswith("{BERT}: Pre-training")  # LaTeX kept as written
    assert bert.normalized_title == "bert pretraining of deep bidirectional transformers for language understanding"
    assert (bert.year, bert.venue) == (2019, "Proceedings of the Annual Meeting of the ACL")
    assert bert.extra == {"bibtex_key": "devlin2019bert", "entry_type": "inproceedings"}
    iir = BibEntry.objects.get(arxiv_id="0801.12345")
    assert iir.year == 2008

    again = run_import("bibtex", path)
    assert again.counts["bib entry"] == {"reused": 2}
    assert BibEntry.objects.count() == 2


def test_entries_match_existing_ones_by_normalized_title(tmp_path):
    BibEntryFactory(title="Schütze on Retrieval", normalized_title="schutze on retrieval", year=None)
    path = tmp_path / "one.bib"
    path.write_text('@book{s, title = {Sch{\\"u}tze on {R}etrieval}, year = 2001}', encoding="utf-8")
    result = run_import("bibtex", path)
    assert result.counts["bib entry"] == {"reused": 1}
    assert BibEntry.objects.get().year == 2001  # the missing year is filled in


@pytest.fixture
def stored(tmp_path):
    path = tmp_path / "refs.bib"
    path.write_text(BIB, encoding="utf-8")
    run_import("bibtex", path)
    return model_counts()


GOOD = "@article{ok, title = {Fine}}\n"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (GOOD + "\n@article{bad,\n  title = {Unclosed {brace},\n  year = 2020\n}\n",
         r"bad\.bib, line 3, field 'title': expected ',' or '\}' .* \(an entry or brace is never closed\)"),
        (GOOD + "@article{ok, title = {Again}}\n", r"bad\.bib, line 2: duplicate citation key 'ok', first used at line 1"),
        (GOOD + "@article{x, title = {A}, TITLE = {B}}\n", r"bad\.bib, line 2, field 'title': duplicate field"),
        (GOOD + "@article{x, journal = nomacro}\n", r"line 2, field 'journal': undefined @string macro 'nomacro'"),
        (GOOD + "@article{x, title {A}}\n", r"line 2, field 'title': expected '=' after the field name"),
        (GOOD + "@article{x, title = \"open quote}\n", r"line 2, field 'title': (a quoted value is never closed|unbalanced)"),
        (GOOD + "@article x, title = {A}}\n", r"line 2: expected '\{' or '\(' after @article"),
        ("@article{y, title = {T}, year = 2020", r"line 1, field 'year': expected ',' or '\}' .* the end of the file"),
    ],
)
def test_bad_entries_are_rejected_with_their_line(tmp_path, stored, text, match):
    path = tmp_path / "bad.bib"
    path.write_text(text, encoding="utf-8")
    assert_rejected("bibtex", path, match=match)


def test_binary_garbage_is_rejected(tmp_path, stored):
    path = tmp_path / "bad.bib"
    path.write_bytes(b"@article{a, title={x}}\n\x89PNG\x00\x00")
    assert_rejected("bibtex", path, match=r"bad\.bib, line 2: contains NUL bytes")
    path.write_bytes(b"@article{a, title={caf\xe9}}")
    assert_rejected("bibtex", path, match=r"bad\.bib, line 1: not UTF-8 text")


def test_oversized_file_is_rejected(tmp_path, stored, settings):
    settings.IMPORT_MAX_LINE_BYTES = 100
    path = tmp_path / "big.bib"
    path.write_text(GOOD * 10, encoding="utf-8")
    assert_rejected("bibtex", path, match=r"big\.bib: file of 290 bytes exceeds the 100-byte limit")
