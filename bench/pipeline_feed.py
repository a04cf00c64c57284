"""Does the pipeline keep the GPUs fed while builds are uneven? A simulation of the sweep
driver on an executor whose builds and runs take time (threads that wait, no compiler, no
GPU): each config's build takes a time drawn once per config (most ``--build`` seconds, one
in ten ``--slow`` times that), each run ``--run`` seconds on one of ``--gpus`` slots, with
``--jobs`` builds at once. The real driver, store and strategy run; only the executor is
simulated. Printed per setting: the wall time, configs per minute, and the GPU slots' idle
share (1 - busy run seconds / (wall x slots), from the first build on).

    python bench/pipeline_feed.py [--configs 400] [--gpus 4] [--jobs 16] [--build 0.4]
        [--run 0.05] [--slow 8] [--repeats 3]

"old" asks the random search at most the window ahead of what it was told (every strategy
did so before ``Strategy.adaptive``); "new" asks it while fewer than the window are in flight.

``--compare order`` compares instead the order queued builds start in: "asked" (the order
asked, as before sweep/build_order.py) and "cheapest" (while a GPU slot has nothing to run
next, the config expected to build soonest). ``--slow-by-value``: the slow builds are those
of A = 0 and A = 10 (one config in ten, a parameter's doing, as a CUTLASS config's stages or
tile make its build slow) instead of a draw per config, which nothing can foresee.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import replace
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from unittest import mock

from ksweep import load_spec
from ksweep.status import Status
from ksweep.store.sqlite import Store
from ksweep.strategies.random import RandomStrategy
from ksweep.sweep import pipeline
from ksweep.sweep.build_order import next_build
from ksweep.sweep.driver import Sweep
from ksweep.sweep.options import SweepOptions
from ksweep.testing import FakeExecutor


class Timed(FakeExecutor):
    """FakeExecutor's answers, each future completed after its build's or run's time."""

    def __init__(self, answer, *, gpus: int, jobs: int, build_s, run_s: float):
        super().__init__(answer, gpu_models=("sim",) * gpus, build_jobs=jobs, completion="immediate")
        self._builders = ThreadPoolExecutor(jobs)
        self._gpus = ThreadPoolExecutor(gpus)
        self._build_s, self._run_s = build_s, run_s
        self.busy = 0.0
        self._lock = threading.Lock()

    def _later(self, pool, seconds: float, value, gpu: bool) -> Future:
        out: Future = Future()

        def work():
            time.sleep(seconds)
            if gpu:
                with self._lock:
                    self.busy += seconds
            if out.set_running_or_notify_cancel():
                out.set_result(value)

        pool.submit(work)
        return out

    def submit_build(self, job):
        seconds = self._build_s(job)  # what a real build reports of its wall time
        return self._later(self._builders, seconds, replace(super().submit_build(job).result(), seconds=seconds), False)

    def submit_run(self, job, build):
        return self._later(self._gpus, self._run_s, super().submit_run(job, build).result(), True)

    def shutdown(self, cancel: bool = False) -> None:
        self._builders.shutdown(cancel_futures=cancel)
        self._gpus.shutdown(cancel_futures=cancel)
        super().shutdown(cancel)


def asked(queued, costs, starving) -> int:
    """The queued build asked first (the order before sweep/build_order.py)."""
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", type=int, default=400)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--build", type=float, default=0.4, help="seconds of most builds")
    ap.add_argument("--slow", type=float, default=8.0, help="one build in ten takes this many times longer")
    ap.add_argument("--run", type=float, default=0.05, help="seconds of each run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compare", choices=("adaptive", "order"), default="adaptive")
    ap.add_argument("--slow-by-value", action="store_true", help="the slow builds are A = 0 and A = 10's")
    args = ap.parse_args()

    def build_s(job) -> float:
        h = int(hashlib.sha256(job.config_id.encode()).hexdigest()[:8], 16)
        slow = job.params["A"] % 10 == 0 if args.slow_by_value else h % 10 == 0
        return args.build * (args.slow if slow else 1.0) * (0.75 + 0.5 * ((h >> 8) % 100) / 100)

    def answer(job):
        return Status.OK, Status.OK, {"ms": 1.0 + job.params["A"] + job.params["B"] / 100}

    rows = {}
    settings = ("old", "new") if args.compare == "adaptive" else ("asked", "cheapest")
    for r in range(args.repeats):
        for setting in (settings if r % 2 == 0 else settings[::-1]):  # order alternated
            # "old": the random search taken for one whose proposals follow its results;
            # "asked": the queued builds started in the order asked
            with mock.patch.object(RandomStrategy, "adaptive", setting == "old"), \
                    mock.patch.object(pipeline, "next_build", asked if setting == "asked" else next_build), \
                    tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                (folder / "toy.c").write_text("int main(void) { return 0; }\n")
                (folder / "toy.toml").write_text(textwrap.dedent("""
                    [sweep]
                    name = "feed"
                    objective = "ms"
                    [params]
                    A = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
                    B = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
                    [build]
                    sources = ["toy.c"]
                    command = ["true", "{defines}", "-o", "{binary}", "toy.c"]
                    [run]
                    command = ["{binary}"]
                """))
                spec = load_spec(folder / "toy.toml")
                ex = Timed(answer, gpus=args.gpus, jobs=args.jobs, build_s=build_s, run_s=args.run)
                started = time.monotonic()
                with Store(folder / "r.db") as store:
                    Sweep(spec, store, ex, SweepOptions(strategy="random", confirm=None, max_evals=args.configs,
                                                        harden=False, seed=r)).run()
                wall = time.monotonic() - started
                ex.shutdown()
                idle = 1 - ex.busy / (wall * args.gpus)
                rows.setdefault(setting, []).append((wall, args.configs / wall * 60, idle))
    print(f"{args.configs} configs, {args.gpus} GPU slots, {args.jobs} builds at once, builds {args.build:g} s "
          f"(1 in 10 x{args.slow:g}{', by the value of A' if args.slow_by_value else ''}), runs {args.run:g} s; "
          f"{args.repeats} repeats, order alternated")
    for setting, got in rows.items():
        walls, rates, idles = zip(*got)
        print(f"{setting}: wall {statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f}), "
              f"{statistics.median(rates):.0f} configs/min ({min(rates):.0f}-{max(rates):.0f}), GPU idle "
              f"{100 * statistics.median(idles):.0f}% ({100 * min(idles):.0f}-{100 * max(idles):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
