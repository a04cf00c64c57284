"""Best-found-versus-evaluations curves of the strategy benchmark (matplotlib)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from ..errors import require
from ..replay.bench import BenchResult
from ..replay.dataset import Dataset
from ..replay.stats import random_mean_curve
from ..outputs import save_figure


def plot_curves(result: BenchResult, datasets: Sequence[Dataset], path: str | Path) -> Path:
    """One panel per dataset: mean ratio (optimum / best found) after each evaluation."""
    require("matplotlib", "plot", "--plot")
    from matplotlib.figure import Figure  # no pyplot: the caller's backend (a notebook's) is left alone
    n = len(datasets)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(5 * cols, 3.6 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    strategies = list(dict.fromkeys(s for (_, s) in result.curves))
    # Strategies can coincide (auto runs surrogate; phased is grid on untiered data):
    # line styles keep both visible.
    styles = ["-", "--", "-.", ":"]
    for ax, ds in zip(axes.flat, datasets):
        longest = 1
        for s in strategies:
            curve = result.curves.get((ds.name, s))
            if curve is None:
                continue
            longest = max(longest, len(curve))
            i = strategies.index(s)
            ax.plot(range(1, len(curve) + 1), curve, styles[i % len(styles)], label=s, lw=1.5)
        rnd = random_mean_curve(ds.values, longest)
        ax.plot(range(1, len(rnd) + 1), rnd, "k:", lw=1, label="random (exact)")
        ax.set_title(ds.name, fontsize=10)
        ax.set_xlabel("evaluations")
        ax.set_ylabel("optimum / best found")
        ax.set_ylim(max(0.0, min(0.5, ax.get_ylim()[0])), 1.01)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = Path(path)
    return save_figure(fig, path, dpi=120)
