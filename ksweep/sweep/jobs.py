"""Turn configs of one shape × variant into Jobs with resolved argv and cache keys (pure
but for hashing the source files)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

from ..build import deps as depfiles
from ..build.argv import define_flags, expand
from ..build.builder import BuildRules
from ..build.cache import cache_key
from ..errors import ExprError, SpecError
from ..gpu.physics import Work
from ..include import include_dir
from ..job import Job
from ..run.modes import Mode, Templates, program_mode
from ..spec.collisions import include_args
from ..spec.expr import Expr
from ..spec.model import Shape, Spec, Variant


def include_folders(argv: list[str], root: Path) -> list[str]:
    """``argv`` with each relative ``-I`` folder (``-Idir``, ``-I dir``) that exists beside the
    spec made absolute: a build runs in a folder of its own, and ``-Isrc`` is the spec's. Only
    the command run changes: the keys take the command as written."""
    out = list(argv)
    for i, head, folder in include_args(out):
        if not Path(folder).is_absolute() and (root / folder).is_dir():
            out[i] = head + str((root / folder).resolve())
    return out


class JobFactory:
    """Jobs of one shape × variant. ``mode`` (run/modes.py) says how configs become jobs:
    program mode by default; the wiring passes the spec's own (ksweep/app/wiring.py)."""

    def __init__(self, spec: Spec, shape: Shape, variant: Variant, space, mode: Mode | None = None):
        self.spec, self.shape, self.variant, self.space = spec, shape, variant, space
        self.mode = mode or program_mode(spec)
        rel_sources = variant.sources if variant.sources is not None else spec.build.sources
        sources = tuple((spec.root / s).resolve() for s in rel_sources)
        for rel, path in zip(rel_sources, sources):
            if not path.exists():
                raise SpecError(f"source '{rel}' does not exist", path=spec.label,
                                key=f"variants.{variant.name}.sources" if variant.sources is not None else "build.sources")
        self._absolute = {rel: str(p) for rel, p in zip(rel_sources, sources)}
        build = variant.build_command if variant.build_command is not None else spec.build.command
        run = variant.run_command if variant.run_command is not None else spec.run.command
        harness = spec.build.harness.command if spec.build.harness is not None else None
        if harness is not None and not _uses_harness(*build, *run):
            harness = None  # e.g. a variant with commands of its own: nothing to build once
        where = f"variants.{variant.name}" if variant.build_command is not None else "build"
        run_key = f"variants.{variant.name}.run_command" if variant.run_command is not None else "run.command"
        t = self.mode.templates(spec, Templates(build=tuple(build), run=tuple(run), harness=harness,
                                                sources=sources, params=space.params,
                                                build_key=f"{where}.command", run_key=run_key))
        self.build_template, self.run_template, self.harness_template = t.build, t.run, t.harness
        self.sources, self.params = t.sources, t.params
        self.include = str(include_dir())  # {ksweep_include}: the folder of ksweep.h
        prefix = spec.define_prefix
        self.fixed_defines = {prefix + k: v for k, v in {**variant.defines, **shape.defines}.items()}
        self.fixed = spec.fixed_names(shape, variant)
        self.persistent = self.mode.persistent
        self.rel_sources = rel_sources
        self.harness = self._harness_job() if self.harness_template is not None else None
        self._experiment = self._experiment_key()
        self._input_files = self.mode.input_files(spec)

    def _experiment_key(self) -> str:
        """What, beyond the build and the run command, can change a result: the run's
        timeout, environment and output cap, the check, the objective, and what the mode
        adds (docs/cli.md: "Resume")."""
        spec = self.spec
        parts: dict[str, Any] = {
            "timeout": spec.run.timeout, "env": sorted(spec.run.env.items()),
            "output_limit": spec.run.output_limit, "persistent": self.persistent,
            "check": _plain(spec.check), "objective": _plain(spec.objective),
            # several objectives: every one must be measured (a single one keeps the keys it had)
            **({"objectives": _plain(spec.objectives)} if spec.objectives else {}),
            # what judges a build's ptxas report: it decides OK, REGS_LIMIT or SPILLS
            "build_rules": BuildRules.of(spec).key(),
        }
        parts.update({k: _plain(v) for k, v in self.mode.key_parts(spec).items()})
        if not self.mode.checks_metrics:
            # outputs compared with the reference config's where they are made: another reference
            # (a parameter's default changed) makes other verdicts, which stored metrics cannot
            # give again (a mode whose checks are of metrics judges its results again instead)
            reference = self.mode.reference_config(spec, {p.name: p.default for p in self.space.params})
            if reference is not None:
                parts["reference"] = _plain(reference)
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()

    def _harness_job(self) -> Job:
        """The harness of this shape × variant: its command sees the shape's and variant's
        defines and names, never a parameter (it is built once for all configs)."""
        spec, harness = self.spec, self.spec.build.harness
        rel = harness.sources if harness.sources is not None else self.rel_sources
        sources = tuple((spec.root / s).resolve() for s in rel)
        absolute = {s: str(p) for s, p in zip(rel, sources)}
        values = {**self.fixed, "harness": "{binary}", "workdir": "{workdir}", "spec_dir": str(spec.root),
                  "ksweep_include": self.include,
                  "shape": self.shape.name, "variant": self.variant.name}
        lists = {"defines": define_flags((), {}, (), {}, self.fixed_defines)}
        written = [absolute.get(a, a) for a in
                   expand(self.harness_template, lists=lists, values=values, where="build.harness.command")]
        env = dict(spec.build.env)
        return Job(variant=self.variant.name, shape=self.shape.name, params={}, derived={},
                   build_argv=tuple(include_folders(written, spec.root)), run_argv=(), sources=sources,
                   cache_key=cache_key(written, sources, env, extra="harness"),
                   build_timeout=harness.timeout or spec.build.timeout, build_env=env, is_harness=True,
                   output=harness.output)

    def make(self, config: Mapping[str, Any], phase: str | None = None, is_reference: bool = False) -> Job:
        derived = self.space.derive(config)
        values = {
            **self.fixed, **config, **derived,
            "binary": "{binary}", "workdir": "{workdir}", "spec_dir": str(self.spec.root),
            "ksweep_include": self.include,
            "shape": self.shape.name, "variant": self.variant.name,
        }
        if self.harness is not None:
            values["harness"] = "{harness}"
        flags = define_flags(self.params, config, self.space.derived, derived, self.fixed_defines)
        shape_args = expand(self.shape.args, lists={}, values=values, where=f"shapes.{self.shape.name}.args")
        lists = {"defines": flags, "shape_args": shape_args}
        extras = self.mode.config(self.spec, {**self.fixed, **config, **derived})
        values.update(extras.values)
        launch, sources = extras.launch, (*self.sources, *extras.sources)
        written = [self._absolute.get(a, a) for a in
                   expand(self.build_template, lists=lists, values=values, where="build.command")]
        build_argv = include_folders(written, self.spec.root)
        run_argv = [self._absolute.get(a, a) for a in
                    expand(self.run_template, lists=lists, values=values, where="run.command")]
        env = dict(self.spec.build.env)
        if build_argv:  # keyed by the command as written: the headers it reads are in the result's
            # dependencies, and a key of the folders made absolute ran every stored config again
            build_key = cache_key(written, sources, env, extra=self._linked_harness_key(build_argv))
        else:  # nothing to build: the key still tracks the sources for resuming
            build_key = cache_key(run_argv, sources, env, extra="run-only")
        # a result's key: its build, its harness (whether linked or loaded), the run command as
        # written (placeholders unfilled: they are paths of this run), the mode's launch
        # geometry and the experiment's settings. The build's key covers only what changes the binary.
        run_part = [self.harness.cache_key if self.harness is not None else None, run_argv,
                    dict(launch) if launch is not None else None, self._experiment]
        key = hashlib.sha256(json.dumps([build_key, *run_part], sort_keys=True, default=str).encode()).hexdigest()[:32]
        work = self._work({**self.fixed, **config, **derived})
        run_key = None if any("{workdir}" in a for a in (*run_argv, *self.spec.run.env.values())) else \
            hashlib.sha256(json.dumps([*run_part, work], sort_keys=True, default=str).encode()).hexdigest()[:32]
        return Job(
            variant=self.variant.name, shape=self.shape.name, params=config, derived=derived,
            build_argv=tuple(build_argv), run_argv=tuple(run_argv), sources=self.sources, cache_key=key,
            build_timeout=self.spec.build.timeout, run_timeout=self.spec.run.timeout, build_env=env,
            run_env=dict(self.spec.run.env), output_limit=self.spec.run.output_limit, phase=phase,
            is_reference=is_reference, launch=launch, persistent=self.persistent, harness=self.harness,
            build_key=build_key, work=work, run_key=run_key,
            inputs=depfiles.digests(dict.fromkeys((*self.sources, *(self.harness.sources if self.harness else ()),
                                                   *self._input_files))),
        )

    def _work(self, env: Mapping[str, Any]) -> Work | None:
        """The flops and bytes of one run of this config ([physics], a shape's own first)."""
        physics = self.spec.physics
        if physics is None:
            return None
        exprs = [self.shape.flops or physics.flops, self.shape.bytes or physics.bytes]
        try:
            flops, nbytes = (float(e.evaluate(env)) if e is not None else None for e in exprs)
        except ExprError as exc:
            raise SpecError(str(exc), path=self.spec.label, key="physics") from None
        return Work(flops=flops, bytes=nbytes)

    def _linked_harness_key(self, build_argv) -> str:
        return self.harness.cache_key if self.harness is not None and _uses_harness(*build_argv) else ""


def _uses_harness(*args: str) -> bool:
    return any("{harness}" in a for a in args)


def _plain(record) -> Any:
    """A frozen spec record as plain data for a key (expressions by their source text: an
    expression's parsed tree and code print with memory addresses, and its names as a set in
    an order of the process's hashing, so neither may reach a key)."""
    if isinstance(record, Expr):
        return record.source
    if dataclasses.is_dataclass(record):
        return {f.name: _plain(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, Mapping):
        return {str(k): _plain(v) for k, v in sorted(record.items(), key=lambda kv: str(kv[0]))}
    if isinstance(record, (list, tuple)):
        return [_plain(v) for v in record]
    if isinstance(record, (set, frozenset)):
        return sorted((_plain(v) for v in record), key=str)
    if isinstance(record, (str, int, float, bool)) or record is None:
        return record
    return str(record)
