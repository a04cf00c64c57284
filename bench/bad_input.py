"""How fast ksweep refuses bad input, and how fast Ctrl-C stops a run (issue 12, item 10).

The issue's target for every bad input: "one line naming the file/option and the fix, exit 2,
in under 2 s". Each case runs ``python -m ksweep.cli.main ...`` in a fresh process (this
checkout first on PYTHONPATH), from a scratch folder holding tiny gcc specs of
tests/programs/behaviours.c; the time is the wall time of the whole process (interpreter
start-up and imports included), the median over --repeats runs, interleaved round by round.
A case PASSes with exit status 2, exactly one line on stderr, no "Traceback", and a median
under 2 s. The Python constraint that never returns is held to its time limit instead
(ksweep.spec.pycall.PYTHON_TIME_LIMIT, 10 s) + 2 s.

Ctrl-C: ``ksweep run`` of a spec whose program hangs (MODE=1: it pauses forever, with a
child); once the program is seen running, SIGINT goes to ksweep and the time until ksweep has
exited is taken, --ctrl-c-repeats times. PASS: every one under 2 s, exit 130, stderr says
"interrupted:" and "run the same command to resume", and no process of the sweep is left.

    python bench/bad_input.py [--repeats 3] [--ctrl-c-repeats 5] [--json]

Exits 1 when any row FAILs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from ksweep.spec.pycall import PYTHON_TIME_LIMIT  # noqa: E402

LIMIT = 2.0  # seconds, the target
KSWEEP = [sys.executable, "-m", "ksweep.cli.main"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}

BUILD = """
[build]
sources = ["behaviours.c"]
command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "behaviours.c"]
timeout = 60
"""
GOOD = "[params]\nMODE = [0]\nX = [1, 2]\n" + BUILD
OTHER = "[params]\nMODE = [0]\nX = [1, 2, 3]\n" + BUILD
HANG = "[params]\nMODE = [1]\n" + BUILD + "[run]\ntimeout = 60\n"
TILEE = "[params]\nTILE = [1, 2]\n" + BUILD.replace('"{defines}"', '"-DT={TILEE}", "{defines}"')
RULES = "import sys\n\ndef leaves(a):\n    sys.exit(3)\n\ndef spins(a):\n    while True:\n        pass\n"
PY = '[params]\nA = [1, 2, 3]\n[[constraints]]\nname = "py"\npython = "rules.py:{}"\n'
EXPR = '[params]\nA = [1, 2]\n[[constraints]]\nname = "e"\nexpr = "{} > A"\n'
DEEP = 100_000


def setup(work: Path) -> None:
    """Write the specs every case reads; make the database of another spec (untimed)."""
    shutil.copy(ROOT / "tests" / "programs" / "behaviours.c", work / "behaviours.c")
    files = {
        "good.toml": GOOD, "other.toml": OTHER, "hang.toml": HANG, "tilee.toml": TILEE, "rules.py": RULES,
        "exits.toml": PY.format("leaves"), "spins.toml": PY.format("spins"), "empty.toml": "",
        "pow.toml": EXPR.format("9**9**9"), "shift.toml": EXPR.format("1 << 10**12"),
        "repeat.toml": EXPR.format("'x' * 10**10"),
        "parens.toml": EXPR.format("(" * DEEP + "A" + ")" * DEEP),
        "sum.toml": EXPR.format("+".join(["A"] * DEEP)),
    }
    for name, text in files.items():
        (work / name).write_text(text)
    (work / "latin1.toml").write_bytes("[params]\n# caf\u00e9\nA = [1, 2]\n".encode("latin-1"))
    r = subprocess.run([*KSWEEP, "run", "other.toml", "--max-evals", "1", "-q", "--db", "other.db"],
                       cwd=work, env=ENV, capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not (work / "other.db").exists():
        raise SystemExit(f"could not make the other spec's database ({r.returncode}):\n{r.stderr[-2000:]}")


# (label, arguments after `ksweep`, limit in seconds); run from the scratch folder
CASES = [
    ("spec not UTF-8 (Latin-1 byte)", ["plan", "latin1.toml"], LIMIT),
    ("empty spec file", ["plan", "empty.toml"], LIMIT),
    ("run --gpus abc", ["run", "good.toml", "--db", "r.db", "--gpus", "abc"], LIMIT),
    ("run --shape nope", ["run", "good.toml", "--db", "r.db", "--shape", "nope"], LIMIT),
    ("run --variant nope", ["run", "good.toml", "--db", "r.db", "--variant", "nope"], LIMIT),
    ("run --max-evals 0", ["run", "good.toml", "--db", "r.db", "--max-evals", "0"], LIMIT),
    ("run --max-evals -1", ["run", "good.toml", "--db", "r.db", "--max-evals", "-1"], LIMIT),
    ("run --time-limit -5", ["run", "good.toml", "--db", "r.db", "--time-limit", "-5"], LIMIT),
    ("run --jobs 0", ["run", "good.toml", "--db", "r.db", "--jobs", "0"], LIMIT),
    ("placeholder {TILEE} in build.command (plan)", ["plan", "tilee.toml"], LIMIT),
    ("--db on a directory", ["run", "good.toml", "--db", "."], LIMIT),
    ("--db in a folder that cannot be made", ["run", "good.toml", "--db", "/proc/nonexistent/x.db"], LIMIT),
    ("--db in a read-only folder", ["run", "good.toml", "--db", "/proc/x.db"], LIMIT),
    ("--db of another spec's database", ["run", "good.toml", "--db", "other.db"], LIMIT),
    ("Python constraint calls sys.exit", ["plan", "exits.toml"], LIMIT),
    ("expr 9**9**9", ["plan", "pow.toml"], LIMIT),
    ("expr 1 << 10**12", ["plan", "shift.toml"], LIMIT),
    ("expr 'x' * 10**10", ["plan", "repeat.toml"], LIMIT),
    (f"expr {DEEP:,} nested parentheses", ["plan", "parens.toml"], LIMIT),
    (f"expr {DEEP:,}-term sum", ["plan", "sum.toml"], LIMIT),
    ("Python constraint never returns (time limit)", ["plan", "spins.toml"], PYTHON_TIME_LIMIT + LIMIT),
]


def once(argv: list[str], work: Path, timeout: float) -> dict:
    t0 = time.perf_counter()
    try:
        r = subprocess.run([*KSWEEP, *argv], cwd=work, env=ENV, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"code": None, "lines": [], "traceback": False, "wall": time.perf_counter() - t0}
    return {"code": r.returncode, "lines": r.stderr.strip().splitlines(), "traceback": "Traceback" in r.stderr,
            "wall": time.perf_counter() - t0}


def bad_inputs(work: Path, repeats: int) -> list[dict]:
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in CASES}
    for _ in range(repeats):  # round by round, so drift on a shared machine hits every case
        for label, argv, limit in CASES:
            runs[label].append(once(argv, work, timeout=limit + 60))
    rows = []
    for label, argv, limit in CASES:
        rs = runs[label]
        codes = sorted({r["code"] for r in rs}, key=str)
        nlines = sorted({len(r["lines"]) for r in rs})
        traceback = any(r["traceback"] for r in rs)
        median = statistics.median(r["wall"] for r in rs)
        ok = codes == [2] and nlines == [1] and not traceback and median < limit
        rows.append({"case": label, "command": "ksweep " + " ".join(argv), "exit": codes, "stderr_lines": nlines,
                     "traceback": traceback, "median_s": round(median, 3),
                     "walls_s": [round(r["wall"], 3) for r in rs], "limit_s": limit,
                     "verdict": "PASS" if ok else "FAIL", "stderr": rs[-1]["lines"]})
    return rows


def sweep_processes(work: Path) -> set[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return {ln.split(None, 1)[0] for ln in out.splitlines()[1:]
            if len(ln.split(None, 1)) == 2 and ln.split(None, 1)[1].startswith(str(work))}


def ctrl_c(work: Path, repeats: int) -> dict:
    """SIGINT to `ksweep run` while its program hangs; seconds until ksweep has exited."""
    tries = []
    for i in range(repeats):
        db = work / f"hang{i}.db"
        proc = subprocess.Popen([*KSWEEP, "run", "hang.toml", "--db", db.name, "-j", "1"], cwd=work, env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        seen: set[str] = set()
        hung = False
        while time.monotonic() < deadline and proc.poll() is None:
            running = sweep_processes(work)  # the program runs from the build cache under work/
            if running & seen:  # seen in two polls in a row: it is the hang, not a build step
                hung = True
                break
            seen = running
            time.sleep(0.1)
        if not hung:
            proc.kill()
            raise SystemExit(f"the hanging program was never seen running:\n{proc.communicate()[1][-2000:]}")
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        latency = time.perf_counter() - t0
        time.sleep(0.2)
        left = sweep_processes(work)
        for pid in left:  # a program ksweep left behind: end it so the next try starts clean
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        lines = err.strip().splitlines()
        tries.append({"latency_s": round(latency, 3), "exit": proc.returncode, "left_processes": len(left),
                      "message": any("interrupted:" in ln and "run the same command to resume" in ln for ln in lines),
                      "traceback": "Traceback" in err, "last_line": lines[-1] if lines else ""})
    worst = max(t["latency_s"] for t in tries)
    ok = all(t["latency_s"] < LIMIT and t["exit"] == 130 and t["message"] and not t["traceback"]
             and t["left_processes"] == 0 for t in tries)
    return {"tries": tries, "max_s": worst, "limit_s": LIMIT, "verdict": "PASS" if ok else "FAIL"}


def machine() -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "ksweep"], cwd=ROOT, capture_output=True,
                           text=True).stdout
    return {"cores": os.cpu_count(), "python": platform.python_version(), "commit": commit.strip(),
            "ksweep_dirty": bool(dirty.strip()), "load_1min": round(os.getloadavg()[0], 2),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def show(rows: list[dict], cc: dict, info: dict, repeats: int) -> None:
    print(f"{info['cores']} cores, Python {info['python']}, commit {info['commit']}"
          f"{' (ksweep/ has uncommitted changes)' if info['ksweep_dirty'] else ''}, {info['date']}, "
          f"1-min load {info['load_1min']}")
    print()
    print(f"| bad input | exit | stderr lines | traceback | median s (of {repeats}) | limit s | verdict |")
    print("|---|---:|---:|---|---:|---:|---|")
    for r in rows:
        print(f"| {r['case']} | {','.join(map(str, r['exit']))} | {','.join(map(str, r['stderr_lines']))} | "
              f"{yes_no(r['traceback'])} | {r['median_s']:.2f} | {r['limit_s']:g} | {r['verdict']} |")
    print()
    print("| Ctrl-C try | seconds to exit | exit | 'interrupted: … resume' | processes left | verdict |")
    print("|---|---:|---:|---|---:|---|")
    for i, t in enumerate(cc["tries"], 1):
        ok = t["latency_s"] < LIMIT and t["exit"] == 130 and t["message"] and not t["traceback"] \
            and t["left_processes"] == 0
        print(f"| {i} | {t['latency_s']:.2f} | {t['exit']} | {yes_no(t['message'])} | {t['left_processes']} | "
              f"{'PASS' if ok else 'FAIL'} |")
    print(f"| max | {cc['max_s']:.2f} | | | | {cc['verdict']} |")
    print()
    print("stderr of each bad input (last run):")
    for r in rows:
        print(f"  {r['case']}:")
        for line in r["stderr"] or ["(nothing)"]:
            print(f"    {line}")
    print(f"  Ctrl-C, last line: {cc['tries'][-1]['last_line']}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3, help="fresh processes per bad input (the median is shown)")
    p.add_argument("--ctrl-c-repeats", type=int, default=5)
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    a = p.parse_args()
    info = machine()
    with tempfile.TemporaryDirectory(prefix="ksweep-bad-input-") as tmp:
        work = Path(tmp).resolve()
        setup(work)
        rows = bad_inputs(work, a.repeats)
        cc = ctrl_c(work, a.ctrl_c_repeats)
    if a.json:
        print(json.dumps({"machine": info, "repeats": a.repeats, "bad_inputs": rows, "ctrl_c": cc}, indent=2))
    else:
        show(rows, cc, info, a.repeats)
    return 0 if all(r["verdict"] == "PASS" for r in rows) and cc["verdict"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
