"""Where kernel mode's time goes (issue 17, item 6), on a GPU machine.

    python bench/kernel_mode_phases.py [--spec examples/kernel_mode/matmul.toml] [--jobs N] [--host-checks]

Builds every valid config of the spec's first shape (the build cache in a fresh folder,
N parallel nvcc), then evaluates each in one worker exactly as a sweep does
(``Worker.evaluate``), with the worker's phases timed: module load, the correctness checks
(each a poisoned launch and the comparisons: of the outputs with the references, of the
inputs with their pristine copies; the comparisons alone are shown apart), the timing loop
(warm-up and timed launches), and the setup (inputs, the Python reference, the comparison
kernels' NVRTC build). ``--host-checks`` compares on the host instead (every output
downloaded), as kernel mode did before the checks moved to the GPU. Prints the totals and
the mean per config. ``--startup``: also the worker as a sweep starts it (a process of its
own: interpreter, imports, CUDA, setup, until it answers), and the setup's own profile
(cProfile, the functions that take longest, cumulative).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

t_import = time.perf_counter()
from ksweep.app.wiring import mode_for  # noqa: E402
from ksweep.build.builder import Builder, BuildRules  # noqa: E402
from ksweep.build.cache import BuildCache  # noqa: E402
from ksweep.kernel.backend import CudaBackend  # noqa: E402
from ksweep.kernel.executor import setup_request, shape_sizes  # noqa: E402
from ksweep.kernel.launch import entry_name  # noqa: E402
from ksweep.kernel.worker import Worker  # noqa: E402
from ksweep.run.handle import WorkerHandle  # noqa: E402
from ksweep.space.space import Space  # noqa: E402
from ksweep.spec.load import load_spec  # noqa: E402
from ksweep.status import Status  # noqa: E402
from ksweep.sweep.jobs import JobFactory  # noqa: E402

IMPORT_S = time.perf_counter() - t_import


class TimedWorker(Worker):
    """The sweep's worker with its phases timed."""

    def __init__(self, backend):
        super().__init__(backend)
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def _timed(self, phase, fn, *a, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            self.seconds[phase] += time.perf_counter() - t0
            self.calls[phase] += 1

    def _load(self, req):
        return self._timed("load", super()._load, req)

    def _check(self, which, expected, launch, inputs=False):
        return self._timed("check", super()._check, which, expected, launch, inputs)

    def _time(self, launch):
        return self._timed("timing", super()._time, launch)

    def time_comparisons(self):
        """The backend's comparisons timed as the phase "compare" (a part of "check")."""
        for name in ("check_output", "differing_bytes"):
            method = getattr(self.b, name)
            setattr(self.b, name, lambda *a, _m=method, **kw: self._timed("compare", _m, *a, **kw))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--spec", default=str(ROOT / "examples" / "kernel_mode" / "matmul.toml"))
    p.add_argument("--jobs", type=int, default=16)
    p.add_argument("--host-checks", action="store_true", help="compare on the host (downloads), as before")
    p.add_argument("--startup", action="store_true", help="also the worker process start-up and the setup's profile")
    args = p.parse_args()
    spec = load_spec(args.spec)
    shape, variant = spec.shape_list()[0], spec.variant_list()[0]
    space = Space.from_spec(spec, shape.name, variant.name)
    factory = JobFactory(spec, shape, variant, space, mode_for(spec))
    jobs = [factory.make(c) for c in space]
    with tempfile.TemporaryDirectory() as tmp:
        builder = Builder(BuildCache(Path(tmp) / "cache"), BuildRules.of(spec))
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.jobs) as pool:
            builds = list(pool.map(builder.build, jobs))
        build_wall = time.perf_counter() - t0
        build_cpu = sum(b.cpu_seconds for b in builds)

        k = spec.kernel
        setup = setup_request(k, spec.root, shape_sizes(spec, shape))
        if args.startup:
            t0 = time.perf_counter()
            handle = WorkerHandle("cuda", {}, setup)
            handle.request({"op": "ping"}, timeout=600)
            print(f"worker process (spawn, imports, CUDA, setup) until it answers: {time.perf_counter() - t0:.2f} s")
            handle.close()
        t0 = time.perf_counter()
        worker = TimedWorker(CudaBackend(0, gpu_checks=not args.host_checks))
        worker.time_comparisons()
        backend_s = time.perf_counter() - t0
        profile = cProfile.Profile() if args.startup else None
        if profile:
            profile.enable()
        checks = worker.setup(setup)["checks"]
        setup_s = time.perf_counter() - t0  # with the profiler's own cost when it runs
        if profile:
            profile.disable()
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(18)
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])
        print(f"backend (cuInit, context, the check kernels' build started): {backend_s:.2f} s of the setup")

        per_config, ok, metrics = [], 0, []
        for job, build in zip(jobs, builds):
            if build.status is not Status.OK:
                continue
            entry = entry_name([x.name for x in build.report.kernels], k)
            req = {"op": "eval", "cubin": str(build.binary), "entry": entry, "params": dict(job.params),
                   **{x: job.launch[x] for x in ("grid", "block", "smem")}, "capture": None,
                   "reference_file": None}
            t1 = time.perf_counter()
            try:
                answer = worker.evaluate(req)
                ok += answer.get("outputs") == "matched"
                metrics.append(answer.get("metrics") or {})
            except Exception as exc:  # noqa: BLE001 - a config that cannot launch
                worker.seconds["failed"] += 0
                print(f"  {dict(job.params)}: {type(exc).__name__}: {exc}")
            per_config.append(time.perf_counter() - t1)
    n = len(per_config)
    print(f"import ksweep: {IMPORT_S:.2f} s; builds: {len(jobs)} in {build_wall:.1f} s wall, {build_cpu:.1f} CPU-s "
          f"({args.jobs} jobs); worker setup (CUDA, inputs, reference): {setup_s:.2f} s; checks on the {checks}")
    print(f"evaluations: {n} configs ({ok} matched) in {sum(per_config):.2f} s, "
          f"mean {statistics.mean(per_config) * 1e3:.0f} ms, median {statistics.median(per_config) * 1e3:.0f} ms")
    for phase in ("load", "check", "compare", "timing"):
        s, c = worker.seconds[phase], worker.calls[phase]
        print(f"  {phase:<7} {s:7.2f} s in {c} calls ({1e3 * s / max(c, 1):.1f} ms each, {100 * s / sum(per_config):.0f}%)"
              + ("  (part of check)" if phase == "compare" else ""))
    timed = [m for m in metrics if "reps" in m]
    if timed:
        print(f"  timing loops: {statistics.mean(m['warmup_launches'] for m in timed):.1f} warm-up launches and "
              f"{statistics.mean(m['reps'] for m in timed):.1f} timed launches per config on average")
    return 0


if __name__ == "__main__":
    sys.exit(main())
