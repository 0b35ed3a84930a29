import pytest
from django.urls import reverse

from tests.factories import ChecklistItemFactory, GoldReferenceFactory, NuggetFactory, ReportFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_in(client):
    client.force_login(UserFactory(username="curator"))
    return client


@pytest.mark.parametrize("name", ["home", "benchmark:task_list"])
def test_pages_require_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_renders(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b'name="username"' in response.content


def test_home_counts_tasks_and_reports_per_protocol(client_in):
    TaskFactory.create_batch(3, protocol="reportbench")
    ReportFactory.create_batch(2, task__protocol="deepsynth")
    response = client_in.get(reverse("home"))
    rows = {row["protocol"]: row for row in response.context["overview"]}
    assert rows["reportbench"]["tasks"] == 3
    assert rows["deepsynth"]["tasks"] == 2
    assert rows["deepsynth"]["reports"] == 2
    assert rows["surveylens"]["tasks"] == 0


def test_task_list_queries_do_not_grow_with_rows(client_in, django_assert_max_num_queries):
    for _ in range(30):
        task = TaskFactory()
        ReportFactory(task=task)
        ChecklistItemFactory(group__task=task)
    # session + user + count + page: a fixed handful whatever the number of rows
    with django_assert_max_num_queries(8):
        response = client_in.get(reverse("benchmark:task_list"))
    assert response.status_code == 200
    assert len(response.context["page"]) == 30


def test_task_list_filters_and_htmx_partial(client_in):
    TaskFactory(protocol="reportbench", key="2312.04861")
    TaskFactory(protocol="deepsynth", key="7")
    response = client_in.get(reverse("benchmark:task_list"), {"protocol": "reportbench"}, HTTP_HX_REQUEST="true")
    assert [t.key for t in response.context["page"]] == ["2312.04861"]
    assert b"<html" not in response.content  # only the rows partial


def test_task_detail_queries_are_bounded(client_in, django_assert_max_num_queries):
    task = TaskFactory()
    for _ in range(10):
        ChecklistItemFactory(group__task=task)
        GoldReferenceFactory(task=task)
        NuggetFactory(task=task)
        ReportFactory(task=task)
    # a fixed number of queries however many items: the page's own, plus the proposals panel's 6
    with django_assert_max_num_queries(22):
        response = client_in.get(reverse("benchmark:task_detail", args=[task.pk]))
    assert response.status_code == 200
    assert response.content.count(b"The report should mention fact") == 10


def test_report_page_sanitizes_markdown(client_in):
    report = ReportFactory(
        text="# Title\n\n<script>alert(1)</script> [x](javascript:alert(2)) <img src=x onerror=alert(3)>\n\nok [1]"
    )
    response = client_in.get(reverse("benchmark:report_detail", args=[report.pk]))
    body = response.content.decode()
    assert "<h1>Title</h1>" in body
    assert "<script>alert(1)" not in body
    assert 'href="javascript:' not in body
    assert "<img src=x onerror" not in body
    assert "&lt;script&gt;alert(1)" in body  # shown as text, never run


def test_missing_task_is_404(client_in):
    assert client_in.get(reverse("benchmark:task_detail", args=[999999])).status_code == 404


def test_annotators_land_on_their_projects_and_curators_on_the_overview(client, db):
    from tests.annotation_factories import annotator, curator

    client.force_login(annotator("alice"))
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/annotate/"
    client.force_login(curator("cora"))
    assert "<h1>Overview</h1>" in client.get("/").content.decode()
