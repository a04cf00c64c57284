"""The fewest candidates that serve every element (pure): a set cover, ties broken by loss.

``cover(losses, universe)`` takes, per candidate, the loss it has on each element it may
serve (in an export: a config, and the shapes it keeps within a tolerance of their own
best), and returns the fewest candidates serving every element; among the covers of that
size, the one whose elements lose least in total, each element served by the chosen
candidate that serves it best.

The search is exact. Candidates that another serves at least as well everywhere are dropped
first; then, for k from a lower bound (the elements over the most one candidate serves) up
to the greedy cover's size, every cover of k candidates is enumerated by branching on the
uncovered element with the fewest candidates; the first k with a cover is the minimum.
Tuning databases give small inputs (tens of shapes, the few configs near each shape's best)
and the search takes milliseconds; past ``node_limit`` search nodes it stops and returns
the greedy cover with ``exact=False``. Greedy (each time the candidate serving the most
uncovered elements) uses at most H(d) <= 1 + ln d times the minimum number of candidates,
d the most elements one candidate serves (Johnson 1974; Lovász 1975).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping

NODE_LIMIT = 200_000


@dataclass(frozen=True)
class Cover:
    chosen: tuple  # the chosen candidates, in the order the input lists them
    assignment: Mapping  # element -> the chosen candidate serving it with the least loss
    loss: float  # the sum of the elements' losses under the assignment
    exact: bool  # True: no cover has fewer candidates, nor one of as many less loss


def cover(losses: Mapping[Hashable, Mapping[Hashable, float]], universe: Iterable[Hashable],
          node_limit: int = NODE_LIMIT) -> Cover:
    """``losses[c][e]``: the loss of candidate c on element e, for each element c may serve
    (elements outside ``universe`` are ignored). Raises ValueError when an element of the
    universe has no candidate."""
    universe = list(dict.fromkeys(universe))
    members = set(universe)
    order = {c: i for i, c in enumerate(losses)}
    serves = {c: {e: float(x) for e, x in row.items() if e in members} for c, row in losses.items()}
    serves = {c: row for c, row in serves.items() if row}
    missing = [e for e in universe if not any(e in row for row in serves.values())]
    if missing:
        raise ValueError(f"no candidate serves {missing[0]!r}")
    if not universe:
        return Cover((), {}, 0.0, True)
    serves = _undominated(serves)
    greedy = _greedy(serves, universe)
    search = _Search(serves, universe, node_limit)
    found, exact = search.minimum(len(greedy))
    chosen = sorted(found if found is not None else greedy, key=order.__getitem__)
    assignment = {e: min((c for c in chosen if e in serves[c]), key=lambda c: (serves[c][e], order[c]))
                  for e in universe}
    return Cover(tuple(chosen), assignment, sum(serves[assignment[e]][e] for e in universe), exact)


def _undominated(serves: dict) -> dict:
    """Without each candidate that another serves at least as well on every element it
    serves (of two equal ones, the first is kept): a least cover never needs it."""
    keys = list(serves)

    def beats(b, a) -> bool:
        ra, rb = serves[a], serves[b]
        if not ra.keys() <= rb.keys() or any(rb[e] > x for e, x in ra.items()):
            return False
        equal = ra.keys() == rb.keys() and all(rb[e] == x for e, x in ra.items())
        return not equal or keys.index(b) < keys.index(a)

    return {a: serves[a] for a in keys if not any(b != a and beats(b, a) for b in keys)}


def _greedy(serves: dict, universe: list) -> list:
    left, chosen = set(universe), []
    while left:
        pick = max(serves, key=lambda c: (len(left & serves[c].keys()),
                                          -sum(serves[c][e] for e in left & serves[c].keys())))
        chosen.append(pick)
        left -= serves[pick].keys()
    return chosen


class _Search:
    def __init__(self, serves: dict, universe: list, node_limit: int):
        self.serves, self.universe, self.node_limit = serves, universe, node_limit
        self.by_element = {e: [c for c in serves if e in serves[c]] for e in universe}
        self.widest = max(len(row) for row in serves.values())
        self.nodes = 0

    def minimum(self, upper: int) -> tuple[list | None, bool]:
        """The least-loss cover of the fewest candidates (at most ``upper``), and whether the
        search finished; (None, False) when it ran out of nodes first."""
        for k in range(math.ceil(len(self.universe) / self.widest), upper + 1):
            self.best: tuple[float, list] | None = None
            if not self._covers([], {}, k):
                return (self.best[1] if self.best else None), False
            if self.best is not None:
                return self.best[1], True
        return None, False  # unreachable: the greedy cover has ``upper`` candidates

    def _covers(self, chosen: list, got: dict, k: int) -> bool:
        """Every cover of at most k candidates extending ``chosen`` (``got``: element -> its
        least loss so far), the least-loss one kept; False when out of nodes."""
        self.nodes += 1
        if self.nodes > self.node_limit:
            return False
        left = [e for e in self.universe if e not in got]
        if not left:
            loss = sum(got.values())
            if self.best is None or loss < self.best[0]:
                self.best = (loss, list(chosen))
            return True
        if len(chosen) + math.ceil(len(left) / self.widest) > k:
            return True
        pivot = min(left, key=lambda e: len(self.by_element[e]))
        for c in self.by_element[pivot]:
            extended = dict(got)
            for e, x in self.serves[c].items():
                if e not in extended or x < extended[e]:
                    extended[e] = x
            if not self._covers(chosen + [c], extended, k):
                return False
        return True
