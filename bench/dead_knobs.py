"""Dead knobs on the SGEMM example (examples/sgemm), on a GPU machine, in one call:

1. a planted dead knob: UNROLL_HINT, #ifndef-guarded in sgemm.cu but read by nothing, swept
   beside the example's knobs at one shape: the configs evaluated (each one built), the runs
   made, the configs measured by another config's run (same program, same run command), and
   the GPU seconds those runs would have taken (their measured config's run time), once in
   grid order (UNROLL_HINT is the last knob: its four values follow each other) and once
   with the default search;
2. the all-unguarded variant: every tunable #define of sgemm.cu without its #ifndef guard,
   so the source's value replaces every -D and every config builds one program: the sweep
   stops (exit 2, one line), and the builds it made before (the build cache's entries), the
   seconds it took, against the configs the space holds.

    python3 bench/dead_knobs.py [--max-evals N] [--shape S] [-j JOBS] [--out DIR] [--no-gpu-check]

Prints the machine, the commit and a summary, and writes it as JSON to OUT/dead_knobs.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "sgemm"
KNOBS = ("BM", "BN", "BK", "WM", "WN", "WNITER", "TM", "TN", "NUM_THREADS")
PLANTED = "#ifndef UNROLL_HINT\n#define UNROLL_HINT 4  // planted: read by nothing\n#endif\n"


def ksweep(*args: str, cwd: Path, out_only: bool = False) -> tuple[int, str, float]:
    """(exit status, what it printed, seconds) of ``python -m ksweep ARGS`` (stdout alone with ``out_only``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "ksweep", *args], cwd=cwd, env=env, capture_output=True, text=True)
    return r.returncode, r.stdout if out_only else r.stdout + r.stderr, time.monotonic() - t0


def copy_example(where: Path) -> Path:
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    for name in ("sgemm.cu", "sgemm.toml"):
        shutil.copy(EXAMPLE / name, where / name)
    return where


def planted(where: Path) -> None:
    src = where / "sgemm.cu"
    text = src.read_text()
    anchor = "#ifndef NUM_THREADS"
    assert anchor in text, "sgemm.cu changed: no #ifndef NUM_THREADS to plant the knob beside"
    src.write_text(text.replace(anchor, PLANTED + anchor, 1))
    spec = where / "sgemm.toml"
    text = spec.read_text()
    line = re.search(r"^NUM_THREADS = .*$", text, re.M)
    spec.write_text(text[:line.end()] + "\nUNROLL_HINT = [1, 2, 4, 8]" + text[line.end():])


def unguarded(where: Path) -> None:
    src = where / "sgemm.cu"
    text = src.read_text()
    for knob in KNOBS:
        text, n = re.subn(rf"^#ifndef {knob}\n(#define {knob} [^\n]*\n)#endif\n", r"\1", text, flags=re.M)
        assert n == 1, f"sgemm.cu changed: no guarded #define {knob}"
    src.write_text(text)


def stored(db: Path) -> dict:
    """What a sweep stored: configs, runs, the configs measured by another's run and the run
    seconds they did not take."""
    sys.path.insert(0, str(ROOT))
    from ksweep.job import config_id
    from ksweep.status import Status
    from ksweep.store.sqlite import Store

    with Store(db, create=False) as store:
        results = [r for r in store.results() if r.status is not Status.PRUNED]
    by_id = {config_id(r.params): r for r in results}
    shared = [r for r in results if r.same_as is not None]
    saved = sum(by_id[r.same_as].run_seconds or 0.0 for r in shared if r.same_as in by_id)
    return {"configs": len(results), "built": sum(r.build_seconds is not None for r in results),
            "runs": sum(r.run_seconds is not None for r in results), "shared": len(shared),
            "run_seconds": round(sum(r.run_seconds or 0.0 for r in results), 2),
            "run_seconds_saved": round(saved, 2),
            "build_seconds": round(sum(r.build_seconds or 0.0 for r in results), 2),
            "statuses": sorted({r.status.value for r in results})}


def builds_in(cache: Path) -> int:
    """Config builds a cache holds (a harness's entry has no code digest)."""
    n = 0
    for meta in cache.glob("*/meta.json"):
        try:
            n += "code" in json.loads(meta.read_text())
        except (OSError, ValueError):
            pass
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-evals", type=int, default=64, help="configs per dead-knob sweep (default 64)")
    ap.add_argument("--shape", default="sq4096")
    ap.add_argument("-j", "--jobs", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/dead_knobs")))
    ap.add_argument("--no-gpu-check", action="store_true", help="build and run on a host without a GPU (runs fail)")
    a = ap.parse_args()
    common = ["--no-harden", "--shape", a.shape, *(["-j", str(a.jobs)] if a.jobs else []),
              *(["--no-gpu-check"] if a.no_gpu_check else [])]
    a.out.mkdir(parents=True, exist_ok=True)
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if shutil.which("nvidia-smi") else "none"
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"GPU: {gpu}  cores: {os.cpu_count()}  commit: {commit}  date: {time.strftime('%Y-%m-%d', time.gmtime())}")
    summary: dict = {"gpu": gpu, "cores": os.cpu_count(), "commit": commit, "max_evals": a.max_evals,
                     "shape": a.shape}

    for strategy in ("grid", "auto"):
        where = copy_example(a.out / f"dead_{strategy}")
        planted(where)
        code, log, seconds = ksweep("run", "sgemm.toml", "--db", "dead.db", "--strategy", strategy, "--max-evals",
                                   str(a.max_evals), "--no-confirm", *common, cwd=where)
        (where / "run.log").write_text(log)
        named = [ln.strip() for ln in log.splitlines() if "UNROLL_HINT: 0 of" in ln]
        got = {"exit": code, "seconds": round(seconds, 1), "named": named[:1],
               **(stored(where / "dead.db") if (where / "dead.db").exists() else {})}
        summary[f"dead_knob_{strategy}"] = got
        print(f"\nplanted dead knob, {strategy}: exit {code}, {seconds:.1f} s; {got.get('configs', 0)} configs built, "
              f"{got.get('runs', 0)} runs, {got.get('shared', 0)} measured by another config's run "
              f"({got.get('run_seconds_saved', 0)} s of runs not made, of {got.get('run_seconds', 0)} s run)")
        print("  " + (named[0] if named else "UNROLL_HINT was not named"))
        if code != 0:
            print("  " + "\n  ".join(log.strip().splitlines()[-5:]))

    where = copy_example(a.out / "unguarded")
    unguarded(where)
    _, plan, _ = ksweep("plan", "sgemm.toml", "--json", cwd=where, out_only=True)
    size = next((t.get("valid") for t in json.loads(plan).get("entries", []) if t.get("shape") == a.shape), None)
    code, log, seconds = ksweep("run", "sgemm.toml", "--db", "unguarded.db", *common, cwd=where)
    (where / "run.log").write_text(log)
    line = next((ln for ln in log.splitlines() if "no parameter changes the program" in ln), "")
    evaluated = stored(where / "unguarded.db")["configs"] if (where / "unguarded.db").exists() else 0
    got = {"exit": code, "seconds": round(seconds, 1), "builds": builds_in(where / ".ksweep" / "cache"),
           "stored": evaluated, "space": size, "line": line}
    summary["unguarded"] = got
    print(f"\nall unguarded: exit {code} after {seconds:.1f} s, {got['builds']} builds made, {evaluated} results "
          f"stored, of {size} configs in the space")
    print("  " + (line or "\n  ".join(log.strip().splitlines()[-5:])))
    (a.out / "dead_knobs.json").write_text(json.dumps(summary, indent=2))
    print(f"\n{a.out / 'dead_knobs.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
