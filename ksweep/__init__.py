"""ksweep: an autotuner for CUDA kernels.

    import ksweep
    sweep = ksweep.load_spec("megakernel.toml")
    plan = ksweep.make_plan(sweep)  # .total, .valid, .pruned
    space = ksweep.Space({"A": [1, 2, 4], "B": [1, 2]}, ["A * B <= 4"])
"""

from .errors import KsweepError, SpecError
from .space.plan import make_plan
from .space.space import Space
from .spec.load import load_spec, spec_from_dict
from .spec.model import Build, Check, Constraint, Derived, Harness, Objective, Param, Run, Shape, Spec, Variant
from .status import Status


def tune_kernel(*args, **kwargs):
    """Tune a bare __global__ kernel (see ksweep.kernel.api.tune_kernel)."""
    from .kernel.api import tune_kernel as _tune

    return _tune(*args, **kwargs)


__all__ = [
    "Build", "Check", "Constraint", "Derived", "Harness", "KsweepError", "Objective", "Param", "Run", "Shape",
    "Space", "Spec", "SpecError", "Status", "Variant", "load_spec", "make_plan", "spec_from_dict",
    "tune_kernel",
]
__version__ = "0.1.0"
