"""Confirmation rounds owed: a confirmation that began is finished by the next run.

A confirmation measures a fixed set of configs in interleaved rounds. Which configs, in
which order, is chosen once, when it begins, from the results then stored; it is written
to the store (the meta key ``confirming:<variant>:<shape>``) before its first run and
removed after its last. A sweep stopped in between (Ctrl-C, ``kill -9``) leaves it owed: the
next run of the same experiment measures the same configs, in the same order, in the
rounds they lack, so that its verdict is the one an uninterrupted run gives. Choosing
again from the results would not be: the default config evaluated for the confirmation
would then compete with the leaders, and a config already measured in one round could be
left out, its one round read as a TIE.

A plan stands while each of its configs' stored result has the key it was measured
under; otherwise (a source edited, a spec changed) it is dropped and a new one is chosen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..verify.confirm import counts_for
from ..job import config_id
from ..result import Measurement, Result
from ..status import Status


@dataclass(frozen=True)
class OwedConfirmation:
    """One shape × variant's confirmation, from its first run to its last."""

    variant: str
    shape: str
    configs: tuple[str, ...]  # config ids, in round 0's order
    keys: Mapping[str, str]  # config id -> the result key it is measured under
    rounds: int
    since: float  # when it began
    fresh: frozenset[str] = field(default_factory=frozenset)  # its runs before ``since`` do not count
    how: str = ""  # the confirmation's settings it was chosen under (K, within, default): another is another plan

    @property
    def meta_key(self) -> str:
        return key_of(self.variant, self.shape)

    def to_meta(self) -> dict:
        return {"configs": list(self.configs), "keys": dict(self.keys), "rounds": self.rounds, "since": self.since,
                "fresh": sorted(self.fresh), "how": self.how}

    @classmethod
    def from_meta(cls, variant: str, shape: str, value: Mapping) -> "OwedConfirmation":
        return cls(variant, shape, tuple(value["configs"]), dict(value["keys"]), int(value["rounds"]),
                   float(value["since"]), frozenset(value.get("fresh", ())), str(value.get("how", "")))

    def stands(self, results: Mapping[str, Result | None]) -> bool:
        """Whether every config still has a stored result under the key it is measured under."""
        return all((r := results.get(cid)) is not None and r.cache_key == self.keys.get(cid)
                   for cid in self.configs)

    def done(self, measurements: Iterable[Measurement], results: Mapping[str, Result | None]) -> set[tuple[str, int]]:
        """(config id, round) of the runs it has: taken under the config's key since its result
        was measured (``confirm.counts_for``), and for a fresh config since it began."""
        out = set()
        for m in measurements:
            cid = config_id(m.params)
            if cid not in self.keys or m.round >= self.rounds:
                continue
            if not counts_for(m, results.get(cid), self.keys[cid]):
                continue
            if cid in self.fresh and (m.finished is None or m.finished < self.since):
                continue
            out.add((cid, m.round))
        return out

    def finished(self, measurements: Iterable[Measurement], results: Mapping[str, Result | None]) -> bool:
        done = self.done(measurements, results)
        return all((cid, r) in done for cid in self.configs for r in range(self.rounds))


def key_of(variant: str, shape: str) -> str:
    return f"confirming:{variant}:{shape}"


def owed(store, variant: str, shape: str) -> OwedConfirmation | None:
    """The confirmation of (variant, shape) that began and did not end, if any."""
    value = store.get_meta(key_of(variant, shape))
    if not isinstance(value, dict):
        return None
    try:
        return OwedConfirmation.from_meta(variant, shape, value)
    except (KeyError, TypeError, ValueError):  # written by another version: choose anew
        return None


def begin(store, plan: OwedConfirmation) -> None:
    """Record a confirmation before its first run (a kill after it leaves it owed)."""
    store.set_meta(plan.meta_key, plan.to_meta())


def end(store, variant: str, shape: str) -> None:
    """The confirmation ran its last run, or was dropped: nothing is owed."""
    store.delete_meta(key_of(variant, shape))


def candidates(results: Iterable[Result]) -> list[Result]:
    """The results a confirmation chooses its leaders from: those the search measured. The
    default config evaluated for a confirmation (phase ``default``) is its baseline, added
    apart; as a candidate it would change the leaders of a confirmation that is resumed. A
    config that shares another's run (``same_as``: one program) is not one: the config
    measured stands for it, so that one program is never several leaders."""
    return [r for r in results if r.phase != "default" and r.status is not Status.PRUNED and r.same_as is None]
