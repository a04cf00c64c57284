"""CPU an idle local Dask cluster takes (docs/benchmarks.md, "An idle local cluster"): the
cluster `ksweep run --cluster local` starts (two fake GPU workers and one build worker, each
a process with its nanny), left idle, the CPU-seconds of this process and all its children in
30 s after they are up.

    python bench/idle_cluster.py [--as-the-tests] [--seconds 30]

``--as-the-tests``: with the test session's settings for this process too (tests/conftest.py's
dask_cluster: the event loop's and the memory watch once a second), which reach the scheduler
and the nannies that run here."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def cpu_seconds() -> float:
    """CPU-seconds of this process and every live descendant (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            procs[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    total, todo = 0.0, [os.getpid()]
    while todo:
        parent = todo.pop()
        for pid, (ppid, cpu) in procs.items():
            if ppid == parent:
                total += cpu
                todo.append(pid)
    mine = os.times()
    return total + mine.user + mine.system


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--as-the-tests", action="store_true", help="tests/conftest.py's settings in this process too")
    p.add_argument("--seconds", type=float, default=30.0)
    args = p.parse_args()
    import dask
    import distributed

    from ksweep.run.dask_executor import local_cluster
    from ksweep.run.gpus import Gpu

    if args.as_the_tests:
        dask.config.set({"distributed.admin.tick.interval": "1s", "distributed.worker.memory.monitor-interval": "1s"})
    cluster = local_cluster([Gpu(0, "fake"), Gpu(1, "fake")], build_workers=1, build_threads=1)
    client = distributed.Client(cluster)
    try:
        client.wait_for_workers(3, timeout=180)
        time.sleep(3)  # past the start-up
        before = cpu_seconds()
        time.sleep(args.seconds)
        used = cpu_seconds() - before
    finally:
        client.close()
        cluster.close()
    print(f"idle local cluster{' (the tests' settings)' if args.as_the_tests else ''}: {used:.2f} CPU-seconds "
          f"in {args.seconds:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
