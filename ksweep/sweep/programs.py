"""Configs whose builds are one program (pure).

A build's code digest (``BuildResult.code``, ``elf/code.py``) says which configs built the
same program: device and host code as ``ksweep guard --check`` compares them, whatever
folder or time the build embedded. Two configs whose builds are one program and whose runs
are the same (``Job.run_key``: the run command as written, the launch, the settings) would
measure the same thing, so the pipeline runs the first and stores its result for both.

What the builds say of the knobs, read here:

- ``DeadKnobs``: a knob whose values never change the program. Builds that differ in that
  knob alone (the knobs already named aside) and made the same program show it; once
  ``LEAST_BUILDS`` builds over two of its values or more show it, and none shows otherwise,
  it is named (``UNROLL_HINT: 0 of 8 builds differ``).
- ``SameProgramGuard``: no knob changes the program. When the first builds of a search
  all made one program, although every knob that can differ took two values among them, the
  sweep stops (as ``systematic.py``'s rule stops a sweep whose first builds all fail the
  same way): every config would measure the same. Its results are held until it is decided.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

LEAST_BUILDS = 4  # builds that show a knob changes no program before it is named
STOP_LEAST = 4  # builds of one program, every knob varied, that stop a sweep (fewer in a smaller space)
STOP_MOST = 8  # builds after which the guard gives up deciding (a knob never varied)
PROBE_SAMPLES = 64  # configs drawn to find a build that varies the knobs not varied yet


@dataclass(frozen=True)
class DeadKnob:
    """A knob the builds show changes no program."""

    name: str
    builds: int  # builds that differ from another build in this knob alone (knobs named before aside)
    values: tuple  # its values among them

    @property
    def line(self) -> str:
        shown = ", ".join(map(str, self.values[:6])) + (", …" if len(self.values) > 6 else "")
        return (f"{self.name}: 0 of {self.builds} builds differ (values {shown}): it changes no program, "
                f"configs that differ only in it are measured once")


@dataclass
class _Group:
    programs: dict = field(default_factory=dict)  # the knob's value -> the programs built with it
    builds: int = 0


class DeadKnobs:
    """Names the knobs whose values change no program, as soon as the builds show it."""

    def __init__(self, names: Sequence[str], least: int = LEAST_BUILDS):
        self.names = list(names)
        self.least = least
        self.live: set[str] = set()  # shown to change the program
        self.dead: dict[str, DeadKnob] = {}
        self._builds: list[tuple[tuple, str]] = []
        self._regroup()

    def _regroup(self) -> None:
        """The builds grouped, for each knob not decided yet, by the values of the knobs that are
        neither it nor named dead."""
        self._groups: dict[str, dict[tuple, _Group]] = {n: {} for n in self._open()}
        self._shown: dict[str, int] = {n: 0 for n in self._groups}  # builds in groups of two values or more
        self._values: dict[str, set] = {n: set() for n in self._groups}
        for values, program in self._builds:
            self._add(values, program)

    def _open(self) -> list[str]:
        return [n for n in self.names if n not in self.live and n not in self.dead]

    def see(self, config: Mapping[str, Any], program: str) -> list[DeadKnob]:
        """One build's config and program; the knobs it shows dead (each named once)."""
        values = tuple(config.get(n) for n in self.names)
        self._builds.append((values, program))
        self._add(values, program)
        named = []
        while True:
            found = next((n for n in self._open() if self._shown[n] >= self.least and len(self._values[n]) >= 2),
                         None)
            if found is None:
                return named
            knob = DeadKnob(found, self._shown[found], tuple(sorted(self._values[found], key=_order)))
            self.dead[found] = knob
            named.append(knob)
            self._regroup()  # the other knobs' twins are now those that differ in it too

    def _add(self, values: tuple, program: str) -> None:
        index = {n: i for i, n in enumerate(self.names)}
        ignored = {index[n] for n in self.dead}
        for name in list(self._groups):
            i = index[name]
            key = tuple(v for j, v in enumerate(values) if j != i and j not in ignored)
            group = self._groups[name].setdefault(key, _Group())
            before = len(group.programs)
            group.programs.setdefault(values[i], set()).add(program)
            group.builds += 1
            if len(group.programs) < 2:
                continue
            if len(set().union(*group.programs.values())) > 1:  # another value, another program
                self.live.add(name)
                del self._groups[name], self._shown[name], self._values[name]
                continue
            self._shown[name] += group.builds if before < 2 else 1
            self._values[name].update(group.programs)


class SameProgramGuard:
    """Watches the first builds of one shape × variant's search: ``see`` answers "hold" (keep
    its result back), "store" (decided: knobs change the program, or it cannot tell) or
    "stop" (every build made one program although every knob took two values)."""

    def __init__(self, values: Mapping[str, Sequence], size: int, least: int = STOP_LEAST, most: int = STOP_MOST):
        self.values = {n: list(v) for n, v in values.items() if len(v) > 1}  # the knobs that can differ
        self.least = max(2, min(least, size))
        self.most = most
        self.open = bool(self.values) and size > 1
        self.program: str | None = None
        self.builds = 0
        self.seen: dict[str, set] = {n: set() for n in self.values}

    def see(self, config: Mapping[str, Any], program: str | None) -> str:
        """One finished build of the search (``program`` None: it failed, or has no digest)."""
        if not self.open:
            return "store"
        if program is None or (self.program is not None and program != self.program):
            self.open = False
            return "store"
        self.program = program
        self.builds += 1
        for n in self.values:
            self.seen[n].add(_hashable(config.get(n)))
        if self.builds >= self.least and not self.unvaried():
            return "stop"
        if self.builds >= self.most:
            self.open = False
            return "store"
        return "hold"

    def close(self) -> None:
        self.open = False

    def unvaried(self, also: Iterable[Mapping[str, Any]] = ()) -> list[str]:
        """The knobs not built with two values yet (nor in ``also``: configs asked, not built yet)."""
        seen = {n: set(s) for n, s in self.seen.items()}
        for config in also:
            for n in seen:
                seen[n].add(_hashable(config.get(n)))
        return [n for n, s in seen.items() if len(s) < 2]

    @property
    def varied(self) -> list[str]:
        return [n for n, s in self.seen.items() if len(s) >= 2]

    def message(self, label: str) -> str:
        """The one line a stopped sweep says."""
        knobs = ", ".join(self.varied)
        return (f"{label}: no parameter changes the program: the first {self.builds} builds ({knobs} each built "
                f"with two values or more) are one program, device and host code alike, run with one command, so "
                f"every config would measure the same; nothing was stored — does the source read the -D names "
                f"(`ksweep plan` names a -D that no source reads, and one an unguarded #define replaces)?")


def probe(space, size: int, unvaried: Sequence[str], seen: Mapping[str, set], seed: int = 0,
          samples: int = PROBE_SAMPLES) -> dict | None:
    """A valid config of ``space`` (of ``size`` configs) whose values of the ``unvaried``
    knobs are ones not ``seen`` yet, as many of them as a few random draws find; None when
    none varies any."""
    rng = random.Random(seed)
    best, score = None, 0
    for _ in range(min(samples, size)):
        config = space[rng.randrange(size)]
        s = sum(_hashable(config.get(n)) not in seen.get(n, ()) for n in unvaried)
        if s > score:
            best, score = config, s
            if s == len(unvaried):
                break
    return best


def _hashable(value):
    return value if not isinstance(value, (list, dict)) else repr(value)


def _order(value):
    return (0, value, "") if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, 0, str(value))
