"""Summary of bench/gpu_examples.sh: best configs against the vendor baselines."""

from __future__ import annotations

import sys
from pathlib import Path

from ksweep.run.protocol import parse_results
from ksweep.status import Status
from ksweep.store.sqlite import Store


def counts(rows) -> str:
    c: dict[str, int] = {}
    for r in rows:
        c[r.status.value] = c.get(r.status.value, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items()))


def walls(out: Path) -> dict[str, float]:
    w = {}
    f = out / "walls.txt"
    for line in f.read_text().splitlines() if f.exists() else []:
        example, part, t0, t1 = line.split()
        w[f"{example} {part}"] = float(t1) - float(t0)
    return w


def sgemm(out: Path, wall: dict) -> None:
    db = out / "sgemm.db"
    if not db.exists():
        return
    with Store(db) as store:
        rows = store.results()
    print("## SGEMM (FP32) vs cuBLAS (TF32 off)\n")
    print("| shape | evaluated | statuses | best config | best GFLOP/s | cuBLAS GFLOP/s | % of cuBLAS |")
    print("|---|---|---|---|---|---|---|")
    for shape in ("sq4096", "sq2048", "skinny"):
        rs = [r for r in rows if r.shape == shape and r.status is not Status.PRUNED]
        ok = [r for r in rs if r.status is Status.OK]
        if not ok:
            continue
        best = max(ok, key=lambda r: r.metrics["gflops"])
        cb = best.metrics["cublas_gflops"]
        cfg = " ".join(f"{k}={v}" for k, v in best.params.items())
        print(f"| {shape} | {len(rs)} | {counts(rs)} | {cfg} | {best.metrics['gflops']:.0f} | {cb:.0f} | "
              f"{100 * best.metrics['gflops'] / cb:.1f}% |")
    d = out / "sgemm_default.txt"
    if d.exists():
        m, _ = parse_results(d.read_text())
        ok4 = [r for r in rows if r.shape == "sq4096" and r.status is Status.OK]
        if m and ok4:
            best = max(r.metrics["gflops"] for r in ok4)
            print(f"\ndefault config at 4096^3: {m['gflops']:.0f} GFLOP/s ({100 * m['gflops'] / m['cublas_gflops']:.1f}% "
                  f"of cuBLAS); tuned best is {best / m['gflops']:.2f}x the default")
    for k, v in wall.items():
        if k.startswith("sgemm"):
            print(f"wall time {k}: {v:.0f} s")
    print()


def fa(out: Path, wall: dict) -> None:
    db = out / "fa.db"
    if not db.exists():
        return
    sdpa = {}
    for line in (out / "sdpa.txt").read_text().splitlines():
        if line.startswith("@@RESULT"):
            m, _ = parse_results(line)
            sdpa[(int(m["B"]), int(m["S"]), int(m["D"]), int(m["causal"]))] = m["sdpa_ms"]
    with Store(db) as store:
        rows = store.results()
    print("## Flash attention (FP16) vs PyTorch SDPA\n")
    print("| shape | evaluated | statuses | best config | best ms | max_diff | SDPA ms | speed vs SDPA |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in sorted({r.shape for r in rows}):
        rs = [r for r in rows if r.shape == shape and r.status is not Status.PRUNED]
        ok = [r for r in rs if r.status is Status.OK]
        if not ok:
            print(f"| {shape} | {len(rs)} | {counts(rs)} | - | - | - | - | - |")
            continue
        best = min(ok, key=lambda r: r.metrics["ms"])
        parts = shape.split("_")
        b, s, d = int(parts[0][1:]), int(parts[1][1:]), int(parts[2][1:])
        base = sdpa.get((b, s, d, int(shape.endswith("causal"))))
        worst_diff = max(r.metrics.get("max_diff", 0.0) for r in ok)
        cfg = " ".join(f"{k}={v}" for k, v in best.params.items())
        ratio = f"{base / best.metrics['ms']:.2f}x" if base else "-"
        print(f"| {shape} | {len(rs)} | {counts(rs)} | {cfg} | {best.metrics['ms']:.4f} | {worst_diff:.1e} | "
              f"{base if base else '-'} | {ratio} |")
    d = out / "fa_default.txt"
    if d.exists():
        m, _ = parse_results(d.read_text())
        ok = [r for r in rows if r.shape == "b2_s2048_d64" and r.status is Status.OK]
        if m and ok:
            best = min(r.metrics["ms"] for r in ok)
            print(f"\ndefault config at (2,8,2048,64): {m['ms']:.4f} ms (max_diff {m['max_diff']:.1e}); "
                  f"tuned best is {m['ms'] / best:.2f}x faster")
    for k, v in wall.items():
        if k.startswith("fa"):
            print(f"wall time {k}: {v:.0f} s")
    print()


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out")
    w = walls(out)
    sgemm(out, w)
    fa(out, w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
