"""What one ``ksweep run`` is asked to do (``SweepOptions``) and what it did (``Summary``).

The options' defaults are ``ksweep run``'s: the CLI sets only what the user typed, so the
library and the command run the same sweep.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

from ..verify.confirm import Confirmation
from ..errors import KsweepError
from ..result import Result

RERUN = ("failed", "all")


@dataclass
class Summary:
    """Counts and times of one `ksweep run`."""

    counts: dict[str, int] = field(default_factory=dict)
    counted: set = field(default_factory=set)  # (variant, shape, config_id) of each result in counts
    evaluated: int = 0
    resumed: int = 0
    wall_seconds: float = 0.0
    build_cpu_seconds: float = 0.0
    gpu_seconds: float = 0.0
    gpu_slots: int = 1
    has_gpu: bool = True  # False: runs went to no GPU (a CPU sweep): no GPU figures to report
    ran_on: set = field(default_factory=set)  # GPU models the runs went to, when not known before (Dask)
    interrupted: bool = False
    failed: bool = False  # stopped by an error (a bad database, a host problem): nothing to report
    best: dict[tuple[str, str, str | None], Result] = field(default_factory=dict)
    sm_clocks: list = field(default_factory=list)  # the median SM clock of each run (NVML), MHz
    throttled: int = 0  # runs measured while throttled (each measured a second time)
    confirm_runs: int = 0  # confirmation runs (not counted by --max-evals)
    confirm_seconds: float = 0.0  # wall time of the confirmation phases
    harden_seconds: float = 0.0  # wall time of the hardening's runs (the sanitizers', the further inputs')
    # several objectives: the searches (not grid, not random) that only the first one guided
    searched_by: dict[str, str] = field(default_factory=dict)  # strategy -> the objective's metric
    notes: list = field(default_factory=list)  # what the user should know of the run (a blind check), each once
    # what the hardening of the leaders did, a line per shape × variant, or why it did not run
    hardened: list = field(default_factory=list)
    shared: int = 0  # configs whose build made a program another config's run measured: not run again
    dead_knobs: list = field(default_factory=list)  # (variant, shape, programs.DeadKnob): knobs that change no program

    def note_gpu_state(self, state: Mapping) -> None:
        if state.get("sm_clock_mhz"):
            self.sm_clocks.append(state["sm_clock_mhz"])
        self.throttled += bool(state.get("throttled"))

    @property
    def clocks(self) -> str:
        """'SM clock 1980 MHz median (1755-1980), 2 runs throttled', or '' without NVML data."""
        if not self.sm_clocks:
            return ""
        c = sorted(self.sm_clocks)
        text = f"SM clock {c[len(c) // 2]} MHz median ({c[0]}-{c[-1]})"
        return text + (f", {self.throttled} runs throttled" if self.throttled else ", never throttled")

    @property
    def gpu_idle_share(self) -> float:
        capacity = self.wall_seconds * self.gpu_slots
        return max(0.0, 1.0 - self.gpu_seconds / capacity) if capacity > 0 else 0.0

    @property
    def configs_per_minute(self) -> float:
        return 60.0 * self.evaluated / self.wall_seconds if self.wall_seconds > 0 else 0.0


# the largest seed every strategy takes (optuna's samplers, and so bayes, take 32 bits)
SEED_MAX = 2**32 - 1


@dataclass(frozen=True)
class SweepOptions:
    """How a sweep searches, what it resumes and what it confirms. The defaults are ``ksweep
    run``'s: the CLI sets only what the user typed, so ``ksweep.run_sweep(spec)`` runs the
    sweep ``ksweep run spec`` runs (``auto``: the whole space when no budget bounds it, else
    the surrogate search; the 5 leaders within 5% and the default confirmed in 3 rounds)."""

    strategy: str = "auto"
    seed: int = 0
    max_evals: int | None = None
    time_limit: float | None = None
    patience: int | None = None
    shapes: tuple[str, ...] | None = None
    variants: tuple[str, ...] | None = None
    lookahead: int | None = None  # configs asked ahead of the results (default: 2 × build jobs + GPU slots)
    record_pruned: bool = True
    rerun: str | None = None  # "failed": evaluate stored failures again; "all": ignore stored results
    # --rerun all: the results it measures again are superseded until then (readers see its new
    # ones only); False for a caller that measures a few configs again and leaves the others (check)
    rerun_supersedes: bool = True
    gpu_check: bool = True  # refuse, before building, a CUDA program sweep on a host without a GPU
    # re-measure the leaders and the default after each shape × variant (ksweep/verify/confirm.py); None: no
    confirm: Confirmation | None = Confirmation()
    # warm start (docs/strategies.md#warm-start): databases or recorded datasets to start each
    # search from, and whether each shape starts from the shapes this run swept before it
    warm_start: tuple[str, ...] = ()
    warm_between_shapes: bool = True
    # the leaders run under compute-sanitizer before BEST is named ([harden]; --no-harden: False)
    harden: bool = True
    # a config whose outputs differ from one run to the next may not be BEST (--deterministic)
    deterministic: bool = False
    # --cross K: once every shape of a variant is searched, each one's K best measured at the others
    # (sweep/driver.py's ``_cross``); 0: not
    cross: int = 0

    def __post_init__(self):
        if self.rerun is not None and self.rerun not in RERUN:
            raise KsweepError(f"--rerun {self.rerun}: choose failed or all")
        _whole("max_evals", self.max_evals, 1)
        _whole("patience", self.patience, 1)
        _whole("cross", self.cross, 0, optional=False)
        _whole("seed", self.seed, 0, optional=False, most=SEED_MAX)
        if self.time_limit is not None and not (isinstance(self.time_limit, (int, float))
                                                and not isinstance(self.time_limit, bool)
                                                and 0 <= self.time_limit < float("inf")):
            raise KsweepError(f"time_limit {self.time_limit!r}: give a number of seconds, 0 or more")
        # one name or path given alone, not in a tuple: not read one character at a time
        for name in ("warm_start", "shapes", "variants"):
            value = getattr(self, name)
            if isinstance(value, (str, os.PathLike)):
                object.__setattr__(self, name, (os.fspath(value),))
            elif value is not None:
                object.__setattr__(self, name, tuple(os.fspath(v) for v in value))


def _whole(name: str, value, least: int, optional: bool = True, most: int | None = None) -> None:
    """An option that must be a whole number of at least ``least`` (and at most ``most``; or
    None when optional)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least or (most is not None and value > most):
        raise KsweepError(f"{name} {value!r}: give a whole number of at least {least}"
                          + (f" and at most {most}" if most is not None else ""))


