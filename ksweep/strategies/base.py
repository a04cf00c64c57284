"""The strategy interface: ask for configs, tell their results.

A strategy searches one space (anything with the ``SearchSpace`` shape: ``len``,
``space[i]`` -> config dict, ``space.index(config)``, ``config in space``, ``params``
with their ordered value lists). It only ever proposes valid configs of that space
(known constraints), never the same config twice, and is deterministic for a seed.
Results come back through ``tell``: a value to *minimise* (the driver negates
maximised objectives) or ``None`` for a config that failed to build or run (a hidden
constraint the strategy should learn to avoid). ``ask(n)`` returns up to ``n`` configs
so that builds can run ahead of the GPU; it may return fewer (even none while it waits
for results), and an empty list with ``exhausted`` true when it has nothing more.
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence


class SearchSpace(Protocol):
    names: tuple[str, ...]
    params: tuple  # of ksweep.spec.model.Param (name, values)

    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    def index(self, config: Mapping[str, Any]) -> int: ...
    def __contains__(self, config: Mapping[str, Any]) -> bool: ...


def config_key(config: Mapping[str, Any], names: Sequence[str]) -> tuple:
    """A hashable identity of a config (its values in parameter order)."""
    return tuple(config[n] for n in names)


class Strategy(abc.ABC):
    """Base of every search strategy. Subclasses implement ``_propose`` and may extend ``tell``."""

    name = "base"

    def __init__(self, space: SearchSpace, seed: int = 0):
        self.space = space
        self.seed = seed
        self.proposed: set[tuple] = set()
        self.history: list[tuple[dict[str, Any], float | None]] = []
        self.exhausted = False

    def ask(self, n: int = 1) -> list[dict[str, Any]]:
        """Up to ``n`` new valid configs, none proposed before."""
        out: list[dict[str, Any]] = []
        for config in self._propose(n):
            key = config_key(config, self.space.names)
            if key in self.proposed:
                continue
            self.proposed.add(key)
            out.append(config)
            if len(out) == n:
                break
        if len(self.proposed) >= len(self.space):
            self.exhausted = True
        return out

    def tell(self, config: Mapping[str, Any], value: float | None) -> None:
        """Report a result: the value to minimise, or None for a failed config. A config told
        without having been proposed (the driver's reference config) is never proposed."""
        self.history.append((dict(config), value))
        self.proposed.add(config_key(config, self.space.names))
        if len(self.proposed) >= len(self.space):
            self.exhausted = True

    @abc.abstractmethod
    def _propose(self, n: int) -> list[dict[str, Any]]:
        """Candidate configs (may include already-proposed ones; ``ask`` filters them)."""

    @property
    def best(self) -> tuple[dict[str, Any], float] | None:
        ok = [(c, v) for c, v in self.history if v is not None]
        return min(ok, key=lambda cv: cv[1]) if ok else None


@dataclass
class Budget:
    """When a search stops: evaluations (failures count), wall time, or no improvement."""

    max_evals: int | None = None
    time_limit: float | None = None  # seconds
    patience: int | None = None  # evaluations without improvement
    started: float = field(default_factory=time.monotonic)
    evals: int = 0
    since_improvement: int = 0
    best: float | None = None

    def record(self, value: float | None, counted: bool = True) -> None:
        """A result told to the search; ``counted=False``: already in ``evals`` (a stored result
        that the budget counted when the sweep started)."""
        if counted:
            self.evals += 1
        if value is not None and (self.best is None or value < self.best):
            self.best = value
            self.since_improvement = 0
        else:
            self.since_improvement += 1

    def remaining(self) -> int | None:
        return None if self.max_evals is None else max(0, self.max_evals - self.evals)

    def exhausted(self) -> bool:
        if self.max_evals is not None and self.evals >= self.max_evals:
            return True
        return self.exhausted_by_time_or_patience()

    def exhausted_by_time_or_patience(self) -> bool:
        if self.time_limit is not None and time.monotonic() - self.started >= self.time_limit:
            return True
        return self.patience is not None and self.since_improvement >= self.patience
