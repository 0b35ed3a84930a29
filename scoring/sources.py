"""Optional plug-ins for what is not stored: fetching a cited page, looking up a citation count.

Both are off by default — judging uses only stored data (bibliography abstracts, report
sources, imported counts) and nothing goes to the web. A deployment turns one on with a
setting naming a callable:

``SOURCE_FETCHER`` (e.g. ``scoring.sources.http_fetch``)
    ``fetch(url) -> {"title": str, "text": str} | None``. What it returns is stored on the
    bibliography entry (``abstract``, with ``extra["fetched_from"]``), so each page is
    fetched once and later runs read it back like imported data.

``CITATION_COUNT_LOOKUP``
    ``lookup(bib_entry) -> int | None``; the count is stored on ``BibEntry.citation_count``.

A plug-in that raises or returns nothing counts as "not available": the pipeline records
the item as such (no verdict is invented), and the next run asks again.
"""

from __future__ import annotations

import http.client
import logging
import re
from collections.abc import Callable
from functools import lru_cache
from html.parser import HTMLParser

from django.conf import settings
from django.utils.module_loading import import_string

from benchmark.models import BibEntry
from benchmark.services.bibliography import bib_entries_upsert
from core.outbound import AddressRefused, outbound_request

logger = logging.getLogger(__name__)

FETCH_MAX_BYTES = 2 * 1024 * 1024
FETCH_TIMEOUT_SECONDS = 15.0
STORED_TEXT_LIMIT = 50_000  # characters of a fetched page kept as the entry's text


@lru_cache(maxsize=8)
def _plugin(path: str) -> Callable | None:
    return import_string(path) if path else None


def source_fetcher() -> Callable[[str], dict | None] | None:
    return _plugin(getattr(settings, "SOURCE_FETCHER", "") or "")


def citation_count_lookup() -> Callable[[BibEntry], int | None] | None:
    return _plugin(getattr(settings, "CITATION_COUNT_LOOKUP", "") or "")


def fetched_entry(*, url: str, title: str = "", entry: BibEntry | None = None) -> BibEntry | None:
    """The bibliography entry for a cited page with its text fetched and stored, or ``None`` when
    no fetcher is configured, there is no URL, or the fetch gave nothing. ``AddressRefused`` when
    the URL (or a redirect) names an address the server does not fetch (``core.outbound``)."""
    fetch = source_fetcher()
    if fetch is None or not url:
        return None
    if entry is None:  # fetched before: read back, not fetched again
        entry = BibEntry.objects.filter(url=url).exclude(abstract="").order_by("pk").first()
        if entry is not None:
            return entry
    try:
        page = fetch(url)
    except AddressRefused:
        raise  # the caller says why in the source's status
    except Exception:  # a plug-in's failure is "not available", never a crashed job
        logger.warning("source fetcher failed for %s", url, exc_info=True)
        return None
    text = str((page or {}).get("text") or "").strip()[:STORED_TEXT_LIMIT]
    if not text:
        return None
    if entry is None:
        entry = bib_entries_upsert([{
            "title": title or str(page.get("title") or "") or url, "url": url, "extra": {"fetched_from": url},
        }])[0]
    # Only fill what is missing: an imported abstract is never replaced by a fetched page.
    if not entry.abstract:
        BibEntry.objects.filter(pk=entry.pk, abstract="").update(
            abstract=text, extra={**(entry.extra or {}), "fetched_from": url}
        )
        entry.refresh_from_db(fields=["abstract", "extra"])
    return entry


def citation_count(entry: BibEntry) -> int | None:
    """The entry's stored citation count, else the configured lookup's answer (then stored)."""
    if entry.citation_count is not None:
        return entry.citation_count
    lookup = citation_count_lookup()
    if lookup is None:
        return None
    try:
        count = lookup(entry)
    except Exception:
        logger.warning("citation count lookup failed for %s", entry.pk, exc_info=True)
        return None
    if count is None or int(count) < 0:
        return None
    BibEntry.objects.filter(pk=entry.pk, citation_count__isnull=True).update(citation_count=int(count))
    entry.citation_count = int(count)
    return entry.citation_count


# --- the built-in HTTP fetcher ---------------------------------------------------------------------------------


class _TextExtractor(HTMLParser):
    """Visible text and the <title> of an HTML page; scripts, styles and navigation dropped."""

    SKIP = {"script", "style", "noscript", "nav", "header", "footer", "svg", "template"}
    BLOCK = {"p", "div", "li", "br", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article", "blockquote"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self._skip:
            self._skip -= 1
        elif tag == "title":
            self._in_title = False
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if self._in_title:
            self.title.append(data)
        elif not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML page, whitespace collapsed, paragraphs kept."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parser.parts).split("\n"))
    text = "\n".join(line for line in lines if line)
    return " ".join("".join(parser.title).split()), text


def http_fetch(url: str) -> dict | None:
    """GET one page under the server's address rule (``core.outbound``: public addresses on default
    ports only, checked again on every redirect hop), at most ``FETCH_MAX_BYTES``, HTML reduced to
    text. A refused address raises ``AddressRefused`` (the pipeline shows why in the source's
    status); any other failure is "not available" (``None``)."""
    if not re.match(r"^https?://", url, flags=re.IGNORECASE):
        return None
    try:
        response = outbound_request(url, headers={"User-Agent": "SurveyEvalStudio/1 (+source fetcher)"},
                                    timeout=FETCH_TIMEOUT_SECONDS, max_bytes=FETCH_MAX_BYTES)
    except (http.client.HTTPException, OSError) as exc:  # AddressRefused is neither: it reaches the caller
        logger.warning("fetching %s failed (%s): the source counts as not available", url, exc)
        return None
    if not 200 <= response.status < 300:
        logger.warning("fetching %s failed (HTTP %s): the source counts as not available", url, response.status)
        return None
    decoded = response.body.decode(response.charset, errors="replace")
    if "html" in response.content_type or decoded.lstrip()[:1] == "<":
        title, text = html_to_text(decoded)
        return {"title": title, "text": text}
    if response.content_type.startswith("text/"):
        return {"title": "", "text": decoded}
    return None  # PDFs and other binaries: not read here
