"""Submitting labels: one or many, with the next claim or without.

A label is final once submitted: a second, different submission by the same annotator for
the same item is refused (``AlreadyLabelledError``). To correct a mistake the annotator
undoes their last action (``loop.undo.label_undo_last``) while nothing depends on it yet,
then labels again — except in blind projects, where committing reveals what was hidden and the
label stays final. Resubmitting the same form (same ``client_token``) returns the first label.
"""

import math
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from benchmark.services.history import ProposableMovedError
from core.accounts import is_global_curator
from core.audit_actions import AuditAction
from core.compiled import CompiledRead

from .. import rules
from ..blind import REPORT_FIELDS, item_handed, reach_restricted
from ..crowd.models import is_attention_check
from ..models import (
    VERIFY_TARGETS, AnnotationItem, AnnotationProject, Assignment, Label, PairwisePreference, ReportPair, Role,
    TargetKind,
)
from ..services.audit import audit_rows_for
from ..services.errors import AlreadyLabelledError, AnnotationError, ClaimLostError, ItemNotOpenError
from ..services.values import value_clean
from . import store
from .claims import claim_more, claim_next_items, require_labeller
from .settle import COMPLETED_ITEM_FIELDS, item_complete, review_edits_save

PREFERENCE_SOURCE = "studio"
# a held claim's item, read on most workspace POSTs: compiled once per process (``core.compiled``)
_ITEM_BY_ID = CompiledRead(lambda item_id: AnnotationItem.objects.filter(pk=item_id).order_by()[:1], "item_id")


def _token(client_token) -> uuid.UUID:
    try:
        return client_token if isinstance(client_token, uuid.UUID) else uuid.UUID(str(client_token))
    except ValueError as exc:
        raise ValueError(f"client_token: {client_token!r} is not a UUID") from exc


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


class LabelBatch:
    """One transaction of answers, in the order its steps run: ``__init__`` locks and reads what
    the answers need (the items with their projects, roles and targets, their labels and
    claims); ``answer_all`` checks each answer; ``write`` inserts the accepted labels, ends their
    claims and mirrors pairwise ones; ``settle`` counts them on their items and completes those
    at k; a caller that claims the next items in the same transaction does it then
    (``held_claims``, ``audit``); ``save`` writes the decisions, every audit row and the items'
    counters. A few statements whatever the number of answers.

    ``lock_targets``: the benchmark rows of verify items are read under their locks (else read
    with the items, and a decision finds out at ``settle`` or ``save`` when one moved:
    ``ProposableMovedError``, and the caller runs the batch again with them locked).
    ``with_held``: the annotator's other active claims in these projects are read along, for a
    claim that follows."""

    def __init__(self, *, annotator, submissions: list[Submission], project=None, role=None,
                 with_held: bool = False, lock_targets: bool = False) -> None:
        self.annotator, self.submissions, self.now = annotator, submissions, timezone.now()
        self.tokens: dict[int, uuid.UUID | ValueError] = {}
        for index, submission in enumerate(submissions):
            try:
                self.tokens[index] = _token(submission.client_token)
            except ValueError as exc:
                self.tokens[index] = exc
        wanted = [s.item_id for s in submissions if isinstance(s.item_id, int)]
        self.items = store.locked_items(item_ids=wanted, annotator=annotator) if wanted else {}
        self.roles: dict[int, str | None] = {}
        for item in self.items.values():
            mine = item.my_role
            if project is not None and role is not None and item.project_id == project.pk:
                mine = role
            self.roles[item.project_id] = Role.CURATOR if mine is None and is_global_curator(annotator) else mine
        self.targets_locked = lock_targets
        proposals = [item for item in self.items.values() if item.target_kind in VERIFY_TARGETS]
        self.targets = {pk: item.target_row for pk, item in self.items.items()} | (
            _proposables_locked(proposals) if lock_targets else {})
        labels, self.claims = store.labels_and_claims(
            items=list(self.items.values()), annotator=annotator,
            tokens=[t for t in self.tokens.values() if isinstance(t, uuid.UUID)],
            held_in=sorted(self.roles) if with_held else (),
        ) if self.items else ([], [])
        self.labels_by_item: dict[int, list[Label]] = {}
        for label in labels:
            self.labels_by_item.setdefault(label.item_id, []).append(label)
        self.own = [label for label in labels if label.annotator_id == annotator.pk]  # with those accepted here
        self.accepted: list[tuple[AnnotationItem, Label, Assignment | None]] = []
        self.audit: list[dict] = []  # the transaction's audit rows, written by ``save``
        self.edits: list = []  # agreed verify decisions checked by ``settle``, written by ``save``

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
        ``accepted``."""
        if isinstance(token, Exception):
            raise token
        item = self.items.get(submission.item_id)
        if item is None or self.roles.get(item.project_id) is None:
            raise _not_found(submission.item_id)
        first = next((label for label in self.own if label.client_token == token), None)
        if first is not None and first.item_id != item.pk:
            raise ValueError(
                f"client_token: already used for a label on item {first.item_id}; each form needs its own token"
            )
        if first is not None:
            first.project = item.project
            return SubmissionResult(label=first, role=self.roles[item.project_id])
        if any(label.item_id == item.pk for label in self.own):
            raise AlreadyLabelledError(f"you already labelled item {item.pk}; undo your last label to change it")
        project = item.project
        claims = [claim for claim in self.claims if claim.item_id == item.pk]
        claim = next((c for c in claims if c.user_id == self.annotator.pk), None)
        if claim is None and reach_restricted(project=project, role=self.roles[item.project_id]) and not item_handed(
                item_id=item.pk, user=self.annotator):
            # Blind: only an item the server handed them (a claim of theirs, live or run out),
            # else an annotator could seek out the pairs of one system; answered as a missing item.
            raise _not_found(submission.item_id)
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
        if claim is None or not rules.claim_live(status=claim.status, expires_at=claim.expires_at, now=self.now):
            # Without a live claim of their own, the label takes a free slot or none.
            others = sum(1 for c in claims if c.user_id != self.annotator.pk
                         and rules.claim_live(status=c.status, expires_at=c.expires_at, now=self.now))
            if not rules.has_free_slot(item_status=item.status, labels_done=item.labels_done,
                                       labels_needed=item.labels_needed, live_claims=others):
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

    def write(self) -> None:
        """Insert the accepted labels, ending the claims they were made under (no savepoint: on a
        conflict the whole transaction is refused and rolled back), and mirror pairwise ones."""
        if not self.accepted:
            return
        ended = [claim for _, _, claim in self.accepted if claim is not None]
        for claim in ended:
            claim.status, claim.ended_at = Assignment.Status.SUBMITTED, self.now
        store.labels_insert([label for _, label, _ in self.accepted], ended=ended)
        # an attention check's answer (``annotation.crowd``) is a test of the worker, not a preference
        pairs = [(label, self.targets[item.pk], item.project) for item, label, _ in self.accepted
                 if item.target_kind == TargetKind.REPORT_PAIR and not is_attention_check(item)]
        if pairs:
            preference_record(rows=pairs)

    def settle(self) -> None:
        """Count each label on its item (under the item's lock: this copy is the row as it is)
        and complete the items it brings to k (``item_complete``: an agreed verify decision is
        checked into ``edits``); each label's audit row joins ``audit``."""
        for item, label, _ in self.accepted:
            self.audit.append(dict(
                actor=self.annotator, action=AuditAction.LABEL_SUBMIT, target_kind="annotation_item", target_id=item.pk,
                project=item.project, before={"labels_done": item.labels_done, "status": item.status},
                after={"label_id": label.pk, "value": label.value, "labels_done": item.labels_done + 1},
            ))
            item.labels_done += 1
            if item.labels_done < item.labels_needed:
                continue
            target = self.targets.get(item.pk)
            if (not self.targets_locked and item.target_kind in VERIFY_TARGETS and target is not None
                    and target.version != item.target_version):
                # Maybe a conflict, maybe a row read before a change that committed while the
                # item's lock was awaited: only the row read under its lock tells.
                raise ProposableMovedError(f"item {item.pk}: its benchmark row moved")
            item_complete(item=item, actor=self.annotator, target=target,
                          labels=[*self.labels_by_item.get(item.pk, ()), label], edits=self.edits)

    def held_claims(self, project: AnnotationProject) -> list[Assignment]:
        """The annotator's active claims in ``project`` but those just ended (``with_held``),
        oldest first, with their items."""
        ended = {claim.pk for _, _, claim in self.accepted if claim is not None}
        held = sorted((c for c in self.claims if c.user_id == self.annotator.pk and c.project_id == project.pk
                       and c.pk not in ended), key=lambda c: (c.claimed_at, c.pk))
        unread = [c.item_id for c in held if c.item_id not in self.items]
        if len(unread) == 1:  # the usual one: the item the workspace shows, held ahead of this label
            read = {row.pk: row for row in _ITEM_BY_ID.rows(item_id=unread[0])}
        else:
            read = AnnotationItem.objects.in_bulk(unread) if unread else {}
        rows = {**read, **self.items}
        for claim in held:
            claim.item = rows[claim.item_id]
        return held

    def save(self) -> None:
        """Write the checked decisions with every audit row of the transaction (one INSERT), and
        every labelled item's counter and settlement (one UPDATE)."""
        if self.edits or self.audit:
            review_edits_save(edits=self.edits, actor=self.annotator, audit_rows=audit_rows_for(self.audit))
        store.items_count([item for item, _, _ in self.accepted], ["labels_done", *COMPLETED_ITEM_FIELDS])


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
        for lock_targets in (False, True):  # see ``LabelBatch``: again with the benchmark rows locked
            try:
                with transaction.atomic():
                    batch = LabelBatch(annotator=annotator, submissions=submissions, project=project, role=role,
                                       lock_targets=lock_targets)
                    results = batch.answer_all()
                    batch.write()
                    batch.settle()
                    batch.save()
                return results
            except ProposableMovedError:
                if lock_targets:
                    raise
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


def label_submit_and_claim(
    *, annotator, submission: Submission, project: AnnotationProject | None = None, role: str | None = None,
    count: int = 1,
) -> tuple[SubmissionResult, list[Assignment]]:
    """One turn of the annotator loop in one transaction: ``label_submit`` of ``submission``,
    then, when it was stored (or is a resubmission), ``claim_next_items`` in its project
    (``count``: the next item and those the client shows after it, such as the workspace's
    prefetched one). The rules are theirs; what is saved is a transaction, a read of the user's
    held claims (they come with the item's claims) and an INSERT (all audit rows in one).
    Returns the result (its ``error`` unraised: the caller decides) and the claims, oldest
    first (none when nothing is left)."""
    try:
        for lock_targets in (False, True):  # see ``LabelBatch``: again with the benchmark rows locked
            try:
                with transaction.atomic():
                    batch = LabelBatch(annotator=annotator, submissions=[submission], project=project, role=role,
                                       with_held=True, lock_targets=lock_targets)
                    (result,) = batch.answer_all()
                    if result.error is not None:
                        return result, []
                    batch.write()
                    batch.settle()
                    claims: list[Assignment] = []
                    next_project = result.label.project
                    refusal = rules.labeller_refusal(role=result.role, blind=next_project.blind,
                                                     project_status=next_project.status)
                    if refusal is None:  # else a resubmission after the project closed: nothing to claim
                        claims = claim_more(project=next_project, user=annotator, count=count,
                                            held=batch.held_claims(next_project), audit=batch.audit)
                    batch.save()
                return result, claims
            except ProposableMovedError:
                if lock_targets:
                    raise
    except IntegrityError:
        # A form's token raced in for another item (see ``label_submit_many``): each step alone.
        (result,) = label_submit_many(annotator=annotator, submissions=[submission], project=project, role=role)
        if result.error is not None:
            return result, []
        return result, claim_next_items(project=result.label.project, user=annotator, role=result.role, count=count)


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
