"""Blind mode: what a user may learn of an annotation item, on every channel.

The rule. What an item hides in a blind project — its other labels, its judge's verdict, its
gold label, its adjudication, and which reports and systems it is about (their ids, names and
every other handle) — is *revealed* to a user of its project when

1. the project is not blind, or the study is closed (``AnnotationProject.Status.CLOSED``: a
   curator's audited ``project_update``, final for blind projects), or the user curates it and
   the item is no longer open (it has all its labels): ``revealed_unlabelled``, which reads only
   the project, the user's role in it and the item's status; or
2. the user has labelled the item themselves and the project reveals after each label
   (``AnnotationProject.reveal``; the kind's ``default_reveal``: pairwise and rating projects at close, so that
   annotators do not learn each system's style label by label; agreement and verify after the
   label, as the judge's verdict is what an agreement study audits).

That is all of it: ``revealed`` states it whole. ``item_revealed`` applies it to one item (the
workspace and the item API, through ``selectors.workspace.item_context_for``): part 1 in Python,
part 2 only when part 1 says no and the project reveals after labels, as one query.
``revealed_items`` applies it to lists (labels, gold labels, verdicts, exports): part 1 as a
filter derived from ``revealed_unlabelled`` itself, part 2 as a subquery.

Until an item is revealed, the user sees its sides (``left``/``right`` of a pair, ``report`` of
a verdict) and their text, never a handle of them: ``HANDLE_KINDS`` items show no target id,
their labels' values no report ids (``label_value_shown``), and an adjudicated item reads as
complete (``status_shown``).

Beyond one item, a user who labels in a blind project (its annotators; curators do not label
there, ``require_labeller``) must not learn what it hides on any other channel either, whatever
another project or their global role would show. ``blind_items`` are the items still unrevealed
to them as annotators; from those come ``hidden_reports`` (report lists, report and task pages,
preferences and verdicts on them leave them out, through ``core.blind``), the verdicts no list
shows them (``visible_verdicts``), and ``blind_labelling_projects`` (score cards, leaderboards
and runs stay closed, ``annotation.middleware``).
"""

import secrets
from collections import defaultdict

from django.db import connections
from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q, QuerySet

from benchmark.models import Report
from core.accounts import is_global_curator
from core.compiled import CompiledRead
from scoring.models import Verdict

from .kinds import KINDS
from .models import (AnnotationItem, AnnotationProject, Assignment, GoldLabel, Label, PairwisePreference,
                     ProjectMembership, ReportPair, Role, TargetKind)
from .selectors.projects import projects_for

CLOSED = AnnotationProject.Status.CLOSED
AFTER_LABEL = AnnotationProject.Reveal.AFTER_LABEL

# Items whose target id names reports (a pair, a verdict on one report): hidden until revealed.
HANDLE_KINDS = frozenset({TargetKind.REPORT_PAIR, TargetKind.VERDICT, TargetKind.REPORT})
# What a label's value says of the reports beside what was chosen (each kind's ``blind_fields``:
# a pairwise label's report ids).
REPORT_FIELDS = tuple(sorted({name for kind in KINDS.values() for name in kind.blind_fields}))
# What a label's value holds that the server derived from the hidden answer: an agreement label's
# ``judge_correct`` is true exactly when the label equals the judge's verdict (issue #37).
DERIVED_FIELDS = ("judge_correct",)
# The one answer for an item a user may not reach and for one that does not exist (API and pages).
NO_ITEM = "No such item in your projects"
# Bits of a blind project's schedule seed (``secret_seed``): far beyond trying every seed.
SEED_BITS = 62

# --- The rule ---------------------------------------------------------------------------------


def revealed_unlabelled(*, blind: bool, role: str | None, status: str, closed: bool = False) -> bool:
    """Part 1 of the rule: whether an item with ``status`` in a project (``blind`` or not,
    ``closed`` or not) is revealed to a user of ``role`` there whether or not they labelled it."""
    return not blind or closed or (role == Role.CURATOR and status != AnnotationItem.Status.OPEN)


def revealed(*, project: AnnotationProject, role: str | None, status: str, labelled: bool) -> bool:
    """The whole rule: whether an item with ``status`` of ``project`` is revealed to a user of
    ``role`` there who has (``labelled``) or has not labelled it."""
    return revealed_unlabelled(blind=project.blind, role=role, status=status, closed=project.status == CLOSED) or (
        labelled and project.reveal == AFTER_LABEL)


def item_revealed(*, item: AnnotationItem, role: str | None, user, holds_claim: bool = False) -> bool:
    """The rule for one item (its project read along, the user's ``role`` there known): no
    query when part 1 decides or the project reveals only at close, else one. ``holds_claim``:
    the user holds an active claim on the item, which their label would have ended, so they
    have not labelled it: no query."""
    project = item.project
    if revealed(project=project, role=role, status=item.status, labelled=False):
        return True
    if holds_claim or not revealed(project=project, role=role, status=item.status, labelled=True):
        return False
    return Label.objects.filter(item_id=item.pk, annotator_id=user.pk).exists()


def labeller_revealed(project: AnnotationProject) -> bool:
    """The rule for the one who labelled an item of ``project`` (an annotator: curators label
    only where nothing is blind), whatever the item's status."""
    return revealed(project=project, role=Role.ANNOTATOR, status=AnnotationItem.Status.OPEN, labelled=True)


def label_value_shown(value, *, revealed: bool):
    """A label's value as a user sees it: without the reports it compares, nor anything the
    server derived from the hidden answer (``judge_correct``), until the item is revealed to
    them (the side chosen and the label given say what they chose)."""
    if revealed or not isinstance(value, dict):
        return value
    return {key: field for key, field in value.items() if key not in REPORT_FIELDS and key not in DERIVED_FIELDS}


def status_shown(status: str, *, revealed: bool) -> str:
    """An item's status as a user sees it: that a curator adjudicated it (its labels disagreed,
    or the label disagreed with the judge) stays hidden until the item is revealed to them."""
    if revealed or status != AnnotationItem.Status.ADJUDICATED:
        return status
    return AnnotationItem.Status.COMPLETE


def target_id_shown(*, kind: str, target_id: int, revealed: bool) -> int | None:
    """An item's target id as a user sees it: none for a pair or a verdict until revealed."""
    return target_id if revealed or kind not in HANDLE_KINDS else None


def _own_label(user) -> Exists:
    """Part 2's label as a condition on items: the user labelled the item."""
    return Exists(Label.objects.filter(item=OuterRef("pk"), annotator=user))


def _revealed_unlabelled_q(role: str | None) -> Q:
    """Part 1 for a user of ``role`` as a condition on items, read off ``revealed_unlabelled``
    for every (blind, closed, status) it can see, so the rule is stated once."""
    statuses = AnnotationItem.Status.values
    condition = Q(pk__in=[])  # reveals nothing
    for blind in (False, True):
        for closed in (False, True):
            revealed_ = [status for status in statuses
                         if revealed_unlabelled(blind=blind, role=role, status=status, closed=closed)]
            projects = Q(project__blind=blind) & (Q(project__status=CLOSED) if closed else ~Q(project__status=CLOSED))
            if len(revealed_) == len(statuses):
                condition |= projects
            elif revealed_:
                condition |= projects & Q(status__in=revealed_)
    return condition


def _revealed_by_label_q(user) -> Q:
    """Part 2 as a condition on items: the user labelled it, in a project that reveals after labels."""
    return Q(project__reveal=AFTER_LABEL) & Q(_own_label(user))


def _project_roles(user) -> dict[int, str | None]:
    """Project id → the user's role there (``project_role``), for every project they may open."""
    global_curator = is_global_curator(user)
    rows = projects_for(user).values_list("pk", "my_role")
    return {pk: role or (Role.CURATOR if global_curator else None) for pk, role in rows}


def _revealed(roles: dict[int, str | None], user) -> QuerySet[AnnotationItem]:
    """The items of the projects in ``roles`` (``_project_roles``) revealed to the user."""
    by_role: dict[str | None, list[int]] = defaultdict(list)
    for project_id, role in roles.items():
        by_role[role].append(project_id)
    unlabelled = Q(pk__in=[])
    for role, project_ids in by_role.items():
        unlabelled |= Q(project_id__in=project_ids) & _revealed_unlabelled_q(role)
    items = AnnotationItem.objects.filter(project_id__in=list(roles))
    return items.filter(unlabelled | _revealed_by_label_q(user)).exclude(_hidden_elsewhere_q(user))


def _hidden_elsewhere_q(user) -> Q:
    """Items about what a blind study still hides from the user (``blind_items``), in any other
    project: the same verdict or pair, a verdict on a report of a system its pairs compare, a
    pair of such reports (``_compared_reports``). The rule of one project never reveals what
    another hides (issue #37: a project that is not blind over the same verdicts)."""
    blind = blind_items(user)
    compared = _compared_reports(blind)
    about = (Q(target_kind=TargetKind.VERDICT, target_id__in=blind.filter(target_kind=TargetKind.VERDICT).values(
        "target_id")) | Q(target_kind=TargetKind.VERDICT, target_id__in=Verdict.objects.filter(
            report__in=compared).values("pk"))
        | Q(target_kind=TargetKind.REPORT_PAIR, target_id__in=ReportPair.objects.filter(
            Q(report_left__in=compared) | Q(report_right__in=compared)).values("pk"))
        | Q(target_kind=TargetKind.REPORT, target_id__in=compared.values("pk")))  # a rated report
    # A blind project's own items follow its own rule (``reveal``), not this one.
    return about & ~Q(project__in=blind.values("project"))


def hidden_elsewhere(*, item: AnnotationItem, target, user) -> bool:
    """``_hidden_elsewhere_q`` for one item whose target row (``target``: a verdict with its
    report, or a pair with its reports) the caller read: one query, none for other kinds."""
    if target is None or item.target_kind not in HANDLE_KINDS or not getattr(user, "is_authenticated", False):
        return False
    if item.target_kind == TargetKind.VERDICT:
        systems = [target.report.system_id]
    elif item.target_kind == TargetKind.REPORT:  # a rated report
        systems = [target.system_id]
    else:
        systems = [target.report_left.system_id, target.report_right.system_id]
    blind = blind_items(user).exclude(project_id=item.project_id)  # its own project: its own rule
    same = Q(target_kind=item.target_kind, target_id=item.target_id)
    pairs = ReportPair.objects.filter(Q(report_left__system__in=systems) | Q(report_right__system__in=systems))
    return blind.filter(same | Q(target_kind=TargetKind.REPORT_PAIR, target_id__in=pairs.values("pk"))).exists()


def revealed_items(user) -> QuerySet[AnnotationItem]:
    """Items of the user's projects whose other labels, verdict, gold and reports the user may see."""
    return _revealed(_project_roles(user), user)


def with_revealed(items: QuerySet[AnnotationItem], user) -> QuerySet[AnnotationItem]:
    """``items``, each with ``revealed``: whether it is revealed to the user (``revealed_items``)."""
    return items.annotate(revealed=ExpressionWrapper(Q(pk__in=revealed_items(user).values("pk")),
                                                     output_field=BooleanField()))


def blind_items(user) -> QuerySet[AnnotationItem]:
    """The items of projects the user labels in as an annotator that are not revealed to them
    (in blind projects, those they have not labelled yet, or all until the study closes when it
    reveals only then): what these hide (verdict, others' labels, reports and systems) the user
    may learn nowhere, however else they may read it."""
    items = _blind_items_query(user)
    if connections[items.db].vendor == "sqlite":
        # SQLite's parser stack (100 entries) gives up on the lists built on these items, which
        # name them several times over (a blind annotator's verdict list nested 80 SELECTs:
        # "parser stack overflow"): there they are read once here and named by their ids.
        return AnnotationItem.objects.filter(pk__in=list(items.values_list("pk", flat=True)))
    return items


def _blind_items_query(user) -> QuerySet[AnnotationItem]:
    """``blind_items`` as one query on every database."""
    labelling = ProjectMembership.objects.filter(project=OuterRef("project"), user=user, role=Role.ANNOTATOR)
    return AnnotationItem.objects.filter(Exists(labelling)).exclude(
        _revealed_unlabelled_q(Role.ANNOTATOR) | _revealed_by_label_q(user)
    )


# --- Reach: which items a user may open at all ---------------------------------------------------


def secret_seed() -> int:
    """The seed of a blind project's schedules, sample and adaptive draws: drawn here, from the
    operating system's randomness, never from a request nor a constant, and never shown. A
    seed an annotator could guess or try (seed 0; any 31-bit one) lets them rebuild the pair
    schedule from the items' positions and name the systems (issue #37)."""
    return secrets.randbits(SEED_BITS)


def reach_restricted(*, project: AnnotationProject, role: str | None) -> bool:
    """Whether a user of ``role`` reaches an item of ``project`` only through what they hold
    (``item_reachable``): everyone but its curators, in a blind project not yet closed. Curators
    do not label there (``rules.labeller_refusal``) and see items as the rule above says."""
    return project.blind and project.status != CLOSED and role != Role.CURATOR


# The claims by which the server handed a user an item they have not given back: live, or whose
# hold ran out (marked expired or not yet). Through them alone a blind project's item is reached.
HANDED = (Assignment.Status.ACTIVE, Assignment.Status.EXPIRED)


def item_reachable(*, item: AnnotationItem, project: AnnotationProject, role: str | None, user,
                   holds_claim: bool = False) -> bool:
    """Whether ``user`` may open ``item`` of ``project`` at all (its sides, target, task material,
    page, API answer): in a blind project (``reach_restricted``), only through their own claim
    (``HANDED``: live — ``holds_claim``, the caller holds it, no query — or run out, so that a
    label sent late is answered with its input kept rather than lost), or an item they labelled
    (revisiting it shows what the rule reveals of it). Every other item is to be answered as a
    missing one: its id, position and texts would let an annotator read the whole schedule, or
    seek out the pairs of one system."""
    if holds_claim or not reach_restricted(project=project, role=role):
        return True
    return _reached(item_id=item.pk, project=project, user=user) is not None


# The item with what the reach rule reads of it (a claim handed to the user, their label), in one
# statement compiled once per process (``core.compiled``): the workspace's every POST opens its
# item this way (``reachable_item``).
_ITEM = CompiledRead(lambda item_id, project_id: AnnotationItem.objects.filter(pk=item_id, project_id=project_id)
                     .order_by()[:1], "item_id", "project_id")
_ITEM_WITH_REACH = CompiledRead(
    lambda item_id, project_id, user_id: AnnotationItem.objects.filter(pk=item_id, project_id=project_id).annotate(
        handed=Exists(Assignment.objects.filter(item_id=OuterRef("pk"), user_id=user_id, status__in=HANDED)),
        labelled=Exists(Label.objects.filter(item_id=OuterRef("pk"), annotator_id=user_id)),
    ).order_by()[:1],
    "item_id", "project_id", "user_id",
)


def _reached(*, item_id: int, project: AnnotationProject, user) -> AnnotationItem | None:
    """The item when the user reaches it in a project that restricts reach: through a claim
    handed to them (``HANDED``) or their own label; else None."""
    item = _ITEM_WITH_REACH.first(item_id=item_id, project_id=project.pk, user_id=user.pk)
    return item if item is not None and (item.handed or item.labelled) else None


def reachable_item(*, item_id: int, project: AnnotationProject, role: str | None, user) -> AnnotationItem | None:
    """The item ``item_id`` of ``project`` when ``item_reachable`` lets ``user`` (of ``role``
    there, signed in) open it, else None, whether it is missing or out of reach: one statement."""
    if not reach_restricted(project=project, role=role):
        return _ITEM.first(item_id=item_id, project_id=project.pk)
    return _reached(item_id=item_id, project=project, user=user)


def item_handed(*, item_id: int, user) -> bool:
    """Whether the server handed ``user`` the item by a claim they have not given back (``HANDED``)."""
    return Assignment.objects.filter(item_id=item_id, user_id=user.pk, status__in=HANDED).exists()


# --- Channels ---------------------------------------------------------------------------------


def visible_labels(user) -> QuerySet[Label]:
    """The user's own labels, plus others' labels on items revealed to them; each with
    ``revealed`` (its item is: its value may name the reports, ``label_value_shown``)."""
    if not getattr(user, "is_authenticated", False):
        return Label.objects.none()
    roles = _project_roles(user)
    revealed_ids = _revealed(roles, user).values("pk")
    return Label.objects.filter(project_id__in=list(roles)).filter(
        Q(annotator=user) | Q(item_id__in=revealed_ids)
    ).annotate(revealed=ExpressionWrapper(Q(item_id__in=revealed_ids), output_field=BooleanField()))


def visible_gold_labels(user) -> QuerySet[GoldLabel]:
    if not getattr(user, "is_authenticated", False):
        return GoldLabel.objects.none()
    return GoldLabel.objects.filter(item_id__in=revealed_items(user).values("pk"))


def visible_verdicts(*, user) -> QuerySet[Verdict]:
    """Global curators read every run's verdicts; everyone else lists only the verdicts their own
    items need: those of agreement items revealed to them (``revealed_items``). Either way, the
    blind rule wins over every other project and role: no verdict of an item still blind to the
    user (``blind_items``), nor any verdict on a report whose system a blind pair still hides
    from them (``hidden_reports``: per report, it would rank the systems)."""
    if not getattr(user, "is_authenticated", False):
        return Verdict.objects.none()
    if is_global_curator(user):
        verdicts = Verdict.objects.all()
    else:
        verdicts = Verdict.objects.filter(
            pk__in=revealed_items(user).filter(target_kind=TargetKind.VERDICT).values("target_id"))
    blind = blind_items(user)
    return verdicts.exclude(pk__in=blind.filter(target_kind=TargetKind.VERDICT).values("target_id")).exclude(
        report__in=_compared_reports(blind))


def _pair_reports(items: QuerySet[AnnotationItem]) -> QuerySet[Report]:
    """The reports ``items`` show without their system: a pair's two, a rating's one."""
    pairs = ReportPair.objects.filter(pk__in=items.filter(target_kind=TargetKind.REPORT_PAIR).values("target_id"))
    return Report.objects.filter(Q(pk__in=pairs.values("report_left")) | Q(pk__in=pairs.values("report_right"))
                                 | Q(pk__in=items.filter(target_kind=TargetKind.REPORT).values("target_id")))


def _compared_reports(items: QuerySet[AnnotationItem]) -> QuerySet[Report]:
    """Every report of the systems that the pairs among ``items`` compare, on any task: with
    one report of a system named, a 4-gram nearest neighbour names that system's side of a
    blind pair (86 of 100 sides, issue #37)."""
    return Report.objects.filter(system__in=_pair_reports(items).values("system"))


def hidden_reports(user) -> QuerySet[Report]:
    """Reports whose system a blind pairwise item still hides from the user (``blind_items``):
    every report of the systems those items compare (``_compared_reports``), not only theirs."""
    if not getattr(user, "is_authenticated", False):
        return Report.objects.none()
    return _compared_reports(blind_items(user))


def blind_labelling_projects(user) -> list[str]:
    """Names of the blind projects in which the user still has open items to label as an
    annotator: until they are done there, score cards and rankings of the systems (and the
    judges) those items compare stay closed to them."""
    if not getattr(user, "is_authenticated", False):
        return []
    # The query form even on SQLite (a subquery nested twice): ``blind_items``'s read of every
    # blind item made each page of a 100,000-item blind project 470–550 ms (this runs on every
    # page, for its menu) instead of 120–140 (in-process, the bench's SQLite seed, 2026-12-07).
    open_items = _blind_items_query(user).filter(status=AnnotationItem.Status.OPEN).exclude(_own_label(user))
    projects = AnnotationProject.objects.filter(pk__in=open_items.values("project")).order_by("name")
    return list(projects.values_list("name", flat=True))


def visible_preferences(user) -> QuerySet[PairwisePreference]:
    """Global curators see every preference, others their own (imported ones carry no project);
    none of either on a pair still blind to the user (``blind_items``: their own label there
    included, as it names the reports), nor any on a report whose system such a pair hides
    (``hidden_reports``: an imported human preference on exactly their pair, say)."""
    if not getattr(user, "is_authenticated", False):
        return PairwisePreference.objects.none()
    preferences = PairwisePreference.objects.all() if is_global_curator(user) else PairwisePreference.objects.filter(
        annotator=user)
    blind = blind_items(user)
    hidden = _compared_reports(blind)
    return preferences.exclude(label__item__in=blind).exclude(report_left__in=hidden).exclude(
        report_right__in=hidden)


# --- Projects over what a blind one hides ---------------------------------------------------------


def blind_overlap_warnings(project: AnnotationProject) -> list[str]:
    """When ``project`` is not blind: one warning per blind study, not closed, whose items are
    about the same things (the same verdicts or proposals; reports that its pairs compare or
    its verdicts judge): in ``project`` its annotators would read what that study hides from
    them. The lists stay blind (``visible_verdicts``, ``visible_preferences``, ``hidden_reports``
    follow the blind study), but ``project``'s own pages show what ``project`` shows. Names the
    members the two share. When ``project`` is blind: the same, from its side, for every project
    that is not blind over what it hides (``_blind_side_warnings``): either order warns."""
    if project.blind:
        return _blind_side_warnings(project)
    items = AnnotationItem.objects.filter(project=project)
    others = AnnotationItem.objects.filter(project__blind=True).exclude(project=project).exclude(
        project__status=CLOSED)
    same = others.filter(Exists(items.filter(target_kind=OuterRef("target_kind"), target_id=OuterRef("target_id"))))
    reports = _item_reports(items)
    pairs = ReportPair.objects.filter(Q(report_left__in=reports) | Q(report_right__in=reports))
    verdicts = Verdict.objects.filter(report__in=reports)
    by_reports = others.filter(Q(target_kind=TargetKind.REPORT_PAIR, target_id__in=pairs.values("pk"))
                               | Q(target_kind=TargetKind.VERDICT, target_id__in=verdicts.values("pk"))
                               | Q(target_kind=TargetKind.REPORT, target_id__in=reports.values("pk")))
    overlapping = AnnotationProject.objects.filter(
        Q(pk__in=same.values("project")) | Q(pk__in=by_reports.values("project"))).order_by("name")
    members = set(ProjectMembership.objects.filter(project=project).values_list("user", flat=True))
    warnings = []
    for blind in overlapping:
        shared = sorted(ProjectMembership.objects.filter(project=blind, role=Role.ANNOTATOR, user__in=members)
                        .values_list("user__username", flat=True))
        who = (f"its annotators {', '.join(shared)} are members here and" if shared else
               "an annotator of it who joins this project")
        warnings.append(
            f"blind study {blind.name!r} (not closed) labels the same verdicts, reports or proposals as this project,"
            f" which is not blind: {who} would see here what {blind.name!r} hides from them until they label it there"
            " (lists such as /api/verdicts/ and /api/preferences/ keep hiding it)")
    return warnings


def _item_reports(items: QuerySet[AnnotationItem]) -> QuerySet[Report]:
    """The reports that ``items`` compare (pairs) or whose verdicts they label."""
    verdicts = Verdict.objects.filter(pk__in=items.filter(target_kind=TargetKind.VERDICT).values("target_id"))
    return Report.objects.filter(Q(pk__in=_pair_reports(items).values("pk")) | Q(pk__in=verdicts.values("report")))


def _blind_side_warnings(project: AnnotationProject) -> list[str]:
    """One warning per project that is not blind and is about what blind ``project`` hides: the
    same verdicts or pairs, or reports of the systems its pairs compare (``_compared_reports``)."""
    if project.status == CLOSED:
        return []
    items = AnnotationItem.objects.filter(project=project)
    others = AnnotationItem.objects.filter(project__blind=False)
    same = others.filter(Exists(items.filter(target_kind=OuterRef("target_kind"), target_id=OuterRef("target_id"))))
    reports = Report.objects.filter(Q(pk__in=_item_reports(items).values("pk"))
                                    | Q(pk__in=_compared_reports(items).values("pk")))
    pairs = ReportPair.objects.filter(Q(report_left__in=reports) | Q(report_right__in=reports))
    by_reports = others.filter(Q(target_kind=TargetKind.REPORT_PAIR, target_id__in=pairs.values("pk"))
                               | Q(target_kind=TargetKind.VERDICT, target_id__in=Verdict.objects.filter(
                                   report__in=reports).values("pk")))
    overlapping = AnnotationProject.objects.filter(
        Q(pk__in=same.values("project")) | Q(pk__in=by_reports.values("project"))).order_by("name")
    annotators = set(ProjectMembership.objects.filter(project=project, role=Role.ANNOTATOR).values_list("user", flat=True))
    warnings = []
    for other in overlapping:
        shared = sorted(ProjectMembership.objects.filter(project=other, user__in=annotators)
                        .values_list("user__username", flat=True))
        who = f"its members {', '.join(shared)} annotate here" if shared else "no annotator of this study is a member"
        warnings.append(
            f"project {other.name!r}, which is not blind, is about the same verdicts, reports or proposals as blind"
            f" study {project.name!r}: {who}; there they see nothing {project.name!r} still hides from them (those"
            " items stay unrevealed to them until it reveals them here)")
    return warnings
