"""The hardening of one shape × variant's leaders, after their confirmation and before BEST
is named (a config it finds unsafe is never BEST):

- **determinism**: each confirmed config's runs (its search run and its confirmation runs,
  each in a fresh process in program mode) compared bitwise on what the check reads
  (verify/determinism.py), recorded; with ``--deterministic`` one whose outputs differed may
  not be BEST (verify/confirm.confirmed reads the records);
- **sanitizers**: each leader (the confirmed configs, best first; without a confirmation the
  best few) run once under each of compute-sanitizer's tools, each tool in a run of its own
  with a timeout of its own (``run/sanitize.py``), the program the mode gives
  (``Mode.harden_program``: program mode's own run command; one checked launch in a fresh
  process where the mode has one); a finding makes the config UNSAFE (verify/sanitizer.py),
  its message the tool, the first finding, and the function and line it names;
- **further inputs**, where the mode has them: the same fresh process checks the config on
  inputs that catch cheats (other addresses, special values); a wrong output there is a
  CHECKSUM_MISMATCH;
- **an edge size**, where the mode has further inputs and ``[harden] edge`` gives one (shape
  defines such as ``N = 4099``): the default config and the leaders built for it (where the
  spec's constraints allow them there) and checked on it the same way.

Each verdict is stored (``Store.put_hardening``) under the config's result key: a resumed
sweep hardens only what it has not, and a config measured again is hardened again. Without
compute-sanitizer the sweep says so in one line and how to get it, and hardens nothing but
what needs no tool; ``--no-harden`` (``[harden] enabled = false``) runs no sanitizer.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from ..job import Job, config_id
from ..process import at_once
from ..space.space import Space
from ..result import Hardening, Result
from ..run import sanitize
from ..run.base import Here
from ..status import Status, Stopped
from ..verify import confirm
from ..verify.determinism import differs
from ..verify.sanitizer import Verdict, inputs_verdict, verdict
from .context import SweepContext
from .jobs import JobFactory
from .waiting import wait_for

if TYPE_CHECKING:
    from ..build.builder import BuildResult
    from .pipeline import Target

UNCONFIRMED_LEADERS = 5  # without a confirmation, the best this many are hardened (best first)
LEAST_TIMEOUT = 120.0  # seconds a tool's run gets at least (100 times the config's measured run otherwise)
BUDGET_SHARE = 0.15  # the hardening of a shape × variant takes at most this share of its search and confirmation
LEAST_BUDGET = 60.0  # seconds, whatever the share (a resumed sweep's search takes none)
MOST_JOBS = 8  # sanitizer runs at once by default (``[harden] jobs``)


@dataclass(frozen=True)
class Hardened:
    """What the sanitizers, the further inputs and the edge size said of one config (None: not run)."""

    tools: Verdict | None = None
    inputs: tuple[str, Status | None, str] | None = None  # verify.sanitizer.inputs_verdict's
    edge: tuple[str, Status | None, str] | None = None  # the same, on the edge size


@dataclass(frozen=True)
class Resized:
    """A config built at other sizes than its shape's (``[harden] sizes``): what the
    sanitizers run (``harden_config(at=...)``)."""

    spec: object  # the spec with the resized shape added
    job: Job
    build: "BuildResult"
    named: str  # "WIDTH=512"


def resized(spec, shape: str, variant: str, values: Mapping, suffix: str):
    """(spec with the shape at ``values`` added, that shape, its space): ``values`` replace
    the shape's defines (or constants, where it or the spec has one of that name); the
    shape is named ``<shape>_<suffix>`` (``[harden] edge`` and ``sizes``)."""
    own = spec.shape(shape)
    constants = {k: v for k, v in values.items() if k in own.constants or k in spec.constants}
    at = replace(own, name=f"{own.name}_{suffix}",
                 defines={**own.defines, **{k: v for k, v in values.items() if k not in constants}},
                 constants={**own.constants, **constants})
    at_spec = replace(spec, shapes=(*spec.shapes, at))
    return at_spec, at, Space.from_spec(at_spec, at.name, spec.variant(variant).name)


def said_sizes(values: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def sized_for_tools(spec, mode, shape: str, variant: str, params: dict, build) -> Resized | str | None:
    """``params`` built at ``[harden] sizes`` (``build(spec, shape, space)``: (job, build) of
    the resized shape, None when it did not build): what the sanitizers run, in a mode whose
    inputs come from the sizes (``harden_reference``: its further inputs);
    a string saying why they run it at the shape's own sizes; None without ``sizes``."""
    sizes = spec.harden.sizes
    if not sizes:
        return None
    words = said_sizes(sizes)
    if not mode.harden_reference:
        return f"[harden] sizes {words}: {mode.name} mode runs the shape's own arguments: at the shape's sizes"
    at_spec, at_shape, space = resized(spec, shape, variant, sizes, "sanitized")
    if params not in space:
        return f"the spec's constraints refuse it at {words}: at the shape's sizes"
    made = build(at_spec, at_shape, space)
    if made is None:
        return f"it did not build at {words}: at the shape's sizes"
    job, built = made
    return Resized(at_spec, job, built, words)


def jobs_of(spec) -> int:
    """Sanitizer runs at once on this host: ``[harden] jobs``, else half this host's
    cores, at least 1 and at most 8 (each tool of a leader runs in a process of its own; the
    leaders are hardened after their timing, so nothing measured shares the GPU with them)."""
    if spec.harden.jobs is not None:
        return int(spec.harden.jobs)
    return max(1, min(MOST_JOBS, (os.cpu_count() or 2) // 2))


def shares(spec, tools: int, gpus: int) -> tuple[int, int]:
    """How ``[harden] jobs`` sanitizer runs at once are shared on a host whose runs use ``gpus``
    GPUs, for ``tools`` tools a leader: (a leader's tools at once, leaders at once). With
    several GPUs, fewer tools of a leader together, so that more leaders go to the GPUs in
    turn, best first."""
    jobs = jobs_of(spec)
    per_config = max(1, min(tools, jobs // max(1, gpus)))
    return per_config, max(1, jobs // per_config)


def budget_of(spec, spent: float) -> float:
    """Seconds the hardening of one shape × variant may take in a sweep: ``[harden] budget``,
    else BUDGET_SHARE of ``spent`` (the seconds its search and confirmation took), at least
    LEAST_BUDGET. What the budget leaves is hardened by the next run or ``ksweep harden``."""
    if spec.harden.budget is not None:
        return float(spec.harden.budget)
    return max(LEAST_BUDGET, BUDGET_SHARE * spent)


def tool_timeout(spec, result: Result | None) -> float:
    """Seconds each tool's run of a config may take: ``[harden] timeout``, else 100 times the
    config's measured run (a sanitizer slows GPU code 10-100 times), at least 120 s."""
    if spec.harden.timeout is not None:
        return float(spec.harden.timeout)
    measured = result.run_seconds if result is not None and result.run_seconds else 1.0
    return max(LEAST_TIMEOUT, 100.0 * measured)


def report_name(job: Job, tool: str) -> str:
    """'fc2-base-1a2b3c4d-racecheck.txt': the file ``harden_config(output=...)`` writes a
    tool's report of a config to (the config by a digest of its parameters)."""
    digest = hashlib.sha256(config_id(job.params).encode()).hexdigest()[:8]
    return f"{job.shape}-{job.variant}-{digest}-{tool}.txt"


def harden_config(spec, mode, job: Job, build: "BuildResult", here: Here, *, exe: str | None,
                  tools: Sequence[str], timeout: float, harness: Path | None = None, reference=None,
                  deadline: float | None = None, jobs: int = 1, output: Path | None = None,
                  at: Resized | str | None = None) -> Hardened:
    """Run the sanitizers (``exe``: compute-sanitizer, None: none) and the further inputs of one
    built config on ``here``'s GPU; KeyboardInterrupt when Ctrl-C stopped a run. ``deadline``
    (``time.monotonic()``'s): no run goes past it; a tool that would start after it does not
    run (the verdict is then incomplete). ``jobs``: the tools' runs at once (each a process of
    its own with its own timeout; nothing is timed while the hardening runs). ``output``: a
    folder where each tool's report is written (``report_name``). ``at``: the config built at
    ``[harden] sizes``, which the tools run instead (the further inputs stay at the shape's), or
    why the tools run it at its shape's sizes (``sized_for_tools``)."""

    def left() -> float:
        return timeout if deadline is None else min(timeout, deadline - time.monotonic())

    here.scratch.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="harden-", dir=here.scratch))
    try:
        env = {**job.run_env, **({"CUDA_VISIBLE_DEVICES": str(here.gpu)} if here.gpu is not None else {})}
        tools_said = None
        if exe is not None and tools:
            # a folder of its own for each tool: the tools run at once, and {workdir} is the run's own
            folders = [Path(tempfile.mkdtemp(prefix=f"{tool}-", dir=workdir)) for tool in tools]
            sized = isinstance(at, Resized)
            t_spec, t_job, t_build = (at.spec, at.job, at.build) if sized else (spec, job, build)
            programs = [mode.harden_program(t_spec, t_job, t_build, folder, harness, reference, "sanitize")
                        for folder in folders]
            if any(program is None for program in programs):
                tools_said = Verdict("incomplete", {}, f"{mode.name} mode: no program a sanitizer can start")
            else:
                only = sanitize.own_entries(t_build)  # the config's own, where its build names them

                def one(item):
                    tool, folder, argv = item
                    given = left()
                    if given < 1.0:
                        return "late", None
                    run = sanitize.run_tool(exe, tool, argv, env=env, timeout=given, cwd=folder,
                                            registry=here.registry, only=only)
                    if output is not None and run is not None:
                        output.mkdir(parents=True, exist_ok=True)
                        (output / report_name(job, tool)).write_text(run.text + "\n")
                    # stopped by the budget's end, not by its own timeout: not a verdict of the tool
                    return ("cut" if run is not None and run.timed_out and given < timeout else "ran"), run

                said = each_at_once(one, list(zip(tools, folders, programs)), jobs, here)
                if any(how != "late" and run is None for how, run in said):
                    raise KeyboardInterrupt
                tools_said = verdict([run for how, run in said if how == "ran"])
                if at is not None:
                    tools_said = replace(tools_said, message=f"{tools_said.message} (at "
                                         f"{at.named if sized else 'the shape: ' + at})")
                short = [(tool, how) for tool, (how, _) in zip(tools, said) if how != "ran"]
                if short and tools_said.verdict != "unsafe":
                    tool, how = short[0]
                    tools_said = Verdict("incomplete", tools_said.tools, f"the hardening's time budget was spent "
                                         f"before {tool} {'finished' if how == 'cut' else 'ran'}")
        inputs = None
        program = mode.harden_program(spec, job, build, workdir, harness, reference, "inputs")
        if program is not None and left() >= 1.0:
            out = sanitize.run_plain(program, env=env, timeout=left(), cwd=workdir, registry=here.registry)
            if out is None:
                raise KeyboardInterrupt
            inputs = inputs_verdict(out.returncode, out.stdout, out.timed_out, timeout)
        return Hardened(tools_said, inputs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def each_at_once(fn, items: Sequence, jobs: int, here: Here) -> list:
    """``fn`` of each item, ``jobs`` at a time (``process.at_once``; one by one for one job or
    one item); Ctrl-C or an exception of one call kills what ``here``'s registry runs."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    return at_once(fn, items, jobs, here.registry)


def record(store, result: Result, hardened: Hardened) -> Status | None:
    """Store what hardening found of ``result`` and its new status: UNSAFE on a sanitizer's
    finding, CHECKSUM_MISMATCH on a wrong output for the further inputs (None: it keeps its own)."""
    base = dict(variant=result.variant, shape=result.shape, params=dict(result.params), result_key=result.cache_key)
    if hardened.tools is not None:
        t = hardened.tools
        store.put_hardening(Hardening(**base, kind="sanitizer", verdict=t.verdict, detail=t.message, tools=t.tools))
    for kind, said in (("inputs", hardened.inputs), ("edge", hardened.edge)):
        if said is not None:
            store.put_hardening(Hardening(**base, kind=kind, verdict=said[0], detail=said[2]))
    for status, message in ((hardened.tools.status if hardened.tools else None,
                             hardened.tools.message if hardened.tools else ""),
                            *((s[1], s[2]) for s in (hardened.inputs, hardened.edge) if s is not None)):
        if status is not None:
            store.set_verdict(result, status, message, False)
            return status
    return None


def done_before(records: Sequence[Hardening], result: Result, needs: Sequence[str]) -> bool:
    """Whether ``result`` was hardened already under its key (a resumed sweep): a record of each
    kind ``needs`` ("sanitizer", "inputs", "edge") that is not incomplete."""
    kinds = {h.kind: h for h in records if config_id(h.params) == config_id(result.params)
             and h.result_key == result.cache_key}
    return all(kind in kinds and kinds[kind].verdict != "incomplete" for kind in needs)


def determinism(results: Mapping[str, Result], measurements, keys: Sequence[str], configs: Sequence[str]
                ) -> list[Hardening]:
    """A determinism record of each config whose outputs two or more of its OK runs printed."""
    out = []
    for cid in configs:
        r = results[cid]
        runs = [r.metrics] + [m.metrics for m in measurements if config_id(m.params) == cid
                              and m.status is Status.OK and confirm.counts_for(m, r)]
        if sum(any(k in m for k in keys) for m in runs) < 2:
            continue
        detail = differs(runs, keys)
        out.append(Hardening(r.variant, r.shape, dict(r.params), r.cache_key, "determinism",
                             "nondeterministic" if detail else "deterministic", detail or ""))
    return out


def leaders(results: Mapping[str, Result], measurements, objective, defaults: Mapping) -> list[str]:
    """The configs to harden of one shape × variant (``results``: config id -> its standing
    result): the confirmed ones whose runs ended OK, best median first; without a
    confirmation, the few best single measurements."""
    if not results:
        return []
    first = next(iter(results.values()))
    conf = confirm.confirmed(list(results.values()), measurements, objective.direction,
                             defaults).get((first.variant, first.shape))
    sign = 1.0 if objective.direction == "min" else -1.0
    if conf is not None and conf.verdicts:
        ok = [c for c, v in conf.verdicts.items() if v.interval.n and not v.failed and c in results
              and results[c].status is Status.OK]
        return sorted(ok, key=lambda c: sign * conf.verdicts[c].interval.median)
    ranked = sorted((sign * v, cid) for cid, r in results.items() if (v := r.value(objective.metric)) is not None)
    return [cid for _, cid in ranked[:UNCONFIRMED_LEADERS]]


class HardeningPhase:
    """The hardening of the leaders of one shape × variant of the sweep ``sweep``."""

    def __init__(self, sweep: SweepContext, target: "Target", variant: str, shape: str, spent: float = 0.0):
        self.sweep, self.target, self.variant, self.shape = sweep, target, variant, shape
        # seconds the hardening of this shape × variant may take: [harden] budget, else a share of
        # what its search and confirmation took (``spent``), at least LEAST_BUDGET
        self.budget = budget_of(sweep.spec, spent)
        self.deadline: float | None = None

    def run(self) -> None:
        sweep = self.sweep
        store, spec, summary = sweep.store, sweep.spec, sweep.summary
        results = {config_id(r.params): r for r in store.results(variant=self.variant, shape=self.shape)}
        measurements = store.measurements(self.variant, self.shape)
        chosen = leaders(results, measurements, spec.objective, store.default_configs())
        if not chosen:
            return
        for h in determinism(results, measurements, sweep.mode.fingerprint_keys(spec), chosen):
            store.put_hardening(h)
        nondeterministic = [h for h in store.hardenings(self.variant, self.shape)
                            if h.kind == "determinism" and h.verdict == "nondeterministic"
                            and config_id(h.params) in chosen and h.result_key == results[config_id(h.params)].cache_key]
        where = f"{self.shape}/{self.variant}"
        if nondeterministic:
            summary.hardened.append(f"{where}: {len(nondeterministic)} of {len(chosen)} leaders nondeterministic "
                                    f"(first: {nondeterministic[0].detail})")
        if not (sweep.options.harden and spec.harden.enabled):
            return
        here = sweep.executor.here
        if here is None:
            summary.hardened.append(f"{where}: not hardened: its runs went to no GPU of this host (a cluster's "
                                    f"workers): run ksweep harden on the database where the GPU is")
            return
        exe = sanitize.find()
        if exe is None and not sweep.mode.needs_gpu(spec):
            return  # a program built without nvcc (the CPU example): nothing compute-sanitizer would check
        if exe is None and sanitize.HINT not in summary.notes:
            summary.notes.append(sanitize.HINT)
        done = store.hardenings(self.variant, self.shape)
        further = bool(sweep.mode.harden_reference)
        edge = further and bool(spec.harden.edge)
        needs = [kind for kind, wanted in (("sanitizer", exe is not None), ("inputs", further), ("edge", edge))
                 if wanted]
        default = store.default_configs().get((self.variant, self.shape))
        if edge and default in results and default not in chosen and results[default].status is Status.OK:
            chosen.append(default)  # the edge size checks the default config too
        counts: dict[str, int] = {}
        first_finding = ""
        self.deadline = time.monotonic() + self.budget
        todo = [cid for cid in chosen if needs and not done_before(done, results[cid], needs)]
        tools = len(spec.harden.tools) if exe is not None and spec.harden.tools else 1
        per_config, at_once = shares(spec, tools, len(here.gpus))
        for start in range(0, len(todo), at_once):
            batch = []
            for cid in todo[start:start + at_once]:
                if time.monotonic() >= self.deadline - 1.0:  # left for a resumed run or ksweep harden
                    counts["not reached (time budget)"] = counts.get("not reached (time budget)", 0) + 1
                else:
                    batch.append((cid, self._prepare(results[cid], sanitized=exe is not None and bool(
                        spec.harden.tools))))
            started = time.monotonic()

            def harden_one(item):
                at, (cid, prepared) = item
                if isinstance(prepared, Hardened):  # it did not build
                    return prepared
                job, build, harness, reference, small = prepared
                gpus = here.gpus  # the leaders hardened at once spread over this host's GPUs
                there = replace(here, gpu=gpus[at % len(gpus)])
                return harden_config(spec, sweep.mode, job, build, there, exe=exe, tools=spec.harden.tools,
                                     timeout=tool_timeout(spec, results[cid]), harness=harness,
                                     reference=reference, deadline=self.deadline, jobs=per_config, at=small)

            said = each_at_once(harden_one, list(enumerate(batch)), at_once, here)
            for (cid, _), hardened in zip(batch, said):
                result = results[cid]
                if edge:
                    hardened = replace(hardened, edge=self._edge(result, here))
                if hardened.tools is not None and hardened.tools.message.startswith("the hardening's time budget"):
                    counts["not finished (time budget)"] = counts.get("not finished (time budget)", 0) + 1
                    continue  # nothing stored: a resumed run or ksweep harden does it
                status = record(store, result, hardened)
                said_ = str(status) if status is not None else (hardened.tools.verdict if hardened.tools else "checked")
                counts[said_] = counts.get(said_, 0) + 1
                if status is not None and (result.variant, result.shape, cid) in summary.counted:
                    # a result this run counted (not the default the confirmation alone measured)
                    summary.counts[result.status.value] -= 1
                    summary.counts[status.value] = summary.counts.get(status.value, 0) + 1
                if status is not None:
                    first_finding = first_finding or (hardened.tools.message if status is Status.UNSAFE else next(
                        s[2] for s in (hardened.inputs, hardened.edge) if s is not None and s[1] is not None))
            summary.harden_seconds += time.monotonic() - started
        left = sum(n for k, n in counts.items() if k.endswith("(time budget)"))
        if counts:
            tools = ", ".join(spec.harden.tools) if exe is not None else "no sanitizer"
            said = ", ".join(f"{n} {k}" for k, n in counts.items() if not k.endswith("(time budget)"))
            line = (f"{where}: hardened {sum(counts.values()) - left} leader(s) ({tools}): {said}"
                    if said else f"{where}: not hardened")
            if left:
                line += (f"{'; ' if said else ': '}{left} left: the hardening's time budget ({self.budget:g} s) "
                         f"was spent (ksweep harden {store.path} does them; [harden] budget gives more)")
            summary.hardened.append(line + (f"; first finding: {first_finding}" if first_finding else ""))
        elif exe is None:
            summary.hardened.append(f"{where}: not hardened: no compute-sanitizer")

    def _prepare(self, result: Result, sanitized: bool = True):
        """What hardening ``result``'s config needs, built (here, before its runs start at once):
        (job, build, harness, reference, its build at ``[harden] sizes`` for the sanitizers:
        ``_small``, None where no sanitizer runs), or a Hardened saying it did not build."""
        sweep, factory = self.sweep, self.target.factory
        job = factory.make(dict(result.params), phase="harden")
        build = self._build(job)
        if build is None:
            return Hardened(Verdict("incomplete", {}, "did not build"))
        reference = None
        if sweep.mode.harden_reference:
            params = sweep.mode.reference_config(sweep.spec, {p.name: p.default for p in self.target.space.params})
            if params is not None and params in self.target.space:
                ref_job = factory.make(dict(params), phase="harden")
                ref_build = self._build(ref_job)
                reference = (ref_job, ref_build) if ref_build is not None else None
        harness = None
        if job.harness is not None:
            built = self._build(job.harness)
            harness = built.binary if built is not None else None
        return job, build, harness, reference, self._small(result) if sanitized else None

    def _small(self, result: Result) -> Resized | str | None:
        """The config built at ``[harden] sizes`` for the sanitizers, or why it
        runs at its shape's sizes (a string), or None where no sizes are given."""
        sweep = self.sweep

        def build(spec, shape, space):
            job = JobFactory(spec, shape, spec.variant(self.variant), space, sweep.mode).make(
                dict(result.params), phase="harden")
            built = self._build(job)
            return (job, built) if built is not None else None

        return sized_for_tools(sweep.spec, sweep.mode, self.shape, self.variant, dict(result.params), build)

    def _edge(self, result: Result, here: Here) -> tuple[str, Status | None, str]:
        """The config built for the edge size (``[harden] edge``) and checked on its inputs."""
        sweep = self.sweep
        spec, edge = sweep.spec, sweep.spec.harden.edge
        edge_spec, edge_shape, space = resized(spec, self.shape, self.variant, edge, "edge")
        named = said_sizes(edge)
        if dict(result.params) not in space:
            return "skipped", None, f"edge size {named}: the spec's constraints refuse this config there"
        factory = JobFactory(edge_spec, edge_shape, spec.variant(self.variant), space, sweep.mode)
        job = factory.make(dict(result.params), phase="harden")
        build = self._build(job)
        if build is None:
            return "failed", Status.COMPILE_ERROR, f"hardening: edge size {named}: the config did not build"
        reference = None
        params = sweep.mode.reference_config(edge_spec, {p.name: p.default for p in space.params})
        if params is not None and params in space:
            ref_job = factory.make(dict(params), phase="harden")
            ref_build = self._build(ref_job)
            reference = (ref_job, ref_build) if ref_build is not None else None
        said = harden_config(edge_spec, sweep.mode, job, build, here, exe=None, tools=(),
                             timeout=tool_timeout(spec, result), reference=reference).inputs
        if said is None:
            return "skipped", None, f"edge size {named}: no check"
        verdict_, status, message = said
        return verdict_, status, (message.replace("hardening: ", f"hardening: edge size {named}: ", 1)
                                  if status is not None else f"edge size {named}: {message}")

    def _build(self, job: Job):
        built = wait_for(self.sweep.executor.submit_build(job))
        if isinstance(built, Stopped):
            raise KeyboardInterrupt
        return built if built.status is Status.OK else None
