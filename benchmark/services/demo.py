"""The demo data set, loaded from the real public releases in the datasets folder (``DATASETS_DIR``).

Several tasks of each protocol with several systems' reports on the same tasks:
all four DeepSynth-Eval tasks (with their example reports), ten ReportBench tasks (the
first of each application domain) with their complete gold bibliographies, all 63 DeepScholar-bench papers (four
systems' reports on rows 0 and 1), and SurveyLens' luciferase topic (seven systems)
with both human annotation files (100 preferences); and one task set per protocol
(``demo-<protocol>``, not frozen) holding its demo tasks, to export and evaluate. Accounts
are not created here.

DeepSynth-Eval's release names each gold survey by arXiv id only, with no text, so the
proposal stages would have nothing to read: its surveys get the outline the release implies,
their checklist's topic anchors (level 1, which the paper's §3.2 synthesizes from the survey's
section headers) with their sub-groups (level 2), recorded as a ``survey_text`` revision.

Every importer updates instead of duplicating and writes only what changed, so a
second ``demo_load`` changes nothing.
"""

from pathlib import Path

from django.db import transaction

from ..datasets import DatasetsMissing, dataset_path
from ..importers.base import ImportFailed, ImportResult, read_jsonl
from ..importers.catalogue import run_import
from ..models import ChecklistGroup, Protocol, Task, TaskSet
from .survey_text import SurveyText, survey_text_set
from .tasksets import taskset_create

REPORTBENCH = "reportbench/ReportBench_v1.1.jsonl"
REPORTBENCH_DEMO_TASKS = 10

# (import format, path under datasets/, importer options)
DEMO_IMPORTS = (
    ("deepsynth", "deepsynth-eval/example_gen_result.jsonl", {}),
    ("reportbench", REPORTBENCH, {}),  # keys: see reportbench_demo_keys
    ("deepscholar", "deepscholar-bench", {}),
    ("surveylens", "surveylens/luciferase", {}),
    ("surveylens-annotations", "surveylens/human_annotation", {}),
)


def reportbench_demo_keys(path: Path, *, n: int = REPORTBENCH_DEMO_TASKS) -> list[str]:
    """The first task of each application domain, so the demo spans the domains."""
    first: dict[str, str] = {}
    for _, data in read_jsonl(path):
        first.setdefault(str(data.get("application_domain")), str(data.get("arxiv_id")))
    return list(first.values())[:n]


@transaction.atomic
def demo_load(*, datasets_dir: str | Path) -> ImportResult:
    """Import the demo set in one transaction; a missing or broken file stores nothing."""
    datasets = Path(datasets_dir)
    for _, relative, _ in DEMO_IMPORTS:
        try:
            dataset_path(relative, root=datasets)
        except DatasetsMissing as exc:
            raise ImportFailed(str(exc)) from None
    total = ImportResult()
    for name, relative, options in DEMO_IMPORTS:
        if name == "reportbench":
            options = dict(options, keys=reportbench_demo_keys(datasets / relative))
        result = run_import(name, datasets / relative, **options)
        result.messages = [f"[{name}] {message}" for message in result.messages]
        total.merge(result)
    demo_outlines(total)
    keys = {"reportbench": set(reportbench_demo_keys(datasets / REPORTBENCH))}
    for protocol in Protocol.values:
        tasks = Task.objects.filter(protocol=protocol)
        if protocol in keys:
            tasks = tasks.filter(key__in=keys[protocol])
        if not tasks.exists():
            continue
        if TaskSet.objects.filter(name=f"demo-{protocol}").exists():
            total.add("task set", "unchanged")
            continue
        taskset_create(name=f"demo-{protocol}", tasks=tasks,
                       description=f"The demo's {Protocol(protocol).label} tasks, from the public release.")
        total.add("task set", "created")
    return total


def _checklist_outline(task: Task) -> list:
    outline = []
    for group in task.checklist_groups.filter(kind=ChecklistGroup.Kind.GENERAL).order_by("position", "pk"):
        outline.append([1, group.name])
        subgroups = group.items.order_by("position", "pk").values_list("subgroup", flat=True)
        outline += [[2, name] for name in dict.fromkeys(subgroups) if name]
    return outline


def demo_outlines(result: ImportResult) -> None:
    """Give DeepSynth surveys without any text the outline of their checklist's topics (module docstring)."""
    tasks = Task.objects.filter(protocol=Protocol.DEEPSYNTH).select_related("survey").order_by("key")
    for task in tasks:
        survey = task.survey
        if survey.outline or survey.content or survey.full_text:
            continue
        outline = _checklist_outline(task)
        if outline and survey_text_set(
            survey=survey, text=SurveyText(outline=outline), actor_label="demo",
            note="outline from the DeepSynth-Eval checklist: topic anchors and their sub-groups",
        ):
            result.add("survey outline", "updated")
