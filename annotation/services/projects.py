"""Creating annotation projects, filling them with items, and managing who is in them (a project
from imported human preferences: ``preference_projects``)."""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from benchmark.models import System, Task, TaskSet
from scoring.models import JudgeConfig, Verdict

from ..models import (
    DEFAULT_HOLD,
    DEFAULT_UNIFORM_SHARE,
    AnnotationItem,
    AnnotationProject,
    Assignment,
    ProjectMembership,
    Role,
    TargetKind,
)
from core.accounts import is_global_curator
from core.audit_actions import AuditAction
from ..selectors.projects import project_role
from ..calibration.sampling import RANDOM_DESIGNS, sampling_check
from .adaptive_pairs import adaptive_pairs_budget_clean, pair_design_clean
from .audit import audit_record
from ..blind import secret_seed
from ..kinds import kind_of
from .values import label_level_clean, label_set_clean, step_label_union

Kind = AnnotationProject.Kind
Reveal = AnnotationProject.Reveal
BATCH = 1000


def _require_curator(*, project: AnnotationProject, user, action: str) -> None:
    if project_role(project=project, user=user) != Role.CURATOR:
        raise PermissionError(f"only curators {action} in project {project.name!r}")


def _populate(project: AnnotationProject, *, actor, sample_size: int | None = None) -> int:
    kind = kind_of(project)
    filled = kind.fill(project, actor=actor)
    if filled is not None:
        return filled
    task_ids = list(project.tasks.values_list("pk", flat=True))
    targets, inclusion = kind.targets(project, task_ids, sample_size=sample_size)
    existing = set(AnnotationItem.objects.filter(project=project).values_list("target_kind", "target_id"))
    last = AnnotationItem.objects.filter(project=project).order_by("-position").values_list("position", flat=True)
    start = (last.first() or 0) + 1
    new = [target for target in targets if (target[0], target[1]) not in existing]
    AnnotationItem.objects.bulk_create(
        [
            AnnotationItem(
                project=project, target_kind=kind, target_id=target_id, task_id=task_id, target_version=version,
                position=start + offset, labels_needed=project.overlap,
                inclusion_probability=inclusion.get(target_id),
            )
            for offset, (kind, target_id, task_id, version) in enumerate(new)
        ],
        batch_size=BATCH,
    )
    if kind.applies_to_benchmark:  # its tasks are under review until their proposals are settled
        drafts = Task.objects.filter(pk__in={task_id for _, _, task_id, _ in new if task_id}, status=Task.Status.DRAFT)
        draft_ids = sorted(drafts.values_list("pk", flat=True))
        if draft_ids:
            Task.objects.filter(pk__in=draft_ids).update(status=Task.Status.IN_REVIEW)
            audit_record(
                actor=actor, action=AuditAction.TASK_REVIEW_START, target_kind="task", project=project,
                before={"status": Task.Status.DRAFT, "tasks": draft_ids}, after={"status": Task.Status.IN_REVIEW},
            )
    return len(new)


def project_seed(*, blind: bool, seed: int | None) -> int:
    """The seed a new project draws its schedule, sample and adaptive choices from: a blind
    project's from ``secret_seed`` (a seed sent for one is refused: known, it would rebuild the
    schedule), any other's as given (0 by default: reproducible)."""
    if not blind:
        return 0 if seed is None else seed
    if seed is not None:
        raise ValueError("seed: not accepted for a blind project; the server draws its seed and keeps it secret")
    return secret_seed()


def _settings_view(project: AnnotationProject) -> dict:
    return {
        "name": project.name, "kind": project.kind, "status": project.status, "overlap": project.overlap,
        "blind": project.blind, "reveal": project.reveal, "item_kinds": project.item_kinds,
        "component": project.component,
        "judge_config_id": project.judge_config_id, "steps": project.steps, "label_set": project.label_set,
        "label_level": project.label_level,
        "dimensions": project.dimensions, "hold_seconds": project.hold_duration.total_seconds(),
        **({} if project.blind else {"seed": project.seed}),  # a blind project's seed is secret (``secret_seed``)
        "sampling": project.sampling, "sampling_unit": project.sampling_unit, "task_set_id": project.task_set_id,
        "guidelines_version": project.guidelines_version,
        **{field: getattr(project, field) for field in kind_of(project).settings_fields},
    }


def _guidelines_clean(text: str | None) -> str:
    """Guidelines as stored: a browser's CRLF line ends and the edges' blank space are not a new version."""
    return (text or "").replace("\r\n", "\n").strip()


def project_row_new(
    *, name: str, kind: str, created_by, task_ids: set[int], systems: Iterable[System] = (), label_set: dict | None,
    **fields,
) -> AnnotationProject:
    """The project row, its tasks and systems, its label set, and its creator as curator."""
    name = (name or "").strip()
    if not name:
        raise ValueError("name: required")
    if AnnotationProject.objects.filter(name=name).exists():
        raise ValueError(f"name: a project called {name!r} already exists")
    if not task_ids:
        raise ValueError("tasks: give tasks or a task set")
    fields["seed"] = project_seed(blind=fields.get("blind", AnnotationProject._meta.get_field("blind").default),
                                  seed=fields.get("seed"))
    project = AnnotationProject.objects.create(name=name, kind=kind, created_by=created_by, **fields)
    project.tasks.set(task_ids)
    project.systems.set(list(systems))
    judge_labels = kind_of(kind).judge_labels(project, list(task_ids))
    project.label_set = label_set_clean(kind=kind, label_set=label_set, judge_labels=judge_labels)
    project.label_level = label_level_clean(kind=kind, level=project.label_level, label_set=project.label_set)
    project.save(update_fields=["label_set", "label_level"])
    ProjectMembership.objects.create(project=project, user=created_by, role=Role.CURATOR)
    return project


@transaction.atomic
def project_create(
    *,
    name: str,
    kind: str,
    created_by,
    tasks: Iterable[Task] = (),
    task_set: TaskSet | None = None,
    item_kinds: Sequence[str] = (),
    systems: Iterable[System] = (),
    component: str = "report",
    judge_config: JudgeConfig | None = None,
    steps: Sequence[str] = (),
    overlap: int | None = None,
    blind: bool = True,
    reveal: str | None = None,
    label_set: dict | None = None,
    label_level: str = AnnotationProject.LabelLevel.NOMINAL,
    dimensions: Sequence[str] | None = None,
    hold_duration: timedelta = DEFAULT_HOLD,
    description: str = "",
    guidelines: str = "",
    seed: int | None = None,
    sampling: str = AnnotationProject.Sampling.ALL,
    sample_size: int | None = None,
    sampling_unit: str = AnnotationProject.SamplingUnit.VERDICT,
    pair_choice: str = AnnotationProject.PairChoice.ROUND_ROBIN,
    uniform_share: float = DEFAULT_UNIFORM_SHARE,
    pairs_budget: int | None = None,
    criteria: Sequence[str] | None = None,
    scale: dict | None = None,
) -> AnnotationProject:
    """Create a project, make its creator its curator, and populate its items in bulk.

    ``guidelines``: markdown the workspace shows annotators (version 1 when given, else 0).

    verify: the still-proposed rows of ``item_kinds`` (default all kinds) of the tasks, k ≥ 2
    (default 2: review, then cross-validation); their tasks go from draft to in review.
    pairwise: a double round-robin over each task's reports (of ``systems``, default all)
    with swapped positions in the second leg; or, ``pair_choice="adaptive"``, the pairs whose
    Bradley–Terry outcome is least certain, a few at a time as labels come, ``uniform_share`` of
    them uniform, up to ``pairs_budget`` pairs (``services.adaptive_pairs``). agreement: ``judge_config``'s first-repeat
    verdicts on the tasks' reports (of ``steps``, default all); the label set defaults to
    every label of those verdicts' steps (``step_label_union``), measured at ``label_level``
    (nominal by default; ordinal in the label set's order, interval for numeric labels: what
    Krippendorff's α uses); each item offers its own step's labels (``agreement_labels``).
    Tasks are ``tasks`` plus the tasks of ``task_set``. ``reveal`` (blind projects): when an
    annotator who labelled an item learns what it hid (``the kind's ``default_reveal``).
    ``sampling`` (agreement): every verdict in scope (``all``), or a random sample of about
    ``sample_size`` of them, uniform, stratified by system and step, or adaptive (favouring the
    verdicts the judge is least sure of), each item recording its inclusion probability for
    calibrated scores (``annotation.calibration.sampling``); ``sampling_unit`` ``group`` or
    ``sentence``: the sample draws ``sample_size`` DeepSynth checklist groups or DeepScholar claim
    sentences and holds every verdict of each (``steps``: that unit's step, which it defaults to).
    rating: one item per report of the tasks (of ``systems``), rated on ``criteria`` (default
    each task's rubric criteria of ``component``) on ``scale`` (``annotation.kinds.rating``). Each kind checks its own fields
    (``settings_clean``) and says how its items are made (``targets``). Only global curators
    create projects. ``seed`` (projects that are not blind; default 0): of the schedule, sample
    and adaptive draws; a blind project's is drawn here and kept secret (``project_seed``).
    """
    if not is_global_curator(created_by):
        raise PermissionError("only curators create annotation projects")
    annotation_kind = kind_of(kind)
    overlap = annotation_kind.default_overlap if overlap is None else overlap
    if not isinstance(overlap, int) or overlap < annotation_kind.min_overlap:
        raise ValueError("overlap: verify projects need k ≥ 2 (review, then cross-validation); others k ≥ 1")
    if hold_duration <= timedelta(0):
        raise ValueError("hold_duration: must be positive")
    reveal = annotation_kind.default_reveal if reveal in (None, "") else reveal
    if reveal not in Reveal.values:
        raise ValueError(f"reveal: {reveal!r} is not one of {', '.join(Reveal.values)}")
    own = annotation_kind.settings_clean(fields={
        "item_kinds": item_kinds, "judge_config": judge_config, "dimensions": dimensions, "criteria": criteria,
        "scale": scale, "component": component})
    steps = sampling_check(kind=annotation_kind, sampling=sampling, sample_size=sample_size,
                           sampling_unit=sampling_unit, steps=steps)
    pair_design = pair_design_clean(kind=annotation_kind, pair_choice=pair_choice, uniform_share=uniform_share,
                                    pairs_budget=pairs_budget)
    task_ids = {task.pk for task in tasks} | (set(task_set.tasks.values_list("pk", flat=True)) if task_set else set())
    project = project_row_new(
        name=name, kind=kind, created_by=created_by, task_ids=task_ids, systems=systems, label_set=label_set,
        description=description, task_set=task_set,
        judge_config=judge_config, steps=list(steps), overlap=overlap, blind=blind, reveal=reveal,
        hold_duration=hold_duration, seed=seed, sampling=sampling, sampling_unit=sampling_unit,
        **{"item_kinds": [], "dimensions": [], "component": component, "label_level": label_level, **own},
        guidelines=_guidelines_clean(guidelines), guidelines_version=1 if _guidelines_clean(guidelines) else 0,
        **pair_design,
    )
    if project.pair_choice == AnnotationProject.PairChoice.ADAPTIVE:
        adaptive_pairs_budget_clean(project=project)
    added = _populate(project, actor=created_by, sample_size=sample_size)
    audit_record(
        actor=created_by, action=AuditAction.PROJECT_CREATE, target_kind="annotation_project", target_id=project.pk,
        project=project, after={**_settings_view(project), "tasks": sorted(task_ids), "items": added},
    )
    return project


@transaction.atomic
def project_from_verdicts(
    *, name: str, curator, verdict_ids: Sequence[int], overlap: int = 1, description: str = ""
) -> AnnotationProject:
    """An agreement project whose items are exactly these verdicts, in this order (the dashboards'
    "where should humans look next"). Its judge configuration is the one most of them come from
    (items may show other configurations' verdicts: agreement is computed per verdict); its
    label set is every label of those steps (``step_label_union``). ``project_populate`` would later add
    that configuration's other verdicts on the same tasks and steps."""
    if not is_global_curator(curator):
        raise PermissionError("only curators create annotation projects")
    ids = list(dict.fromkeys(verdict_ids))
    if not ids:
        raise ValueError("verdicts: choose at least one verdict")
    if not isinstance(overlap, int) or overlap < 1:
        raise ValueError("overlap: give k ≥ 1")
    found = {row[0]: row for row in Verdict.objects.filter(pk__in=ids).values_list(
        "pk", "judge_config_id", "step", "label", "report__task_id")}
    missing = [str(pk) for pk in ids if pk not in found]
    if missing:
        raise ValueError(f"verdicts: no verdict with id {', '.join(missing[:10])}")
    failed = [str(pk) for pk in ids if not found[pk][3]]
    if failed:
        raise ValueError(f"verdicts: {', '.join(failed[:10])} have no label (the judge failed), nothing to agree with")
    per_config: dict[int, int] = defaultdict(int)
    for _, config_id, *_ in found.values():
        per_config[config_id] += 1
    config_id = min(per_config, key=lambda c: (-per_config[c], c))
    steps = sorted({row[2] for row in found.values()})
    used = Verdict.objects.filter(step__in=steps).exclude(label="").values_list("step", "label").distinct()
    labels = sorted(step_label_union(used))
    project = project_row_new(
        name=name, kind=Kind.AGREEMENT, created_by=curator, task_ids={row[4] for row in found.values()},
        label_set={"label": labels}, description=description, judge_config_id=config_id, steps=steps,
        overlap=overlap, sampling=AnnotationProject.Sampling.CHOSEN,
    )
    AnnotationItem.objects.bulk_create(
        [
            AnnotationItem(
                project=project, target_kind=TargetKind.VERDICT, target_id=pk, task_id=found[pk][4],
                position=position, labels_needed=overlap,
            )
            for position, pk in enumerate(ids, start=1)
        ],
        batch_size=BATCH,
    )
    audit_record(
        actor=curator, action=AuditAction.PROJECT_CREATE, target_kind="annotation_project", target_id=project.pk,
        project=project,
        after={**_settings_view(project), "tasks": sorted({row[4] for row in found.values()}), "items": len(ids),
               "verdicts": ids},
    )
    return project


@transaction.atomic
def project_populate(*, project: AnnotationProject, actor) -> int:
    """Add items for targets that appeared since the project was created (idempotent); returns
    how many were added. Existing items, labels and pairs are untouched."""
    _require_curator(project=project, user=actor, action="populate projects")
    project = AnnotationProject.objects.select_for_update(no_key=True).get(pk=project.pk)
    if project.sampling in RANDOM_DESIGNS:
        raise ValueError("a sampled project's sample is fixed (its inclusion probabilities describe it); "
                         "create a new project for new verdicts")
    added = _populate(project, actor=actor)
    audit_record(
        actor=actor, action=AuditAction.PROJECT_POPULATE, target_kind="annotation_project", target_id=project.pk,
        project=project, after={"items_added": added},
    )
    return added


# What may change once a project has items: nothing that changes what is labelled, how, or by
# how many (kind, tasks, overlap, label set, blind would make earlier labels incomparable).
# Guidelines may change: each change is a new version, and every label records the version its
# annotator had been shown (``Label.guidelines_version``).
EDITABLE = ("name", "description", "guidelines", "hold_duration", "status")


@transaction.atomic
def project_update(
    *,
    project: AnnotationProject,
    actor,
    name: str | None = None,
    description: str | None = None,
    guidelines: str | None = None,
    hold_duration: timedelta | None = None,
    status: str | None = None,
    label_help: dict[str, str] | None = None,
) -> AnnotationProject:
    """Rename, describe, rewrite the guidelines, change the hold time, or open/pause/close a
    project (closed projects hand out and accept nothing; closing a blind project reveals what it
    hid, so it is final). A change of the guidelines' text is a new ``guidelines_version`` (the
    workspace opens them again for every annotator). One audit row with the changed fields
    before and after."""
    _require_curator(project=project, user=actor, action="edit projects")
    project = AnnotationProject.objects.select_for_update(no_key=True).get(pk=project.pk)
    changes: dict = {}
    if name is not None:
        name = name.strip()
        if not name:
            raise ValueError("name: required")
        if AnnotationProject.objects.filter(name=name).exclude(pk=project.pk).exists():
            raise ValueError(f"name: a project called {name!r} already exists")
        changes["name"] = name
    if description is not None:
        changes["description"] = description
    if guidelines is not None and _guidelines_clean(guidelines) != project.guidelines:
        changes["guidelines"] = _guidelines_clean(guidelines)
        changes["guidelines_version"] = project.guidelines_version + 1
    if label_help is not None and label_help != project.label_help:
        # what the labels mean is part of the guidelines: annotators see the new version
        changes["label_help"] = label_help
        changes["guidelines_version"] = project.guidelines_version + 1
    if hold_duration is not None:
        if hold_duration <= timedelta(0):
            raise ValueError("hold_duration: must be positive")
        changes["hold_duration"] = hold_duration
    if status is not None:
        if status not in AnnotationProject.Status.values:
            raise ValueError(f"status: {status!r} is not one of {', '.join(AnnotationProject.Status.values)}")
        if project.blind and project.status == AnnotationProject.Status.CLOSED and status != project.status:
            # Closing revealed every item's labels, verdicts and systems to its annotators.
            raise ValueError("status: a closed blind study stays closed (closing revealed what it hid); make a new"
                             " project to label more")
        changes["status"] = status
    changes = {field: value for field, value in changes.items() if getattr(project, field) != value}
    if not changes:
        return project
    shown = {"hold_duration": lambda value: value.total_seconds(), "label_help": dict}
    before = {field: shown.get(field, str)(getattr(project, field)) for field in changes}
    for field, value in changes.items():
        setattr(project, field, value)
    project.save(update_fields=[*changes, "updated_at"])
    audit_record(
        actor=actor, action=AuditAction.PROJECT_UPDATE, target_kind="annotation_project", target_id=project.pk, project=project,
        before=before, after={field: shown.get(field, str)(value) for field, value in changes.items()},
    )
    return project


@transaction.atomic
def guidelines_seen_record(*, project: AnnotationProject, user, version: int) -> bool:
    """Remember that the workspace showed ``user`` the project's guidelines of ``version`` open
    (the version the page rendered), so it shows them folded until they change
    (``ProjectMembership.guidelines_seen``; their labels record it). Members only: a global
    curator without membership has nothing to remember it in, and their workspace opens the
    guidelines on every page. Returns whether anything changed; audited."""
    membership = ProjectMembership.objects.select_for_update().filter(project=project, user=user).first()
    if membership is None or membership.guidelines_seen >= version:
        return False
    before = membership.guidelines_seen
    membership.guidelines_seen = version
    membership.save(update_fields=["guidelines_seen", "updated_at"])
    audit_record(
        actor=user, action=AuditAction.GUIDELINES_SEEN, target_kind="annotation_project", target_id=project.pk, project=project,
        before={"guidelines_seen": before}, after={"guidelines_seen": version},
    )
    return True


def project_set_status(*, project: AnnotationProject, status: str, actor) -> AnnotationProject:
    """Open, pause or close a project; paused and closed projects hand out and accept nothing."""
    return project_update(project=project, actor=actor, status=status)


@transaction.atomic
def membership_add(*, project: AnnotationProject, user, role: str, actor) -> ProjectMembership:
    """Add ``user`` to the project with ``role``, or change their role."""
    _require_curator(project=project, user=actor, action="manage members")
    if role not in Role.values:
        raise ValueError(f"role: {role!r} is not one of {', '.join(Role.values)}")
    membership = ProjectMembership.objects.filter(project=project, user=user).first()
    before = {"role": membership.role} if membership else None
    if membership is None:
        membership = ProjectMembership.objects.create(project=project, user=user, role=role)
    else:
        membership.role = role
        membership.save(update_fields=["role", "updated_at"])
    audit_record(
        actor=actor, action=AuditAction.MEMBERSHIP_SET, target_kind="user", target_id=user.pk, project=project, before=before,
        after={"role": role},
    )
    return membership


@transaction.atomic
def membership_remove(*, project: AnnotationProject, user, actor) -> None:
    """Remove a member (a user, or a username); their unexpired claims are released. Their labels stay.

    The actor's right is checked first, and an unknown account gets the same answer as an account
    that is not a member: removing tells nobody which accounts exist."""
    _require_curator(project=project, user=actor, action="manage members")
    by_user = {"user__username": user} if isinstance(user, str) else {"user": user}
    membership = ProjectMembership.objects.filter(project=project, **by_user).select_related("user").first()
    if membership is None:
        raise ValueError(f"user: {user if isinstance(user, str) else user.username!r} is not a member of "
                         f"project {project.name!r}")
    user = membership.user
    membership.delete()
    Assignment.objects.filter(project=project, user=user, status=Assignment.Status.ACTIVE).update(
        status=Assignment.Status.RELEASED, ended_at=timezone.now()
    )
    audit_record(
        actor=actor, action=AuditAction.MEMBERSHIP_REMOVE, target_kind="user", target_id=user.pk, project=project,
        before={"role": membership.role}, after=None,
    )
