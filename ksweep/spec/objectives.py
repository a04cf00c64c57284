"""Objectives (pure): the metrics a sweep ranks by, and their directions, by name.

In kernel mode four names stand for what ksweep measures: ``time`` (the ``ms`` metric), and
what the energy observer adds (kernel/worker.py): ``energy`` (``energy_mj``, per launch),
``power`` (``power_w``, average board power) and ``gflops_per_watt`` (``[physics] flops``
over the energy per launch: GFLOP/s per watt is GFLOP per joule). Each has its direction
(only ``gflops_per_watt`` is maximised). In program mode every name is a metric of the
program's own ``@@RESULT`` line (``time`` is a metric named time, as Kernel Tuner's data
has); so is any other name in either mode, minimised unless written ``name:max``.

A sweep has one objective, or several (``[sweep] objectives``, ``ksweep run
--objectives``): the first ranks, confirms, picks BEST and guides a search; all of them
must be measured for a run to be OK, and the reports show their Pareto front. An energy
objective in kernel mode turns the energy observer on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from ..errors import SpecError
from .model import Objective, Spec

# name -> (metric, direction)
NAMED = {
    "time": ("ms", "min"),
    "energy": ("energy_mj", "min"),
    "power": ("power_w", "min"),
    "gflops_per_watt": ("gflops_per_watt", "max"),
}
# the metrics of kernel mode's energy observer (gflops_per_watt is computed from its energy_mj)
ENERGY_METRICS = ("power_w", "energy_mj", "gflops_per_watt")
_DIRECTION = {metric: direction for metric, direction in NAMED.values()}
# metric names (lower case) where higher is better: a throughput, a speed-up
MAX_IS_BETTER = ("gflops", "tflops", "gbs", "gb_s", "bandwidth", "throughput", "tokens_per_s", "speedup")


def metric_direction(metric: str, objectives: Iterable[Objective] = ()) -> str:
    """Whether a larger or a smaller value of a metric is better, when nothing says so: the
    direction of the sweep's objective of that metric (``objectives``), else the fixed one of
    kernel mode's (``gflops_per_watt``: max), else max for a throughput named in
    ``MAX_IS_BETTER`` (``gflops``, ``tflops``, ``bandwidth``…), else min."""
    for o in objectives:
        if o.metric == metric:
            return o.direction
    if metric in _DIRECTION:
        return _DIRECTION[metric]
    return "max" if metric.lower() in MAX_IS_BETTER else "min"


def parse_objective(text: str, direction: str | None = None) -> Objective:
    """``"energy"`` -> Objective("energy", "min"), ``"tflops:max"`` -> Objective("tflops", "max"):
    the name as written (``resolve`` maps kernel mode's names to its metrics) with its
    direction; ``direction`` (the spec's ``[sweep] direction``) applies when the text gives
    none. ValueError says why a text is not an objective."""
    if not isinstance(text, str):
        raise ValueError(f"expected a metric name such as \"time\" or \"tflops:max\", got {text!r}")
    name, colon, given = (part.strip() for part in text.partition(":"))
    if not name or (colon and not given):
        raise ValueError(f"{text!r}: give a metric name, and after it :min or :max if you like")
    if given and given not in ("min", "max"):
        raise ValueError(f"{text!r}: the direction is min or max, got {given!r}")
    fixed = NAMED[name][1] if name in NAMED else _DIRECTION.get(name)
    return Objective(name, given or direction or fixed or "min")


def parse_objectives(items: Iterable[str]) -> tuple[Objective, ...]:
    """Several objectives (``["time", "energy"]``, or ``--objectives``'s comma-separated
    words); a name given twice is refused."""
    out: list[Objective] = []
    for item in items:
        objective = parse_objective(item)
        if any(o.metric == objective.metric for o in out):
            raise ValueError(f"{item!r}: {objective.metric} is already an objective")
        out.append(objective)
    if not out:
        raise ValueError("give at least one objective, e.g. time,energy")
    return tuple(out)


def resolve(objectives: Iterable[Objective], kernel_mode: bool,
            metrics: Iterable[str] = ()) -> tuple[Objective, ...]:
    """Kernel mode's names as its metrics (``time`` -> ``ms``, ``energy`` -> ``energy_mj``…);
    in program mode names are metrics as they are. A name that is itself among ``metrics``
    (a database's: ``ksweep report`` does not know the mode) stays as it is. ValueError for
    a kernel-mode name in the other direction (``energy:max``)."""
    present = set(metrics)
    out = []
    for o in objectives:
        if kernel_mode and o.metric in NAMED and o.metric not in present:
            metric, fixed = NAMED[o.metric]
            if o.direction != fixed:  # what ksweep measures has its direction (a program's metric has none)
                raise ValueError(f"{o.metric} is {'minimised' if fixed == 'min' else 'maximised'}; "
                                 f"drop '{o.direction}'")
            o = Objective(metric, o.direction)
        out.append(o)
    return tuple(out)


def needs_energy(objectives: Iterable[Objective]) -> bool:
    return any(o.metric in ENERGY_METRICS for o in objectives)


def with_objectives(spec: Spec, objectives: tuple[Objective, ...], key: str = "sweep.objectives") -> Spec:
    """The spec ranking by ``objectives`` (parsed: kernel mode's names are resolved here; the
    first ranks; several make a multi-objective sweep), checked: no metric twice, and
    ``gflops_per_watt`` needs the FLOP count of a launch (``[physics] flops``, or each
    shape's own). In kernel mode an energy objective turns the energy observer on. ``key``
    names where the objectives came from in the one-line SpecError."""
    try:
        objectives = resolve(objectives, spec.kernel is not None)
    except ValueError as exc:
        raise SpecError(str(exc), path=spec.label, key=key) from None
    if not objectives:
        raise SpecError("give at least one objective", path=spec.label, key=key)
    metrics = [o.metric for o in objectives]
    twice = next((m for i, m in enumerate(metrics) if m in metrics[:i]), None)
    if twice is not None:
        raise SpecError(f"{twice} is named twice (time is ms in kernel mode)", path=spec.label, key=key)
    if "gflops_per_watt" in metrics:
        physics = spec.physics
        if physics is None or (physics.flops is None and not all(s.flops is not None for s in spec.shape_list())):
            raise SpecError("gflops_per_watt needs the FLOP count of one launch: add [physics] flops = "
                            "\"2 * M * N * K\" (an expression of the config's names; a shape may give its own)",
                            path=spec.label, key=key)
    kernel = spec.kernel
    if kernel is not None and needs_energy(objectives) and "energy" not in kernel.observers:
        kernel = replace(kernel, observers=(*kernel.observers, "energy"))
    return replace(spec, objective=objectives[0], objectives=objectives if len(objectives) > 1 else (),
                   kernel=kernel)
