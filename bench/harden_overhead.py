"""What the hardening adds to a sweep's wall time, on a GPU with compute-sanitizer: the same
sweep (examples/sgemm by default, 150 configs of one shape, a seeded random search) run
three times into fresh databases sharing one build cache:

1. ``--no-harden``, which fills the build cache (its time includes the builds: not compared);
2. with the hardening (the confirmed leaders under memcheck, racecheck, initcheck, synccheck);
3. ``--no-harden`` again, its builds cache hits as the second's are.

It prints, and writes to OUT/harden_overhead.json, each sweep's wall time, the hardening's own
wall time (``Summary.harden_seconds``: the sanitizers' and the further inputs' runs), the
leaders hardened and their verdicts, and the second sweep's time over the third's.

    python bench/harden_overhead.py [examples/sgemm/sgemm.toml] --shape sq2048 --max-evals 150 \\
        --out bench-out/harden [--tools memcheck,racecheck] [--timeout 600]

A sanitizer runs the whole program, cuBLAS's reference kernels too: on sq4096 one racecheck
run can take minutes; sq2048 keeps the bench within a few minutes per tool run.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", nargs="?", default=str(REPO / "examples" / "sgemm" / "sgemm.toml"))
    ap.add_argument("--shape", default="sq2048")
    ap.add_argument("--max-evals", type=int, default=150)
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tools", help="comma-separated sanitizer tools (default: the spec's [harden] tools)")
    ap.add_argument("--timeout", type=float, help="seconds per tool run (default: the spec's, else automatic)")
    ap.add_argument("--out", default="bench-out/harden")
    args = ap.parse_args()

    from ksweep import load_spec
    from ksweep.app.sweep import run_sweep
    from ksweep.run import sanitize
    from ksweep.store.sqlite import Store
    from ksweep.sweep.options import SweepOptions

    exe = sanitize.find()
    if exe is None:
        print(f"harden_overhead: {sanitize.HINT}", file=sys.stderr)
        return 2
    spec = load_spec(args.spec)
    harden = spec.harden
    if args.tools:
        harden = replace(harden, tools=tuple(t.strip() for t in args.tools.split(",") if t.strip()))
    if args.timeout:
        harden = replace(harden, timeout=args.timeout)
    spec = replace(spec, harden=harden)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = out / "cache"

    def sweep(name: str, hardened: bool) -> dict:
        db = out / f"{name}.db"
        for f in out.glob(f"{name}.db*"):
            f.unlink()
        options = SweepOptions(strategy=args.strategy, seed=args.seed, max_evals=args.max_evals,
                               shapes=(args.shape,), harden=hardened)
        started = time.monotonic()
        summary, _ = run_sweep(spec, db=db, cache=cache, options=options)
        wall = time.monotonic() - started
        with Store(db) as store:
            verdicts = [{"params": h.params, "kind": h.kind, "verdict": h.verdict, "detail": h.detail}
                        for h in store.hardenings() if h.kind != "determinism"]
        row = {"sweep": name, "hardened": hardened, "wall_s": round(wall, 1),
               "harden_s": round(summary.harden_seconds, 1), "evaluated": summary.evaluated,
               "confirm_runs": summary.confirm_runs, "lines": summary.hardened, "verdicts": verdicts}
        print(json.dumps({k: v for k, v in row.items() if k != "verdicts"}), flush=True)
        return row

    rows = [sweep("fill_cache", False), sweep("hardened", True), sweep("plain", False)]
    hardened, plain = rows[1], rows[2]
    report = {
        "machine": _said(["nvidia-smi", "-L"]) or platform.node(),
        "sanitizer": _said([exe, "--version"]).splitlines()[-1:],
        "commit": _said(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]),
        "date": time.strftime("%Y-%m-%d"),
        "command": " ".join(sys.argv), "tools": list(spec.harden.tools), "rows": rows,
        "added_s": round(hardened["wall_s"] - plain["wall_s"], 1),
        "ratio": round(hardened["wall_s"] / plain["wall_s"], 3) if plain["wall_s"] else None,
    }
    (out / "harden_overhead.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"hardening: {hardened['harden_s']} s of a {hardened['wall_s']} s sweep ({len(hardened['verdicts'])} "
          f"verdicts); the same sweep without it: {plain['wall_s']} s; added {report['added_s']} s "
          f"({report['ratio']}x)")
    return 0


def _said(argv) -> str:
    """What a command prints, '' when it cannot run."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


if __name__ == "__main__":
    sys.exit(main())
