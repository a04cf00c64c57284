"""Turn configs of one shape × variant into Jobs with resolved argv and cache keys (pure
but for hashing the source files)."""

from __future__ import annotations

from typing import Any, Mapping

from ..build.argv import define_flags, expand
from ..build.cache import cache_key
from ..errors import SpecError
from ..job import Job
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
        build_argv = [self._absolute.get(a, a) for a in
                      expand(self.build_template, lists=lists, values=values, where="build.command")]
        run_argv = [self._absolute.get(a, a) for a in
                    expand(self.run_template, lists=lists, values=values, where="run.command")]
        env = dict(self.spec.build.env)
        if build_argv:
            key = cache_key(build_argv, self.sources, env)
        else:  # nothing to build: the key still tracks the sources for resuming
            key = cache_key(run_argv, self.sources, env, extra="run-only")
        return Job(
            variant=self.variant.name, shape=self.shape.name, params=config, derived=derived,
            build_argv=tuple(build_argv), run_argv=tuple(run_argv), sources=self.sources, cache_key=key,
            build_timeout=self.spec.build.timeout, run_timeout=self.spec.run.timeout, build_env=env,
            run_env=dict(self.spec.run.env), output_limit=self.spec.run.output_limit, phase=phase,
            is_reference=is_reference,
        )
