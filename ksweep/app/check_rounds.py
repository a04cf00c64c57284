"""The rounds of ``ksweep check`` (its library half is ``check.py``): the baseline revision
rebuilt, and the baseline and current builds of one config measured in turn until they are
told apart or the time is spent.

Each round runs the baseline build once and the current build once, in an order that
alternates round by round; a slower machine today slows both runs of a round, and the
round's speed-up stands (``verify/medians.paired``). After each round, from the
``repeats``-th on, the speed-up's interval decides (``medians.decide``): wholly below ``1 -
tolerance``, REGRESSED; wholly at or above it, ok (or faster); straddling it, one more
round, until ``budget`` seconds have gone by since the first round (or ``MAX_ROUNDS``):
then inconclusive.

Where the baseline cannot be rebuilt (its revision is not a commit of the repository, it
does not build or run, ``build/checkout.py`` says why) the current build alone is measured
and compared with the stored figures of the baseline, their intervals apart
(``medians.unpaired``); the rounds stop early once the stored interval alone is too wide
for any number of runs of the current build to decide.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from ..errors import KsweepError
from ..build.checkout import Unavailable, checked_out
from ..result import Measurement
from ..run.base import Executor
from ..space.space import Space
from ..spec.model import Spec
from ..status import Status
from ..store.sqlite import Store
from ..sweep.jobs import JobFactory
from ..sweep.rounds import Contender
from ..verify import medians
from ..verify.confirm import Interval, order
from .wiring import mode_for

MAX_ROUNDS = 200  # rounds of one shape × variant at most, whatever the budget


class Baselines:
    """The baseline revisions of one check, each checked out and given an executor once (on
    ``stack``, which removes them when the check ends)."""

    def __init__(self, spec: Spec, stack: contextlib.ExitStack, make_executor: Callable[[Spec], Executor]):
        self.spec, self.stack, self.make_executor = spec, stack, make_executor
        self._trees: dict[str, tuple[Spec, Executor] | str] = {}

    def contender(self, revision: str, shape: str, variant: str, space: Space, params: dict) -> Contender | str:
        """Config ``params`` built from the sources of ``revision``, or why it cannot be."""
        entry = self._trees.get(revision)
        if entry is None:
            entry = self._trees[revision] = self._check_out(revision)
        if isinstance(entry, str):
            return entry
        spec, executor = entry
        sh = next(s for s in spec.shape_list() if s.name == shape)
        va = next(v for v in spec.variant_list() if v.name == variant)
        try:
            job = JobFactory(spec, sh, va, space, mode_for(spec)).make(params)
        except KsweepError as exc:
            return f"its sources at {revision} do not make the config: {exc}"
        contender = Contender(spec, executor, job)
        problem = contender.build()
        return contender if problem is None else f"at {revision}, {' '.join(problem.split())[:400]}"

    def _check_out(self, revision: str) -> tuple[Spec, Executor] | str:
        try:
            root = self.stack.enter_context(checked_out(self.spec.root, revision))
        except Unavailable as exc:
            return str(exc)
        # the spec as it is now (its commands, its settings), on the revision's sources
        if self.spec.path is not None:
            path = root / self.spec.path.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(self.spec.path.read_bytes())
            spec = replace(self.spec, path=path)
        else:
            spec = replace(self.spec, folder=root)
        executor = self.make_executor(spec)
        self.stack.push(lambda kind, exc, tb: executor.shutdown(cancel=kind is not None))
        return spec, executor


@dataclass
class Rounds:
    """What one shape × variant's rounds measured."""

    now: list[float | None] = field(default_factory=list)  # round -> the current build's value (None: failed)
    base: list[float | None] = field(default_factory=list)  # round -> the rebuilt baseline's ([]: stored)
    speedup: Interval | None = None
    verdict: str | None = None  # medians.decide's, None: undecided
    failed: Measurement | None = None  # the current build's run that did not end OK
    note: str = ""  # why the baseline is the stored one
    seconds: float = 0.0

    @property
    def count(self) -> int:
        return len(self.now)


def measure(now: Contender, base: Contender | None, extra: tuple[Contender, ...], stored: Interval, *,
            store: Store, direction: str, tolerance: float, repeats: int, budget: float,
            note: str = "") -> Rounds:
    """Rounds of ``now`` and ``base`` (the baseline rebuilt; None: ``stored``, the baseline's
    stored median and interval), and of ``extra`` (the current build's other configs, recorded
    only), each current run stored in ``store`` as a confirmation run."""
    out = Rounds(note=note)
    started = time.monotonic()
    while True:
        r = out.count
        sides = [c for c in (base, now, *extra) if c is not None]
        got: dict[int, Measurement] = {}
        for c in order(sides, r):
            m = c.run(r)
            got[id(c)] = m
            if c is not base:
                store.put_measurement(m)
        m = got[id(now)]
        out.now.append(m.value if m.status is Status.OK else None)
        if m.status is not Status.OK or m.value is None:
            out.failed = m
            break
        if base is not None:
            b = got[id(base)]
            value = b.value if b.status is Status.OK else None
            if value is None and not any(x is not None for x in out.base):  # it never ran: the stored figures
                out.base, base = [], None
                out.note = f"the rebuilt baseline did not run ({b.status.value}: {b.message})"
            else:
                out.base.append(value)
        out.speedup = _speedup(out, stored, direction)
        out.verdict = medians.decide(out.speedup, tolerance) if out.speedup is not None else None
        out.seconds = time.monotonic() - started
        if out.count >= repeats and (out.verdict is not None or out.count >= MAX_ROUNDS or out.seconds >= budget
                                     or (base is None and _hopeless(out, stored, direction, tolerance))):
            break
    out.seconds = time.monotonic() - started
    return out


def _speedup(out: Rounds, stored: Interval, direction: str) -> Interval | None:
    speedup = medians.paired(out.base, out.now, direction) if out.base else None
    if speedup is not None:
        return speedup
    now = medians.median_interval([v for v in out.now if v is not None])
    return medians.unpaired(stored, now, direction) if now is not None else None


def _hopeless(out: Rounds, stored: Interval, direction: str, tolerance: float) -> bool:
    """Even a current build measured without noise would not be told apart from the stored
    interval of the baseline: more rounds cannot decide."""
    if stored.n < 2 or out.speedup is None:
        return False
    now = medians.median_interval([v for v in out.now if v is not None])
    exact = Interval(now.median, now.median, now.median, now.n)
    return medians.decide(medians.unpaired(stored, exact, direction), tolerance) is None
