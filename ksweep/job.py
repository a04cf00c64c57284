"""One unit of work: a config of one shape × variant, with its commands resolved."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from types import MappingProxyType

from .gpu.physics import Work


BINARY_NAME = "prog"  # a build's output file, unless the job names another


def config_id(params: Mapping[str, Any]) -> str:
    """The canonical identity of a config: its parameters as sorted JSON."""
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Job:
    variant: str
    shape: str
    params: Mapping[str, Any]
    derived: Mapping[str, Any]
    build_argv: tuple[str, ...]  # '{binary}' / '{workdir}' still to fill; empty: nothing to build
    run_argv: tuple[str, ...]
    sources: tuple[Path, ...]
    cache_key: str
    build_timeout: float = 600.0
    run_timeout: float = 30.0
    build_env: Mapping[str, str] = field(default_factory=dict)
    run_env: Mapping[str, str] = field(default_factory=dict)
    output_limit: int = 4 * 1024 * 1024
    phase: str | None = None
    is_reference: bool = False
    launch: Mapping[str, Any] | None = None  # kernel mode: entry, grid, block, smem
    persistent: bool = False  # built as a library for a persistent host (run/host.py)
    harness: Job | None = None  # built once for every config of its shape × variant ([build.harness])
    is_harness: bool = False  # this job builds a harness: no run, no ptxas limits
    build_key: str | None = None  # the build cache's key when it differs from cache_key (a harness it does not link)
    output: str = BINARY_NAME  # the file name of the build's output
    work: Work | None = None  # what one run must do ([physics]): the physics gate's input
    # (path, digest) of its listed sources (and its harness's) when it was made: stored with its
    # result, so a report can tell a source edited since (build/deps.changed)
    inputs: tuple[tuple[str, str], ...] = ()
    # what a run depends on beside the program its build made: the run command as written, the
    # launch, the harness, the experiment's settings, the work; two configs whose builds are one
    # program (BuildResult.code) and whose run keys are equal are measured once. None: a run that
    # may read more of its build than the program ({workdir} in its command)
    run_key: str | None = None

    @property
    def build_cache_key(self) -> str:
        return self.build_key or self.cache_key

    def __post_init__(self):
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "derived", MappingProxyType(dict(self.derived)))

    @property
    def config_id(self) -> str:
        return config_id(self.params)

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.params.items())
