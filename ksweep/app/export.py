"""``ksweep export``: the tuned configs for a library (a C/C++ header, JSON) or the results
for another tuner (a T4 file, a Kernel Tuner cache), from a results database; the formats
are ``export/formats.py``'s."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import KsweepError
from ..export.formats import FORMATS
from ..export.formats import export as export_as
from ..store.sqlite import Store
from ..store.standings import by_gpu_model
from .outputs import checked_output, db_inputs
from .report import load_all

__all__ = ["FORMATS", "Exported", "export"]


@dataclass(frozen=True)
class Exported:
    out: object  # export/formats.py's: the text, the lines and notes to say beside it
    shipped: list  # the results of the shape, variant and GPU model asked for
    left_out: int  # superseded results of those (measured on another source or spec): not counted
    written: Path | None = None  # the file written, when one was asked for


def export(db: str, format: str, *, generator: str, cover: float | None = None, shape: str | None = None,
           variant: str | None = None, gpu: str | None = None, output: str | None = None,
           force: bool = False, allow_unhardened: bool = False, robust: bool = False) -> Exported:
    """``db``'s results in ``format`` (``header``, ``json``, ``t4``, ``kt-cache``): each shape's
    best, or with ``cover`` (a percentage) the fewest configs keeping every shape within it of
    its own best, or with ``robust`` one config per shape for every GPU model, the worst loss
    the least it can be; ``shape``, ``variant`` and ``gpu`` (a GPU model's name or a part of
    it) choose what is exported; ``generator`` names the program in the output; a config that
    was never hardened is refused where the database was hardened, unless ``allow_unhardened``
    (export/hardening.py). With ``output`` the text is written there (checked before anything
    is read: an existing file only with ``force``, never the database, its spec or a source it
    builds)."""
    target = checked_output(output, force=force, reads=db_inputs(db)) if output else None
    standings, orders, _ = load_all(db)
    with Store(db, create=False) as store:
        name = store.get_meta("spec_name") or Path(db).stem
        problem_size = store.get_meta("kt_problem_size")  # ksweep.kt.tune_kernel's
        # the kernel name the ksweep.kt call was given ('vscale<TILE>'), which Kernel Tuner compares
        kt_name = store.get_meta("kt_kernel_name") if format == "kt-cache" else None
        left_out = len(_chosen(store.superseded_results(), shape, variant, gpu))
        sizes = shape_sizes(store) if format in ("header", "json") else {}
        models = by_gpu_model(store) if format in ("header", "json") else None
    out = export_as(standings, format, orders=orders, name=kt_name or name, source=Path(db).name,
                    generator=generator, cover=cover, shape=shape, variant=variant, gpu=gpu,
                    problem_size=problem_size, allow_unhardened=allow_unhardened, robust=robust, sizes=sizes,
                    models=models)
    written = target.write(out.text) if target is not None else None
    return Exported(out, _chosen(standings.results, shape, variant, gpu), left_out, written)


def shape_sizes(store: Store) -> dict[str, dict]:
    """Each shape's sizes as the sweep kept them (``Store.shape_sizes``); a shape swept before
    ksweep kept them takes them from the spec the database names, where it is still there
    and still has the shape."""
    kept = store.shape_sizes()
    path = store.get_meta("spec")
    if set(store.names("shape")) <= set(kept) or not path or not Path(path).is_file():
        return kept
    try:
        from ..spec.load import load_spec

        spec = load_spec(path)
    except KsweepError:
        return kept
    if store.get_meta("spec_name") not in (None, spec.name):
        return kept
    return {**{s.name: {"defines": dict(s.defines), "args": list(s.args)} for s in spec.shapes}, **kept}


def _chosen(results, shape, variant, gpu) -> list:
    """The results of the shape, variant and GPU model the export was asked for."""
    return [r for r in results if shape in (None, r.shape) and variant in (None, r.variant)
            and (gpu is None or gpu.lower() in (r.gpu_name or "").lower())]
