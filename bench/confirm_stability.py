"""Is BEST stable? Run the same sweep N times, each with a fresh database, and report the
confirmed BEST config of each (with TIE), how often the same config (or a TIE of it) wins,
the coefficient of variation of BEST's confirmed median across the sweeps, and the share of
the wall time the confirmation took.

    python bench/confirm_stability.py examples/sgemm/sgemm.toml --shape sq4096 --runs 10 \\
        --strategy random --max-evals 40 --out OUT

Each sweep: ``ksweep run SPEC --shape S --db OUT/run_<i>.db --cache OUT/cache`` (a shared
build cache: the builds are not what is measured) with the default confirmation (5,3)."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("--shape", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--max-evals", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="confirm-out")
    ap.add_argument("--extra", default="", help="more ksweep run options, one string")
    args = ap.parse_args()
    from ksweep.verify.confirm import confirmed
    from ksweep.store.sqlite import Store

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(args.runs):
        db = out / f"run_{i}.db"
        cmd = [sys.executable, "-m", "ksweep", "run", args.spec, "--shape", args.shape, "--db", str(db),
               "--cache", str(out / "cache"), "--strategy", args.strategy, "--max-evals", str(args.max_evals),
               "--seed", str(args.seed), "-q", *args.extra.split()]
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if r.returncode != 0:
            print(r.stdout[-2000:], r.stderr[-2000:], file=sys.stderr)
            return 1
        summary = next((ln for ln in r.stdout.splitlines() if "evaluated" in ln), "")
        with Store(db, create=False) as store:
            results = store.results(shape=args.shape)
            direction = store.get_meta("objective")["direction"]
            conf = confirmed(results, store.measurements(shape=args.shape), direction, store.default_configs())
        (c,) = conf.values()
        best = c.best
        ties = sorted(cid for cid, v in c.verdicts.items() if v.mark == "TIE")
        iv = c.verdicts[best].interval
        rows.append({"run": i, "best": best, "ties": ties, "median": iv.median, "lo": iv.lo, "hi": iv.hi,
                     "speedup": [c.speedup.median, c.speedup.lo, c.speedup.hi] if c.speedup else None,
                     "wall": wall, "summary": summary})
        print(f"run {i}: BEST {best} median {iv.median:.6g} (95% {iv.lo:.6g}-{iv.hi:.6g}), {len(ties)} TIE, "
              f"wall {wall:.1f} s | {summary}", flush=True)
    counts = Counter(r["best"] for r in rows)
    modal, _ = counts.most_common(1)[0]
    same_or_tie = sum(r["best"] == modal or modal in r["ties"] for r in rows)
    medians = [r["median"] for r in rows if r["best"] == modal]
    cv = statistics.stdev(medians) / statistics.fmean(medians) if len(medians) > 1 else 0.0
    all_medians = [r["median"] for r in rows]
    cv_all = statistics.stdev(all_medians) / statistics.fmean(all_medians) if len(all_medians) > 1 else 0.0
    result = {"runs": len(rows), "modal_best": modal, "same_or_tie": same_or_tie, "best_counts": dict(counts),
              "cv_of_modal_best_median": cv, "cv_of_best_median": cv_all, "rows": rows}
    (out / "stability.json").write_text(json.dumps(result, indent=2))
    print(f"\nmodal BEST {modal}: BEST or TIE in {same_or_tie} of {len(rows)} sweeps; "
          f"CV of its confirmed median {100 * cv:.3f}% ({len(medians)} sweeps); CV of BEST's median over all "
          f"sweeps {100 * cv_all:.3f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
