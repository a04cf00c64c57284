"""Build one job through the cache, and judge the ptxas report (post-compile pruning)."""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..elf.code import code_digest
from ..job import Job
from ..process import ProcessRegistry, run_process
from ..status import STOPPED, Status, Stopped
from . import deps as depfiles
from .cache import BuildCache
from .demangle import aliases, short_name
from .ptxas import PtxasReport, parse_ptxas

BUILD_NICE = 10  # builds yield the CPU to the host side of timed runs
TMP_FOLDER = ".tmp"  # a build's TMPDIR, inside its scratch folder


@dataclass(frozen=True)
class BuildResult:
    status: Status
    message: str = ""
    binary: Path | None = None
    report: PtxasReport = field(default_factory=lambda: PtxasReport(()))
    log: str = ""
    seconds: float = 0.0
    cached: bool = False
    cpu_seconds: float = 0.0
    failed_harness: BuildResult | None = None  # the build of the harness it links, which failed: not its fault
    deps: tuple[tuple[str, str], ...] = ()  # (path, digest) of the files the compiler read (build/deps.py)
    built_seconds: float = 0.0  # the wall time of the build that made it, also when served from the cache
    # the digest of its output's code (elf/code.py: device and host code as guard --check compares
    # them, not the bytes that name folders or times): two builds with one digest are one program
    code: str | None = None


@dataclass(frozen=True)
class BuildRules:
    """Post-compile pruning as in seed 000."""

    max_registers: int | None = 255
    allow_spills: bool = False
    kernels: str | None = None  # [build] kernels: the regex of the kernels judged (None: all)

    @classmethod
    def of(cls, spec) -> "BuildRules":
        """A spec's rules: ``[build] max_registers`` (else the target's limit),
        ``allow_spills`` and the regex of the kernels judged."""
        return cls(max_registers=spec.build.max_registers or spec.limits.get("regs_per_thread"),
                   allow_spills=spec.build.allow_spills, kernels=spec.build.kernels)

    def key(self) -> list:
        """What of the rules decides a build's status (a result's key covers it)."""
        return [self.max_registers, self.allow_spills, self.kernels]

    def judge(self, report: PtxasReport) -> tuple[Status, str]:
        """REGS_LIMIT or SPILLS from the judged kernels of ``report`` (``PtxasReport.select``);
        the message names the kernel, demangled and shortened."""
        regs = report.registers
        if self.max_registers is not None and regs is not None and regs > self.max_registers:
            worst = max(report.judged, key=lambda k: k.registers or 0)
            return Status.REGS_LIMIT, f"{short_name(worst.name)}: {regs} registers > {self.max_registers}"
        if not self.allow_spills and report.spills:
            k = next(k for k in report.judged if k.spills)
            return Status.SPILLS, (f"{short_name(k.name)}: {k.spill_stores} bytes spill stores, "
                                   f"{k.spill_loads} bytes spill loads")
        return Status.OK, ""


def built(binary: Path | None, **fields) -> BuildResult:
    """A build that produced its binary (the fake executor's too)."""
    return BuildResult(Status.OK, binary=binary, **fields)


def failed_build(status: Status, message: str, **fields) -> BuildResult:
    """A build that failed with ``status`` (a recorded or planned failure)."""
    return BuildResult(status, message, **fields)


def harness_failure(harness: BuildResult) -> BuildResult:
    """A config's build that cannot happen because the harness it links did not build."""
    return BuildResult(Status.COMPILE_ERROR, f"the harness did not build: {harness.message}", log=harness.log,
                       failed_harness=harness)


def lost_build(reason: str) -> BuildResult:
    """A build that killed every cluster worker it was given (run/dask_executor.py)."""
    return BuildResult(Status.COMPILE_ERROR, reason)


def first_error_lines(log: str, n: int = 6) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return " | ".join((errors or lines)[:n])[:1000]


class Builder:
    def __init__(self, cache: BuildCache, rules: BuildRules):
        self.cache = cache
        self.rules = rules
        self._harnesses: dict[str, BuildResult] = {}  # cache key -> result, for this builder's lifetime
        self._harness_lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}  # one compile per cache key at a time
        self._key_locks_lock = threading.Lock()

    def build(self, job: Job, registry: ProcessRegistry | None = None) -> BuildResult | Stopped:
        """Build one config (or a harness: once per builder, however many threads ask); ``Stopped``
        when Ctrl-C came first.
        ``registry``: the owner of the compiler's process (the executor's; a default one when None)."""
        if job.is_harness:
            return self._harness(job, registry)
        if job.harness is not None and any("{harness}" in a for a in job.build_argv):  # e.g. linked to each config
            built = self._harness(job.harness, registry)
            if isinstance(built, Stopped):
                return built
            if built.status is not Status.OK:
                return harness_failure(built)
            result = self._build(job, str(built.binary), registry)
            return replace(result, cpu_seconds=result.cpu_seconds + built.cpu_seconds)  # 0 unless built just now
        return self._build(job, None, registry)

    def _harness(self, job: Job, registry: ProcessRegistry | None) -> BuildResult | Stopped:
        with self._harness_lock:  # one build; the other threads wait for it, then share it
            known = self._harnesses.get(job.cache_key)
            if known is not None:
                return replace(known, cached=True, seconds=0.0, cpu_seconds=0.0)
            result = self._build(job, None, registry)
            if not isinstance(result, Stopped):
                self._harnesses[job.cache_key] = result
            return result

    def _build(self, job: Job, harness: str | None, registry: ProcessRegistry | None) -> BuildResult | Stopped:
        if not job.build_argv:
            return BuildResult(Status.OK, cached=True)
        # configs that differ only in what is not passed to the compiler (a define = false
        # param given to the run command) share one build: the second waits for the first
        # and then finds it in the cache, instead of compiling the same thing at the same time
        with self._key_locks_lock:
            lock = self._key_locks.setdefault(job.build_cache_key, threading.Lock())
        with lock:
            return self._build_locked(job, harness, registry)

    def _build_locked(self, job: Job, harness: str | None, registry: ProcessRegistry | None) -> BuildResult | Stopped:
        key = job.build_cache_key
        meta = self.cache.lookup(key)
        if meta is not None and depfiles.unchanged(meta.get("deps", ())):
            return self._result(meta, self.cache.entry(key), job, cached=True)
        scratch = self.cache.scratch(key)
        binary = scratch / job.output
        argv = [a.replace("{binary}", str(binary)).replace("{workdir}", str(scratch)) for a in job.build_argv]
        if harness is not None:
            argv = [a.replace("{harness}", harness) for a in argv]
        depfile = scratch / depfiles.DEPFILE
        dep_flags = depfiles.dependency_flags(argv, str(depfile))
        if dep_flags:
            n = depfiles.command_length(argv)
            argv = [*argv[:n], *dep_flags, *argv[n:]]
        # the compiler's temporary files go to a folder of the build's own, removed after it: a
        # compiler killed at a timeout or a Ctrl-C cannot clean up after itself (gcc's cc*.s,
        # nvcc's tmpxft files), and a long sweep would leave thousands of them in /tmp
        tmp = scratch / TMP_FOLDER
        tmp.mkdir(exist_ok=True)
        env = {"TMPDIR": str(tmp), **job.build_env}
        try:
            out = run_process(argv, cwd=scratch, timeout=job.build_timeout, env=env, nice=BUILD_NICE,
                              registry=registry)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log = (out.stdout + "\n" + out.stderr).strip()
        if out.stopped:
            self.cache.discard(scratch)
            return STOPPED
        if out.timed_out or out.error:
            self.cache.discard(scratch)
            msg = out.error or f"build timed out after {job.build_timeout:g} s"
            return BuildResult(Status.COMPILE_ERROR, msg, log=log, seconds=out.seconds)
        ok = out.returncode == 0 and binary.exists()
        if out.returncode == 0 and not binary.exists():
            log += "\n(the build command exited 0 but did not write {binary})"
        meta = {"ok": ok, "log": log[-200_000:], "seconds": out.seconds, "cpu_seconds": out.cpu_seconds,
                "argv": argv, "deps": self._deps(job, argv, depfile, scratch)}
        if ok and not job.is_harness:
            meta["code"] = _code_of(binary)
        if job.is_harness and not ok:  # not cached: it stops the sweep, and the next try must build again
            self.cache.discard(scratch)
            return self._result(meta, scratch, job, cached=False)
        entry = self.cache.commit(key, scratch, meta, replace_stale=True)
        return self._result(meta, entry, job, cached=False)

    @staticmethod
    def _deps(job: Job, argv: list[str], depfile: Path, scratch: Path) -> list[tuple[str, str]]:
        """The listed sources and every other file the compiler says it read (not those it
        wrote into the scratch folder), each with its digest at build time."""
        try:
            listed = depfiles.parse_depfile(depfile.read_text(errors="replace"))
            depfile.unlink()
        except OSError:
            listed = []
        inside = str(scratch.resolve()) + "/"
        found = [p for p in depfiles.user_dependencies(listed, argv[0], scratch) if not str(p).startswith(inside)]
        known = {Path(s).resolve() for s in job.sources}
        return [list(d) for d in depfiles.digests([p for p in found if p not in known])]

    def _result(self, meta: dict, entry: Path, job: Job, cached: bool) -> BuildResult:
        report = parse_ptxas(meta["log"]).select(self.rules.kernels, aliases)
        seconds = 0.0 if cached else meta["seconds"]
        cpu = 0.0 if cached else meta.get("cpu_seconds", 0.0)
        if not meta["ok"]:
            return BuildResult(Status.COMPILE_ERROR, first_error_lines(meta["log"]), report=report,
                               log=meta["log"], seconds=seconds, cached=cached, cpu_seconds=cpu,
                               deps=_deps_of(meta), built_seconds=meta["seconds"])
        status, message = (Status.OK, "") if job.is_harness else self.rules.judge(report)
        binary = entry / job.output
        # an entry cached before builds had a digest: its binary is there to digest now
        code = None if job.is_harness else meta.get("code") or _code_of(binary)
        return BuildResult(status, message, binary=binary, report=report, log=meta["log"],
                           seconds=seconds, cached=cached, cpu_seconds=cpu, deps=_deps_of(meta),
                           built_seconds=meta["seconds"], code=code)


def _code_of(binary: Path) -> str | None:
    """The code digest of a build's output (elf/code.py), None when it cannot be read."""
    try:
        return code_digest(binary.read_bytes())
    except OSError:
        return None


def _deps_of(meta: dict) -> tuple[tuple[str, str], ...]:
    return tuple((str(p), str(d)) for p, d in meta.get("deps", ()))
