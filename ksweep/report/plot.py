"""Heat-maps of the best value per pair of parameters (seed 001), with matplotlib."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Mapping

from ..errors import KsweepError, require
from ..result import Result
from ..outputs import save_figure


def heatmap_grid(results: Iterable[Result], x: str, y: str, metric: str, direction: str):
    """(xs, ys, cells): for each (x, y) the best finite metric over all other parameters (pure)."""
    cells: dict[tuple, float] = {}
    xs: set = set()
    ys: set = set()
    better = (lambda a, b: a < b) if direction == "min" else (lambda a, b: a > b)
    for r in results:
        if x not in r.params or y not in r.params:
            raise KsweepError(f"parameter '{x if x not in r.params else y}' is not in the results "
                              f"(parameters: {', '.join(r.params)})")
        xs.add(r.params[x])
        ys.add(r.params[y])
        v = r.metrics.get(metric) if r.status.ok else None
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            continue  # no value, or NaN/inf stored by an older ksweep: never a best
        key = (r.params[x], r.params[y])
        if key not in cells or better(v, cells[key]):
            cells[key] = v
    return sorted(xs, key=_order), sorted(ys, key=_order), cells


def _order(v):
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def heatmap_panels(results: Iterable[Result], x: str, y: str, metric: str, direction: str) -> dict:
    """(variant, shape) -> (xs, ys, cells) of ``heatmap_grid`` over that shape × variant's
    results alone: shapes (and variants) are never mixed in a cell. In the order the results
    come (pure)."""
    if x == y:
        raise KsweepError(f"--x and --y are both {x}: give two parameters (a heat-map of one against itself "
                          "is its diagonal)")
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        groups.setdefault((r.variant, r.shape), []).append(r)
    return {key: heatmap_grid(rows, x, y, metric, direction) for key, rows in groups.items()}


def direction_label(metric: str, direction: str, what: str = "best") -> str:
    """'best gflops (max: higher is better)': what a colour bar or an axis shows."""
    return f"{what} {metric} ({direction}: {'lower' if direction == 'min' else 'higher'} is better)"


def _panel_name(variant: str, shape: str, variants: set) -> str:
    return shape + (f" / {variant}" if len(variants) > 1 else "")


def plot_heatmap(results: list[Result], x: str, y: str, metric: str, direction: str, out: Path,
                 title: str = "", best: Mapping[tuple[str, str], tuple[Result, float, bool]] | None = None) -> Path:
    """The heat-map of the best ``metric`` per (x, y), a panel per shape × variant (each with
    its own colour bar: shapes' values differ in scale). ``best``: (variant, shape) -> the
    store's BEST, its value and whether that is a confirmed median (store/standings.py): its
    cell is outlined and says BEST with that value, which the table shows too (a cell's own
    value is the best single measurement there)."""
    require("matplotlib", "plot", "ksweep plot")
    from matplotlib.figure import Figure  # no pyplot: the caller's backend (a notebook's) is left alone
    from matplotlib.patches import Rectangle
    import numpy as np

    panels = heatmap_panels(results, x, y, metric, direction)
    if not any(cells for _, _, cells in panels.values()):
        raise KsweepError(f"no successful result has the metric '{metric}'")
    variants = {variant for variant, _ in panels}
    ncols = min(len(panels), 3)
    nrows = -(-len(panels) // ncols)
    width = max(len(xs) for xs, _, _ in panels.values())
    height = max(len(ys) for _, ys, _ in panels.values())
    # a row at least as tall as its colour bar's label (a vertical text, about 0.08 inch a character) needs
    label_inches = 0.6 + 0.08 * len(direction_label(metric, direction))
    fig = Figure(figsize=(ncols * (1.2 + 1.0 * width),
                          nrows * max(label_inches, 1.0 + 0.7 * height) + (0.4 if nrows * ncols > 1 else 0)))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    for ax, ((variant, shape), (xs, ys, cells)) in zip(axes, panels.items()):
        grid = np.full((len(ys), len(xs)), np.nan)
        for (vx, vy), v in cells.items():
            grid[ys.index(vy), xs.index(vx)] = v
        cmap = "viridis_r" if direction == "min" else "viridis"
        im = ax.imshow(grid, cmap=cmap, aspect="auto")
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
        ax.set_yticks(range(len(ys)), [str(v) for v in ys])
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        finite = grid[np.isfinite(grid)]
        mid = (finite.min() + finite.max()) / 2 if finite.size else 0
        for i in range(len(ys)):
            for j in range(len(xs)):
                v = grid[i, j]
                text = "—" if np.isnan(v) else f"{v:.3g}"
                dark = (v > mid) if direction == "min" else (v < mid)
                ax.text(j, i, text, ha="center", va="center", fontsize=8,
                        color="white" if (not np.isnan(v) and dark) else "black")
        marked = (best or {}).get((variant, shape))
        if marked is not None and marked[0].params.get(x) in xs and marked[0].params.get(y) in ys:
            j, i = xs.index(marked[0].params[x]), ys.index(marked[0].params[y])
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5))
            ax.text(j, i - 0.32, "BEST " + (f"{marked[1]:.3g} (median)" if marked[2] else f"{marked[1]:.3g}"),
                    ha="center", va="center", fontsize=7, color="red", fontweight="bold")
        fig.colorbar(im, ax=ax, label=direction_label(metric, direction))
        name = _panel_name(variant, shape, variants)
        if len(panels) == 1:
            ax.set_title(title or f"best {metric} per ({x}, {y}): {name}")
        else:
            ax.set_title(name)
    if len(panels) > 1:
        fig.suptitle(title or f"best {metric} per ({x}, {y}), a panel per shape")
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def convergence(results: Iterable[Result], metric: str, direction: str) -> dict[tuple[str, str], list]:
    """(variant, shape) -> the best value so far after each evaluation, in the order the sweep
    stored them (pruned configs are not evaluations; a failed one repeats the best so far,
    None before the first success). Pure."""
    out: dict[tuple[str, str], list] = {}
    better = (lambda a, b: a < b) if direction == "min" else (lambda a, b: a > b)
    for r in results:
        if r.status.value == "PRUNED":
            continue
        series = out.setdefault((r.variant, r.shape), [])
        best = series[-1] if series else None
        v = r.metrics.get(metric) if r.status.ok else None
        if isinstance(v, (int, float)) and math.isfinite(v) and (best is None or better(v, best)):
            best = v
        series.append(best)
    return out


def plot_convergence(results: list[Result], metric: str, direction: str, out: Path, title: str = "") -> Path:
    """Best-so-far against evaluations, a line per shape × variant."""
    require("matplotlib", "plot", "ksweep plot")
    from matplotlib.figure import Figure  # no pyplot: the caller's backend (a notebook's) is left alone

    series = convergence(results, metric, direction)
    if not any(v is not None for s in series.values() for v in s):
        raise KsweepError(f"no successful result has the metric '{metric}'")
    fig = Figure(figsize=(7, 4.2))
    ax = fig.subplots()
    for (variant, shape), values in series.items():
        xs = [i + 1 for i, v in enumerate(values) if v is not None]
        ys = [v for v in values if v is not None]
        ax.step(xs, ys, where="post", label=f"{shape}" + (f" / {variant}" if variant != "base" else ""))
    ax.set_xlabel("evaluations (in the order the sweep ran them)")
    ax.set_ylabel(direction_label(metric, direction, "best so far:"))
    ax.set_title(title or f"convergence: best {metric} against evaluations")
    ax.grid(alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)
