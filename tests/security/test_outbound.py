"""The address rule for requests the server makes (``core.outbound``): cited pages
(``scoring.sources.http_fetch``) and webhooks never reach loopback, private, link-local,
multicast, unspecified or reserved addresses, after DNS resolution and on every redirect hop,
nor a non-default port unless configured; the connection goes to the address that was checked.

Each test runs a local HTTP server of its own on a random port and asserts that a refused
request never reached it."""

from __future__ import annotations

import ipaddress
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.exceptions import ValidationError

from annotation.models import AnnotationProject, Webhook, WebhookDelivery
from annotation.services.webhooks import webhooks_fire
from core import outbound
from core.outbound import AddressRefused, address_refusal, outbound_request, url_check
from core.webhooks import webhook_deliver
from scoring.pipelines.report_sources import SourceResolver, source_not_available
from scoring.sources import fetched_entry, http_fetch
from tests.factories import ReportFactory, TaskFactory
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.django_db


class Site:
    """A local HTTP server on ``host`` and a random port recording every request; ``redirects``
    maps a path to the Location it answers 302 with."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.requests: list[str] = []
        self.redirects: dict[str, str] = {}
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                site.requests.append(self.path)
                if self.path in site.redirects:
                    self.send_response(302)
                    self.send_header("Location", site.redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = b"<html><title>Internal</title><p>internal secret page</p></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET  # noqa: N815

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.host, self.port = host, self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def url(self, path: str = "/page", host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    server = Site()
    yield server
    server.close()


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "224.0.0.1",
    "0.0.0.0", "100.64.0.1", "240.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "2002:7f00:1::1",
])
def test_internal_addresses_are_refused(address):
    assert address_refusal(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address):
    assert address_refusal(ipaddress.ip_address(address)) == ""


def test_the_source_fetcher_refuses_loopback_by_address_name_and_odd_spellings(site, settings):
    settings.OUTBOUND_ALLOWED_PORTS = [site.port]  # the port alone opens nothing: the address is refused
    for url in (site.url(), site.url(host="localhost"), site.url(host="2130706433"), site.url(host="0x7f.1"),
                site.url(host="[::ffff:127.0.0.1]"), site.url(host="127.000.000.001")):
        with pytest.raises(AddressRefused, match="loopback|does not resolve|not a valid"):
            http_fetch(url)
    assert site.requests == []


def test_a_non_default_port_is_refused_unless_configured(site, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    with pytest.raises(AddressRefused, match=f"port {site.port} is not http's default"):
        http_fetch(site.url())
    assert site.requests == []
    settings.OUTBOUND_ALLOWED_PORTS = [site.port]
    assert http_fetch(site.url()) == {"title": "Internal", "text": "internal secret page"}
    assert site.requests == ["/page"]


def test_every_redirect_hop_is_checked_again(site, settings):
    other = Site("127.0.0.2")
    try:
        # the first site is opened on purpose; the hops it redirects to are not
        settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
        settings.OUTBOUND_ALLOWED_PORTS = [site.port, other.port]
        site.redirects = {"/to-other": other.url(), "/to-metadata": "http://169.254.169.254/latest/meta-data/",
                          "/to-self": "/page"}
        with pytest.raises(AddressRefused, match="127.0.0.2 is a loopback address"):
            http_fetch(site.url("/to-other"))
        with pytest.raises(AddressRefused, match="169.254.169.254 is a link-local address"):
            http_fetch(site.url("/to-metadata"))
        assert other.requests == []
        assert http_fetch(site.url("/to-self"))["text"] == "internal secret page"  # an allowed hop is followed
        assert site.requests == ["/to-other", "/to-metadata", "/to-self", "/page"]
    finally:
        other.close()


def test_the_connection_goes_to_the_checked_address_not_a_second_lookup(site, monkeypatch):
    """DNS rebinding: the name resolves to a public address when checked and to loopback later."""
    answers = iter([ipaddress.ip_address("93.184.216.34")] + [ipaddress.ip_address("127.0.0.1")] * 10)
    lookups, connections = [], []

    def getaddrinfo(host, port, *args, **kwargs):
        lookups.append(host)
        address = str(next(answers))
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    def create_connection(address, timeout=None, *args, **kwargs):
        connections.append(address)
        raise OSError("test: no network")

    monkeypatch.setattr(outbound.socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(outbound.socket, "create_connection", create_connection)
    with pytest.raises(OSError, match="no network"):
        outbound_request(f"http://rebinding.test:{site.port}/page".replace(f":{site.port}", ""))
    assert lookups == ["rebinding.test"] and connections == [("93.184.216.34", 80)]
    assert site.requests == []


def test_a_refused_source_says_why_in_its_status_and_stores_nothing(site, settings):
    settings.SOURCE_FETCHER = "scoring.sources.http_fetch"
    task = TaskFactory(protocol="reportbench")
    text = f"# R\n\nA claim [1].\n\n## References\n\n[1] Internal Page. {site.url('/secret')}\n"
    report = ReportFactory(task=task, text=text)
    resolver = SourceResolver(report)
    assert resolver.sources_for(["[1]"]) == []
    [refusal] = resolver.last_refused
    assert "127.0.0.1 is a loopback address" in refusal
    status = source_not_available(resolver.last_refused)
    assert status.startswith("source not available (") and "not fetched" in status and "loopback" in status
    assert resolver.sources_for(["[1]"]) == [] and resolver.last_refused == [refusal]  # asked once per run
    assert site.requests == []
    with pytest.raises(AddressRefused):
        fetched_entry(url=site.url("/secret"))


def test_a_reportbench_run_records_the_refusal_on_the_statement(site, settings):
    from scoring.models import Statement, Verdict
    from tests.scoring.pipelines.test_reportbench import StepJudge, make_run, run_all
    from tests.scoring.services.fakes import judge_config

    settings.SOURCE_FETCHER = "scoring.sources.http_fetch"
    task = TaskFactory(protocol="reportbench")
    report = ReportFactory(task=task, text=(
        f"# R\n\nDeep models need data [1].\n\n## References\n\n[1] Internal Page. {site.url('/secret')}\n"))
    config = judge_config()
    run = make_run(config)
    run_all(run, report, StepJudge(config))
    citing_the_page = [s.id for s in Statement.objects.filter(report=report, kind="cited") if s.citations == ["[1]"]]
    errors = list(Verdict.objects.filter(target_kind="cited_statement", target_id__in=citing_the_page)
                  .values_list("error", flat=True))
    assert errors, "the scripted extraction gives statements citing [1]"
    for error in errors:
        assert error.startswith("source not available (") and "127.0.0.1 is a loopback address" in error, error
    assert site.requests == []


# --- webhooks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:6379/", "http://localhost:5432/", "http://169.254.169.254/latest/meta-data/",
    "http://[::1]/hook", "http://10.1.2.3/hook", "https://example.org:8443/hook", "http://0.0.0.0/",
])
def test_a_webhook_to_an_internal_address_or_odd_port_is_refused_when_saved(url):
    project = AnnotationProject.objects.create(name="p", kind="pairwise")
    with pytest.raises(ValidationError) as refused:
        Webhook(project=project, url=url, events=["run.finished"]).full_clean()
    assert "url" in refused.value.message_dict


def test_a_webhook_to_a_public_address_is_accepted_when_saved():
    project = AnnotationProject.objects.create(name="p", kind="pairwise")
    Webhook(project=project, url="https://93.184.216.34/hook", events=["run.finished"]).full_clean()


def test_a_webhook_saved_before_the_rule_is_refused_at_delivery_without_a_request():
    project = AnnotationProject.objects.create(name="p", kind="pairwise")
    with Receiver(allowed=False) as receiver:
        Webhook.objects.create(project=project, url=receiver.url, events=["run.finished"])  # no validation
        [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
        delivery = webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk)
        assert delivery.status == "failed" and delivery.response_code is None
        assert delivery.last_error.startswith("refused: 127.0.0.1 is a loopback address")
        assert receiver.requests == []


def test_a_webhook_redirect_is_not_followed(site, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS, settings.OUTBOUND_ALLOWED_PORTS = ["127.0.0.1/32"], [site.port]
    site.redirects = {"/hook": "http://169.254.169.254/latest/meta-data/"}
    project = AnnotationProject.objects.create(name="p", kind="pairwise")
    Webhook.objects.create(project=project, url=site.url("/hook"), events=["run.finished"])
    [delivery] = webhooks_fire(event="run.finished", project_ids=[project.pk], payload={})
    delivery = webhook_deliver(model=WebhookDelivery, delivery_id=delivery.pk)
    assert delivery.status == "pending" and delivery.response_code == 302
    assert "redirects are not followed" in delivery.last_error
    assert site.requests == ["/hook"]


def test_url_check_names_what_it_refuses():
    with pytest.raises(AddressRefused, match="not an http"):
        url_check("file:///etc/passwd")
    with pytest.raises(AddressRefused, match="credentials"):
        url_check("http://user:pw@example.org/")
    with pytest.raises(AddressRefused, match="does not resolve"):
        url_check("http://no-such-host.invalid/")
