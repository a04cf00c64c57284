"""The HTML report of a large sweep (docs/benchmarks.md, "The HTML report of a 20,000-config
sweep"): how big the page is, how long `ksweep report --html` takes, and how long the page
takes to open in a browser until every table and chart is drawn.

    python3 bench/html_page.py [--configs 20000] [--repeats 5] [--keep DIR]

Makes a database as a sweep of ``--configs`` configs of six knobs leaves it: 80% OK with two
objectives (ms and watts: a Pareto front), 10% failed with a message each (compile errors,
run errors, hangs), 10% pruned with the constraint's reason, the five leaders and the default
confirmed in three rounds. Then, each ``--repeats`` times:
- *write*: the wall time of `python3 -m ksweep report DB --html PAGE --force` in a fresh
  process (start-up, reading, the insights, compressing, writing), and its CPU time;
- *open*: the page opened in a new tab of one headless Chromium (ksweep/testing/browser.py)
  and the time from the navigation's start until the page says everything is drawn
  (``performance.now()`` when ``window.ksweepReady`` resolves: the library and the data
  inflated, the library's script run, every table filled and every chart drawn), and when
  each of those stages ended.
Prints the page's size, each run's seconds, and their median and range.
"""

from __future__ import annotations

import argparse
import itertools
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ksweep.result import Measurement, Result  # noqa: E402
from ksweep.spec.model import Objective  # noqa: E402
from ksweep.status import Status  # noqa: E402
from ksweep.store.sqlite import Store  # noqa: E402
from ksweep.testing.browser import Browser  # noqa: E402

KNOBS = {"BM": [16, 32, 64, 128, 256], "BN": [16, 32, 64, 128, 256], "BK": [8, 16, 32, 64, 128],
         "WM": [1, 2, 4, 8, 16, 32], "STAGES": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "SWIZZLE": [False, True, None]}

REV = "git:0123456789ab"  # the source revision every result was measured on


def make_db(path: Path, configs: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    names = list(KNOBS)
    every = list(itertools.product(*KNOBS.values()))
    rng.shuffle(every)
    rows = []
    t = 1.7e9
    for i, values in enumerate(every[:configs]):
        params = dict(zip(names, values))
        t += 0.5
        u = rng.random()
        if u < 0.10:
            smem = params["BM"] * params["BK"] * 4 * params["STAGES"]
            rows.append(Result("base", "m4096", params, Status.PRUNED, f"smem: {smem} bytes > 232448", revision=REV))
            continue
        if u < 0.20:
            status, message = rng.choice([(Status.COMPILE_ERROR, "kernel.cu(212): error: too many resources"),
                                          (Status.RUN_ERROR, f"exit code {rng.randint(1, 9)}"),
                                          (Status.HANG, "no result in 20 s: killed")])
            rows.append(Result("base", "m4096", params, status, message, started=t, finished=t + 0.4,
                               gpu_name="NVIDIA H100 80GB HBM3", driver="580.159.04", revision=REV))
            continue
        ms = (1.0 + abs(params["BM"] - 128) / 64 + abs(params["BN"] - 64) / 64 + params["STAGES"] * 0.05
              + 0.3 * (params["SWIZZLE"] is None)) * rng.uniform(0.98, 1.02)
        watts = 420.0 - 60 * ms + rng.uniform(-10, 10)
        rows.append(Result("base", "m4096", params, Status.OK, metrics={"ms": ms, "watts": watts, "checksum": 1.0},
                           regs=rng.choice([96, 128, 168, 232]), spills=0, smem=params["BM"] * params["BK"] * 8,
                           gpu_name="NVIDIA H100 80GB HBM3", driver="580.159.04", started=t, finished=t + 0.4,
                           gpu_state={"sm_clock_mhz": rng.choice([1755, 1980]), "sm_clock_min_mhz": 1710,
                                      "mem_clock_mhz": 2619, "throttled": False, "cuda_version": "13.0"},
                           revision=REV, cache_key=f"key{i}"))
    with Store(path) as store:
        store.set_objectives([Objective("ms", "min"), Objective("watts", "max")])
        store.set_meta("spec_name", "gemm-bench")
        store.set_meta(f"params:base:m4096", names)
        store.put_many(rows)
        ok = sorted((r for r in rows if r.status is Status.OK), key=lambda r: r.metrics["ms"])
        leaders = ok[:5] + [ok[len(ok) // 2]]
        store.set_meta("default:base:m4096", _config_id(leaders[-1].params))
        for k in range(3):
            for r in leaders:
                t += 0.5
                store.put_measurement(Measurement("base", "m4096", dict(r.params), r.cache_key, k, Status.OK,
                                                  r.metrics["ms"] * rng.uniform(0.99, 1.01), finished=t,
                                                  gpu_name=r.gpu_name))


def _config_id(params) -> str:
    from ksweep.job import config_id

    return config_id(params)


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s (range {min(values):.2f}-{max(values):.2f} s)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--keep", help="make the database and the page in this folder (kept)")
    args = ap.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="ksweep-html-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    db, page = folder / "bench.db", folder / "bench.html"
    db.unlink(missing_ok=True)
    made = time.perf_counter()
    make_db(db, args.configs)
    print(f"database: {args.configs:,} configs in {time.perf_counter() - made:.1f} s ({db})")
    writes, cpu = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-m", "ksweep", "report", str(db), "--html", str(page), "--force"],
                              cwd=ROOT, capture_output=True, text=True)
        writes.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if done.returncode != 0:
            sys.exit(done.stderr)
    size = page.stat().st_size
    print(f"page: {size / 1e6:.2f} MB ({size:,} bytes)")
    print(f"write (report --html, fresh process): {', '.join(f'{w:.2f}' for w in writes)} s; {spread(writes)}")
    print(f"  its CPU time (user + system): {', '.join(f'{c:.2f}' for c in cpu)} s; {spread(cpu)}")
    opens, stages = [], []
    with Browser() as browser:
        for _ in range(args.repeats):
            opened = browser.open(page.as_uri(), ready="window.ksweepReady")
            if "error" in opened.value or opened.network:
                sys.exit(f"the page failed: {opened.value} {opened.network}")
            opens.append(opened.value["ms"] / 1000)
            stages.append(opened.value["stages"])
        drawn = {c["kind"]: c["drawn"] for c in opened.value["charts"]}
    print(f"open (until every table and chart is drawn): {', '.join(f'{o:.2f}' for o in opens)} s; {spread(opens)}")
    for name in stages[0]:
        print(f"  {name} done at: median {statistics.median(s[name] for s in stages) / 1000:.2f} s "
              f"(range {min(s[name] for s in stages) / 1000:.2f}-{max(s[name] for s in stages) / 1000:.2f} s)")
    print(f"rows in its tables: {opened.value['rows']:,}; charts drawn: {drawn}; network requests: none")


if __name__ == "__main__":
    main()
