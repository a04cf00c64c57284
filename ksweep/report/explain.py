"""Why a config is what it is (pure): ``ksweep explain``'s content and its rendering.

For one config of one shape × variant: every derived value; every constraint with
pass/fail, the values it read and, for each comparison in it, the margin (``SMEM_BYTES
217088 <= MAX_SMEM_PER_BLOCK 232448: 15360 to spare``); the GPU limits the spec reads; the
build's resources per kernel (ptxas); the theoretical occupancy per judged kernel
(``gpu/occupancy.py``), its binding limit named; the stored result (status, message)
and profile metrics. Gathering a stored result or a build is the caller's
(``ksweep/app/explain.py``); this module computes and renders.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import KsweepError
from ..gpu.limits import builtin_limits
from ..gpu.occupancy import Occupancy, occupancy
from ..result import Result
from ..spec.expr import ExprError, parse
from ..space.space import _call_python, format_reason

_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass(frozen=True)
class Term:
    """One comparison inside a constraint, evaluated: ``left op right`` and the margin."""

    text: str
    left: Any
    op: str
    right: Any
    holds: bool
    margin: float | None  # how far the comparison is from flipping (>= 0 when it holds); None for == / !=

    def describe(self) -> str:
        sides = f"{self.text}: {_show(self.left)} {self.op} {_show(self.right)}"
        if self.margin is None:
            return sides + ("" if self.holds else "  (fails)")
        if self.holds:
            return sides + f"  ({_amount(self.margin, self.text)} to spare)"
        return sides + f"  (over by {_amount(-self.margin, self.text)})"


@dataclass(frozen=True)
class ConstraintCheck:
    name: str
    passed: bool | None  # None: could not be evaluated (an error, e.g. a division by zero)
    expr: str | None  # None for a Python-function constraint
    values: Mapping[str, Any] = field(default_factory=dict)
    terms: tuple[Term, ...] = ()
    reason: str | None = None  # the constraint's reason, filled in, when it fails; or the error

    def to_json(self) -> dict:
        return {"name": self.name, "passed": self.passed, "expr": self.expr, "values": dict(self.values),
                "terms": [{"text": t.text, "left": t.left, "op": t.op, "right": t.right, "holds": t.holds,
                           "margin": t.margin} for t in self.terms], "reason": self.reason}


@dataclass(frozen=True)
class KernelOccupancy:
    kernel: str
    occupancy: Occupancy | None
    missing: str | None = None  # why it could not be computed


@dataclass(frozen=True)
class Explanation:
    label: str
    variant: str
    shape: str
    params: Mapping[str, Any]
    defaulted: tuple[str, ...]  # parameters not given, taken at their default
    derived: Mapping[str, Any]
    constraints: tuple[ConstraintCheck, ...]
    pruned_by: str | None  # the first failed constraint, as the space prunes
    pruned_reason: str | None
    arch: str | None
    limits: Mapping[str, Any]  # the MAX_* names the spec reads, with their values
    result: Result | None = None
    result_id: int | None = None
    kernels: tuple[dict, ...] = ()  # ptxas resources per function (stored or built)
    occupancy: tuple[KernelOccupancy, ...] = ()
    launch: Mapping[str, Any] = field(default_factory=dict)  # threads, dynamic smem, where they came from
    profile: Mapping[str, Any] = field(default_factory=dict)  # stored Nsight Compute metrics
    notes: tuple[str, ...] = ()
    confirmation: Mapping[str, Any] = field(default_factory=dict)  # mark, median, ci95, n, failed_runs
    # name -> the parameter's values, for each value of the config that is not one of them
    outside: Mapping[str, tuple] = field(default_factory=dict)

    def to_json(self) -> dict:
        r = self.result
        return {
            "spec": self.label, "variant": self.variant, "shape": self.shape, "params": dict(self.params),
            "defaulted": list(self.defaulted), "derived": dict(self.derived),
            "valid": self.pruned_by is None and not self.outside,
            "not_in_space": {n: list(v) for n, v in self.outside.items()},
            "pruned_by": self.pruned_by, "pruned_reason": self.pruned_reason,
            "constraints": [c.to_json() for c in self.constraints], "arch": self.arch, "limits": dict(self.limits),
            "result": None if r is None else {"id": self.result_id, "status": r.status.value, "message": r.message,
                                               "metrics": dict(r.metrics), "verified": r.verified,
                                               "gpu": r.gpu_name},
            "kernels": list(self.kernels), "launch": dict(self.launch),
            "occupancy": [{"kernel": k.kernel, "missing": k.missing,
                           **(k.occupancy.to_json() if k.occupancy else {})} for k in self.occupancy],
            "profile": dict(self.profile), "notes": list(self.notes),
            "confirmation": dict(self.confirmation) or None,
        }


# -- constraints ------------------------------------------------------------------------
def comparisons(source: str) -> list[tuple[str, str, str, str]]:
    """The comparisons of an expression that decide it: (text, left, op, right) for each
    ``a op b`` (chains split: ``a < b <= c`` gives two) at the top or under ``and``/``not``."""
    text = source.strip()
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return []
    out: list[tuple[str, str, str, str]] = []

    def walk(node):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for v in node.values:
                walk(v)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            walk(node.operand)
        elif isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                if type(op) in _OPS:
                    l_src = ast.get_source_segment(text, left) or ast.unparse(left)
                    r_src = ast.get_source_segment(text, right) or ast.unparse(right)
                    out.append((f"{l_src} {_OPS[type(op)]} {r_src}", l_src, _OPS[type(op)], r_src))
                left = right

    walk(tree)
    return out


def _term(text: str, left_src: str, op: str, right_src: str, env: Mapping[str, Any]) -> Term | None:
    try:
        left, right = parse(left_src).evaluate(env), parse(right_src).evaluate(env)
    except (ExprError, KsweepError):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
        return None
    holds = {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right,
             "==": left == right, "!=": left != right}[op]
    margin = {"<": right - left, "<=": right - left, ">": left - right, ">=": left - right}.get(op)
    if op in ("<", ">") and margin is not None and margin == 0:
        margin = 0  # equal: fails by nothing
    return Term(text, left, op, right, bool(holds), margin)


def check_constraints(space, config: Mapping[str, Any]) -> tuple[tuple[ConstraintCheck, ...], dict[str, Any]]:
    """Every constraint of ``space`` (spec order) on ``config``, each evaluated whatever the
    earlier ones said; and the derived values that could be computed."""
    derived = space.derive_known(config)
    env = {**space.fixed, **config, **derived}
    checks = []
    for c in space.constraints:
        if c.expr is None:
            verdict = _python_verdict(space, c, env)
            checks.append(ConstraintCheck(c.name, verdict[0], None, {}, (), verdict[1]))
            continue
        values = {n: env[n] for n in sorted(c.expr.names) if n in env}
        try:
            ok = bool(c.expr.evaluate(env))
        except (ExprError, KeyError) as exc:
            checks.append(ConstraintCheck(c.name, None, c.expr.source, values, (), f"not evaluated: {exc}"))
            continue
        terms = tuple(t for t in (_term(*parts, env) for parts in comparisons(c.expr.source)) if t is not None)
        reason = None if ok else format_reason(c, env)
        checks.append(ConstraintCheck(c.name, ok, c.expr.source, values, terms, reason))
    return tuple(checks), derived


def _python_verdict(space, c, env) -> tuple[bool | None, str | None]:
    try:
        ok, reason = _call_python(c, space, env)
    except KsweepError as exc:
        return None, f"not evaluated: {exc}"
    return bool(ok), None if ok else (reason or f"{c.name} is false")


# -- occupancy -------------------------------------------------------------------------------
def launch_of(spec, env: Mapping[str, Any]) -> dict[str, Any]:
    """Threads per block and dynamic shared memory of the tuned kernel's launch, and where
    they come from: ``[kernel] block``/``smem`` in kernel mode, ``[profile] threads``/``smem``
    in program mode. Missing ones are absent."""
    out: dict[str, Any] = {}
    k = getattr(spec, "kernel", None)
    p = spec.profile

    def value(expr, what):
        try:
            return int(expr.evaluate(env))
        except (ExprError, KsweepError, TypeError, ValueError) as exc:
            out.setdefault("problems", []).append(f"{what}: {exc}")
            return None

    if k is not None:
        dims = [value(e, "kernel.block") for e in k.block] if k.block else []
        if dims and all(d is not None for d in dims):
            out["threads"], out["threads_from"] = math.prod(dims), "[kernel] block"
        if k.smem is not None:
            out["smem"], out["smem_from"] = value(k.smem, "kernel.smem"), "[kernel] smem"
        else:
            out["smem"], out["smem_from"] = 0, "kernel mode: no dynamic shared memory"
    if "threads" not in out and p.threads is not None:
        t = value(p.threads, "profile.threads")
        if t is not None:
            out["threads"], out["threads_from"] = t, f"[profile] threads = \"{p.threads.source}\""
    if "smem" not in out or out.get("smem") is None:
        if p.smem is not None:
            out["smem"], out["smem_from"] = value(p.smem, "profile.smem"), f"[profile] smem = \"{p.smem.source}\""
    out["opt_in"] = p.opt_in
    return out


def kernel_occupancy(limits: Mapping[str, Any], kernels: Sequence[dict], launch: Mapping[str, Any],
                     pattern: str | None = None) -> tuple[KernelOccupancy, ...]:
    """The occupancy of the tuned kernel(s) of a build for its launch: those ``pattern``
    (``[profile] kernel``) matches, else the judged ones."""
    judged = [k for k in kernels if k.get("judged", True)]
    if pattern:
        judged = [k for k in kernels if re.search(pattern, str(k.get("name", "")))] or judged
    out = []
    for k in judged:
        name = k.get("name", "?")
        if launch.get("threads") is None:
            out.append(KernelOccupancy(name, None, "threads per block unknown: give [profile] threads = "
                                                   "\"<expression>\" (kernel mode: [kernel] block)"))
            continue
        if k.get("registers") is None:
            out.append(KernelOccupancy(name, None, "ptxas reported no registers for it"))
            continue
        occ = occupancy(limits, threads=int(launch["threads"]), registers=int(k["registers"]),
                        static_smem=int(k.get("smem") or 0), dynamic_smem=int(launch.get("smem") or 0),
                        opt_in=bool(launch.get("opt_in", True)))
        out.append(KernelOccupancy(name, occ))
    return tuple(out)


def arch_limits(spec) -> tuple[str | None, dict[str, Any]]:
    """The arch and the limits used for occupancy: the spec's own table (its [limits]
    overrides included) when it has one, else the built-in one of its arch."""
    if spec.limits:
        return spec.arch, dict(spec.limits)
    if spec.arch:
        try:
            return spec.arch, dict(builtin_limits(spec.arch))
        except KeyError:
            pass
    return spec.arch, {}


# -- rendering -------------------------------------------------------------------------------
def render(e: Explanation) -> str:
    lines = [f"{e.label}: shape {e.shape}, variant {e.variant}"]
    lines.append("config: " + " ".join(f"{k}={v}" for k, v in e.params.items())
                 + (f"   (at their default: {', '.join(e.defaulted)})" if e.defaulted else ""))
    if e.outside:
        lines.append("NOT IN THE SPACE: " + "; ".join(
            (f"{n}={_show(e.params[n])} is not one of {n}'s values" if n in e.params else f"{n} has no value")
            + f" ({_values(v)})" for n, v in e.outside.items()))
    if e.pruned_by:
        lines.append(f"PRUNED by constraint '{e.pruned_by}': {e.pruned_reason}")
    elif e.outside:
        lines.append("passes every constraint, but no sweep measures it")
    else:
        lines.append("valid: passes every constraint")
    if e.derived:
        lines.append("")
        lines.append("derived values:")
        width = max(len(k) for k in e.derived)
        lines += [f"  {k:<{width}} = {_show(v)}" for k, v in e.derived.items()]
    if e.constraints:
        lines.append("")
        lines.append("constraints (spec order):")
        for c in e.constraints:
            mark = {True: "pass", False: "FAIL", None: "n/a "}[c.passed]
            lines.append(f"  {mark}  {c.name}" + (f": {c.expr}" if c.expr else " (Python function)"))
            for t in c.terms:
                lines.append(f"          {t.describe()}")
            if not c.terms and c.values:
                lines.append("          " + ", ".join(f"{k}={_show(v)}" for k, v in c.values.items()))
            if c.reason:
                lines.append(f"          {c.reason}")
    if e.limits:
        lines.append("")
        lines.append(f"GPU limits ({e.arch or 'the spec'}):  "
                     + ", ".join(f"{k}={_show(v)}" for k, v in e.limits.items()))
    if e.result is not None:
        r = e.result
        lines.append("")
        lines.append(f"result{f' #{e.result_id}' if e.result_id is not None else ''}: {r.status.value}"
                     + (f" on {r.gpu_name}" if r.gpu_name and r.gpu_name != "none" else "")
                     + ("" if not r.metrics else "  " + " ".join(f"{k}={_show(v)}" for k, v in r.metrics.items())))
        if r.message:
            lines += [f"  {line}" for line in r.message.splitlines()[-12:]]
        c = e.confirmation
        if c:
            mark = f" ({c['mark']})" if c.get("mark") else ""
            lines.append(f"confirmed{mark}: median {_show(c['median'])} over {c['n']} runs, 95% interval "
                         f"{_show(c['ci95'][0])}–{_show(c['ci95'][1])}"
                         + (f"; {c['failed_runs']} run(s) failed" if c.get("failed_runs") else "")
                         + " (the value report and export use)")
    names = _readable([k.get("name", "") for k in e.kernels])
    if e.kernels:
        lines.append("")
        lines.append("ptxas resources:")
        for k in e.kernels:
            judged = "" if k.get("judged", True) else "  (not judged: [build] kernels)"
            lines.append(f"  {names.get(k.get('name'), k.get('name'))}: {k.get('registers')} registers, "
                         f"{k.get('spill_stores', 0)}+{k.get('spill_loads', 0)} bytes spilled (stores+loads), "
                         f"{k.get('smem', 0)} bytes static smem, {k.get('cmem', 0)} bytes cmem, "
                         f"{k.get('stack_frame', 0)} bytes stack{judged}")
    if e.occupancy or e.launch.get("problems"):
        lines.append("")
        lines.append("theoretical occupancy" + _launch_text(e.launch) + ":")
        for k in e.occupancy:
            shown = names.get(k.kernel, k.kernel)
            if k.occupancy is None:
                lines.append(f"  {shown}: {k.missing}")
                continue
            o = k.occupancy
            lines.append(f"  {shown}: {o.blocks_per_sm} blocks/SM, {o.active_warps}/{o.max_warps_per_sm} warps "
                         f"({o.occupancy:.0%}), limited by {' and '.join(o.binding)}")
            for name in ("registers", "shared memory", "warps", "blocks"):
                lines.append(f"      {name:<13} {o.by_limit[name]:>3} blocks  ({o.details.get(name, '')})")
            if o.problem:
                lines.append(f"      does not launch: {o.problem}")
        for p in e.launch.get("problems", ()):
            lines.append(f"  {p}")
    if e.profile:
        lines.append("")
        lines.append("profile (Nsight Compute):")
        from .profile_view import profile_lines

        lines += profile_lines(e.profile)
    for n in e.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)


def _readable(names: Sequence[str]) -> dict[str, str]:
    """Mangled kernel names as people read them (c++filt, shortened), when it is there."""
    from ..build.demangle import demangle, short_name

    try:
        return {k: short_name(v, 72) for k, v in demangle([n for n in names if n]).items()}
    except Exception:  # noqa: BLE001 - names as they are
        return {}


def _launch_text(launch: Mapping[str, Any]) -> str:
    parts = []
    if launch.get("threads") is not None:
        parts.append(f"{launch['threads']} threads/block from {launch.get('threads_from')}")
    if launch.get("smem") is not None:
        parts.append(f"{launch['smem']} bytes dynamic smem from {launch.get('smem_from')}")
    return f" ({'; '.join(parts)})" if parts else ""


def _values(values: Sequence[Any], most: int = 12) -> str:
    shown = ", ".join(_show(v) for v in values[:most])
    return shown + (f", … {len(values)} values" if len(values) > most else "")


def _show(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _amount(x: float, text: str) -> str:
    shown = _show(x)
    if any(w in text.upper() for w in ("SMEM", "BYTES", "SHARED")) and abs(x) >= 1024:
        return f"{shown} ({x / 1024:.1f} KB)"
    return shown
