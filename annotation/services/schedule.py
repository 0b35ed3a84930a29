"""Pairwise comparison schedules (pure: no database).

SurveyLens §3.3.1 compares surveys in a double round-robin with randomized position swapping
to cancel position bias: every pair of entrants meets twice, once with each on the left.
"""

import random
from collections.abc import Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")


def round_robin_rounds(entrants: Sequence[T]) -> list[list[tuple[T, T]]]:
    """Single round-robin by the circle method: ``n-1`` rounds (``n`` odd: ``n`` rounds with a
    bye) in which every entrant plays at most once, every pair exactly once overall."""
    players: list[T | None] = list(entrants)
    if len(players) < 2:
        return []
    if len(players) % 2:
        players.append(None)
    n = len(players)
    rounds = []
    for _ in range(n - 1):
        matches = [(players[i], players[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in matches if a is not None and b is not None])
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def double_round_robin(entrants: Sequence[T], *, seed: int | str = 0) -> list[tuple[int, int, T, T]]:
    """``(leg, round, left, right)`` for every ordered pair: leg 1 with a random side for each
    pair (seeded), leg 2 the same rounds with the sides swapped. The entrants' order is
    shuffled too, so which pairs come first does not follow the input order."""
    rng = random.Random(seed)
    order = list(entrants)
    rng.shuffle(order)
    first_leg = []
    for number, matches in enumerate(round_robin_rounds(order)):
        for a, b in matches:
            first_leg.append((number, *((a, b) if rng.random() < 0.5 else (b, a))))
    return [(1, number, left, right) for number, left, right in first_leg] + [
        (2, number, right, left) for number, left, right in first_leg
    ]


def pair_schedule(entrants_by_task: Mapping[int, Sequence[T]], *, seed: int | str) -> list[tuple[int, int, int, T, T]]:
    """``(task id, leg, round, left, right)`` in the order a round-robin project's items take their positions:
    each task's ``double_round_robin`` (seeded by ``seed`` and the task), then every task's first
    leg before any second leg, round by round, so both sides of a pair are not labelled back to
    back. Whoever knows ``seed`` and the entrants reads which pair every position holds: a blind
    project's seed is secret (``annotation.blind.secret_seed``)."""
    scheduled = [
        (leg, number, task_id, left, right)
        for task_id, entrants in sorted(entrants_by_task.items())
        for leg, number, left, right in double_round_robin(entrants, seed=f"{seed}:{task_id}")
    ]
    scheduled.sort(key=lambda row: row[:3])
    return [(task_id, leg, number, left, right) for leg, number, task_id, left, right in scheduled]
