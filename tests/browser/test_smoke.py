import pytest

from tests.factories import TaskFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_and_browse_tasks(page, live_server, login, screenshot):
    UserFactory(username="curator")
    TaskFactory(protocol="reportbench", key="2312.04861", title="Radar data representations")
    login("curator", "pw-for-tests")
    assert page.locator("h1").inner_text() == "Overview"
    page.click("text=Tasks")
    page.select_option("select[name=protocol]", "reportbench")
    page.wait_for_selector("text=2312.04861")
    screenshot("tasks-filtered")
    assert "Radar data representations" in page.locator("#task-rows").inner_text()
    assert page.locator("#worker-banner").is_visible()
