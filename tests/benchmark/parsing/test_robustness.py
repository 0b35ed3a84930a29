"""Never raises, offsets always slice back, linear-ish time on large and
pathological inputs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmark.parsing import parse_report, samples

from .invariants import check_report

TOKENS = [
    "# ", "## ", "\n", "\n\n", "\r\n", "\r", " ", "  ", "\t", ".", ". ", "? ", "e.g. ", "et al. ", "Fig. ", "3.5",
    "[", "]", "(", ")", "[1]", "[1, 3]", "[2-4]", "[^1]", "[^1]: ", "[1]: ", "![", "](", "http://a.b/c", "www.x.org",
    "10.1234/ab.c", "arXiv:2301.01234v2", "2301.01234", "Smith", "Lee", " et al.", ", 2020", "(2019)", "&", ";", "and ",
    "References", "**", "*", "_", "- ", "1. ", "2.3 ", "Chapter 1 \u2013 ", "Introduction", "|", "|---|", "---", "===",
    "```", "~~~", "$", "$$", "\\[", "\\]", "\\begin{equation}", "\\end{equation}", "\\cite{a,b}", "\\section{", "}",
    ">", "<table>", "</table>", "<img src=x>", "Figure 1: ", "Table 2: ", "arXiv", "+1", "arxiv.org", "\u3010", "\u3011",
    "\u2013", "\u202f", "\u00e9", "\U0001f600", "`", "Document 1: ", "\\",
]

markdownish = st.lists(st.sampled_from(TOKENS), max_size=80).map("".join)
any_text = st.text(max_size=400)
with_surrogates = st.text(st.characters(blacklist_categories=()), max_size=200)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(markdownish, any_text, with_surrogates), fmt=st.sampled_from(["markdown", "text"]))
def test_never_raises_and_offsets_slice_back(text, fmt):
    check_report(parse_report(text, format=fmt))


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=40))
def test_structure_tokens_joined_by_newlines(parts):
    for fmt in ("markdown", "text"):
        check_report(parse_report("\n".join(parts), format=fmt))


def test_real_outputs_satisfy_the_invariants(real):
    for report in real.values():
        check_report(report)


PATHOLOGICAL = {
    "open brackets": "[" * 100_000,
    "open parens": "(" * 100_000,
    "dollars": "$" * 100_000,
    "backticks": "`" * 100_000,
    "bracket digits": "[1" * 20_000,
    "hashes": "#" * 100_000,
    "heading of spaces": "# " + " " * 100_000 + "x",
    "unclosed links": "[a](" * 20_000,
    "unclosed images": "![" * 20_000,
    "footnote openers": "[^" * 20_000,
    "pipes": "|\n|-|\n" * 20_000,
    "dash lines": "-\n" * 20_000,
    "unclosed equations": "\\begin{equation}\n" * 20_000,
    "unclosed display brackets": "\\[x\n" * 20_000,
    "unclosed display dollars": "$$x\n" * 20_000,
    "fences": "```\n" * 20_000,
    "numbered lines": "1. A\n" * 20_000,
    "urls": "http://a.b/" * 20_000,
    "dots": ". " * 100_000,
    "et al": "Smith et al. " * 20_000,
    "years": "(2020) " * 20_000,
    "author list": "Smith, " * 20_000 + "2020)",
    "paren authors": "(Smith, " * 20_000,
    "dois": "10.1234/" * 20_000,
    "arxiv": "2301.01234v" * 20_000,
    "cite openers": "\\cite{" * 20_000,
    "captions": "Figure 1: x\n" * 20_000,
    "chips": "arxiv.org\n+1\n" * 20_000,
    "tables": "<table>\n" * 20_000,
    "reference list": "## References\n" + "[1] A. B. (2020). T. http://x.y\n" * 20_000,
    "stars": "*" * 100_000,
    "blank lines": "\n" * 100_000,
    "crlf": "\r\n" * 100_000,
    "quotes": "> " * 100_000,
    "inline math": "$a " * 20_000,
    "narrative names": "Smith and " * 20_000 + "Lee (2019)",
    "abbreviations": "e.g. " * 20_000,
    "numbered headings": "x\n1 Intro\n" * 20_000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
@pytest.mark.parametrize("fmt", ["markdown", "text"])
def test_pathological_inputs_are_fast(name, fmt):
    started = time.process_time()
    report = parse_report(PATHOLOGICAL[name], format=fmt)
    elapsed = time.process_time() - started
    assert elapsed < 8.0, f"{name}: {elapsed:.1f}s CPU"
    assert report.text is PATHOLOGICAL[name]


def _big_report(size: int, root: Path) -> str:
    base = "\n\n".join(s.text for s in samples.deepscholar_samples(root))
    return (base * (size // len(base) + 1))[:size]


def test_five_megabyte_report_is_linear(datasets_root):
    small, big = _big_report(500_000, datasets_root), _big_report(5_000_000, datasets_root)
    started = time.process_time()
    parse_report(small)
    small_cpu = time.process_time() - started
    started = time.process_time()
    report = parse_report(big)
    big_cpu = time.process_time() - started
    assert len(report.text) == 5_000_000
    assert report.stats.citations > 5_000
    assert big_cpu < 40.0
    # 10x the input may cost at most ~25x the time (linear, with slack for noise)
    assert big_cpu < 25 * max(small_cpu, 0.05), (small_cpu, big_cpu)
