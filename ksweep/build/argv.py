"""Command templates -> argv lists (pure). Never a shell string.

An element that is exactly ``{defines}`` or ``{shape_args}`` (any name given in
``lists``) expands to several arguments; ``{NAME}`` inside any other element is replaced
by the value of NAME (``{binary}``, ``{workdir}``, ``{spec_dir}``, ``{shape}``,
``{variant}``, or any parameter, derived value or constant). ``{{`` and ``}}`` are
literal braces.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..errors import TemplateError
from ..spec.model import define_value
from ..spec.templates import FIELD as _FIELD, WHOLE as _WHOLE  # the template syntax, defined with its checks


def expand(
    template: Sequence[str], *, lists: Mapping[str, Sequence[str]], values: Mapping[str, Any], where: str
) -> list[str]:
    out: list[str] = []
    for arg in template:
        m = _WHOLE.match(arg)
        if m and m.group(1) in lists:
            out.extend(lists[m.group(1)])
            continue
        out.append(_fill(arg, values, lists, where))
    return out


def _fill(arg: str, values: Mapping[str, Any], lists: Mapping[str, Sequence[str]], where: str) -> str:
    def sub(m: re.Match) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        name = m.group(1)
        if name in values:
            return define_value(values[name])
        if name in lists:
            raise TemplateError(f"{where}: {{{name}}} expands to several arguments and must stand alone: {arg!r}")
        raise TemplateError(f"{where}: unknown placeholder {{{name}}} in {arg!r}")

    return _FIELD.sub(sub, arg)


def define_flags(params, config: Mapping[str, Any], derived_defs, derived: Mapping[str, Any],
                 fixed_defines: Mapping[str, Any]) -> list[str]:
    """The -D flags of one config: parameters, derived values marked define, shape/variant defines."""
    flags: list[str] = []
    for p in params:
        flags.extend(p.defines(config[p.name]))
    for d in derived_defs:
        if d.define and d.name in derived:
            flags.append(f"-D{d.define_name}={define_value(derived[d.name])}")
    for name, value in fixed_defines.items():
        flags.append(f"-D{name}={define_value(value)}")
    return flags


ENTRY_DEFINE = "-Dmain=ksweep_main"  # the name the persistent host calls (run/host.py)
_C_COMPILER = re.compile(r"^(gcc|g\+\+|cc|c\+\+|clang|clang\+\+)(-[\d.]+)?$")


def library_flags(compiler: str, shared: bool = True) -> tuple[str, ...] | None:
    """The flags that make ``compiler``'s program a shared library whose ``main`` the
    persistent host can call (``shared=False``: an object file to link into one: position
    independent, main renamed); None for a command it does not know (pure)."""
    name = compiler.rsplit("/", 1)[-1]
    if name == "nvcc":
        flags = ("-Xcompiler", "-fPIC", ENTRY_DEFINE)
    elif _C_COMPILER.match(name):
        flags = ("-fPIC", ENTRY_DEFINE)
    else:
        return None
    return ("-shared", *flags) if shared else flags
