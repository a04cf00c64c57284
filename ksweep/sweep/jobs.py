"""Turn configs of one shape × variant into Jobs with resolved argv and cache keys (pure
but for hashing the source files)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ..build.argv import define_flags, expand, library_flags
from ..build.cache import cache_key
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
        if self.persistent and self.kernel is not None:
            raise SpecError("a [kernel] spec already runs every config in one worker per GPU: drop run.persistent "
                            "(or --persistent)", path=spec.label, key="run.persistent")
        if self.kernel is not None:
            self._init_kernel_mode()
        elif self.persistent:
            self._init_persistent()

    def _init_persistent(self) -> None:
        """A persistent host loads each config as a shared library and calls its main."""
        where = f"variants.{self.variant.name}" if self.variant.build_command is not None else "build"
        if not self.build_template:
            raise SpecError("a persistent host needs a build command that makes the program",
                            path=self.spec.label, key=f"{where}.command")
        flags = library_flags(self.build_template[0])
        if flags is None:
            raise SpecError(f"a persistent host builds with nvcc, gcc or clang (it adds -shared, -fPIC and "
                            f"-Dmain=ksweep_main), not {self.build_template[0]!r}",
                            path=self.spec.label, key=f"{where}.command")
        self.build_template = (self.build_template[0], *flags, *self.build_template[1:])
        if not self.run_template or self.run_template[0] != "{binary}":
            raise SpecError("a persistent host runs the built library itself: the command must start with {binary}",
                            path=self.spec.label,
                            key=f"variants.{self.variant.name}.run_command" if self.variant.run_command is not None
                            else "run.command")

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
            key = cache_key(build_argv, sources, env)
        else:  # nothing to build: the key still tracks the sources for resuming
            key = cache_key(run_argv, sources, env, extra="run-only")
        return Job(
            variant=self.variant.name, shape=self.shape.name, params=config, derived=derived,
            build_argv=tuple(build_argv), run_argv=tuple(run_argv), sources=self.sources, cache_key=key,
            build_timeout=self.spec.build.timeout, run_timeout=self.spec.run.timeout, build_env=env,
            run_env=dict(self.spec.run.env), output_limit=self.spec.run.output_limit, phase=phase,
            is_reference=is_reference, launch=launch, persistent=self.persistent,
        )

    def _wrapper(self, values: Mapping[str, Any]) -> Path:
        text = wrapper_source(self.kernel, values)
        path = self.wrapper_dir / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.cu"
        if not path.exists():
            self.wrapper_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(text)
            os.replace(tmp, path)
        return path
