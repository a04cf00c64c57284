"""How long a sweep will take on this machine, from build and run times already measured.

Pure: a ``Cost`` is made from stored results (``cost_of``) or from sample builds, and
``wall_seconds`` turns a number of configs into an expected wall time on ``cores`` build
jobs and ``gpus`` run slots. Builds and runs overlap (the driver builds ahead), so the
sweep goes at the pace of the slower of the two pipelines, plus one build and one run to
fill and drain them. Results served from the build cache say nothing about a fresh build's
cost and are left out of the build figure. With no run measured (sample builds alone) the
figures are lower bounds: the builds' time only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from ..result import Result
from ..status import Status


@dataclass(frozen=True)
class Cost:
    build_seconds: float  # a fresh build, wall (one build job)
    run_seconds: float  # one run (0 when no run was measured)
    builds: int  # how many builds the figure is the mean of
    runs: int
    failed_builds: float = 0.0  # share of configs whose build failed (they take no GPU time)
    source: str = "database"  # "database", "sample builds", "sample builds, runs from the database", or
    # "--warm-start NAME" (the times of a source database: another shape, GPU or revision), or
    # "sample builds, runs from --warm-start NAME"

    @property
    def lower_bound(self) -> bool:
        """No run, or no fresh build, was measured: the figures count the other alone."""
        return not self.runs or not self.builds

    def describe(self) -> str:
        warm = self.source.find("--warm-start")
        borrowed = f", from {self.source[warm:]}" if warm >= 0 else ""
        sampled = self.source.startswith("sample builds")  # then only the runs can be borrowed
        run = (f"{self.run_seconds:.2f} s per run ({self.runs} runs{borrowed if sampled else ''})" if self.runs
               else "no run measured yet: the builds' time alone")
        if sampled:
            return f"{self.build_seconds:.1f} s per build ({self.builds} sample builds), {run}"
        if not self.builds:
            return f"no fresh build measured (every build came from the cache{borrowed}): the runs' time alone, {run}"
        return f"{self.build_seconds:.1f} s per build ({self.builds} builds measured{borrowed}), {run}"


def cost_of(results: Iterable[Result], source: str = "database") -> Cost | None:
    """Mean build and run times of stored results (a build figure of 0 when every build came
    from the cache); None when neither was measured."""
    builds, runs, failed, total = [], [], 0, 0
    for r in results:
        if r.status is Status.PRUNED:
            continue
        total += 1
        if r.build_seconds is not None and not r.cached:
            builds.append(r.build_seconds)
        if r.run_seconds is not None:
            runs.append(r.run_seconds)
        failed += r.status.build_failure
    if not builds and not runs:
        return None
    return Cost(build_seconds=sum(builds) / len(builds) if builds else 0.0, run_seconds=sum(runs) / len(runs) if runs else 0.0,
                builds=len(builds), runs=len(runs), failed_builds=failed / total if total else 0.0, source=source)


def sample_cost(build_seconds: Sequence[float]) -> Cost | None:
    """The cost of sample builds (no run measured)."""
    if not build_seconds:
        return None
    return Cost(sum(build_seconds) / len(build_seconds), 0.0, len(build_seconds), 0, source="sample builds")


def with_runs(sample: Cost, measured: Cost | None) -> Cost:
    """Sample builds' cost, with the run times (and the share of failed builds) that a
    database measured: the sample builds nothing it runs."""
    if measured is None or not measured.runs:
        return sample
    where = "the database" if measured.source == "database" else measured.source  # or --warm-start NAME
    return replace(sample, run_seconds=measured.run_seconds, runs=measured.runs,
                   failed_builds=measured.failed_builds, source=f"sample builds, runs from {where}")


def wall_seconds(configs: int, cost: Cost, cores: int, gpus: int) -> float:
    """Expected wall time of evaluating ``configs`` configs (builds on ``cores`` jobs, runs on
    ``gpus`` slots, overlapping)."""
    if configs <= 0:
        return 0.0
    cores, gpus = max(1, cores), max(1, gpus)
    per_build = cost.build_seconds / cores
    per_run = cost.run_seconds * (1.0 - cost.failed_builds) / gpus
    return configs * max(per_build, per_run) + cost.build_seconds + cost.run_seconds


def confirmation_seconds(runs: int, cost: Cost, gpus: int) -> float:
    """The confirmation's ``runs`` more runs of a shape × variant's leaders (nothing to build)."""
    return runs * cost.run_seconds / max(1, gpus)


def duration(seconds: float) -> str:
    """'45 s', '12 min', '3.4 h', '5.2 days', '3.1 years', 'about 4e+09 years'."""
    if not math.isfinite(seconds):
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds < 730 * 86400:
        return f"{seconds / 86400:.1f} days"
    years = seconds / (365.25 * 86400)
    return f"{years:.1f} years" if years < 1000 else f"about {years:.0e} years"
