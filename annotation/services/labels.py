"""Submitting labels.

A label is final once submitted: a second, different submission by the same annotator for
the same item is refused (``AlreadyLabelledError``). To correct a mistake the annotator
undoes their last action (``services.undo.label_undo_last``) while nothing depends on it yet,
then labels again — except in blind projects, where committing reveals what was hidden and the
label stays final. Resubmitting the same form (same ``client_token``) returns the first label.
"""

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from benchmark.services.history import ProposableMovedError
from core import rawsql
from core.accounts import is_global_curator
from core.audit_actions import AuditAction

from ..blind import REPORT_FIELDS
from ..models import (
    VERIFY_TARGETS,
    AnnotationItem,
    AnnotationProject,
    Assignment,
    Label,
    PairwisePreference,
    ProjectMembership,
    ReportPair,
    Role,
    TargetKind,
)
from ..selectors.projects import LABELLING_ROLES, project_role
from ..selectors.targets import joined_target, kinds_of, kinds_remember, target_join
from .audit import audit_records, audit_rows_for
from .claims import active_claims_where
from .errors import AlreadyLabelledError, AnnotationError, ClaimLostError, ItemNotOpenError, ProjectNotOpenError
from .locking import lock_clause
from .review import COMPLETED_ITEM_FIELDS, item_complete, review_edits_save
from .values import value_clean

PREFERENCE_SOURCE = "studio"


def _token(client_token) -> uuid.UUID:
    try:
        return client_token if isinstance(client_token, uuid.UUID) else uuid.UUID(str(client_token))
    except ValueError as exc:
        raise ValueError(f"client_token: {client_token!r} is not a UUID") from exc


def require_labeller(*, project: AnnotationProject, user, role: str | None = None) -> None:
    """``role``: the user's role in ``project`` when the caller already resolved it."""
    if role is None:
        role = project_role(project=project, user=user)
    if role not in LABELLING_ROLES:
        raise PermissionError(
            f"{user} may not label items of project {project.name!r} (role: {role or 'not a member'})"
        )
    if project.blind and role == Role.CURATOR:  # curators see labels as items complete, so they cannot label blind
        raise PermissionError(
            f"project {project.name!r} is blind: only its annotators label; to label, a curator joins it as an"
            " annotator (and is then blind like any annotator until committing each label)"
        )
    if project.status != AnnotationProject.Status.OPEN:
        raise ProjectNotOpenError(f"project {project.name!r} is {project.status}; it accepts no labels now")


def preference_record(*, rows: list[tuple[Label, ReportPair, AnnotationProject]]) -> list[PairwisePreference]:
    """Mirror pairwise labels as the ``PairwisePreference`` rows the metrics read (one INSERT)."""
    return PairwisePreference.objects.bulk_create([
        PairwisePreference(
            task_id=pair.task_id, report_left_id=label.value["left_report_id"],
            report_right_id=label.value["right_report_id"], annotator_id=label.annotator_id,
            component=project.component, choice=label.value["choice"], dimensions=label.value["dimensions"],
            reason=label.value["reason"], seconds_taken=label.value["seconds_taken"], labeled_at=label.created_at,
            source=PREFERENCE_SOURCE, external_id=f"label-{label.pk}", project=project, label=label,
        )
        for label, pair, project in rows
    ])


@dataclass(frozen=True)
class Submission:
    """One answer: the body ``POST /api/labels/`` takes."""

    item_id: int
    value: Any
    client_token: Any
    seconds_taken: Any = None  # how long the annotator took, as the client measured it (any kind)


def _seconds_taken(submission: Submission, clean: dict) -> float | None:
    """The submission's ``seconds_taken``, else the one a pairwise value carries; ``ValueError``
    unless it is a finite number ≥ 0 (or absent)."""
    seconds = submission.seconds_taken
    if seconds is None and isinstance(clean, dict):
        seconds = clean.get("seconds_taken")
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds < 0:
        raise ValueError("seconds_taken: expected a non-negative number of seconds")
    return float(seconds)


@dataclass
class SubmissionResult:
    """What became of one ``Submission``: its ``label`` (``created`` False for a resubmission of
    the same form, which returns the first label), or the ``error`` that refused it. ``role``:
    the annotator's role in the label's project, as read under the lock (a follow-up claim
    needs it)."""

    label: Label | None = None
    created: bool = False
    error: Exception | None = None
    role: str | None = None


def _locked_items(*, item_ids: list[int], annotator) -> dict[int, AnnotationItem]:
    """Lock the items (in id order, so two batches never wait on each other in a cycle), each
    with its project (``item.project``, one instance per project), the annotator's membership
    role in it as ``my_role`` and the guidelines version it last showed them as
    ``my_guidelines_seen`` (None without membership), and its target row as ``target_row`` (``target_join``: a verify
    item's benchmark row, a pairwise item's pair, a verdict): one query, joining the tables of
    the items' kinds as this process remembers them (``kinds_of``), again with every kind's in
    the rare case it remembered wrongly (SQLite reuses the ids of a rolled-back insert). The
    project and target rows are read, not locked (see ``_Batch``)."""
    item, project, membership = (rawsql.table(m) for m in (AnnotationItem, AnnotationProject, ProjectMembership))
    ids = sorted(set(item_ids))

    def read(kinds) -> dict[int, AnnotationItem]:
        target_columns, target_joins, target_params = target_join(kinds)
        sql = (
            f"SELECT i.*, {rawsql.joined_columns(AnnotationProject, 'p')}{target_columns},"
            f" (SELECT m.role FROM {membership} m WHERE m.project_id = i.project_id AND m.user_id = %s) AS my_role,"
            f" (SELECT m.guidelines_seen FROM {membership} m WHERE m.project_id = i.project_id AND m.user_id = %s)"
            " AS my_guidelines_seen"
            f" FROM {item} i JOIN {project} p ON p.id = i.project_id{target_joins}"
            f" WHERE i.id IN ({', '.join(['%s'] * len(ids))}) ORDER BY i.id {lock_clause(of='i')}"
        )
        params = [annotator.pk, annotator.pk, *target_params, *ids]
        return {row.pk: row for row in rawsql.rows(AnnotationItem, sql, params)}

    kinds = kinds_of(ids)
    items = read(kinds)
    if any(row.target_kind not in kinds for row in items.values()):
        items = read(TargetKind.values)
    projects: dict[int, AnnotationProject] = {}
    for row in items.values():
        row.project = projects.setdefault(row.project_id, rawsql.joined_row(row, AnnotationProject, "p"))
        row.target_row = joined_target(row)
    kinds_remember(items.values())
    return items


def _labels_and_claims_read(
    *, items: list[AnnotationItem], annotator, tokens: list[uuid.UUID], with_held: bool
) -> tuple[list[Label], list[Assignment]]:
    """Under the items' locks, in one statement: every label of the items (at most k each: what
    completes them) and the annotator's labels made with these forms (``tokens``,
    resubmissions), in order; and the items' active claims (``with_held``: with the
    annotator's other active claims in their projects)."""
    tokens_db = [Label._meta.get_field("client_token").get_db_prep_value(t, connection) for t in tokens]
    mine = f" OR (annotator_id = %s AND client_token IN ({', '.join(['%s'] * len(tokens_db))}))" if tokens_db else ""
    claims_where, claims_params = active_claims_where(
        items, user=annotator if with_held else None, projects=sorted({item.project_id for item in items}))
    labels, claims = rawsql.union_rows([
        (Label, f"item_id IN ({', '.join(['%s'] * len(items))}){mine}",
         [*(i.pk for i in items), *([annotator.pk, *tokens_db] if tokens_db else [])]),
        (Assignment, claims_where, claims_params),
    ])
    return sorted(labels, key=lambda label: (label.created_at, label.pk)), claims


def _proposables_locked(items: list[AnnotationItem]) -> dict[int, Any]:
    """item id → its benchmark row (verify items), read again under its row lock (in id order):
    one query per kind."""
    by_kind: dict[str, list[AnnotationItem]] = {}
    for item in items:
        by_kind.setdefault(item.target_kind, []).append(item)
    out = {}
    for kind, group in by_kind.items():
        model = VERIFY_TARGETS[kind][0]
        rows = {row.pk: row for row in model.objects.select_for_update().filter(
            pk__in=[item.target_id for item in group]).order_by("pk")}
        out.update({item.pk: rows.get(item.target_id) for item in group})
    return out


def _not_found(item_id) -> AnnotationItem.DoesNotExist:
    # The same words for a missing item and one of a project the user is not in: nothing about
    # other projects leaks.
    return AnnotationItem.DoesNotExist(f"item: no annotation item {item_id} in your projects")


class _Batch:
    """The state of one ``label_submit_many`` transaction: the locked items, their projects,
    roles, targets, labels and claims, and the answers accepted so far."""

    def __init__(self, *, annotator, submissions, project, role, with_held: bool = False,
                 lock_targets: bool = False) -> None:
        self.annotator, self.now = annotator, timezone.now()
        self.tokens = {}
        for index, submission in enumerate(submissions):
            try:
                self.tokens[index] = _token(submission.client_token)
            except ValueError as exc:
                self.tokens[index] = exc
        wanted = [s.item_id for s in submissions if isinstance(s.item_id, int)]
        self.items = _locked_items(item_ids=wanted, annotator=annotator) if wanted else {}
        project_ids = {item.project_id for item in self.items.values()}
        self.projects = {item.project_id: item.project for item in self.items.values()}
        self.roles = {}
        for pid in project_ids:
            mine = next(i.my_role for i in self.items.values() if i.project_id == pid)
            self.roles[pid] = role if role is not None and project is not None and pid == project.pk else mine
            if self.roles[pid] is None and is_global_curator(annotator):
                self.roles[pid] = Role.CURATOR
        # The targets came with the items, read but not locked: a verify decision is written only
        # while its benchmark row is at the version read (``proposable_edits_save``); when one moved,
        # the batch runs again with the rows read under their locks (``submissions_run``).
        self.targets_locked = lock_targets
        proposals = [item for item in self.items.values() if item.target_kind in VERIFY_TARGETS]
        self.targets = {pk: item.target_row for pk, item in self.items.items()} | (
            _proposables_locked(proposals) if lock_targets else {})
        tokens = [t for t in self.tokens.values() if isinstance(t, uuid.UUID)]
        # ``with_held``: the annotator's other active claims in these projects come along, for the
        # claim that follows in the same transaction (``label_submit_and_claim``).
        labels, self.claims = _labels_and_claims_read(
            items=list(self.items.values()), annotator=annotator, tokens=tokens, with_held=with_held,
        ) if self.items else ([], [])
        self.labels_by_item: dict[int, list[Label]] = {}
        for label in labels:
            self.labels_by_item.setdefault(label.item_id, []).append(label)
        # The annotator's labels among them, and those accepted in this batch (``answer``).
        self.own = [label for label in labels if label.annotator_id == annotator.pk]
        self.accepted: list[tuple[AnnotationItem, Label, Assignment | None]] = []
        self.submissions = submissions

    def held_claims(self, project: AnnotationProject) -> list[Assignment]:
        """The annotator's active claims in ``project`` after ``write`` (``with_held``), oldest
        first, with their items."""
        ended = {claim.pk for _, _, claim in self.accepted if claim is not None}
        held = sorted((c for c in self.claims if c.user_id == self.annotator.pk and c.project_id == project.pk
                       and c.pk not in ended), key=lambda c: (c.claimed_at, c.pk))
        unread = [c.item_id for c in held if c.item_id not in self.items]
        rows = {**rawsql.in_bulk(AnnotationItem, unread), **self.items}
        for claim in held:
            claim.item = rows[claim.item_id]
        return held

    def answer_all(self) -> list[SubmissionResult]:
        results = []
        for index, submission in enumerate(self.submissions):
            try:
                results.append(self.answer(submission, self.tokens[index]))
            except (ValueError, PermissionError, AnnotationError, AnnotationItem.DoesNotExist) as exc:
                results.append(SubmissionResult(error=exc))
        return results

    def answer(self, submission: Submission, token) -> SubmissionResult:
        """Check one answer against the rules of ``label_submit``; an accepted one joins
        ``accepted`` (written by ``write``)."""
        if isinstance(token, Exception):
            raise token
        item = self.items.get(submission.item_id)
        if item is None or self.roles.get(item.project_id) is None:
            raise _not_found(submission.item_id)
        own = self.own
        first = next((label for label in own if label.client_token == token), None)
        if first is not None and first.item_id != item.pk:
            raise ValueError(
                f"client_token: already used for a label on item {first.item_id}; each form needs its own token"
            )
        if first is not None:
            first.project = item.project
            return SubmissionResult(label=first, role=self.roles[item.project_id])
        if any(label.item_id == item.pk for label in own):
            raise AlreadyLabelledError(f"you already labelled item {item.pk}; undo your last label to change it")
        project = item.project
        require_labeller(project=project, user=self.annotator, role=self.roles[item.project_id])
        if item.status != AnnotationItem.Status.OPEN:
            raise ItemNotOpenError(f"item {item.pk} already has all {item.labels_needed} labels it needs")
        value = submission.value
        if project.blind and isinstance(value, dict) and value.get("judge_correct") is not None:
            # Checked against the hidden verdict, the claim would answer whether it holds: an oracle.
            raise ValueError("value.judge_correct: not accepted in a blind project; send your label, the server compares it")
        if project.blind and isinstance(value, dict) and any(field in value for field in REPORT_FIELDS):
            # A blind item names no report: the choice names a side and the server resolves it.
            # Checking sent ids against the pair would answer whether a guess is right.
            raise ValueError("value.left_report_id: not accepted in a blind project; the choice names a side (left,"
                             " right or tie) and the server resolves it")
        clean = value_clean(project=project, target=self.targets.get(item.pk), value=value)
        claims = [claim for claim in self.claims if claim.item_id == item.pk]
        claim = next((c for c in claims if c.user_id == self.annotator.pk), None)
        if claim is None or claim.expires_at <= self.now:
            others = sum(1 for c in claims if c.user_id != self.annotator.pk and c.expires_at > self.now)
            if item.labels_done + others >= item.labels_needed:
                raise ClaimLostError(
                    f"your hold on item {item.pk} expired and its {item.labels_needed} slots are taken; "
                    "your label was not saved — ask for the next item"
                )
        # The guidelines the annotator had been shown (the workspace remembers it per member); a
        # global curator without membership is shown them open on every workspace page.
        seen = item.my_guidelines_seen if item.my_guidelines_seen is not None else project.guidelines_version
        label = Label(project=project, item=item, annotator=self.annotator, value=clean, client_token=token,
                      assignment=claim, created_at=self.now, guidelines_version=seen,
                      seconds_taken=_seconds_taken(submission, clean))
        self.accepted.append((item, label, claim))
        self.own.append(label)
        return SubmissionResult(label=label, created=True, role=self.roles[item.project_id])

    def write(self, *, then: Callable[[list[dict]], None] | None = None) -> None:
        """Insert the accepted labels, end their claims, mirror pairwise ones, settle the items
        they complete (``item_complete``: verify decisions are written together), write their
        audit rows and count them on their items: a few statements whatever their number.
        ``then``: more writes of the transaction (the next claim), made before the audit rows
        are written, adding its own rows to the list it is given: one INSERT for all."""
        rows: list[dict] = []
        edits: list = []
        if self.accepted:
            ended = [claim for _, _, claim in self.accepted if claim is not None]
            for claim in ended:
                claim.status, claim.ended_at = Assignment.Status.SUBMITTED, self.now
            # The labels and the end of their claims; no savepoint around them: on a conflict the
            # whole transaction is refused and rolled back.
            rawsql.insert_rows(Label, [label for _, label, _ in self.accepted],
                               along=rawsql.update_sql(Assignment, ended, ["status", "ended_at"]) if ended else None)
            pairs = [(label, self.targets[item.pk], item.project) for item, label, _ in self.accepted
                     if item.project.kind == AnnotationProject.Kind.PAIRWISE]
            if pairs:
                preference_record(rows=pairs)
            for item, label, _ in self.accepted:
                rows.append(dict(
                    actor=self.annotator, action=AuditAction.LABEL_SUBMIT, target_kind="annotation_item", target_id=item.pk,
                    project=item.project, before={"labels_done": item.labels_done, "status": item.status},
                    after={"label_id": label.pk, "value": label.value, "labels_done": item.labels_done + 1},
                ))
                item.labels_done += 1  # under the item's lock: this copy is the row as it is
                if item.labels_done >= item.labels_needed:
                    labels = [*self.labels_by_item.get(item.pk, ()), label]
                    target = self.targets.get(item.pk)
                    if (not self.targets_locked and item.target_kind in VERIFY_TARGETS and target is not None
                            and target.version != item.target_version):
                        # Maybe a conflict, maybe a row read before a change that committed while
                        # the item's lock was awaited: only the row read under its lock tells.
                        raise ProposableMovedError(f"item {item.pk}: its benchmark row moved")
                    item_complete(item=item, actor=self.annotator, target=target, labels=labels, edits=edits)
        if then is not None:
            then(rows)
        if edits:
            review_edits_save(edits=edits, actor=self.annotator, audit_rows=audit_rows_for(rows))
        elif rows:
            audit_records(rows)
        if self.accepted:  # every item's counter and settlement in one UPDATE
            rawsql.update_rows(AnnotationItem, [item for item, _, _ in self.accepted],
                               ["labels_done", *COMPLETED_ITEM_FIELDS])


def submissions_run(work: Callable[[_Batch], Any], *, annotator, submissions: list["Submission"], project=None,
                    role=None, with_held: bool = False) -> Any:
    """``work(batch)`` in a transaction that first locks and reads what ``submissions`` need
    (``batch``: call its ``answer_all`` and ``write``; a service that does more in the same
    transaction does it there, as ``label_submit_and_claim``). The benchmark rows come as read
    with the items; when a decision finds its row moved, the transaction rolls back and
    ``work`` runs once more with them read under their locks."""
    def attempt(lock_targets: bool) -> Any:
        with transaction.atomic():
            return work(_Batch(annotator=annotator, submissions=submissions, project=project, role=role,
                               with_held=with_held, lock_targets=lock_targets))

    try:
        return attempt(False)
    except ProposableMovedError:
        return attempt(True)


def _answer_and_write(batch: _Batch) -> list[SubmissionResult]:
    results = batch.answer_all()
    batch.write()
    return results


def label_submit_many(
    *, annotator, submissions: list[Submission], project: AnnotationProject | None = None, role: str | None = None,
) -> list[SubmissionResult]:
    """Store ``annotator``'s answers, each accepted or refused on its own (a refused one never
    sinks the others), in one transaction and a few statements whatever their number.

    Per answer, exactly the rules of ``label_submit``: the item is locked; the label ends the
    annotator's claim, bumps ``labels_done``, completes the item at k labels (verify: applies an
    agreed decision; disagreement: adjudication queue), mirrors a pairwise label as a
    ``PairwisePreference`` row and writes its audit row. Idempotent per ``client_token``: a
    resubmitted form returns its first label (``created`` False).

    Errors (``SubmissionResult.error``): ``ValueError`` (invalid value, naming the field, or a
    reused token), ``AnnotationItem.DoesNotExist`` (no such item in the annotator's projects),
    ``PermissionError``, ``ProjectNotOpenError``, ``ItemNotOpenError``, ``AlreadyLabelledError``,
    ``ClaimLostError``.

    ``project`` and ``role``: the items' project and the annotator's role in it, when the caller
    read them in this request.
    """
    if not submissions:
        return []
    try:
        return submissions_run(_answer_and_write, annotator=annotator, submissions=submissions, project=project,
                               role=role)
    except IntegrityError:
        # A form's token raced in for another item between our read and our insert; the batch
        # rolled back. Each answer again on its own, so only that one is refused.
        if len(submissions) == 1:
            return [SubmissionResult(error=ValueError(
                "client_token: already used for another label; each form needs its own token"))]
        return [
            label_submit_many(annotator=annotator, submissions=[submission], project=project, role=role)[0]
            for submission in submissions
        ]


def label_submit(
    *, item: AnnotationItem, annotator, value: dict, client_token, project: AnnotationProject | None = None,
    role: str | None = None, seconds_taken: float | None = None,
) -> Label:
    """Store ``annotator``'s label for ``item`` and settle the item when it has all its labels:
    ``label_submit_many`` with one answer, whose error is raised. Returns the label (the first
    one for a resubmitted form).

    Raises ``ValueError`` (invalid value, naming the field, or a reused token),
    ``PermissionError``, ``ProjectNotOpenError``, ``ItemNotOpenError`` (item already complete),
    ``AlreadyLabelledError`` (a different earlier submission), ``ClaimLostError`` (the claim
    expired and the item's slots were given to others), ``AnnotationItem.DoesNotExist``.
    """
    (result,) = label_submit_many(
        annotator=annotator,
        submissions=[Submission(item_id=item.pk, value=value, client_token=client_token, seconds_taken=seconds_taken)],
        project=project, role=role,
    )
    if result.error is not None:
        raise result.error
    return result.label
