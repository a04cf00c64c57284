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


def load(db: Path):
    if not db.exists():
        return None
    with Store(db) as store:
        return store.results()


def per_shape(rows, shapes, metric: str, best_of):
    """(shape, evaluated rows, OK rows, best OK row or None) for each shape."""
    for shape in shapes:
        rs = [r for r in rows if r.shape == shape and r.status is not Status.PRUNED]
        ok = [r for r in rs if r.status is Status.OK]
        yield shape, rs, ok, (best_of(ok, key=lambda r: r.metrics[metric]) if ok else None)


def config(r) -> str:
    return " ".join(f"{k}={v}" for k, v in r.params.items())


def table(title: str, columns: list[str], lines: list[str]) -> None:
    print(f"## {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for line in lines:
        print(line)


def default_and_best(out: Path, name: str, rows, shape: str, metric: str, best_of):
    """The default config's metrics (its run's output file) and the tuned best value of
    ``metric`` at ``shape``; (None, None) when either is missing."""
    path = out / name
    m = parse_results(path.read_text())[0] if path.exists() else None
    ok = [r.metrics[metric] for r in rows if r.shape == shape and r.status is Status.OK]
    return (m, best_of(ok)) if m and ok else (None, None)


def print_walls(wall: dict, example: str) -> None:
    for k, v in wall.items():
        if k.startswith(example):
            print(f"wall time {k}: {v:.0f} s")
    print()


def sgemm(out: Path, wall: dict) -> None:
    rows = load(out / "sgemm.db")
    if rows is None:
        return
    lines = []
    for shape, rs, ok, best in per_shape(rows, ("sq4096", "sq2048", "skinny"), "gflops", max):
        if best is None:
            continue
        cb = best.metrics["cublas_gflops"]
        lines.append(f"| {shape} | {len(rs)} | {counts(rs)} | {config(best)} | {best.metrics['gflops']:.0f} | "
                     f"{cb:.0f} | {100 * best.metrics['gflops'] / cb:.1f}% |")
    table("SGEMM (FP32) vs cuBLAS (TF32 off)", ["shape", "evaluated", "statuses", "best config", "best GFLOP/s",
                                               "cuBLAS GFLOP/s", "% of cuBLAS"], lines)
    m, best = default_and_best(out, "sgemm_default.txt", rows, "sq4096", "gflops", max)
    if m:
        print(f"\ndefault config at 4096^3: {m['gflops']:.0f} GFLOP/s ({100 * m['gflops'] / m['cublas_gflops']:.1f}% "
              f"of cuBLAS); tuned best is {best / m['gflops']:.2f}x the default")
    print_walls(wall, "sgemm")


def fa(out: Path, wall: dict) -> None:
    rows = load(out / "fa.db")
    if rows is None:
        return
    sdpa = {}
    for line in (out / "sdpa.txt").read_text().splitlines():
        if line.startswith("@@RESULT"):
            m, _ = parse_results(line)
            sdpa[(int(m["B"]), int(m["S"]), int(m["D"]), int(m["causal"]))] = m["sdpa_ms"]
    lines = []
    for shape, rs, ok, best in per_shape(rows, sorted({r.shape for r in rows}), "ms", min):
        if best is None:
            lines.append(f"| {shape} | {len(rs)} | {counts(rs)} | - | - | - | - | - |")
            continue
        parts = shape.split("_")
        b, s, d = int(parts[0][1:]), int(parts[1][1:]), int(parts[2][1:])
        base = sdpa.get((b, s, d, int(shape.endswith("causal"))))
        worst_diff = max(r.metrics.get("max_diff", 0.0) for r in ok)
        ratio = f"{base / best.metrics['ms']:.2f}x" if base else "-"
        lines.append(f"| {shape} | {len(rs)} | {counts(rs)} | {config(best)} | {best.metrics['ms']:.4f} | "
                     f"{worst_diff:.1e} | {base if base else '-'} | {ratio} |")
    table("Flash attention (FP16) vs PyTorch SDPA", ["shape", "evaluated", "statuses", "best config", "best ms",
                                                    "max_diff", "SDPA ms", "speed vs SDPA"], lines)
    m, best = default_and_best(out, "fa_default.txt", rows, "b2_s2048_d64", "ms", min)
    if m:
        print(f"\ndefault config at (2,8,2048,64): {m['ms']:.4f} ms (max_diff {m['max_diff']:.1e}); "
              f"tuned best is {m['ms'] / best:.2f}x faster")
    print_walls(wall, "fa")


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out")
    w = walls(out)
    sgemm(out, w)
    fa(out, w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
