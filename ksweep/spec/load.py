"""TOML -> Spec. Every mistake becomes one SpecError line naming the file and the key."""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import SpecError
from ..gpu.limits import DEFAULT_ARCH, KNOWN_ARCHS, LIMIT_KEYS, builtin_limits
from ..gpu.peaks import DTYPES
from .checks import check_modes, require_sources
from .collisions import collisions, command_defines, cuda_headers, include_dirs, read_sources, unguarded
from .context import Ctx
from .kernel import kernel_spec_from_dict
from .model import Build, Check, Constraint, Derived, Harness, Objective, Param, Physics, Profile, Run, Shape, Spec, Variant
from .objectives import parse_objective, parse_objectives, with_objectives
from .names import did_you_mean, resolve_names
from .harden import harden_from_dict
from .pyref import load_python
from .templates import check_placeholders, define_warnings, reason_names, unknown
from .unread import macros_read, rename_hint

_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_MACRO = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCALARS = (bool, int, float, str)

_TOP_KEYS = {
    "sweep", "limits", "constants", "params", "switches", "derived", "constraints",
    "shapes", "variants", "build", "run", "check", "kernel", "physics", "profile", "harden",
}


def load_spec(path: str | Path) -> Spec:
    """Read a sweep spec from a TOML file."""
    path = Path(path)
    label = path.name
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SpecError("no such file", path=str(path)) from None
    except IsADirectoryError:
        raise SpecError("is a folder, not a spec file: give the path of the .toml file", path=str(path)) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", path=str(path)) from None
    if raw.startswith(b"SQLite format 3\x00"):
        raise SpecError("is a results database, not a spec: give the spec (.toml) it was swept from, "
                        "and this database with --db", path=label)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}): "
                        "save the spec as UTF-8", path=label) from None
    if not text.strip():
        raise SpecError("the file is empty: a spec needs at least a [params] table (docs/spec.md)", path=label)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"invalid TOML: {' '.join(str(exc).split())}", path=label) from None
    if not data:
        raise SpecError("the file has no tables, only comments: a spec needs at least a [params] table "
                        "(docs/spec.md)", path=label)
    return spec_from_dict(data, path=path.resolve())


def spec_from_dict(data: Mapping[str, Any], path: Path | None = None) -> Spec:
    """Build a Spec from the parsed TOML (a plain dict), checking everything."""
    ctx = Ctx(path.name if path else "<spec>")
    root = path.parent if path else Path.cwd()
    ctx.keys(dict(data), _TOP_KEYS, "")

    sweep = ctx.keys(data.get("sweep", {}), {"name", "arch", "objective", "objectives", "direction", "description",
                                             "define_prefix"}, "sweep")
    prefix = sweep.get("define_prefix", "")
    if not isinstance(prefix, str) or (prefix and not _MACRO.match(prefix)):
        raise ctx.error("sweep.define_prefix", f"expected the start of a C identifier such as \"K10_\", got {prefix!r}")
    description = sweep.get("description", "")
    if not isinstance(description, str):
        raise ctx.error("sweep.description", f"expected a string, got {description!r}")
    arch = sweep.get("arch")
    if arch is not None and arch not in KNOWN_ARCHS:
        close = did_you_mean(str(arch), KNOWN_ARCHS)
        raise ctx.error("sweep.arch", f"unknown arch '{arch}'" + (f" — did you mean '{close}'?" if close else f" (known: {', '.join(KNOWN_ARCHS)})"))
    limits = dict(builtin_limits(arch or DEFAULT_ARCH))
    for key, value in ctx.keys(data.get("limits", {}), set(LIMIT_KEYS), "limits").items():
        limits[key] = int(ctx.number(value, f"limits.{key}", positive=False))

    objectives = _objectives(ctx, sweep)

    seen: dict[str, str] = {}  # name -> where it was defined

    def claim(name: str, where: str) -> None:
        ctx.name(name, where)
        if name in seen:
            raise ctx.error(where, f"duplicate name {name}: already defined at {seen[name]}")
        seen[name] = where

    constants = {}
    for name, value in ctx.keys(data.get("constants", {}), set(data.get("constants", {})), "constants").items():
        claim(name, f"constants.{name}")
        if not isinstance(value, _SCALARS):
            raise ctx.error(f"constants.{name}", "a constant must be a number, a string or a boolean")
        constants[name] = value

    params = [_param(ctx, name, spec, tier=1, where=f"params.{name}") for name, spec in _table(ctx, data, "params").items()]
    params += [_switch(ctx, name, spec) for name, spec in _table(ctx, data, "switches").items()]
    for p in params:
        claim(p.name, f"{'params' if p.tier == 1 else 'switches'}.{p.name}")

    derived = []
    for name, spec in _table(ctx, data, "derived").items():
        where = f"derived.{name}"
        claim(name, where)
        if isinstance(spec, dict):
            ctx.keys(spec, {"expr", "define", "shapes", "variants"}, where)
            if "expr" not in spec:
                raise ctx.error(where, "needs 'expr'")
            define, macro = _define(ctx, spec.get("define", False), f"{where}.define")
            derived.append(Derived(
                name=name, expr=ctx.expr(spec["expr"], where), define=define, macro=macro,
                shapes=_opt_set(ctx, spec, "shapes", where), variants=_opt_set(ctx, spec, "variants", where),
            ))
        else:
            derived.append(Derived(name=name, expr=ctx.expr(spec, where)))

    constraints = _constraints(ctx, data.get("constraints", []), root)
    shapes = tuple(_shape(ctx, name, spec, seen) for name, spec in _table(ctx, data, "shapes").items())
    variants = tuple(_variant(ctx, name, spec) for name, spec in _table(ctx, data, "variants").items())
    for key, names in (("shapes", {s.name for s in shapes}), ("variants", {v.name for v in variants})):
        for c in [*constraints, *derived]:
            for n in getattr(c, key) or ():
                if n not in names:
                    kind = "constraint" if isinstance(c, Constraint) else "derived"
                    raise ctx.error(f"{kind} '{c.name}'.{key}", f"no {key[:-1]} named '{n}'")

    build = _build(ctx, data.get("build", {}), root)
    run = _run(ctx, data.get("run", {}))
    check = _check(ctx, data.get("check", {}))
    kernel = kernel_spec_from_dict(data["kernel"], root, ctx.label) if "kernel" in data else None
    physics = _physics(ctx, data["physics"]) if "physics" in data else None
    profile = _profile(ctx, data["profile"]) if "profile" in data else Profile()
    harden = harden_from_dict(ctx, data.get("harden", {}))
    sized = {n for s in shapes for n in (*s.defines, *s.constants)} | set(constants)
    for key in ("edge", "sizes"):  # each replaces a shape's value: a name no shape has is a typo
        for name in getattr(harden, key):
            if name not in sized:
                close = did_you_mean(name, sorted(sized))
                raise ctx.error(f"harden.{key}.{name}", "no shape defines it, nor is it a constant: it would "
                                f"replace nothing" + (f" — did you mean '{close}'?" if close else ""))
    if kernel is not None and check.reference is not None:
        raise ctx.error("check.reference", "kernel mode compares each config's outputs with the reference's itself: "
                        "give [kernel] reference = \"defaults\" instead ([check] keeps expected values and max bounds)")

    if build.harness is not None and kernel is None and not any(
            "{harness}" in a for cmd in (build.command, run.command, *(v.build_command or () for v in variants),
                                          *(v.run_command or () for v in variants)) for a in cmd):
        raise ctx.error("build.harness", "no command names {harness}: add it to [build] command or [run] command "
                        "(e.g. command = [\"{harness}\", \"{binary}\"])")
    spec = Spec(
        name=str(sweep.get("name", path.stem if path else "sweep")),
        params=tuple(params), derived=tuple(derived), constants=constants,
        constraints=tuple(constraints), shapes=shapes, variants=variants, limits=limits,
        arch=arch, build=build, run=run, check=check, path=path, folder=None if path else root, kernel=kernel,
        define_prefix=prefix, description=description, physics=physics, profile=profile, harden=harden,
    )
    spec = with_objectives(spec, objectives, key="sweep.objectives" if "objectives" in sweep else "sweep.objective")
    if prefix:
        spec = _with_prefix(spec, prefix)
    check_modes(spec)
    validate_names(spec)
    check_placeholders(spec)
    warnings = define_warnings(spec) + collision_warnings(spec)
    return replace(spec, warnings=warnings) if warnings else spec


def collision_warnings(spec: Spec) -> tuple[str, ...]:
    """A -D name that is also an identifier of the sources the build reads (spec/collisions.py)."""
    if spec.kernel is not None:
        return ()
    where: dict[str, str] = {}  # macro -> the spec key that makes it
    for p in spec.params:
        if p.define:
            where.setdefault(p.define_name, f"{'params' if p.tier == 1 else 'switches'}.{p.name}")
    for owner, kind in [*((s, "shapes") for s in spec.shapes), *((v, "variants") for v in spec.variants)]:
        for p in owner.params:
            if p.define:
                where.setdefault(p.define_name, f"{kind}.{owner.name}.params.{p.name}")
        for name in owner.defines:
            where.setdefault(spec.define_prefix + name, f"{kind}.{owner.name}.defines.{name}")
    for d in spec.derived:
        if d.define:
            where.setdefault(d.define_name, f"derived.{d.name}")
    if not where:
        return ()
    sources = [*spec.build.sources, *(s for v in spec.variants for s in v.sources or ())]
    commands = [spec.build.command, *(v.build_command or () for v in spec.variants)]
    texts = read_sources(spec.root, sources, [d for c in commands for d in include_dirs(c)])

    def shown(path: Path) -> Path | str:
        try:
            return path.relative_to(spec.root)
        except ValueError:
            return path.name

    out = []
    # the macros every build defines itself: each variant builds with its own command or the base one
    used = [v.build_command or spec.build.command for v in spec.variants] or [spec.build.command]
    always = set.intersection(*(command_defines(c) for c in used))
    for name, (path, line) in unguarded(where, texts, always).items():
        out.append(f"{spec.label}: {where[name]}: -D{name} is replaced by the unguarded #define {name} in "
                   f"{shown(path)}:{line} (the compiler only warns: every config would build with its value): "
                   f"guard it, e.g. ksweep guard {shown(path)} {name} --in-place")
    cuda = {}
    for c in commands:
        cuda.update(cuda_headers(c))
    read = macros_read(texts.values())
    for name, (path, line, text) in collisions(where, {**texts, **cuda}).items():
        named = f"CUDA's {path.name}:{line} ({text[:60]}; nvcc includes it in every .cu)" if path in cuda and \
            path not in texts else f"{shown(path)}:{line} ({text[:60]})"
        out.append(f"{spec.label}: {where[name]}: -D{name} would also rewrite the identifier {name} in "
                   f"{named}: {rename_hint(name, read, spec.define_prefix)}")
    return tuple(out)


def validate_names(spec: Spec) -> None:
    """Check, for every shape × variant, that expressions read only names that exist there."""
    for shape in spec.shape_list():
        for variant in spec.variant_list():
            params = spec.effective_params(shape, variant)
            fixed = spec.fixed_names(shape, variant)
            clash = {p.name for p in params} & set(fixed)
            if clash:
                name = sorted(clash)[0]
                raise SpecError(
                    f"{name} is both a parameter and a fixed value (constant, define or limit)",
                    path=spec.label, key=f"shapes.{shape.name}" if shape.defines else f"variants.{variant.name}",
                )
            parts = spec.space_parts(shape, variant)
            resolve_names([p.name for p in params], parts.derived, parts.constraints, fixed, spec.label)
            visible = [*(p.name for p in params), *(d.name for d in parts.derived), *fixed]
            for c in parts.constraints:
                for name in reason_names(c.reason or ""):
                    if name not in visible:
                        raise unknown("name", name, visible, spec.label, f"constraint '{c.name}'.reason")
            work = [(f"shapes.{shape.name}.{k}", getattr(shape, k)) for k in ("flops", "bytes")]
            if spec.physics is not None:
                work += [(f"physics.{k}", getattr(spec.physics, k)) for k in ("flops", "bytes")]
            work += [(f"profile.{k}", getattr(spec.profile, k)) for k in ("threads", "smem")]
            if spec.kernel is not None:  # the launch: read at every config, so a typo is said now
                k = spec.kernel
                work += [*((f"kernel.grid[{i}]", e) for i, e in enumerate(k.grid)),
                         *((f"kernel.block[{i}]", e) for i, e in enumerate(k.block)), ("kernel.smem", k.smem)]
            for key, expr in work:
                for name in sorted(expr.names) if expr is not None else ():
                    if name not in visible:
                        raise unknown("name", name, visible, spec.label, key)


def _table(ctx: Ctx, data: Mapping, key: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ctx.error(key, f"expected a table, got {type(value).__name__}")
    return value


def _opt_set(ctx: Ctx, spec: Mapping, key: str, where: str) -> frozenset[str] | None:
    if key not in spec:
        return None
    return frozenset(ctx.str_list(spec[key], f"{where}.{key}"))


def _values(ctx: Ctx, values: Any, where: str) -> tuple:
    if not isinstance(values, list):
        raise ctx.error(where, f"expected a list of values, got {type(values).__name__}")
    if not values:
        raise ctx.error(where, "the value list is empty")
    for v in values:
        if not isinstance(v, _SCALARS):
            raise ctx.error(where, f"values must be numbers, strings or booleans, got {v!r}")
    if len(set(map(repr, values))) != len(values):
        dup = next(v for i, v in enumerate(values) if v in values[:i])
        raise ctx.error(where, f"value {dup!r} is listed twice")
    return tuple(values)


def _param(ctx: Ctx, name: str, spec: Any, tier: int, where: str) -> Param:
    ctx.name(name, where)
    if isinstance(spec, dict):
        ctx.keys(spec, {"values", "default", "define"}, where)
        if "values" not in spec:
            raise ctx.error(where, "needs 'values'")
        values = _values(ctx, spec["values"], f"{where}.values")
        default = spec.get("default", values[0])
        if default not in values:
            raise ctx.error(f"{where}.default", f"default {default!r} is not one of the values {list(values)}")
        define, macro = _define(ctx, spec.get("define", True), f"{where}.define")
        return Param(name=name, values=values, default=default, tier=tier, define=define, macro=macro)
    return Param(name=name, values=_values(ctx, spec, where), tier=tier)


def _define(ctx: Ctx, value: Any, where: str) -> tuple[bool, str | None]:
    """``define``: true/false, or the macro name the compiler sees (``define = "K10_BM"``)."""
    if isinstance(value, bool):
        return value, None
    if isinstance(value, str) and _MACRO.match(value):
        return True, value
    raise ctx.error(where, f"expected true, false or a macro name such as \"K10_BM\", got {value!r}")


def _with_prefix(spec: Spec, prefix: str) -> Spec:
    """Every -D name ksweep writes gets ``prefix`` unless a ``define = "NAME"`` chose it."""
    def fix(items):
        return tuple(replace(p, macro=prefix + p.name) if p.define and p.macro is None else p for p in items)

    return replace(
        spec, params=fix(spec.params), derived=fix(spec.derived),
        shapes=tuple(replace(s, params=fix(s.params)) for s in spec.shapes),
        variants=tuple(replace(v, params=fix(v.params)) for v in spec.variants),
    )


def _switch(ctx: Ctx, name: str, spec: Any, where: str | None = None) -> Param:
    where = where or f"switches.{name}"
    if spec == "flag" or spec is True:
        return Param(name=name, values=(False, True), default=False, tier=2, flag=True)
    if isinstance(spec, dict) and spec.get("flag"):
        ctx.keys(spec, {"flag", "default"}, where)
        return Param(name=name, values=(False, True), default=bool(spec.get("default", False)), tier=2, flag=True)
    if isinstance(spec, str):
        raise ctx.error(where, f"a switch is \"flag\" or a list of values, got {spec!r}")
    return _param(ctx, name, spec, tier=2, where=where)


def _constraints(ctx: Ctx, items: Any, root: Path) -> list[Constraint]:
    if not isinstance(items, list):
        raise ctx.error("constraints", "expected an array of tables: [[constraints]]")
    out: list[Constraint] = []
    names: set[str] = set()
    for i, item in enumerate(items):
        where = f"constraints[{i}]"
        ctx.keys(item, {"name", "expr", "python", "reason", "uses", "shapes", "variants"}, where)
        name = item.get("name", f"c{i}")
        if not isinstance(name, str) or not name:
            raise ctx.error(f"{where}.name", "a constraint name must be a non-empty string")
        where = f"constraint '{name}'"
        if name in names:
            raise ctx.error(where, f"duplicate constraint name '{name}'")
        names.add(name)
        if ("expr" in item) == ("python" in item):
            raise ctx.error(where, "give exactly one of 'expr' (an expression) or 'python' (\"file.py:function\")")
        expr = ctx.expr(item["expr"], where) if "expr" in item else None
        function = load_python(item["python"], root, key=f"{where}.python", label=ctx.label,
                               role="Python constraint") if "python" in item else None
        reason = item.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise ctx.error(f"{where}.reason", "expected a string")
        if reason is not None:
            try:
                reason_names(reason)
            except ValueError as exc:
                raise ctx.error(f"{where}.reason", str(exc)) from None
        uses = _opt_set(ctx, item, "uses", where)
        out.append(Constraint(
            name=name, expr=expr, function=function, reason=reason, uses=uses,
            shapes=_opt_set(ctx, item, "shapes", where), variants=_opt_set(ctx, item, "variants", where),
        ))
    return out


def _objectives(ctx: Ctx, sweep: Mapping[str, Any]) -> tuple[Objective, ...]:
    """``objective`` (+ ``direction``), or ``objectives``: a list of names (spec/objectives.py)."""
    direction = sweep.get("direction")
    if direction is not None and direction not in ("min", "max"):
        raise ctx.error("sweep.direction", f"must be 'min' or 'max', got {direction!r}")
    if "objectives" in sweep:
        if "objective" in sweep or direction is not None:
            raise ctx.error("sweep.objectives", "give either objectives (a list, each name with its own "
                            ":min or :max) or objective and direction, not both")
        items = sweep["objectives"]
        if not isinstance(items, list):
            raise ctx.error("sweep.objectives", f"expected a list such as [\"time\", \"energy\"], got {items!r}")
        try:
            return parse_objectives(items)
        except ValueError as exc:
            raise ctx.error("sweep.objectives", str(exc)) from None
    try:
        return (parse_objective(sweep.get("objective", "ms"), direction),)
    except ValueError as exc:
        raise ctx.error("sweep.objective", str(exc)) from None


def _physics(ctx: Ctx, spec: Any) -> Physics:
    if not isinstance(spec, dict):
        raise ctx.error("physics", "expected a table: [physics] with flops = \"2 * M * N * K\", dtype = \"fp32\"")
    ctx.keys(spec, {"flops", "bytes", "dtype", "time", "unit", "margin", "peak_tflops", "bandwidth_gbs"}, "physics")
    dtype = spec.get("dtype", "fp32")
    if dtype not in DTYPES:
        close = did_you_mean(str(dtype), DTYPES)
        raise ctx.error("physics.dtype", f"unknown data type {dtype!r}" + (f" — did you mean '{close}'?" if close
                        else f" (known: {', '.join(DTYPES)})"))
    time = spec.get("time", "ms")
    unit = spec.get("unit", time if time in ("s", "ms", "us", "ns") else "ms")
    if unit not in ("s", "ms", "us", "ns"):
        raise ctx.error("physics.unit", f"expected s, ms, us or ns, got {unit!r}")
    if not isinstance(time, str):
        raise ctx.error("physics.time", f"expected the @@RESULT key of the run's time, got {time!r}")
    return Physics(
        flops=ctx.expr(spec["flops"], "physics.flops") if "flops" in spec else None,
        bytes=ctx.expr(spec["bytes"], "physics.bytes") if "bytes" in spec else None,
        dtype=dtype, time=time, unit=unit,
        margin=ctx.number(spec.get("margin", 0.10), "physics.margin", positive=False),
        peak_tflops=ctx.number(spec["peak_tflops"], "physics.peak_tflops") if "peak_tflops" in spec else None,
        bandwidth_gbs=ctx.number(spec["bandwidth_gbs"], "physics.bandwidth_gbs") if "bandwidth_gbs" in spec else None,
    )


def _profile(ctx: Ctx, spec: Any) -> Profile:
    ctx.keys(spec, {"threads", "smem", "opt_in", "kernel", "launch_skip", "launch_count", "metrics", "timeout"},
             "profile")
    kernel = spec.get("kernel")
    if kernel is not None:
        try:
            re.compile(ctx.string(kernel, "profile.kernel"))
        except re.error as exc:
            raise ctx.error("profile.kernel", f"not a regular expression: {exc}") from None
    metrics = spec.get("metrics", "default")
    if isinstance(metrics, list):
        metrics = ctx.str_list(metrics, "profile.metrics")
        if not metrics:
            raise ctx.error("profile.metrics", "expected 'default', 'full' or a non-empty list of metric names")
    elif metrics not in ("default", "full"):
        raise ctx.error("profile.metrics", f"expected 'default', 'full' or a list of metric names, got {metrics!r}")
    return Profile(
        threads=ctx.expr(spec["threads"], "profile.threads") if "threads" in spec else None,
        smem=ctx.expr(spec["smem"], "profile.smem") if "smem" in spec else None,
        opt_in=ctx.boolean(spec.get("opt_in", True), "profile.opt_in"),
        kernel=kernel,
        launch_skip=ctx.integer(spec.get("launch_skip", 0), "profile.launch_skip", minimum=0),
        launch_count=ctx.integer(spec.get("launch_count", 1), "profile.launch_count", minimum=1),
        metrics=metrics,
        timeout=ctx.number(spec.get("timeout", 600), "profile.timeout"),
    )


def _shape(ctx: Ctx, name: str, spec: Any, seen: dict[str, str]) -> Shape:
    where = f"shapes.{name}"
    ctx.keys(spec, {"defines", "args", "params", "switches", "constants", "flops", "bytes"}, where)
    defines = _scalar_table(ctx, spec.get("defines", {}), f"{where}.defines")
    constants = _scalar_table(ctx, spec.get("constants", {}), f"{where}.constants")
    params = tuple(
        _param(ctx, pname, pspec, tier=1, where=f"{where}.params.{pname}")
        for pname, pspec in _table(ctx, spec, "params").items()
    ) + tuple(
        _switch(ctx, pname, pspec, where=f"{where}.switches.{pname}")
        for pname, pspec in _table(ctx, spec, "switches").items()
    )
    for pname in [*defines, *constants]:
        if pname in seen and not seen[pname].startswith("constants."):
            raise ctx.error(f"{where}.{pname}", f"duplicate name {pname}: already defined at {seen[pname]}")
    return Shape(
        name=name, defines=defines, constants=constants, params=params,
        args=ctx.str_list(spec.get("args", []), f"{where}.args"),
        flops=ctx.expr(spec["flops"], f"{where}.flops") if "flops" in spec else None,
        bytes=ctx.expr(spec["bytes"], f"{where}.bytes") if "bytes" in spec else None,
    )


def _variant(ctx: Ctx, name: str, spec: Any) -> Variant:
    where = f"variants.{name}"
    ctx.keys(spec, {"sources", "build_command", "run_command", "params", "constants", "defines"}, where)
    return Variant(
        name=name,
        sources=ctx.str_list(spec["sources"], f"{where}.sources") if "sources" in spec else None,
        build_command=ctx.str_list(spec["build_command"], f"{where}.build_command") if "build_command" in spec else None,
        run_command=ctx.str_list(spec["run_command"], f"{where}.run_command") if "run_command" in spec else None,
        params=tuple(
            _param(ctx, pname, pspec, tier=1, where=f"{where}.params.{pname}")
            for pname, pspec in _table(ctx, spec, "params").items()
        ),
        constants=_scalar_table(ctx, spec.get("constants", {}), f"{where}.constants"),
        defines=_scalar_table(ctx, spec.get("defines", {}), f"{where}.defines"),
    )


def _scalar_table(ctx: Ctx, table: Any, where: str) -> dict:
    if not isinstance(table, dict):
        raise ctx.error(where, "expected a table of NAME = value")
    for name, value in table.items():
        ctx.name(name, f"{where}.{name}")
        if not isinstance(value, _SCALARS):
            raise ctx.error(f"{where}.{name}", "expected a number, a string or a boolean")
    return dict(table)


def _build(ctx: Ctx, spec: Any, root: Path) -> Build:
    ctx.keys(spec, {"command", "sources", "timeout", "jobs", "env", "allow_spills", "max_registers", "harness",
                    "kernels"}, "build")
    kernels = spec.get("kernels")
    if kernels is not None:
        try:
            if not isinstance(kernels, str):
                raise re.error("expected a string")
            re.compile(kernels)
        except re.error as exc:
            raise ctx.error("build.kernels", f"not a regular expression ({exc}): e.g. \"sgemmWarptiling\"") from None
    sources = _sources(ctx, spec.get("sources", []), root, "build.sources")
    jobs = spec.get("jobs")
    return Build(
        command=ctx.str_list(spec.get("command", []), "build.command"),
        sources=sources,
        harness=_harness(ctx, spec["harness"], root) if "harness" in spec else None,
        timeout=ctx.number(spec.get("timeout", 600), "build.timeout"),
        jobs=int(ctx.number(jobs, "build.jobs")) if jobs is not None else None,
        env={k: str(v) for k, v in _scalar_table(ctx, spec.get("env", {}), "build.env").items()},
        allow_spills=bool(spec.get("allow_spills", False)),
        max_registers=int(ctx.number(spec["max_registers"], "build.max_registers")) if "max_registers" in spec else None,
        kernels=kernels,
    )


def _sources(ctx: Ctx, value: Any, root: Path, where: str) -> tuple[str, ...]:
    sources = ctx.str_list(value, where)
    require_sources(root, sources, ctx.label, where)
    return sources


def _harness(ctx: Ctx, spec: Any, root: Path) -> Harness:
    if not isinstance(spec, dict):
        raise ctx.error("build.harness", "expected a table: [build.harness] with command = [...]")
    ctx.keys(spec, {"command", "sources", "output", "timeout"}, "build.harness")
    if "command" not in spec:
        raise ctx.error("build.harness", "missing command = [...] (the build of the harness, writing {harness})")
    command = ctx.str_list(spec["command"], "build.harness.command")
    if not command or not any("{harness}" in a for a in command):
        raise ctx.error("build.harness.command", "the command must write the harness to {harness}, "
                        "e.g. [\"nvcc\", ..., \"-o\", \"{harness}\", \"harness.cu\"]")
    sources = _sources(ctx, spec["sources"], root, "build.harness.sources") if "sources" in spec else None
    output = spec.get("output", "harness")
    if not isinstance(output, str) or not _FILE_NAME.match(output) or output == "meta.json":
        raise ctx.error("build.harness.output", f"expected a file name such as \"harness.o\", got {output!r}")
    timeout = ctx.number(spec["timeout"], "build.harness.timeout") if "timeout" in spec else None
    return Harness(command=command, sources=sources, output=output, timeout=timeout)


def _run(ctx: Ctx, spec: Any) -> Run:
    ctx.keys(spec, {"command", "timeout", "env", "output_limit", "start_gap", "persistent"}, "run")
    persistent = ctx.boolean(spec.get("persistent", False), "run.persistent")
    start_gap = spec.get("start_gap")
    if start_gap is not None:
        start_gap = ctx.number(start_gap, "run.start_gap", positive=False)
        if start_gap < 0:
            raise ctx.error("run.start_gap", f"expected seconds >= 0, got {start_gap!r}")
    return Run(
        command=ctx.str_list(spec.get("command", ["{binary}"]), "run.command"),
        timeout=ctx.number(spec.get("timeout", 30), "run.timeout"),
        env={k: str(v) for k, v in _scalar_table(ctx, spec.get("env", {}), "run.env").items()},
        output_limit=int(ctx.number(spec.get("output_limit", 4 * 1024 * 1024), "run.output_limit")),
        start_gap=start_gap,
        persistent=persistent,
    )


def _check(ctx: Ctx, spec: Any) -> Check:
    ctx.keys(spec, {"keys", "expected", "reference", "rtol", "atol", "max"}, "check")
    reference = spec.get("reference")
    if reference not in (None, "defaults"):
        raise ctx.error("check.reference", f"the only reference is \"defaults\", got {reference!r}")
    expected = spec.get("expected", {})
    if not isinstance(expected, dict):
        raise ctx.error("check.expected", "expected a table: expected = { checksum = 1769472.0 }")
    for k, v in [*expected.items(), *spec.get("max", {}).items()]:
        ctx.number(v, f"check.{k}", positive=False)
    keys = ctx.str_list(spec["keys"], "check.keys") if "keys" in spec else (tuple(expected) or ("checksum",))
    return Check(
        keys=keys, expected=expected, reference=reference,
        rtol=ctx.number(spec.get("rtol", 1e-5), "check.rtol", positive=False),
        atol=ctx.number(spec.get("atol", 0.0), "check.atol", positive=False),
        max_keys=spec.get("max", {}),
    )
