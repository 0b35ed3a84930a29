"""The blind audit: the known attacks on a blind project, run with exactly an annotator's view.

Issue #37 broke blind mode four ways in one afternoon; this is the adversary a lab can run
before its study opens, and the test suite runs on every change (``docs/blind.md``). The
attacker is one annotator of the project. Everything they learn comes through the app's own
HTTP answers to them (an in-process ``django.test.Client`` logged in as them: the API and
pages, with every rule they are subject to); the server's rows are read only to score the
guesses. What the attacker does (claim items, label them) runs in a transaction that is rolled
back: the audit leaves no claim, label or audit row behind.

Per attack: ``hits`` of ``trials`` guesses, the ``chance`` of a hit for a guesser who knows
nothing hidden, and the one-sided p-value of doing that well or better by chance. The schedule
and style attacks name one system per report and are tested against relabelling each task's
systems at random (``Attack.relabelled``); the verdict and timing attacks make one guess per
label and are tested with the binomial (``scipy.stats.binomtest``, alternative "greater"). An
attack that finds nothing to guess at has 0 trials and p = 1; one beats chance below ``ALPHA``.

1. ``schedule``: rebuild the pair schedule (``services.schedule.pair_schedule``) for every seed
   an attacker would try (0 to ``SEEDS`` - 1), keep the seed most consistent with the sides they
   can read (sides with the same text are the same report), and name each side's system from
   its item's position. Chance: 1 / the systems of its task.
2. ``style``: a character 4-gram nearest neighbour of each side's text among every report text
   the annotator can read with a system attached (``/api/reports/``); the neighbour's system
   names the side. Chance: 1 / the systems of its task.
3. ``verdict``: in an agreement project, label each held item, then guess the judge's verdict
   from everything the label's answer, ``/api/labels/`` and the item show while the item is
   still unrevealed (``judge_correct``, the judge, others' labels). Chance: 1 / its labels.
4. ``timing``: whether a label agrees with the hidden verdict, guessed from how long its POST
   took (the first half of the labels sets the threshold and its direction, the second half is
   scored). Chance: 1/2 (the guess says "agrees" for half the items).
"""

import logging
import random
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.test import Client
from django.urls import reverse

from benchmark.models import Report, System
from scoring.models import Verdict

from .kinds import kind_of
from .models import AnnotationItem, AnnotationProject, ProjectMembership, ReportPair, Role, TargetKind
from .services.schedule import pair_schedule

SEEDS = 256  # the seeds an attacker tries: every small one (the form's old default was 0)
MAX_ITEMS = 400  # items whose sides the attacker asks for, at most
MAX_REPORTS = 2000  # reports whose text the attacker reads, at most
GRAM = 4
RELABELLINGS = 10_000  # draws of the schedule and style attacks' null: the smallest p-value is 1/10,001
ALPHA = 0.01  # an attack beats chance below this p-value (the command, the page and the test suite)


@dataclass
class Attack:
    name: str
    hits: int
    trials: int
    chance: float
    p_value: float

    @classmethod
    def scored(cls, name: str, guesses: list[tuple[bool, float]]) -> "Attack":
        """``guesses``: (hit, chance of a hit) each; the chance reported is their mean."""
        from scipy.stats import binomtest  # on demand: the audit is the only web path that needs SciPy

        trials, hits = len(guesses), sum(hit for hit, _ in guesses)
        chance = sum(p for _, p in guesses) / trials if trials else 0.0
        p_value = float(binomtest(hits, trials, chance, alternative="greater").pvalue) if trials else 1.0
        return cls(name=name, hits=hits, trials=trials, chance=round(chance, 4), p_value=p_value)

    @classmethod
    def relabelled(cls, name: str, guesses: list[tuple[object, str | None, str, list[str]]]) -> "Attack":
        """``guesses``: (task, guessed system, true system, the task's systems), one per report.

        Blind means the mapping of a task's reports to its systems is uniform given all the
        annotator sees, so the null keeps the guesses and relabels each task's systems by a
        uniform permutation (Monte Carlo, ``RELABELLINGS`` draws, a fixed generator: the same
        answer on every run). A binomial would assume independent guesses, which these are not
        (one seed's schedule names every report of a task at once): it called one clean project
        in a hundred a leak."""
        import numpy as np

        by_task: dict[object, list[tuple[str | None, str, list[str]]]] = defaultdict(list)
        for task, guess, truth, systems in guesses:
            by_task[task].append((guess, truth, systems))
        hits, trials, expected = 0, 0, 0.0
        rng = np.random.default_rng(0)
        null = np.zeros(RELABELLINGS, dtype=np.int64)
        for rows in by_task.values():
            systems = sorted({system for *_, names in rows for system in names} | {truth for _, truth, _ in rows})
            index = {system: i for i, system in enumerate(systems)}
            truth = np.array([index[t] for _, t, _ in rows])
            guess = np.array([index.get(g, -1) for g, _, _ in rows])
            permutations = np.argsort(rng.random((RELABELLINGS, len(systems))), axis=1)
            null += (permutations[:, truth] == guess).sum(axis=1)
            hits += int((truth == guess).sum())
            trials += len(rows)
            expected += float((guess >= 0).sum()) / len(systems)
        if not trials:
            return cls(name=name, hits=0, trials=0, chance=0.0, p_value=1.0)
        p_value = (1 + int((null >= hits).sum())) / (1 + RELABELLINGS)
        return cls(name=name, hits=hits, trials=trials, chance=round(expected / trials, 4), p_value=p_value)


class _AnnotatorView:
    """The app as the annotator reaches it: their HTTP requests, answered in this process."""

    def __init__(self, user) -> None:
        host = next((h.lstrip(".") for h in settings.ALLOWED_HOSTS if h.lstrip(".") and h != "*"), "localhost")
        self.client = Client(HTTP_HOST=host)
        self.client.force_login(user)

    def get(self, path: str, data=None):
        return self.client.get(path, data, secure=True)

    def post(self, path: str, body=None):
        return self.client.post(path, body, content_type="application/json", secure=True)

    def pages(self, path: str, data=None, *, limit: int) -> list[dict]:
        """Every row of a paginated list, following its ``next`` links, up to ``limit`` rows."""
        rows: list[dict] = []
        response = self.get(path, data)
        while response.status_code == 200 and len(rows) < limit:
            body = response.json()
            rows += body.get("results", [])
            following = body.get("next")
            if not following:
                break
            parts = urlsplit(following)
            response = self.get(f"{parts.path}?{parts.query}")
        return rows[:limit]


def _grams(text: str) -> Counter:
    text = " ".join(text.lower().split())
    return Counter(text[i:i + GRAM] for i in range(max(len(text) - GRAM + 1, 0)))


def _cosine(a: Counter, b: Counter) -> float:
    if not a or not b:
        return 0.0
    dot = sum(count * b[gram] for gram, count in a.items() if gram in b)
    return dot / ((sum(v * v for v in a.values()) * sum(v * v for v in b.values())) ** 0.5)


def _observed_sides(view: _AnnotatorView, project: AnnotationProject, items: list[dict]) -> list[dict]:
    """Every side the annotator can read: (item id, position, task, side, text)."""
    sides = []
    for row in items[:MAX_ITEMS]:
        for side in ("left", "right"):
            response = view.get(reverse("api:item-side", kwargs={"pk": row["id"], "side": side}))
            if response.status_code == 200:
                sides.append({"item": row["id"], "position": row["position"], "task": row["task"], "side": side,
                              "text": response.json()["text"]})
    return sides


def _truth(project: AnnotationProject) -> tuple[dict, dict]:
    """item id → (left system, right system); task id → its systems in the schedule's order."""
    items = dict(AnnotationItem.objects.filter(project=project, target_kind=TargetKind.REPORT_PAIR)
                 .values_list("pk", "target_id"))
    pairs = ReportPair.objects.filter(pk__in=items.values()).values_list(
        "pk", "report_left__system__name", "report_right__system__name")
    by_pair = {pk: (left, right) for pk, left, right in pairs}
    sides = {item: by_pair.get(pair) for item, pair in items.items()}
    systems: dict[int, list[str]] = defaultdict(list)
    reports = Report.objects.filter(task__in=project.tasks.all()).order_by(
        "task", "system__name", "system__version", "pk").values_list("task_id", "system__name", "system_id")
    chosen = set(project.systems.values_list("pk", flat=True))
    for task_id, name, system_id in reports:
        if not chosen or system_id in chosen:
            systems[task_id].append(name)
    return sides, systems


def _schedule_attack(sides: list[dict], truth: dict, systems: dict, project: AnnotationProject) -> Attack:
    if project.pair_choice != AnnotationProject.PairChoice.ROUND_ROBIN or not sides:
        return Attack.scored("schedule", [])
    # The attacker knows the systems of each task (public) and how the schedule is drawn (open source).
    texts: dict[str, int] = {}
    classes = [texts.setdefault(side["text"], len(texts)) for side in sides]
    best, best_score = None, -1
    for seed in range(SEEDS):
        positions = {position: (left, right) for position, (*_, left, right)
                     in enumerate(pair_schedule(systems, seed=seed), start=1)}
        guessed = [positions.get(side["position"], (None, None))[side["side"] == "right"] for side in sides]
        together: dict[int, Counter] = defaultdict(Counter)
        for cls, guess in zip(classes, guessed):
            together[cls][guess] += 1
        score = sum(max(counter.values()) for counter in together.values())
        if score > best_score:
            best, best_score = guessed, score
    guesses = []
    for side, guess in _one_per_report(zip(sides, best)):
        actual = truth.get(side["item"])
        if actual is not None:
            guesses.append((side["task"], guess, actual[side["side"] == "right"], systems.get(side["task"], [])))
    return Attack.relabelled("schedule", guesses)


def _one_per_report(pairs):
    """The first (side, guess) of each report (its task and text): every side showing one report
    gets the same guess, so counting each side would count one guess several times and make the
    binomial p-value of a lucky guess look like a leak (a report stands in 2(n−1) sides of a
    double round-robin over n systems)."""
    seen = set()
    for side, guess in pairs:
        key = (side["task"], side["text"])
        if key not in seen:
            seen.add(key)
            yield side, guess


def _style_attack(view: _AnnotatorView, sides: list[dict], truth: dict, systems: dict) -> Attack:
    corpus = []
    for row in view.pages(reverse("api:report-list"), limit=MAX_REPORTS):
        response = view.get(reverse("api:report-detail", kwargs={"pk": row["id"]}))
        if response.status_code == 200 and response.json().get("system") is not None:
            corpus.append((response.json()["system"], _grams(response.json().get("text") or "")))
    names = dict(System.objects.filter(pk__in={system for system, _ in corpus}).values_list("pk", "name"))
    guesses = []
    for side, _ in _one_per_report((side, None) for side in sides):
        actual = truth.get(side["item"])
        if actual is None:
            continue
        task_systems = systems.get(side["task"], [])
        if corpus:
            grams = _grams(side["text"])
            system, _ = max(corpus, key=lambda entry: _cosine(grams, entry[1]))
            guess = names.get(system)
        else:
            guess = min(task_systems or [""])  # nothing to match against: the same system every time
        guesses.append((side["task"], guess, actual[side["side"] == "right"], task_systems))
    return Attack.relabelled("style", guesses)


def _judge_guess(*, own: str, labels: list[str], seen: list[dict], judge: dict | None, rng) -> str:
    if judge and judge.get("label"):
        return judge["label"]
    for value in seen:
        if isinstance(value, dict) and value.get("judge_correct") is not None:
            others = [label for label in labels if label != own] or labels
            return own if value["judge_correct"] else rng.choice(others)
    return rng.choice(labels)


def _label_attacks(view: _AnnotatorView, held: list[dict], project: AnnotationProject) -> tuple[Attack, Attack]:
    """``verdict`` and ``timing``: label every held agreement item at random and read the answers."""
    if "verdict" not in kind_of(project).blind_attacks:
        return Attack.scored("verdict", []), Attack.scored("timing", [])
    rng = random.Random(0)  # the attacker's own coin: nothing of the project's
    verdicts = dict(Verdict.objects.filter(pk__in=AnnotationItem.objects.filter(
        pk__in=[claim["item"]["item"]["id"] for claim in held]).values("target_id")).values_list("pk", "label"))
    targets = dict(AnnotationItem.objects.filter(pk__in=[claim["item"]["item"]["id"] for claim in held])
                   .values_list("pk", "target_id"))
    inferred, timed = [], []
    for claim in held:
        item_id = claim["item"]["item"]["id"]
        labels = claim["item"]["item"].get("labels") or list(project.label_set.get("labels", [])) or ["correct"]
        own = rng.choice(labels)
        body = {"item": item_id, "value": {"label": own}, "client_token": str(uuid.uuid4())}
        started = time.perf_counter()
        answer = view.post(reverse("api:label-list"), body)
        elapsed = time.perf_counter() - started
        if answer.status_code != 201:
            continue
        truth = verdicts.get(targets.get(item_id))
        listed = view.get(reverse("api:label-list"), {"item": item_id})
        detail = view.get(reverse("api:item-detail", kwargs={"pk": item_id}))
        context = detail.json() if detail.status_code == 200 else {}
        timed.append((elapsed, own == truth))
        if context.get("revealed"):
            continue  # revealed by the project's own rule (after the label): not an attack
        seen = [answer.json().get("value")] + [row.get("value") for row in
                                               (listed.json().get("results", []) if listed.status_code == 200 else [])]
        seen += [row.get("value") for row in context.get("other_labels") or []]
        guess = _judge_guess(own=own, labels=labels, seen=seen, judge=context.get("judge"), rng=rng)
        inferred.append((guess == truth, 1 / len(labels)))
    half = len(timed) // 2
    timing = []
    if half >= 2:
        learn, test = timed[:half], timed[half:]
        threshold = sorted(t for t, _ in learn)[half // 2]
        fast = sum(agree for t, agree in learn if t < threshold)
        fast_agree = fast >= sum(agree for t, agree in learn if t >= threshold)
        cut = sorted(t for t, _ in test)[len(test) // 2]
        timing = [(((t < cut) == fast_agree) == agree, 0.5) for t, agree in test]
    return Attack.scored("verdict", inferred), Attack.scored("timing", timing)


def blind_audit_annotator(project: AnnotationProject, username: str | None = None):
    """The annotator the audit plays: ``username``, else the project's first annotator."""
    members = ProjectMembership.objects.filter(project=project, role=Role.ANNOTATOR).select_related("user")
    if username:
        members = members.filter(user__username=username)
    membership = members.order_by("user__username").first()
    if membership is None:
        raise ValueError(f"project {project.name!r} has no annotator {username or ''}".rstrip() +
                         ": the audit plays one of its annotators")
    return membership.user


def blind_audit(*, project: AnnotationProject, username: str | None = None) -> dict:
    """Run every attack as one annotator of ``project`` and return ``{"annotator", "attacks"}``,
    each attack ``{"name", "hits", "trials", "chance", "p_value", "beats_chance"}``. Nothing it does is kept."""
    user = blind_audit_annotator(project, username)
    quiet = logging.getLogger("django.request")  # the attacker's refused reads are expected 404s
    level, quiet.level = quiet.level, logging.ERROR
    try:
        return _run(project, user)
    finally:
        quiet.setLevel(level)


def _run(project: AnnotationProject, user) -> dict:
    with transaction.atomic():
        view = _AnnotatorView(user)
        answer = view.post(f"{reverse('api:project-next', kwargs={'pk': project.pk})}?count=50")
        held = answer.json().get("claims", []) if answer.status_code == 200 else []
        items = view.pages(reverse("api:project-items", kwargs={"pk": project.pk}), {"ordering": "position"},
                           limit=MAX_ITEMS)
        attacks = []
        if "schedule" in kind_of(project).blind_attacks:
            sides = _observed_sides(view, project, items)
            truth, systems = _truth(project)
            attacks += [_schedule_attack(sides, truth, systems, project), _style_attack(view, sides, truth, systems)]
        else:
            attacks += [Attack.scored("schedule", []), Attack.scored("style", [])]
        attacks += list(_label_attacks(view, held, project))
        transaction.set_rollback(True)
    return {"project": project.name, "annotator": user.get_username(), "attacks": [
        asdict(a) | {"beats_chance": bool(a.trials) and a.p_value < ALPHA} for a in attacks]}
