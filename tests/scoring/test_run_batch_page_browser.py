"""The run page of a batch-mode run in a real browser: jobs waiting for their batch, the batch
itself, and costs at batch prices once it is read back (the page refreshes by itself)."""

import pytest
from django.test import override_settings
from playwright.sync_api import expect

from scoring.services.batches import run_batches_poll
from scoring.services.runs import job_execute, run_create, run_start
from tests.annotation_factories import curator
from tests.scoring.services.fakes import judge_config, reports_for, systems, two_group_checklist
from tests.support.axe import assert_accessible
from tests.support.fake_batch import FakeBatchOpenAI
from tests.support.fake_openai import labelled_checklist_responder

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_curator_watches_a_batch_run_wait_for_its_batch_and_finish(page, live_server, login, screenshot):
    with FakeBatchOpenAI() as server, override_settings(JUDGE_ENDPOINTS={server.base_url: ""}):
        server.responder = labelled_checklist_responder
        tasks = [two_group_checklist().task for _ in range(2)]
        pair = systems(2)
        for task in tasks:
            reports_for(task, pair)
        config = judge_config(name="batch-judge", backend="openai", base_url=server.base_url, model="loopback",
                              batch=True, price_input_per_million=2.0, price_output_per_million=8.0)
        run = run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=pair, tasks=tasks),
                        enqueue=False)
        for pk in run.jobs.values_list("pk", flat=True):
            job_execute(job_id=pk, enqueue=False)
        run_batches_poll(run=run, enqueue=False)
        curator("cur")
        page.set_viewport_size({"width": 1366, "height": 768})
        login("cur", "pw-for-tests")
        page.goto(f"{live_server.url}/runs/{run.pk}/")
        expect(page.locator("#fig-waiting")).to_have_text("4")
        expect(page.locator("#run-batches")).to_contain_text("In progress")
        expect(page.locator("#run-batches")).to_contain_text("8 in a batch")
        assert_accessible(page, "batch run page, waiting")
        screenshot("run-batch-waiting")

        server.finish()
        for pk in run_batches_poll(run=run, enqueue=False)["released"]:
            job_execute(job_id=pk, enqueue=False)
        from scoring.services.run_finish import run_finalize

        run_finalize(run=run)
        expect(page.locator("#run-status")).to_have_text("Finished", timeout=10_000)  # the page polls by itself
        expect(page.locator("#run-batches")).to_contain_text("Completed")
        expect(page.locator("#fig-cost")).to_contain_text("batch prices, −50%")
        assert_accessible(page, "batch run page, finished")
        screenshot("run-batch-finished")


def test_the_run_page_names_the_calls_a_provider_s_malformed_lines_failed(page, live_server, login, screenshot):
    from tests.support.fake_batch import LINE_FAULTS
    from scoring.services.run_finish import run_finalize

    with FakeBatchOpenAI(output_faults=LINE_FAULTS) as server, override_settings(JUDGE_ENDPOINTS={server.base_url: ""}):
        server.responder = labelled_checklist_responder
        tasks = [two_group_checklist().task for _ in range(3)]
        pair = systems(2)
        for task in tasks:
            reports_for(task, pair)
        config = judge_config(name="garbled-judge", backend="openai", base_url=server.base_url, model="loopback",
                              batch=True)
        run = run_start(run=run_create(protocol="deepsynth", judge_config=config, systems=pair, tasks=tasks),
                        enqueue=False)
        for pk in run.jobs.values_list("pk", flat=True):
            job_execute(job_id=pk, enqueue=False)
        run_batches_poll(run=run, enqueue=False)
        server.finish()
        for pk in run_batches_poll(run=run, enqueue=False)["released"]:
            job_execute(job_id=pk, enqueue=False)
        run_finalize(run=run)
        curator("cur")
        page.set_viewport_size({"width": 1366, "height": 768})
        login("cur", "pw-for-tests")
        page.goto(f"{live_server.url}/runs/{run.pk}/")
        expect(page.locator("#run-batches")).to_contain_text("5 malformed line(s), each failing only its own call")
        expect(page.locator("#failure-reasons")).to_contain_text("line 1 has a response that is not an object")
        expect(page.locator("#failure-reasons")).to_contain_text("line 4 has a message content that is not text")
        assert_accessible(page, "batch run page, malformed lines")
        screenshot("run-batch-malformed")
