"""The strategy interface: ask for configs, tell their results.

A strategy searches one space (anything with the ``SearchSpace`` shape: ``len``,
``space[i]`` -> config dict, ``space.index(config)``, ``config in space``, ``params``
with their ordered value lists). A space may hold more than 2**63 - 1 configs, which
``len()`` cannot return: its ``size`` (an exact Python integer) counts them then, and its
positions are Python integers (``space_size`` reads whichever count the space has). A
strategy only ever proposes valid configs of that space (known constraints), never the
same config twice, and is deterministic for a seed.
Results come back through ``tell``: a value to *minimise* (the driver negates
maximised objectives) or ``None`` for a config that failed to build or run (a hidden
constraint the strategy should learn to avoid). ``ask(n)`` returns up to ``n`` configs
so that builds can run ahead of the GPU; it may return fewer (even none while it waits
for results), and an empty list with ``exhausted`` true when it has nothing more.
"""

from __future__ import annotations

import abc
import operator
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from ..errors import NoBudget


class SearchSpace(Protocol):
    names: tuple[str, ...]
    params: tuple  # of ksweep.spec.model.Param (name, values)

    def __len__(self) -> int: ...  # raises beyond 2**63 - 1; ``size``, where present, counts any space
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    def index(self, config: Mapping[str, Any]) -> int: ...
    def __contains__(self, config: Mapping[str, Any]) -> bool: ...


INDEX_LIMIT = 2**63 - 1  # the largest position an int64 holds: above it, positions are Python ints


def space_size(space: SearchSpace) -> int:
    """The number of valid configs of ``space``: its ``size`` when it has one (``Space.size``,
    exact beyond 2**63 - 1 where ``len()`` raises), else ``len(space)``."""
    size = getattr(space, "size", None)
    if size is not None and not callable(size):
        try:
            return operator.index(size)
        except TypeError:
            pass
    return len(space)


def require_budget(space: SearchSpace, budget_hint: int | None) -> None:
    """Refuse a search that only the end of the space would stop, on a space of more than
    2**63 - 1 configs (it would never end). ``budget_hint`` at least the space's size means
    no budget: the driver passes the size when there is no --max-evals, --time-limit or
    --patience (a budget that covers the space)."""
    size = space_size(space)
    if size > INDEX_LIMIT and budget_hint is not None and budget_hint >= size:
        label = getattr(space, "label", None)
        where = f"{label}: " if label else ""
        raise NoBudget(f"{where}the space has {size:.3e} valid configs, more than any sweep can evaluate: "
                       f"give --max-evals N or --time-limit SECONDS to sample it")


def config_key(config: Mapping[str, Any], names: Sequence[str]) -> tuple:
    """A hashable identity of a config (its values in parameter order)."""
    return tuple(config[n] for n in names)


class Strategy(abc.ABC):
    """Base of every search strategy. Subclasses implement ``_propose`` and may extend ``tell``."""

    name = "base"
    # whether what it proposes depends on what it is told: a search that does not (grid,
    # random, a given list) is asked as far ahead as the pipeline keeps configs in flight; one
    # that does is asked at most the window ahead of what it was told, so that a seeded search
    # is one sequence of events whatever order its results arrive in
    adaptive = True

    def __init__(self, space: SearchSpace, seed: int = 0):
        self.space = space
        self.space_size = space_size(space)
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
        if len(self.proposed) >= self.space_size:
            self.exhausted = True
        return out

    def tell(self, config: Mapping[str, Any], value: float | None) -> None:
        """Report a result: the value to minimise, or None for a failed config. A config told
        without having been proposed (the driver's reference config) is never proposed."""
        self.history.append((dict(config), value))
        self.proposed.add(config_key(config, self.space.names))
        if len(self.proposed) >= self.space_size:
            self.exhausted = True

    @abc.abstractmethod
    def _propose(self, n: int) -> list[dict[str, Any]]:
        """Candidate configs (may include already-proposed ones; ``ask`` filters them)."""

    def phase_of(self, config: Mapping[str, Any]) -> str | None:
        """The phase of the search a config was asked in (a phased search's tier1, tier2),
        stored with its result; None for a search of one phase."""
        return None

    @property
    def label(self) -> str:
        """The search that runs, as reports name it: the strategy's name (``auto``: the one
        it chose)."""
        return self.name

    @property
    def warm_dropped(self) -> str | None:
        """Why a warm-started search dropped its sources and went on cold (they misled it),
        in words for the user; None when it did not."""
        return None

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
        return self.exhausted_by_time() or (self.patience is not None and self.since_improvement >= self.patience)

    def exhausted_by_time(self) -> bool:
        return self.time_limit is not None and time.monotonic() - self.started >= self.time_limit
