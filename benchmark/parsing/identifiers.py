"""URL, arXiv id and DOI recognition and normalization."""

from __future__ import annotations

import re
from urllib.parse import unquote

# Characters that end a bare URL: whitespace, markdown/HTML delimiters,
# typographic quotes and CJK / full-width punctuation.
_URL_STOP = r"\s<>\"'`\[\]{}|\\^\u2018-\u201f\u2026\u3000-\u303f\uff01-\uff0f\uff1a-\uff20"
URL_RE = re.compile(
    r"[hHfFwW](?:(?<=[hH])[tT][tT][pP][sS]?://|(?<=[fF])[tT][pP]://"
    rf"|(?<=[wW])(?<![\w@.][wW])[wW][wW]\.(?=[A-Za-z0-9-]{{1,63}}\.))[^{_URL_STOP}]{{1,2000}}"
)
_VERSION_RE = re.compile(r"v\d+$")
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*://")
_URL_TRAILING = ".,;:!?*_~'\"-"

_ARXIV_NEW = r"\d{2}(?:0[1-9]|1[0-2])\.\d{4,5}"
_ARXIV_OLD = r"[a-z][a-z-]{1,15}(?:\.[A-Z]{2})?/\d{7}"
_ARXIV = r"[aA][rR][xX][iI][vV]"
ARXIV_URL_RE = re.compile(rf"{_ARXIV}\.[oO][rR][gG]/(?:abs|pdf|html|format)/({_ARXIV_NEW}|{_ARXIV_OLD})(v\d+)?")
ARXIV_PREFIXED_RE = re.compile(rf"{_ARXIV}(?<!\w{_ARXIV})\s?:\s?({_ARXIV_NEW}|{_ARXIV_OLD})(v\d+)?(?!\d)")
ARXIV_BARE_RE = re.compile(r"(\d(?<![\w./-]\d)\d(?:0[1-9]|1[0-2])\.\d{4,5})(v\d+)?(?![\w/]|\.\d)")

DOI_RE = re.compile(r"10\.(?<![\w./]10\.)\d{4,9}/[^\s\"<>\[\]{}|\\^`\u2018-\u201f\u3000-\u303f\uff01-\uff0f]{1,300}")
DOI_PREFIX_BEFORE_RE = re.compile(r"\bdoi\s?:\s?$", re.IGNORECASE)  # "doi:" right before a DOI
DOI_URL_RE = re.compile(r"[dD][oO][iI]\.[oO][rR][gG]/(10\.\d{4,9}/\S{1,300})")


def trim_url(url: str) -> str:
    """Drop sentence punctuation and unbalanced closing brackets from the end."""
    while url:
        last = url[-1]
        if last in _URL_TRAILING:
            url = url[:-1]
        elif last == ")" and url.count(")") > url.count("("):
            url = url[:-1]
        else:
            break
    return url


def valid_arxiv_new(identifier: str) -> bool:
    """New-style ids have 4 digits after the dot up to 1412 and 5 from 1501."""
    yymm, _, number = identifier.partition(".")
    return (len(number) == 4) == (yymm <= "1412")


def normalize_arxiv(identifier: str) -> str:
    identifier = identifier.strip()
    identifier = _VERSION_RE.sub("", identifier)
    if "/" in identifier:
        archive, _, number = identifier.partition("/")
        return f"{archive.lower()}/{number}"
    return identifier


def normalize_doi(doi: str) -> str:
    return trim_url(unquote(doi.strip())).lower()


def normalize_url(url: str) -> str:
    """Lowercase scheme and host, drop the fragment and a trailing slash."""
    url = url.strip()
    if url[:4].lower() == "www.":
        url = "http://" + url
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    rest = rest.split("#", 1)[0]
    cut = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0], default=len(rest))
    path, question, query = rest[cut:].partition("?")
    return f"{scheme.lower()}://{rest[:cut].lower()}{path.rstrip('/')}{question}{query}"


def url_key(url: str) -> str:
    """Matching key for URLs: normalized, without scheme and ``www.``."""
    normalized = normalize_url(url)
    key = _SCHEME_RE.sub("", normalized)
    return key[4:] if key.startswith("www.") else key


def arxiv_in(text: str) -> str | None:
    """The first arXiv id in a URL or ``arXiv:`` form (or a bare new-style id)."""
    for regex in (ARXIV_URL_RE, ARXIV_PREFIXED_RE):
        m = regex.search(text)
        if m and ("/" in m.group(1) or valid_arxiv_new(m.group(1))):
            return normalize_arxiv(m.group(1))
    for m in ARXIV_BARE_RE.finditer(text):
        if valid_arxiv_new(m.group(1)):
            return normalize_arxiv(m.group(1))
    return None


def doi_in(text: str) -> str | None:
    m = DOI_URL_RE.search(text)
    if m:
        return normalize_doi(m.group(1))
    m = DOI_RE.search(text)
    if m:
        return normalize_doi(m.group(0))
    return None


def url_identifiers(url: str) -> tuple[str | None, str | None]:
    """(arXiv id, DOI) named by a URL, when it names one."""
    arxiv = None
    m = ARXIV_URL_RE.search(url)
    if m and ("/" in m.group(1) or valid_arxiv_new(m.group(1))):
        arxiv = normalize_arxiv(m.group(1))
    m = DOI_URL_RE.search(url)
    doi = normalize_doi(m.group(1)) if m else None
    return arxiv, doi
