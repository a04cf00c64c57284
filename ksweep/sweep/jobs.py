"""Turn configs of one shape × variant into Jobs with resolved argv and cache keys (pure
but for hashing the source files)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ..build.argv import define_flags, expand, library_flags
from ..build.cache import cache_key, file_digest
from ..errors import SpecError
from ..job import Job
from ..kernel.launch import launch_dims, wrapper_source
from ..spec.model import Shape, Spec, Variant


class JobFactory:
    def __init__(self, spec: Spec, shape: Shape, variant: Variant, space):
        self.spec, self.shape, self.variant, self.space = spec, shape, variant, space
        rel_sources = variant.sources if variant.sources is not None else spec.build.sources
        self.sources = tuple((spec.root / s).resolve() for s in rel_sources)
        for rel, path in zip(rel_sources, self.sources):
            if not path.exists():
                raise SpecError(f"source '{rel}' does not exist", path=spec.label,
                                key=f"variants.{variant.name}.sources" if variant.sources is not None else "build.sources")
        self._absolute = {rel: str(p) for rel, p in zip(rel_sources, self.sources)}
        self.build_template = variant.build_command if variant.build_command is not None else spec.build.command
        self.run_template = variant.run_command if variant.run_command is not None else spec.run.command
        self.fixed_defines = {**variant.defines, **shape.defines}
        self.fixed = spec.fixed_names(shape, variant)
        self.params = space.params
        self.kernel = spec.kernel
        self.persistent = spec.run.persistent
        self.rel_sources = rel_sources
        self.harness_template = spec.build.harness.command if spec.build.harness is not None else None
        if self.persistent and self.kernel is not None:
            raise SpecError("a [kernel] spec already runs every config in one worker per GPU: drop run.persistent "
                            "(or --persistent)", path=spec.label, key="run.persistent")
        if self.harness_template is not None and self.kernel is not None:
            raise SpecError("a [kernel] spec runs its cubins in ksweep's own worker: drop [build.harness]",
                            path=spec.label, key="build.harness")
        if self.harness_template is not None and not _uses_harness(*self.build_template, *self.run_template):
            self.harness_template = None  # e.g. a variant with commands of its own: nothing to build once
        if self.kernel is not None:
            self._init_kernel_mode()
        elif self.persistent:
            self._init_persistent()
        self.harness = self._harness_job() if self.harness_template is not None else None
        self._experiment = self._experiment_key()

    def _experiment_key(self) -> str:
        """What, beyond the build and the run command, can change a result: the run's
        timeout, environment and output cap, the check, the objective, and kernel mode's
        settings with the files they name (docs/spec.md: "What a result's key covers")."""
        spec = self.spec
        parts: dict[str, Any] = {
            "timeout": spec.run.timeout, "env": sorted(spec.run.env.items()),
            "output_limit": spec.run.output_limit, "persistent": self.persistent,
            "check": _plain(spec.check), "objective": _plain(spec.objective),
        }
        if self.kernel is not None:
            parts["kernel"] = _plain(self.kernel)
            files = []
            for ref in (self.kernel.args, self.kernel.reference):
                if isinstance(ref, str) and ":" in ref:
                    path = (spec.root / ref.rsplit(":", 1)[0]).resolve()
                    if path.is_file():
                        files.append((str(path), file_digest(path)))
            parts["kernel_files"] = files
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()

    def _init_persistent(self) -> None:
        """A persistent host loads the program as a shared library and calls its main: the
        config's build ({binary}) or the harness ({harness}), whichever the run command starts with."""
        run_key = f"variants.{self.variant.name}.run_command" if self.variant.run_command is not None else "run.command"
        first = self.run_template[0] if self.run_template else None
        if first == "{harness}" and self.harness_template is not None:
            self.harness_template = self._as_library(self.harness_template, "build.harness.command")
        elif first == "{binary}":
            where = f"variants.{self.variant.name}" if self.variant.build_command is not None else "build"
            self.build_template = self._as_library(self.build_template, f"{where}.command")
            if self.harness_template is not None and _uses_harness(*self.build_template):
                # linked into each config's library: position independent, its main renamed
                self.harness_template = self._as_library(self.harness_template, "build.harness.command", shared=False)
        else:
            raise SpecError("a persistent host runs the built program itself: the command must start with {binary}"
                            + (" or {harness}" if self.harness_template is not None else ""),
                            path=self.spec.label, key=run_key)

    def _as_library(self, template: tuple[str, ...], key: str, shared: bool = True) -> tuple[str, ...]:
        if not template:
            raise SpecError("a persistent host needs a build command that makes the program",
                            path=self.spec.label, key=key)
        flags = library_flags(template[0], shared)
        if flags is None:
            raise SpecError(f"a persistent host builds with nvcc, gcc or clang (it adds -shared, -fPIC and "
                            f"-Dmain=ksweep_main), not {template[0]!r}", path=self.spec.label, key=key)
        return (template[0], *flags, *template[1:])

    def _harness_job(self) -> Job:
        """The harness of this shape × variant: its command sees the shape's and variant's
        defines and names, never a parameter (it is built once for all configs)."""
        spec, harness = self.spec, self.spec.build.harness
        rel = harness.sources if harness.sources is not None else self.rel_sources
        sources = tuple((spec.root / s).resolve() for s in rel)
        absolute = {s: str(p) for s, p in zip(rel, sources)}
        values = {**self.fixed, "harness": "{binary}", "workdir": "{workdir}", "spec_dir": str(spec.root),
                  "shape": self.shape.name, "variant": self.variant.name}
        lists = {"defines": define_flags((), {}, (), {}, self.fixed_defines)}
        argv = [absolute.get(a, a) for a in
                expand(self.harness_template, lists=lists, values=values, where="build.harness.command")]
        env = dict(spec.build.env)
        return Job(variant=self.variant.name, shape=self.shape.name, params={}, derived={}, build_argv=tuple(argv),
                   run_argv=(), sources=sources, cache_key=cache_key(argv, sources, env, extra="harness"),
                   build_timeout=harness.timeout or spec.build.timeout, build_env=env, is_harness=True,
                   output=harness.output)

    def _init_kernel_mode(self) -> None:
        """Kernel mode: a cubin per config from a generated wrapper of the user's source."""
        k = self.kernel
        arch = (self.spec.arch or "sm_90").replace("sm_", "")
        if not self.build_template:
            self.build_template = (
                "nvcc", "-cubin", f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xptxas=-v", *k.flags,
                "{defines}", "-o", "{binary}", "{kernel_wrapper}",
            )
        self.run_template = ()
        self.sources = (k.source, *self.sources)
        if not k.defines:  # templated kernels get their parameters as template arguments
            self.params = tuple(replace(p, define=False) for p in self.params)
        self.wrapper_dir = self.spec.root / ".ksweep" / "kernel"

    def make(self, config: Mapping[str, Any], phase: str | None = None, is_reference: bool = False) -> Job:
        derived = self.space.derive(config)
        values = {
            **self.fixed, **config, **derived,
            "binary": "{binary}", "workdir": "{workdir}", "spec_dir": str(self.spec.root),
            "shape": self.shape.name, "variant": self.variant.name,
        }
        if self.harness is not None:
            values["harness"] = "{harness}"
        flags = define_flags(self.params, config, self.space.derived, derived, self.fixed_defines)
        shape_args = expand(self.shape.args, lists={}, values=values, where=f"shapes.{self.shape.name}.args")
        lists = {"defines": flags, "shape_args": shape_args}
        launch, sources = None, self.sources
        if self.kernel is not None:
            names = {**self.fixed, **config, **derived}
            launch = launch_dims(self.kernel, names, self.spec.label)
            wrapper = self._wrapper(names)
            values["kernel_wrapper"] = str(wrapper)
            sources = (*self.sources, wrapper)
        build_argv = [self._absolute.get(a, a) for a in
                      expand(self.build_template, lists=lists, values=values, where="build.command")]
        run_argv = [self._absolute.get(a, a) for a in
                    expand(self.run_template, lists=lists, values=values, where="run.command")]
        env = dict(self.spec.build.env)
        if build_argv:
            build_key = cache_key(build_argv, sources, env, extra=self._linked_harness_key(build_argv))
        else:  # nothing to build: the key still tracks the sources for resuming
            build_key = cache_key(run_argv, sources, env, extra="run-only")
        # a result's key: its build, its harness (whether linked or loaded), the run command as
        # written (placeholders unfilled: they are paths of this run), kernel mode's launch and
        # the experiment's settings. The build's key covers only what changes the binary.
        key = hashlib.sha256(json.dumps([
            build_key, self.harness.cache_key if self.harness is not None else None, run_argv,
            dict(launch) if launch is not None else None, self._experiment,
        ], sort_keys=True, default=str).encode()).hexdigest()[:32]
        return Job(
            variant=self.variant.name, shape=self.shape.name, params=config, derived=derived,
            build_argv=tuple(build_argv), run_argv=tuple(run_argv), sources=self.sources, cache_key=key,
            build_timeout=self.spec.build.timeout, run_timeout=self.spec.run.timeout, build_env=env,
            run_env=dict(self.spec.run.env), output_limit=self.spec.run.output_limit, phase=phase,
            is_reference=is_reference, launch=launch, persistent=self.persistent, harness=self.harness,
            build_key=build_key,
        )

    def _linked_harness_key(self, build_argv) -> str:
        return self.harness.cache_key if self.harness is not None and _uses_harness(*build_argv) else ""

    def _wrapper(self, values: Mapping[str, Any]) -> Path:
        text = wrapper_source(self.kernel, values)
        path = self.wrapper_dir / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.cu"
        if not path.exists():
            self.wrapper_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(text)
            os.replace(tmp, path)
        return path


def _uses_harness(*args: str) -> bool:
    return any("{harness}" in a for a in args)


def _plain(record) -> Any:
    """A frozen spec record as plain data for a key (expressions by their source text)."""
    if dataclasses.is_dataclass(record):
        return {f.name: _plain(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, Mapping):
        return {str(k): _plain(v) for k, v in sorted(record.items(), key=lambda kv: str(kv[0]))}
    if isinstance(record, (list, tuple)):
        return [_plain(v) for v in record]
    if hasattr(record, "source") and isinstance(getattr(record, "source"), str):
        return record.source
    if isinstance(record, (str, int, float, bool)) or record is None:
        return record
    return str(record)
