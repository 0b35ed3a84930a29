"""The offline judge's steps that find statements, passages and references in a text.

* ``reportbench.cited_statements`` / ``uncited_statements``: sentences with / without URLs, DOIs,
  markdown links, ``[n]`` or (Author, Year) markers, up to a references heading; uncited ones must
  carry a number, year or name and have ≥ 6 words.
* ``reportbench.support_passage``: the best window of up to 3 source sentences; found when its
  similarity is ≥ ``passage_similarity``.
* ``reportbench.reference_titles``: entries of the references section (markdown link text, quoted
  titles, or the title segment after "Authors (Year)."), else titled links anywhere.
* ``reportbench.academic_reference``: academic when the URL is on a scholarly host (arXiv, DOI,
  publishers, proceedings, indexes; ``ACADEMIC_HOSTS``) or a PDF; any other URL (code hosting,
  encyclopaedias, blogs, news, documentation) is not; without a URL, a title of ≥ 4 words is taken
  for a paper, as the released no-URL mode takes every extracted title for one.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from . import lexical
from .offline_claims import round4

_REFERENCES_HEADING = re.compile(r"^\s*(references|bibliography|works cited|sources|citations|reference list)\s*:?\s*$",
                                 re.IGNORECASE)


def _body_sentences(report: str) -> list[str]:
    """Sentences before a references heading."""
    body = []
    for block in lexical.blocks(report):
        if block.kind == "heading" and _REFERENCES_HEADING.match(block.text):
            break
        if block.kind == "heading":
            continue
        body.extend([block.text] if block.kind == "row" else lexical.split_text(block.text))
    return body


def reportbench_cited_statements(judge, report):
    statements = []
    for sentence in _body_sentences(report):
        cites = lexical.citations_in(sentence)
        text = lexical.strip_citations(sentence)
        if cites and len(lexical.tokens(text)) >= 3:
            statements.append({"text": text, "citations": cites})
    return {"statements": statements}


def reportbench_uncited_statements(judge, report):
    statements = []
    for sentence in _body_sentences(report):
        if lexical.citations_in(sentence) or len(lexical.tokens(sentence)) < 6:
            continue
        ev = lexical.evidence(sentence)
        if ev.values or ev.names:
            statements.append({"text": sentence.strip()})
    return {"statements": statements}


def reportbench_support_passage(judge, statement, source_title, source_text):
    sentences = list(lexical.split_sentences(source_text))
    if not sentences:
        return {"passage": "", "found": False}
    windows = [" ".join(sentences[i:i + 3]) for i in range(max(1, len(sentences) - 2))]
    candidates = sentences + windows
    vectors = judge.vectors_of([statement, *candidates])
    sims = [round4(s) for s in vectors[1:] @ vectors[0]]
    best = max(range(len(candidates)), key=lambda j: (sims[j], -j))
    if sims[best] < judge.thresholds["passage_similarity"]:
        return {"passage": "", "found": False}
    return {"passage": candidates[best], "found": True}


def reportbench_reference_titles(judge, report):
    lines, in_references = [], False
    for line in lexical.normalize(report).splitlines():
        stripped = line.strip().lstrip("#").strip()
        if _REFERENCES_HEADING.match(stripped):
            in_references = True
            continue
        if in_references and re.match(r"^\s*#{1,6}\s", line):
            break
        if in_references and stripped:
            lines.append(stripped)
    references, seen = [], set()

    def add(title: str, url: str) -> None:
        title = title.strip(" .,:;\"'“”")
        key = re.sub(r"\W+", " ", title.lower()).strip()
        if len(key.split()) >= 3 and key not in seen:
            seen.add(key)
            references.append({"title": title, "url": url})

    for line in lines:
        links = lexical.MARKDOWN_LINK.findall(line)
        urls = lexical.URL.findall(line)
        url = links[0][1] if links else (urls[0] if urls else "")
        quoted = re.search(r"[\"“]([^\"”]{10,300})[\"”]", line)
        after_year = re.search(r"\((?:19|20)\d{2}[a-z]?\)\.?\s+(.{10,300}?)(?:\.\s|\.?\s*https?://|\.?$)", line)
        if quoted:
            add(quoted.group(1), url)
        elif links and len(links[0][0].split()) >= 3:
            add(links[0][0], url)
        elif after_year:
            add(after_year.group(1), url)
        else:
            text = lexical.strip_citations(re.sub(r"^\s*(?:\[\d+\]|\d+[.)])\s*", "", line))
            add(text, url)
    if not lines:
        for text, url in lexical.MARKDOWN_LINK.findall(lexical.normalize(report)):
            if len(text.split()) >= 4:
                add(text, url)
    return {"references": references}


# Scholarly hosts (a host equal to one, or a subdomain of one): preprint servers, DOI resolvers,
# publishers, proceedings and bibliographic indexes.
ACADEMIC_HOSTS = (
    "arxiv.org", "doi.org", "biorxiv.org", "medrxiv.org", "chemrxiv.org", "ssrn.com", "openreview.net",
    "aclanthology.org", "aclweb.org", "semanticscholar.org", "dblp.org", "scholar.google.com", "pubmed.ncbi.nlm.nih.gov",
    "ncbi.nlm.nih.gov", "europepmc.org", "ieeexplore.ieee.org", "dl.acm.org", "link.springer.com", "springer.com",
    "sciencedirect.com", "elsevier.com", "nature.com", "science.org", "cell.com", "wiley.com", "tandfonline.com",
    "sagepub.com", "mdpi.com", "frontiersin.org", "plos.org", "jstor.org", "iopscience.iop.org", "aps.org",
    "pnas.org", "jmlr.org", "proceedings.mlr.press", "neurips.cc", "nips.cc", "iclr.cc", "icml.cc", "aaai.org",
    "ijcai.org", "thecvf.com", "usenix.org", "researchgate.net", "hal.science", "zenodo.org", "osf.io",
)


def reportbench_academic_reference(judge, title, url, content):
    host = urlsplit(url if "://" in url else "//" + url).netloc.lower().removeprefix("www.") if url.strip() else ""
    path = urlsplit(url).path.lower() if url.strip() else ""
    if host and any(host == h or host.endswith("." + h) for h in ACADEMIC_HOSTS):
        return {"is_academic_paper": True, "reason": f"heuristic: {host} is a scholarly host"}
    if host and path.endswith(".pdf"):
        return {"is_academic_paper": True, "reason": f"heuristic: a PDF document on {host}"}
    if host:
        return {"is_academic_paper": False, "reason": f"heuristic: {host} is no scholarly host (a web page)"}
    words = len(re.findall(r"\w+", title))
    if words >= 4:
        return {"is_academic_paper": True, "reason": f"heuristic: no URL; a {words}-word title is taken for a paper"}
    return {"is_academic_paper": False, "reason": "heuristic: no URL and no title of 4 words or more"}


HANDLERS = {
    "reportbench.academic_reference": reportbench_academic_reference,
    "reportbench.cited_statements": reportbench_cited_statements,
    "reportbench.uncited_statements": reportbench_uncited_statements,
    "reportbench.support_passage": reportbench_support_passage,
    "reportbench.reference_titles": reportbench_reference_titles,
}
