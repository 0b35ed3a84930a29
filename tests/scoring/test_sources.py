"""The optional source fetcher and citation-count lookup (``scoring.sources``): off by default."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmark.models import BibEntry
from scoring.pipelines.report_sources import SourceResolver
from scoring.sources import citation_count, fetched_entry, html_to_text, http_fetch
from tests.factories import BibEntryFactory, ReportFactory, TaskFactory

pytestmark = pytest.mark.django_db

FETCHED: list[str] = []


def fake_fetch(url: str) -> dict | None:
    FETCHED.append(url)
    if "missing" in url:
        return None
    if "broken" in url:
        raise RuntimeError("connection reset")
    return {"title": "Fetched Paper", "text": f"The text of {url}."}


def fake_lookup(entry) -> int:
    return 42


@pytest.fixture(autouse=True)
def _clear():
    FETCHED.clear()


def test_nothing_is_fetched_or_looked_up_unless_a_plugin_is_configured(settings):
    settings.SOURCE_FETCHER = ""
    settings.CITATION_COUNT_LOOKUP = ""
    assert fetched_entry(url="https://example.org/paper") is None
    entry = BibEntryFactory(citation_count=None)
    assert citation_count(entry) is None
    assert not FETCHED and BibEntry.objects.count() == 1


def test_a_fetched_page_is_stored_once_and_read_back(settings):
    settings.SOURCE_FETCHER = "tests.scoring.test_sources.fake_fetch"
    entry = fetched_entry(url="https://example.org/paper", title="A Paper")
    assert (entry.title, entry.abstract, entry.extra["fetched_from"]) == (
        "A Paper", "The text of https://example.org/paper.", "https://example.org/paper")
    again = fetched_entry(url="https://example.org/paper")
    assert again.pk == entry.pk and FETCHED == ["https://example.org/paper"]  # not fetched twice


def test_an_imported_abstract_is_never_replaced_and_failures_count_as_not_available(settings):
    settings.SOURCE_FETCHER = "tests.scoring.test_sources.fake_fetch"
    entry = BibEntryFactory(abstract="", url="https://example.org/known")
    filled = fetched_entry(url=entry.url, entry=entry)
    assert filled.abstract == "The text of https://example.org/known."
    kept = BibEntryFactory(abstract="Imported abstract.")
    assert fetched_entry(url="https://example.org/other", entry=kept).abstract == "Imported abstract."
    assert fetched_entry(url="https://example.org/missing") is None
    assert fetched_entry(url="https://example.org/broken") is None


def test_a_citation_count_is_looked_up_only_when_missing_and_then_stored(settings):
    settings.CITATION_COUNT_LOOKUP = "tests.scoring.test_sources.fake_lookup"
    stored = BibEntryFactory(citation_count=7)
    assert citation_count(stored) == 7
    missing = BibEntryFactory(citation_count=None)
    assert citation_count(missing) == 42
    missing.refresh_from_db()
    assert missing.citation_count == 42


def test_the_reportbench_resolver_uses_the_fetcher_only_when_nothing_is_stored(settings):
    task = TaskFactory(protocol="reportbench")
    text = "# R\n\nA claim [1].\n\n## References\n\n[1] Unknown Work. https://example.org/unknown-work\n"
    report = ReportFactory(task=task, text=text)
    settings.SOURCE_FETCHER = ""
    assert SourceResolver(report).sources_for(["[1]"]) == []
    settings.SOURCE_FETCHER = "tests.scoring.test_sources.fake_fetch"
    [source] = SourceResolver(report).sources_for(["[1]"])
    assert (source["from"], source["text"]) == ("fetcher", "The text of https://example.org/unknown-work.")


PAGE = b"""<!doctype html><html><head><title> A   Page </title><style>p{}</style>
<script>alert(1)</script></head><body><nav>Home | About</nav><h1>Heading</h1>
<p>First &amp; second   paragraph.</p><p>Third</p></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's naming)
        if self.path == "/page":
            body, kind, status = PAGE, "text/html; charset=utf-8", 200
        elif self.path == "/big":
            body, kind, status = b"<p>" + b"x" * (3 * 1024 * 1024) + b"</p>", "text/html", 200
        elif self.path == "/pdf":
            body, kind, status = b"%PDF-1.7", "application/pdf", 200
        else:
            body, kind, status = b"no", "text/plain", 404
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site(settings):
    """A loopback site the address rule (``core.outbound``) opens on purpose for these tests."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    settings.OUTBOUND_ALLOWED_NETWORKS, settings.OUTBOUND_ALLOWED_PORTS = ["127.0.0.1/32"], [server.server_address[1]]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_http_fetcher_reduces_html_to_its_visible_text(site, caplog):
    page = http_fetch(f"{site}/page")
    assert page == {"title": "A Page", "text": "Heading\nFirst & second paragraph.\nThird"}
    with caplog.at_level(logging.WARNING, logger="scoring.sources"):
        assert http_fetch(f"{site}/nothing-here") is None
    [warning] = caplog.records
    assert warning.getMessage() == (f"fetching {site}/nothing-here failed (HTTP 404): "
                                    "the source counts as not available")
    assert http_fetch(f"{site}/pdf") is None
    assert http_fetch("ftp://example.org/file") is None
    big = http_fetch(f"{site}/big")
    assert 2 * 1024 * 1024 - 10 <= len(big["text"]) <= 2 * 1024 * 1024


def test_html_to_text_keeps_paragraphs_and_drops_scripts():
    assert html_to_text("<p>a</p><script>b</script><div>c <b>d</b></div>") == ("", "a\nc d")
