"""``ksweep select DB --size N=3000``: the config the shipped size selector picks for sizes
never tuned (export/selector.py: the nearest tuned shape in log-size space, per GPU model,
with a fallback by architecture), the rule that chose it, and whether the sizes lie outside
the tuned range. ``--validate`` measures it (app/validate.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..errors import KsweepError
from ..export.formats import selector_of
from ..export.robust import loss
from ..export.selection import select as selection_of
from ..export.selector import Choice, Selector
from ..export.sizes import completed, parse_sizes, shape_of, text as sizes_text
from ..gpu.models import compute_capability, parse_arch
from ..job import config_id
from ..space.space import Space
from ..store.sqlite import Store
from ..store.standings import by_gpu_model
from .export import shape_sizes
from .report import load_all
from .target import open_target


__all__ = ["Selected", "at_sizes", "choose", "select", "selector", "sizes_text"]


@dataclass(frozen=True)
class Selected:
    sizes: dict[str, float]  # every size of the selector, as asked (and those taken as tuned)
    choice: Choice
    gpu: str | None  # the GPU model asked for, as the selector was given it
    arch: int
    notes: list[str] = field(default_factory=list)
    # why the spec's constraints refuse the config at these sizes (None: they allow it, or the
    # database names no spec that can be read)
    refused: str | None = None
    # the chosen config's loss at the two tuned shapes nearest the sizes, nearest first (None:
    # never measured there; ``ksweep run --cross`` measures each shape's best at the others)
    beside: tuple["Beside", ...] = ()

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.choice.entry.result.params)

    def as_json(self) -> dict:
        e = self.choice.entry
        return {"sizes": self.sizes, "config": self.params, "variant": e.variant, "shape": e.shape,
                "gpu": e.gpu, "value_at_shape": e.value, "loss_at_shape": e.loss, "distance": self.choice.distance,
                "rule": self.choice.rule, "extrapolated": list(self.choice.extrapolated), "refused": self.refused,
                "beside": [{"shape": b.shape, "distance": b.distance, "loss": b.loss} for b in self.beside],
                "notes": self.notes}


@dataclass(frozen=True)
class Beside:
    """A tuned shape near the sizes asked, and what the chosen config loses there against
    that shape's best."""

    shape: str
    distance: float  # from the sizes asked, on the selector's axes
    loss: float | None  # a fraction; None: the config was never measured there


def selector(db: str, *, cover: float | None = None, robust: bool = False,
             standings=None) -> tuple[Selector, list[str]]:
    """The size selector an export of ``db`` ships (the same options: ``cover``, ``robust``);
    ``standings``: the database's, read already."""
    if standings is None:
        standings, _, _ = load_all(db)
    with Store(db, create=False) as store:
        stored = shape_sizes(store)
        models = by_gpu_model(store)
    sel = selection_of(standings, cover_pct=cover, robust=robust, models=models)
    found, why = selector_of(sel, stored)
    if found is None:
        raise KsweepError(why.replace("no size selector: ", f"{db}: no size selector: ", 1))
    return found, list(sel.notes)


def gpu_of(chosen: Selector, gpu: str | None, arch: str | None) -> tuple[str | None, int, list[str]]:
    """The GPU model as the selector takes it (a tuned model's whole name where ``gpu`` names
    one, exactly or as a part of it), its architecture (``arch``: sm_90, 90 or 9.0; else the
    name's, where ksweep knows it; 0: not known), and notes."""
    notes = []
    cc = 0
    if arch is not None:
        cc = parse_arch(arch) or 0
        if not cc:
            raise KsweepError(f"--arch {arch}: give a compute capability: sm_90, 90 or 9.0")
    if gpu is None:
        return None, cc, notes
    models = [m for m in chosen.models if m is not None]
    if gpu not in models:
        hits = [m for m in models if gpu.lower() in m.lower()]
        if len(hits) > 1:
            raise KsweepError(f"--gpu {gpu!r} matches {len(hits)} tuned GPU models ({', '.join(map(repr, hits))}): "
                              f"give more of the name")
        if hits:
            gpu = hits[0]
        elif not cc:
            cc = compute_capability(gpu) or 0
            if cc:
                notes.append(f"{gpu} was not tuned on: its architecture taken as sm_{cc}")
    return gpu, cc, notes


def select(db: str, sizes: Sequence[str], *, gpu: str | None = None, arch: str | None = None,
           variant: str | None = None, cover: float | None = None, robust: bool = False) -> Selected:
    """The selector's config for ``sizes`` (``NAME=VALUE`` words), and whether the spec's
    constraints allow it there (``Selected.refused``)."""
    standings, _, _ = load_all(db)
    chosen, notes = selector(db, cover=cover, robust=robust, standings=standings)
    picked = choose(chosen, parse_sizes(sizes), gpu=gpu, arch=arch, variant=variant, notes=notes)
    return replace(picked, refused=refused(db, chosen, picked), beside=beside(standings, chosen, picked))


def beside(standings, chosen: Selector, picked: Selected, count: int = 2) -> tuple[Beside, ...]:
    """The picked config's loss at the ``count`` tuned shapes nearest the sizes asked (of its
    variant, on the GPU model its entry was measured on; ``standings``: the database's): a size between two tuned shapes
    where the config loses much at the other one is a size to measure (``--validate``)."""
    entry, row = picked.choice.entry, picked.choice.row
    q = [a.at(float(picked.sizes[a.name])) for a in chosen.axes]
    rows = [r for r in chosen.rows if r.variant == row.variant and r.gpu == row.gpu]
    near = sorted(rows, key=lambda r: math.dist(q, r.at))[:count]
    direction = standings.objective.direction
    out = []
    for r in near:
        model = chosen.selection.entries[r.entry].gpu
        standing = standings.get((r.variant, r.shape))
        on_model = lambda x, model=model: model is None or x.gpu_name == model  # noqa: E731
        within = [x for x in (standing.results if standing is not None else ()) if on_model(x)]
        values = standing.values(within, singles=True) if standing is not None else {}
        best = standing.best(on_model) if standing is not None else None
        mine, ref = values.get(config_id(entry.result.params)), values.get(config_id(best.params)) if best else None
        lost = None if mine is None or ref is None else max(0.0, loss(mine.value, ref.value, direction))
        out.append(Beside(r.shape, math.dist(q, r.at), lost))
    return tuple(out)


def refused(db: str, chosen: Selector, picked: Selected) -> str | None:
    """Why the spec the database was swept with refuses the picked config at the sizes asked
    ("seq_tiles: S=640 is not a multiple of BLOCK_M 256"): a selector that ships the nearest
    tuned shape's config knows no constraint, so a kernel that needs its tile to divide the
    size is told here. None: allowed, or no spec to read."""
    try:
        at = at_sizes(open_target(db).spec, chosen, picked)
    except KsweepError:
        return None
    if at is None:
        return None
    entry = picked.choice.entry
    try:
        verdict = Space.from_spec(at, entry.shape, entry.variant).explain(dict(entry.result.params))
    except KsweepError:
        return None
    return None if verdict.ok else f"{verdict.constraint}: {verdict.reason}"


def at_sizes(spec, chosen: Selector, picked: Selected):
    """``spec`` with one shape: the one the picked config was tuned at, its defines and run
    arguments written at the sizes asked (export/sizes.py's ``shape_of``); None when the spec
    or the selector has no such shape."""
    name = picked.choice.entry.shape
    shape = next((s for s in spec.shape_list() if s.name == name), None)
    if shape is None or name not in chosen.sizes.texts:
        return None
    defines, args = shape_of(chosen.sizes, name, picked.sizes)
    return replace(spec, shapes=(replace(shape, defines=defines, args=tuple(args)),))


def choose(chosen: Selector, asked: dict[str, float], *, gpu: str | None = None, arch: str | None = None,
           variant: str | None = None, notes: Sequence[str] = ()) -> Selected:
    if not asked:
        raise KsweepError(f"give the sizes: --size NAME=VALUE for each of {', '.join(chosen.sizes.names)}")
    full, more = completed(asked, chosen.sizes)
    model, cc, said = gpu_of(chosen, gpu, arch)
    return Selected(full, chosen.choose(full, gpu=model, arch=cc, variant=variant), model, cc,
                    [*notes, *more, *said])
