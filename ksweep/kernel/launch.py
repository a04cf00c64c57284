"""Launch geometry and entry-point names (pure)."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ExprError, SpecError
from ..spec.kernel import KernelSpec


def launch_dims(kspec: KernelSpec, env: Mapping[str, Any], label: str = "<spec>") -> dict:
    """grid (3), block (3) and dynamic shared memory of one config."""
    def dims(exprs, key):
        try:
            values = [int(e.evaluate(env)) for e in exprs]
        except ExprError as exc:
            raise SpecError(str(exc), path=label, key=f"kernel.{key}") from None
        return values + [1] * (3 - len(values))

    try:
        smem = int(kspec.smem.evaluate(env)) if kspec.smem is not None else 0
    except ExprError as exc:
        raise SpecError(str(exc), path=label, key="kernel.smem") from None
    return {"grid": dims(kspec.grid, "grid"), "block": dims(kspec.block, "block"), "smem": smem}


def wrapper_source(kspec: KernelSpec, values: Mapping[str, Any]) -> str:
    """A translation unit that includes the user's source and, for a templated kernel,
    instantiates the config's template (taking its address from host code is enough; NVRTC
    compiles no host code, and instantiates it from a name expression: kernel/mode.py)."""
    text = f'#include "{kspec.source}"\n'
    if kspec.templated and kspec.compiler == "nvcc":
        text += f"void *ksweep_entry_address() {{ return (void *)&{kspec.instance(values)}; }}\n"
    return text


def entry_name(kernel_names: list[str], kspec: KernelSpec) -> str | None:
    """The cubin entry point that is our kernel, among those ptxas reported."""
    if kspec.name in kernel_names:  # extern "C"
        return kspec.name
    base = kspec.base_name
    token = f"{len(base)}{base}"
    matches = [n for n in kernel_names if token in n]
    if len(matches) == 1:
        return matches[0]
    if len(kernel_names) == 1:
        return kernel_names[0]
    return matches[0] if matches else None
