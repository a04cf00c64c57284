"""Does ``ksweep check`` catch a regression of a noisy kernel, with its defaults? The
evidence of the regression gate (docs/benchmarks.md).

    python3 bench/gate_noise.py [--tries 10] [--out DIR]

Each try is a temporary git repository of ``tests/programs/gate_noise.c`` (its reported
time: one run in five 1.6x slower, the others within 3%, drawn from a seeded generator:
the try's number is the seed), swept once (``ksweep run s.toml``, its default confirmation),
then two commits, each checked with ``ksweep check s.toml --json`` and nothing else:

- unchanged: a comment added (the baseline revision rebuilt, the same code): it must pass;
- regressed: COST doubled (every run 2x slower): it must fail.

``--timed``: the program times a loop of its own instead (``TIMED`` below: the wall clock
around COST units of work), so the noise is the machine's own; on a shared machine, the
other jobs' load.

An earlier version of ksweep: ``git archive COMMIT | tar -x -C DIR``, copy this script and
``tests/programs/gate_noise.c`` into DIR, run DIR's copy (the figures its JSON lacks are
left out). A check is a process of its own (``python3 -m ksweep``: its start-up counted), timed by the
wall clock. Prints one line per check and a summary: passes, fails, verdicts, rounds and
seconds per check (min, median, max), the load average before and after (the machine may be
shared with other work).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PROGRAM = HERE / "tests" / "programs" / "gate_noise.c"
SPEC = """[sweep]
objective = "ms"
[params]
X = [1, 2, 3]
[build]
sources = ["gate_noise.c"]
command = ["gcc", "-O0", "{{defines}}", "-o", "{{binary}}", "gate_noise.c"]
[run]
timeout = 20
env = {{ NOISE_COUNTER = "{counter}", NOISE_SEED = "{seed}" }}
"""
TIMED = """/* A program that times a loop: its noise is the machine's. */
#include <stdio.h>
#include <time.h>
#ifndef COST
#define COST 10.0
#endif
#ifndef X
#define X 1
#endif
int main(void) {
  struct timespec a, b;
  volatile double s = 0;
  long n = (long)(COST * (1.0 + 0.1 * (X - 1)) * 1000000);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; ++i) s += 0.5 * i;
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("@@RESULT ms=%.4f\\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
  return 0;
}
"""
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org",
       "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}


def sh(*argv, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)


def git(repo: Path, *args: str) -> None:
    r = sh("git", *args, cwd=repo)
    if r.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {r.stderr}")


def ksweep(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return sh(sys.executable, "-m", "ksweep", *args, cwd=repo)


def one_try(seed: int, folder: Path, timed: bool = False) -> list[dict]:
    repo = folder / "repo"
    repo.mkdir(parents=True)
    source = TIMED if timed else PROGRAM.read_text()
    git(repo, "init", "-q")
    (repo / "gate_noise.c").write_text(source)
    (repo / "s.toml").write_text(SPEC.format(counter=folder / "counter", seed=seed))
    (repo / ".gitignore").write_text(".ksweep/\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "baseline")
    swept = ksweep(repo, "run", "s.toml", "-q")
    if swept.returncode != 0:
        raise SystemExit(f"seed {seed}: the sweep failed: {swept.stdout}{swept.stderr}")
    out = []
    for case, text in (("unchanged", source.replace("/* A program", "/* Unchanged: a program")),
                       ("regressed", source.replace("#define COST 10.0", "#define COST 20.0"))):
        (repo / "gate_noise.c").write_text(text)
        git(repo, "commit", "-qam", case)
        started = time.monotonic()
        r = ksweep(repo, "check", "s.toml", "--json")
        seconds = time.monotonic() - started
        try:
            (v,) = json.loads(r.stdout)
        except ValueError:
            raise SystemExit(f"seed {seed}, {case}: {r.stdout}{r.stderr}") from None
        # (rounds, the speed-up's interval and baseline_rebuilt: not in an earlier version's JSON)
        row = {"seed": seed, "case": case, "exit": r.returncode, "verdict": v["verdict"],
               "rounds": v.get("rounds", 0), "speedup": v["speedup"], "ci95": v.get("speedup_ci95"),
               "rebuilt": v.get("baseline_rebuilt"), "seconds": seconds}
        ci = "[" + ", ".join(f"{x:.3f}" for x in row["ci95"]) + "]" if row["ci95"] else "-"
        print(f"seed {seed:2d} {case:9s}: exit {row['exit']} {row['verdict']:12s} {row['rounds']:3d} rounds, "
              f"speed-up {row['speedup']:.3f} {ci}, rebuilt {row['rebuilt']}, {seconds:.1f} s", flush=True)
        out.append(row)
    return out


def spread(values) -> str:
    values = sorted(values)
    return f"{values[0]:.1f} / {statistics.median(values):.1f} / {values[-1]:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--out", help="keep each try's repository here (default: a temporary folder, removed)")
    ap.add_argument("--timed", action="store_true", help="a program that times a loop: the machine's own noise")
    args = ap.parse_args()
    if shutil.which("gcc") is None or shutil.which("git") is None:
        print("needs gcc and git", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="gate-noise-"))
    rows = []
    try:
        for seed in range(1, args.tries + 1):
            rows += one_try(seed, root / f"try{seed}", args.timed)
    finally:
        if not args.out:
            shutil.rmtree(root, ignore_errors=True)
    load_after = os.getloadavg()
    for case, want in (("unchanged", 0), ("regressed", 1)):
        these = [r for r in rows if r["case"] == case]
        right = sum(r["exit"] == want for r in these)
        verdicts = {v: sum(r["verdict"] == v for r in these) for v in sorted({r["verdict"] for r in these})}
        print(f"{case}: {right} of {len(these)} exit {want} ({'passed' if want == 0 else 'failed'}); verdicts "
              f"{verdicts}; rounds min/median/max {spread(r['rounds'] for r in these)}; seconds per check "
              f"min/median/max {spread(r['seconds'] for r in these)}")
    print(f"load average (1, 5, 15 min) before {tuple(round(x, 2) for x in load_before)}, "
          f"after {tuple(round(x, 2) for x in load_after)}; {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
