"""Where the wall time of one kernel-mode sweep goes, as ``ksweep run`` spends it (GPU machine).

    python3 bench/kernel_timeline.py [SPEC] [-- ksweep run options]

Runs ``ksweep run SPEC --strategy grid`` in this process (default: the matmul example) with
an empty build cache and database, and records when each thing happened, counted from the
process's own start (interpreter start-up included): imports, the worker's spawn, its
hello (interpreter, imports, CUDA initialised) and the end of its setup (inputs, the
reference), every cubin build and every evaluation (the sweep's, then the confirmation's).
The methods are wrapped, not changed: what is measured is the code the CLI runs.
"""

from __future__ import annotations

import os
import sys
import time


def process_start() -> float:
    """This process's start on time.time()'s clock (to a clock tick, 10 ms): its start in
    ticks since boot, against the time since boot now."""
    with open(f"/proc/{os.getpid()}/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    since_start = time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - since_start


T0 = process_start()
t_first_line = time.time() - T0

import statistics  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ksweep.build.builder import Builder  # noqa: E402
from ksweep.cli.main import main as ksweep_main  # noqa: E402
from ksweep.kernel.executor import KernelExecutor  # noqa: E402
from ksweep.run import handle  # noqa: E402

t_imports = time.time() - T0
events: list[tuple[float, float, str, str]] = []  # (start, end, kind, what)
lock = threading.Lock()


def now() -> float:
    return time.time() - T0


def record(kind: str, what: str, start: float) -> None:
    with lock:
        events.append((start, now(), kind, what))


def wrap(owner, name: str, kind: str, describe):
    original = getattr(owner, name)

    def wrapper(*a, **kw):
        start = now()
        try:
            return original(*a, **kw)
        finally:
            what = describe(*a, **kw)
            if what is not None:
                record(kind, what, start)

    setattr(owner, name, wrapper)


wrap(Builder, "build", "build", lambda self, job, *a, **kw: " ".join(f"{v}" for v in job.params.values()))
wrap(handle, "start_worker", "spawn", lambda *a, **kw: "worker process started")
wrap(handle.WorkerHandle, "start", "worker", lambda *a, **kw: "spawn to ready (hello and setup)")
_read = handle.WorkerHandle._read


def read(self, timeout):  # the worker's hello and its setup's answer, when they come
    start = now()
    answer = _read(self, timeout)
    if answer.replied and ("hello" in answer.data or "checks" in answer.data):
        parts = answer.data.get("seconds", {})
        record("hello" if "hello" in answer.data else "setup",
               "; " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()) if parts else "", start)
    return answer


handle.WorkerHandle._read = read
wrap(KernelExecutor, "run_on", "eval", lambda self, gpu, job, build: " ".join(f"{v}" for v in job.params.values()))


def main() -> int:
    argv = sys.argv[1:]
    spec = argv.pop(0) if argv and not argv[0].startswith("-") else str(ROOT / "examples/kernel_mode/matmul.toml")
    with tempfile.TemporaryDirectory() as tmp:
        start = now()
        code = ksweep_main(["run", spec, "--strategy", "grid", "--db", f"{tmp}/t.db", *argv])
        end = now()
    ev = sorted(events)
    print(f"\ntimeline of `ksweep run {Path(spec).name} --strategy grid` (seconds from the process's start)")
    print(f"  {t_first_line:6.2f}  first line of this script (interpreter start-up)")
    print(f"  {t_imports:6.2f}  ksweep imported")
    print(f"  {start:6.2f}  ksweep run called")
    for kind, label in (("spawn", "worker spawned"), ("hello", "worker's hello (imports, CUDA up)"),
                        ("setup", "worker's setup answered (inputs, reference, uploads)")):
        for s, e, k, what in ev:
            if k == kind:
                print(f"  {s if kind == 'spawn' else e:6.2f}  {label}{what}")
    builds = [x for x in ev if x[2] == "build"]
    evals = [x for x in ev if x[2] == "eval"]
    if builds:
        print(f"  {builds[0][0]:6.2f}  first build started; {len(builds)} builds, each "
              f"{statistics.median(e - s for s, e, _, _ in builds):.2f} s median; first done "
              f"{min(e for _, e, _, _ in builds):.2f}, last done {max(e for _, e, _, _ in builds):.2f}")
    if evals:
        print(f"  {evals[0][0]:6.2f}  first evaluation started (ended {evals[0][1]:.2f}); {len(evals)} evaluations, "
              f"each {statistics.median(e - s for s, e, _, _ in evals) * 1e3:.0f} ms median")
        print(f"  {evals[-1][1]:6.2f}  last evaluation ended")
        gpu_busy = sum(e - s for s, e, _, _ in evals)
        print(f"          evaluations' own time {gpu_busy:.2f} s of the {evals[-1][1] - evals[0][0]:.2f} s "
              "from the first's start to the last's end")
    print(f"  {end:6.2f}  ksweep run returned (exit {code})")
    host_setup_parts(spec)
    if "-v" in sys.argv:
        print("\nevery event (start, end, kind, what):")
        for s, e, k, what in ev:
            print(f"  {s:6.2f} {e:6.2f}  {k:6s} {what}")
    return code


def host_setup_parts(spec_path: str) -> None:
    """The worker's host part of its setup (``host_setup``, run here, in this process), part by part."""
    from ksweep.kernel.executor import setup_request, shape_sizes
    from ksweep.kernel.inputs import host_setup
    from ksweep.spec.load import load_spec

    spec = load_spec(spec_path)
    host = host_setup(setup_request(spec.kernel, spec.root, shape_sizes(spec, spec.shape_list()[0])))
    print(f"\nthe setup's host part, here: {host.seconds:.2f} s; "
          + ", ".join(f"{name} {s:.2f} s" for name, s in host.parts.items()))


if __name__ == "__main__":
    sys.exit(main())
