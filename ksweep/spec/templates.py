"""The ``{NAME}`` templates of a spec, checked when it is loaded.

Two kinds:

- a constraint's ``reason`` ("SMEM {SMEM_TOTAL} > 228 KB"): only plain ``{NAME}``
  placeholders, filled with the config's values; ``{{`` and ``}}`` are literal braces.
  Attribute access, indexing, format specs and conversions (``{x.__class__}``,
  ``{x[0]}``, ``{x:>100000000}``, ``{x!r}``) are refused: a reason is a message, not code;
- the argv templates of ``[build]``, ``[run]``, ``[build.harness]``, variants and shape
  ``args``: each ``{NAME}`` must name something that ``ksweep.build.argv.expand`` fills
  there, so that a typo fails ``ksweep plan`` instead of the first build of ``ksweep run``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ..errors import SpecError, TemplateError
from .names import did_you_mean

# The template syntax of commands: ``{NAME}`` stands alone for a list placeholder or inside
# an argument for a value; ``{{`` and ``}}`` are literal braces. build/argv.py's ``expand``
# fills exactly these patterns, so what is checked here is what it fills.
WHOLE = re.compile(r"^\{(\w+)\}$")
FIELD = re.compile(r"\{\{|\}\}|\{(\w+)\}")
_WHOLE, _FIELD = WHOLE, FIELD

# -- reasons ----------------------------------------------------------------------------

_REASON_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def reason_names(template: str) -> tuple[str, ...]:
    """The names a reason template reads; ValueError (a one-line problem) if it is not
    only text, ``{NAME}``, ``{{`` and ``}}``."""
    names = []
    for m in _REASON_TOKEN.finditer(template):
        token = m.group(0)
        if token in ("{{", "}}"):
            continue
        if token in ("{", "}"):
            raise ValueError(f"unmatched '{token}' at character {m.start() + 1}: write '{token * 2}' "
                             "for a literal brace")
        field = m.group(1)
        if _NAME.match(field):
            names.append(field)
            continue
        if not field.strip():
            why = "names nothing"
        elif "!" in field:
            why = "has a conversion ('!'), which is not allowed"
        elif ":" in field:
            why = "has a format spec (':'), which is not allowed"
        elif "." in field:
            why = "reads an attribute ('.'), which is not allowed"
        elif "[" in field:
            why = "indexes ('[...]'), which is not allowed"
        else:
            why = "is not a name"
        raise ValueError(f"'{_short(token)}' {why}: a reason names values as plain {{NAME}} "
                         "(write {{ and }} for literal braces)")
    return tuple(names)


def render_reason(template: str, env: Mapping[str, Any]) -> str:
    """Fill a reason's plain ``{NAME}`` placeholders; anything else is left as written."""

    def sub(m: re.Match) -> str:
        token = m.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        field = m.group(1)
        if field is not None and _NAME.match(field) and field in env:
            return str(env[field])
        return token

    return _REASON_TOKEN.sub(sub, template)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def unknown(kind: str, name: str, visible: Iterable[str], label: str, key: str,
            error: type[SpecError] = SpecError) -> SpecError:
    """"unknown placeholder '{TILEE}' (did you mean '{TILE}'?)" as a SpecError of file and key."""
    close = did_you_mean(name, visible)
    hint = f" (did you mean '{{{close}}}'?)" if close else ""
    return error(f"unknown {kind} '{{{name}}}'{hint}", path=label, key=key)


# -- argv templates -----------------------------------------------------------------------

_BUILTINS = ("binary", "workdir", "spec_dir", "shape", "variant", "ksweep_include")
_LISTS = ("defines", "shape_args")


class PlaceholderError(SpecError, TemplateError):
    """A command template names a placeholder that nothing fills there (found at load time)."""


def check_placeholders(spec) -> None:
    """Every ``{NAME}`` of every argv template the sweep expands, for every shape ×
    variant, names something that is filled there (as ksweep.sweep.jobs fills it)."""
    combos = [(s, v) for s in spec.shape_list() for v in spec.variant_list()]
    everywhere: set[str] = set()  # names defined for some shape × variant: for a better message
    for shape, variant in combos:
        parts = spec.space_parts(shape, variant)
        everywhere.update(p.name for p in parts.params)
        everywhere.update(d.name for d in parts.derived)
        everywhere.update(parts.fixed)
    kernel = spec.kernel is not None
    for shape, variant in combos:
        parts = spec.space_parts(shape, variant)
        params = {p.name for p in parts.params}
        derived = {d.name for d in parts.derived}
        fixed = set(parts.fixed)
        build_key = f"variants.{variant.name}.build_command" if variant.build_command is not None else "build.command"
        run_key = f"variants.{variant.name}.run_command" if variant.run_command is not None else "run.command"
        build = variant.build_command if variant.build_command is not None else spec.build.command
        run = () if kernel else (variant.run_command if variant.run_command is not None else spec.run.command)
        harness = spec.build.harness is not None and not kernel and any("{harness}" in a for a in (*build, *run))
        names = {*params, *derived, *fixed, *_BUILTINS} | ({"harness"} if harness else set())
        ctx = _Where(spec, shape, variant, everywhere, params | derived)
        ctx.check(build, build_key, names | ({"kernel_wrapper"} if kernel else set()), _LISTS)
        ctx.check(run, run_key, names, _LISTS)
        ctx.check(shape.args, f"shapes.{shape.name}.args", names, ())
        if harness:
            ctx.check(spec.build.harness.command, "build.harness.command",
                      {*fixed, "harness", "workdir", "spec_dir", "shape", "variant", "ksweep_include"}, ("defines",))


class _Where:
    def __init__(self, spec, shape, variant, everywhere: set[str], config_names: set[str]):
        self.spec, self.shape, self.variant = spec, shape, variant
        self.everywhere = everywhere
        self.config_names = config_names

    def check(self, template, key: str, values: set[str], lists: tuple[str, ...]) -> None:
        for arg in template:
            m = _WHOLE.match(arg)
            if m and m.group(1) in lists:
                continue
            for field in _FIELD.finditer(arg):
                name = field.group(1)
                if name is None or name in values:
                    continue
                raise self._error(name, arg, key, values, lists)

    def _error(self, name: str, arg: str, key: str, values: set[str], lists: tuple[str, ...]) -> SpecError:
        label = self.spec.label

        def error(problem: str) -> SpecError:
            return PlaceholderError(problem, path=label, key=key)

        if name in lists:
            return error(f"'{{{name}}}' expands to several arguments and must be an element of its own, "
                         f"not part of {_short(arg)!r}")
        if name in _LISTS:
            return error(f"'{{{name}}}' is not filled here: it is for [build] and [run] commands")
        if key == "build.harness.command" and (name in self.config_names or name in ("binary", "shape_args")):
            return error(f"'{{{name}}}' is not filled here: the harness is built once for all configs, so its "
                         "command sees only constants, limits, shape and variant defines, {defines}, {harness}, "
                         "{workdir}, {spec_dir}, {shape} and {variant}")
        if name == "harness" and self.spec.build.harness is None:
            return error("'{harness}' names no harness: add a [build.harness] table that builds it")
        if name == "kernel_wrapper":
            return error("'{kernel_wrapper}' is only filled in a [kernel] spec's build command")
        if name in self.everywhere:
            where = []
            if self.spec.shapes:
                where.append(f"shape '{self.shape.name}'")
            if self.spec.variants:
                where.append(f"variant '{self.variant.name}'")
            return error(f"'{{{name}}}' is not defined for {' × '.join(where) or 'this sweep'}: only some shapes "
                         "or variants have it")
        error = unknown("placeholder", name, [*values, *lists], label, key, PlaceholderError)
        if "did you mean" in error.problem:
            return error
        return PlaceholderError(f"{error.problem} (for a literal brace in {_short(arg)!r} write '{{{{' and '}}}}')",
                                path=label, key=key)


def define_warnings(spec) -> tuple[str, ...]:
    """A build command without a ``{defines}`` element while values are meant to reach the
    compiler as -D flags (params, switches, derived values with define = true, shape and
    variant defines) that it does not name as ``{NAME}`` either: those never reach it.
    Kernel mode builds its own command: nothing to warn about there."""
    if spec.kernel is not None:
        return ()
    missing: dict[str, list[str]] = {}  # build key -> names, in spec order
    for shape in spec.shape_list():
        for variant in spec.variant_list():
            key = f"variants.{variant.name}.build_command" if variant.build_command is not None else "build.command"
            build = variant.build_command if variant.build_command is not None else spec.build.command
            if not build or any(_WHOLE.match(a) and _WHOLE.match(a).group(1) == "defines" for a in build):
                continue
            named = {m.group(1) for a in build for m in _FIELD.finditer(a) if m.group(1)}
            parts = spec.space_parts(shape, variant)
            wanted = [p.name for p in parts.params if p.define]
            wanted += [d.name for d in parts.derived if d.define]
            wanted += [*variant.defines, *shape.defines]
            names = missing.setdefault(key, [])
            for name in wanted:
                if name not in named and name not in names:
                    names.append(name)
    out = []
    for key, names in missing.items():
        if not names:
            continue
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        out.append(f"{spec.label}: {key}: has no \"{{defines}}\" element, so {shown} (-D flags) never reach "
                   "the compiler: add \"{defines}\" to the command, or name each as {NAME}")
    return tuple(out)
