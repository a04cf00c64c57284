"""Run modes: how a shape × variant's configs become jobs, below the sweep loop.

The job factory (sweep/jobs.py) asks the mode, chosen once in the wiring (ksweep/app/wiring.py),
for the build and run templates, extra sources, per-config values and launch geometry,
what else a result's key covers, the reference config, and what the host must have.
The loop never asks which mode it runs.

- ``ProgramMode``: the user's program, built by the spec's command and run as a process.
- ``PersistentMode``: the same program built as a shared library whose ``main`` a
  long-lived host process per GPU calls (run/host.py).
- Kernel mode (kernel/mode.py): a cubin per config, run in ksweep's own GPU worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from ..build.argv import library_flags
from ..errors import SpecError


@dataclass(frozen=True)
class Templates:
    """What the factory builds jobs from, for one shape × variant."""

    build: tuple[str, ...]
    run: tuple[str, ...]
    harness: tuple[str, ...] | None  # None: no harness to build once
    sources: tuple[Path, ...]
    params: tuple  # of spec.model.Param
    build_key: str = "build.command"  # where each template comes from, for messages
    run_key: str = "run.command"


@dataclass(frozen=True)
class ConfigExtras:
    """What a mode adds to one config's job."""

    values: Mapping[str, str] = field(default_factory=dict)  # more placeholders for the templates
    sources: tuple[Path, ...] = ()  # more files the build reads
    launch: Mapping[str, Any] | None = None  # kernel mode: entry, grid, block, smem


class Mode:
    """The run mode contract; the base is program mode."""

    name = "program"
    persistent = False  # jobs are built for a persistent host
    # a result's check is a function of its stored metrics, so it can be judged again
    # without a run (a mode that compares outputs where they are made cannot)
    checks_metrics = True

    def templates(self, spec, t: Templates) -> Templates:
        return t

    def config(self, spec, names: Mapping[str, Any]) -> ConfigExtras:
        return ConfigExtras()

    def key_parts(self, spec) -> dict[str, Any]:
        """What else a result depends on (kept in its key)."""
        return {}

    def input_files(self, spec) -> tuple[Path, ...]:
        """Files besides the sources that a result depends on (their digests are kept with
        it, so a report can say they changed since)."""
        return ()

    def reference_config(self, spec, defaults: dict) -> dict | None:
        """The config every other is checked against, if any; ``reference_key`` names it."""
        return defaults if spec.check.reference == "defaults" else None

    reference_key = "check.reference"

    def needs_gpu(self, spec) -> bool:
        """Whether the runs need a GPU (environment.py guesses it for a user's program)."""
        from .environment import needs_gpu

        return needs_gpu(spec)

    def host_problem(self, spec, gpu_models: set[str] | None, gpu_check: bool) -> str | None:
        """Why every config would fail on this host, when that is known before building."""
        if gpu_check and gpu_models == {"none"} and self.needs_gpu(spec):
            return ("this spec runs CUDA programs, but this host has no NVIDIA GPU (nvidia-smi found none): "
                    "run it on a machine with a GPU (ksweep plan works anywhere), or pass --no-gpu-check "
                    "if its programs need no GPU")
        return None

    # -- hardening (sweep/hardening.py) ---------------------------------------------------------
    # the program that checks a config needs the reference config's build too (kernel mode's
    # checked launch, when the reference is a config)
    harden_reference = False

    def harden_program(self, spec, job, build, workdir: Path, harness: Path | None = None, reference=None,
                       checks: str = "sanitize") -> list[str] | None:
        """The program that checks one built config in a process of its own: under each
        sanitizer (``checks`` "sanitize"), or on further inputs ("inputs"); None when the mode
        has none. ``reference``: (job, build) of the reference config, with ``harden_reference``.
        Program mode: the config's own run command under the sanitizers; no further inputs."""
        if checks != "sanitize":
            return None
        from .program import run_argv

        return run_argv(job, build, workdir, harness)

    def fingerprint_keys(self, spec) -> tuple[str, ...]:
        """The metrics whose bits must not change from one run of a config to the next
        (verify/determinism.py): the checksum and what the check reads."""
        from ..verify.determinism import fingerprint_keys

        return fingerprint_keys(spec.check, kernel_mode=False)


class ProgramMode(Mode):
    pass


class PersistentMode(Mode):
    """A persistent host loads the program as a shared library and calls its main: the
    config's build ({binary}) or the harness ({harness}), whichever the run command starts with."""

    name = "persistent"
    persistent = True

    def harden_program(self, spec, job, build, workdir: Path, harness: Path | None = None, reference=None,
                       checks: str = "sanitize") -> list[str] | None:
        """None: a persistent build is a library the host loads, not a program a sanitizer can start."""
        return None

    def templates(self, spec, t: Templates) -> Templates:
        first = t.run[0] if t.run else None
        if first == "{harness}" and t.harness is not None:
            return replace(t, harness=_as_library(spec, t.harness, "build.harness.command"))
        if first == "{binary}":
            build = _as_library(spec, t.build, t.build_key)
            harness = t.harness
            if harness is not None and any("{harness}" in a for a in build):
                # linked into each config's library: position independent, its main renamed
                harness = _as_library(spec, harness, "build.harness.command", shared=False)
            return replace(t, build=build, harness=harness)
        raise SpecError("a persistent host runs the built program itself: the command must start with {binary}"
                        + (" or {harness}" if t.harness is not None else ""), path=spec.label, key=t.run_key)


def _as_library(spec, template: tuple[str, ...], key: str, shared: bool = True) -> tuple[str, ...]:
    if not template:
        raise SpecError("a persistent host needs a build command that makes the program", path=spec.label, key=key)
    flags = library_flags(template[0], shared)
    if flags is None:
        raise SpecError(f"a persistent host builds with nvcc, gcc or clang (it adds -shared, -fPIC and "
                        f"-Dmain=ksweep_main), not {template[0]!r}", path=spec.label, key=key)
    return (template[0], *flags, *template[1:])


def program_mode(spec) -> Mode:
    """The mode of a spec without [kernel]: a process per run, or a persistent host."""
    if spec.kernel is not None:
        raise SpecError("a [kernel] spec runs in kernel mode: sweep it with ksweep.run_sweep or `ksweep run`",
                        path=spec.label, key="kernel")
    return PersistentMode() if spec.run.persistent else ProgramMode()
