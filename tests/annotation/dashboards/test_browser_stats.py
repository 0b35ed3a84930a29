"""A curator reads the human ranking's new figures (scope of the correlations, position bias)
and the judge's consistency in a real browser, at 1366 × 768."""

import pytest

from benchmark.importers.catalogue import run_import
from tests.annotation.dashboards.builders import agreement_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_human_ranking_shows_scope_n_and_position_bias(page, live_server, login, screenshot, datasets):
    from tests.annotation.dashboards.test_human_scope import ENVSCI, build_envsci_with_reversed_biology

    agreement_setup(n_verdicts=6)  # the curator "cur"
    build_envsci_with_reversed_biology(datasets)
    login("cur", "pw-for-tests")
    page.goto(f"{live_server.url}/dashboards/human/?protocol=surveylens&discipline={ENVSCI}&p=permutation")
    page.wait_for_selector("#correlations")
    row = page.locator("#correlations tbody tr")
    assert row.count() == 1 and "5 / 5" in row.inner_text() and "1.000" in row.inner_text()
    assert "over the 5 tasks these preferences are on" in page.locator("#correlation-scope").inner_text()
    assert "Permutation p-values" in page.locator("#correlation-permutation").inner_text()
    bias = page.locator("#position-bias").inner_text()
    assert "won 29" in bias and "second 21" in bias
    for block in ("#position-bias", "#correlations", "#correlation-scope"):  # the page's frame is another matter
        assert page.locator(block).bounding_box()["x"] + page.locator(block).bounding_box()["width"] <= 1366
    screenshot("dashboards-human-envsci-scope")

    page.goto(f"{live_server.url}/dashboards/human/?protocol=surveylens&discipline=Biology")
    page.wait_for_selector("#prior-sensitivity")  # the Biology preferences are separable: the prior is used
    assert page.locator("#prior-sensitivity tbody tr").count() == 5
    screenshot("dashboards-human-biology-prior")


def test_agreement_shows_each_annotator_and_judge_consistency(page, live_server, login, screenshot):
    from tests.annotation_factories import JudgeConfigFactory, VerdictFactory
    from tests.factories import ReportFactory

    agreement_setup(n_verdicts=6)
    judge = JudgeConfigFactory(name="org judge", repeats=2)
    for n in range(4):
        report = ReportFactory()
        for repeat in range(2):
            for key, label in (("report_first", "win"), ("report_second", "loss" if n % 2 else "win")):
                VerdictFactory(report=report, judge_config=judge, step="deepscholar.organization",
                               target_kind="organization", target_id=0, target_key=key, repeat=repeat, label=label)
    login("cur", "pw-for-tests")
    page.goto(f"{live_server.url}/dashboards/agreement/")
    page.wait_for_selector("#judge-per-annotator")
    assert page.locator("#judge-per-annotator tbody tr").count() == 2
    position = page.locator("#judge-position tbody tr")
    # the report wins as A always, as B on even reports only: 8 comparisons in both orders, 12 first-shown wins
    assert position.count() == 1 and "12 / 4 / 0" in position.inner_text() and "0.500" in position.inner_text()
    assert page.locator("#judge-repeats tbody tr").count() == 1
    screenshot("dashboards-agreement-consistency")
