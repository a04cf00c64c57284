"""A config for any size (pure): the shipped selector of ``ksweep select``, which the exported
header (``<sweep>_select``) and JSON (``selector``) carry as code and data.

The rule, the same in Python and C, float operation for float operation:

1. *The GPU model.* The rows of the GPU model asked for (its name exactly as the driver
   reports it); else those of the first tuned model of its architecture (its compute
   capability, ``gpu/models.py``); else, for each shape, the entry of the model whose best
   loses least at worst on the other models (export/robust.py's ``portable_models``: a
   config that travels). With one tuned model, its rows are the last two as well.
2. *The variant* asked for; none: the first one of the rows.
3. *The nearest tuned shape*: each size is an axis, the log of the size where every tuned
   value is positive, else the size itself scaled by the tuned range; the distance is
   Euclidean; a later shape is nearer only by more than 1e-9 of the distance (so that a
   size halfway between two, in log space, gets the first). Its entry is the config.

A size outside the range its axis was tuned over is *extrapolated* (said by ``select``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..errors import ExportError
from ..gpu.models import compute_capability
from .selection import Entry, Selection
from .sizes import Sizes, _num

TIE = 1e-9  # a later row is nearer only by more than this share of the distance (1 + it)


@dataclass(frozen=True)
class Axis:
    name: str
    log: bool  # the log of the size (every tuned value positive), else the size scaled
    lo: float  # the range the size was tuned over
    hi: float
    scale: float  # a linear axis: 1 / (hi - lo), 1 when the range is a point

    def at(self, x: float) -> float:
        if self.log:
            if not x > 0:
                raise ExportError(f"{self.name}={_num(x)}: the tuned values of {self.name} are all positive: "
                                  f"give a positive size")
            return math.log(x)
        return (x - self.lo) * self.scale


@dataclass(frozen=True)
class Row:
    variant: str
    gpu: str | None  # the GPU model; None: any model (each shape's config that travels)
    arch: int  # the model's compute capability x 10; 0: unknown
    shape: str
    entry: int  # its entry of the selection
    at: tuple[float, ...]  # the shape's place on the axes


@dataclass(frozen=True)
class Choice:
    entry: Entry
    row: Row
    distance: float
    gpu_rule: str  # how the GPU model was chosen
    extrapolated: tuple[str, ...]  # each size outside its tuned range, in words

    @property
    def rule(self) -> str:
        return (f"nearest tuned shape {self.row.shape} in log-size space (distance {self.distance:.3g})"
                + (f"; {self.gpu_rule}" if self.gpu_rule else ""))


class Selector:
    def __init__(self, selection: Selection, sizes: Sizes):
        self.selection, self.sizes = selection, sizes
        self.axes = tuple(_axis(n, [sizes.of[s][n] for s in sizes.of]) for n in sizes.names)
        index = {(e.variant, e.shape, e.gpu): i for i, e in enumerate(selection.entries)}
        rows = [self._row(e.variant, e.gpu, e.shape, i) for i, e in enumerate(selection.entries)]
        models = list(dict.fromkeys(e.gpu for e in selection.entries))
        for variant, shape in dict.fromkeys((e.variant, e.shape) for e in selection.entries):
            model = selection.portable.get((variant, shape), models[0]) if len(models) > 1 else models[0]
            if (variant, shape, model) not in index:  # the model has no entry of this shape: its first
                model = next(e.gpu for e in selection.entries if (e.variant, e.shape) == (variant, shape))
            rows.append(self._row(variant, None, shape, index[(variant, shape, model)]))
        self.rows = tuple(rows)
        self.models = tuple(models)

    def _row(self, variant: str, gpu: str | None, shape: str, entry: int) -> Row:
        at = tuple(a.at(self.sizes.of[shape][a.name]) for a in self.axes)
        return Row(variant, gpu, compute_capability(gpu) or 0 if gpu is not None else 0, shape, entry, at)

    def choose(self, sizes: Mapping[str, float], gpu: str | None = None, arch: int = 0,
               variant: str | None = None) -> Choice:
        """The config of the rule (module doc) for ``sizes`` (every axis'), on GPU model
        ``gpu`` (its name exactly; None: not known) of architecture ``arch`` (0: unknown)."""
        q = [a.at(float(sizes[a.name])) for a in self.axes]
        model, which = None, 2
        if gpu is not None:
            model = next((r.gpu for r in self.rows if r.gpu is not None and r.gpu == gpu), None)
            which = 0 if model is not None else 2
        if which == 2 and arch > 0:
            model = next((r.gpu for r in self.rows if r.gpu is not None and r.arch == arch), None)
            which = 1 if model is not None else 2
        if variant is None:
            variant = self.rows[0].variant
        best, best_d = None, 0.0
        for r in self.rows:
            if (r.gpu is not None) if which == 2 else (r.gpu is None or r.gpu != model):
                continue
            if r.variant != variant:
                continue
            d = 0.0
            for k in range(len(q)):
                t = q[k] - r.at[k]
                d += t * t
            if best is None or d < best_d - TIE * (1.0 + best_d):
                best, best_d = r, d
        if best is None:
            known = ", ".join(dict.fromkeys(r.variant for r in self.rows))
            raise ExportError(f"--variant {variant}: no tuned config of that variant (variants: {known})")
        return Choice(self.selection.entries[best.entry], best, math.sqrt(best_d),
                      self._gpu_rule(which, model, gpu, arch), self.outside(sizes))

    def _gpu_rule(self, which: int, model, gpu, arch) -> str:
        if which == 0:
            return f"tuned on this GPU model ({model})" if len(self.models) > 1 else f"GPU model {model}"
        if which == 1:
            return f"no config tuned on {gpu or 'this GPU model'}: the tuned model of its architecture sm_{arch}, {model}"
        if len(self.models) == 1 and self.models[0] in (None, "none"):
            return ""  # no GPU: a program of the CPU, or a GPU not recorded
        if len(self.models) == 1:
            said = f"{gpu} was not tuned on" if gpu else "no GPU model given"
            return f"{said}: the only tuned model, {self.models[0] or 'GPU not recorded'}"
        said = f"no config tuned on {gpu} nor its architecture" if gpu else "no GPU model given"
        return f"{said}: each shape's config that loses least on the other GPU models"

    def outside(self, sizes: Mapping[str, float]) -> tuple[str, ...]:
        """Each size outside the range it was tuned over, in words."""
        out = []
        for a in self.axes:
            x = float(sizes[a.name])
            if x < a.lo or x > a.hi:
                where = "below" if x < a.lo else "above"
                out.append(f"{a.name}={_num(x)} is {where} the tuned range ({_num(a.lo)}–{_num(a.hi)})")
        return tuple(out)

    def as_json(self) -> dict:
        """The selector as data: the axes, then a row per tuned shape and GPU model (``gpu``
        null: any model), each naming its entry; ``rule`` says how to choose."""
        return {
            "rule": "the rows of the GPU model (by name), else of the first tuned model of its architecture "
                    "(compute capability x 10), else those of gpu null; of the variant (none: the first row's); "
                    "the row nearest to the sizes, Euclidean on the axes (a log axis: log of the size; else "
                    "(size - lo) * scale), a later row nearer only by more than 1e-9 * (1 + distance squared)",
            "sizes": [{"name": a.name, "log": a.log, "lo": a.lo, "hi": a.hi, "scale": a.scale} for a in self.axes],
            "rows": [{"variant": r.variant, "gpu": r.gpu, "arch": r.arch, "shape": r.shape, "entry": r.entry,
                      "at": list(r.at)} for r in self.rows],
        }


def _axis(name: str, values: Sequence[float]) -> Axis:
    lo, hi = min(values), max(values)
    if lo > 0:
        return Axis(name, True, lo, hi, 1.0)
    return Axis(name, False, lo, hi, 1.0 / (hi - lo) if hi > lo else 1.0)
