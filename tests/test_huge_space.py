"""A space of more than 2**63 valid configs: `ksweep plan` counts it, `ksweep run` samples it.

64 parameters of 3 values each make 3**64 (about 3.4e30) configs: more than ``len()`` can
return, and positions that no int64 holds. Every strategy searches such a space by
sampling (grid takes the first configs in order), and a sweep that only the end of the
space would stop is refused in one line.

The strategy tests drive the ask/tell loop directly; the last ones go through
``run_sweep`` and ``ksweep run``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from ksweep.errors import KsweepError
from ksweep.space.space import Space, SpaceTooLarge
from ksweep.spec.load import load_spec
from ksweep.status import Status
from ksweep.store.sqlite import Store

from conftest import ksweep_cli
from ksweep.strategies import NoBudget, make_strategy, run_key, space_size
from ksweep.strategies.auto import AutoStrategy
from ksweep.strategies.base import INDEX_LIMIT
from ksweep.strategies.indexed import IndexedSpace, random_positions

N_PARAMS = 64
VALUES = [1, 2, 4]
NAMES = [f"P{i}" for i in range(N_PARAMS)]


def objective(config) -> float:
    """A smooth bowl with its minimum 1.0 at every P = 2."""
    return 1.0 + sum((i % 5 + 1) * (config[n] - 2) ** 2 for i, n in enumerate(NAMES)) / N_PARAMS


def fails(config) -> bool:
    """A hidden constraint: a region of the space where every config fails."""
    return config["P0"] == 4 and config["P1"] == 4


@pytest.fixture(scope="module")
def huge() -> Space:
    return Space({n: VALUES for n in NAMES})


@pytest.fixture(scope="module")
def constrained() -> Space:
    """Huge and constrained: the groups of linked parameters shape the positions."""
    return Space({n: VALUES for n in NAMES}, ["P0 * P1 <= 4", "P2 + P3 + P4 != 12", "P10 <= P11"])


def search(strategy, space, n: int, batch: int = 3) -> list[tuple]:
    """Ask/tell until ``n`` configs are evaluated; every config valid, none twice."""
    seen: list[tuple] = []
    while len(seen) < n:
        configs = strategy.ask(batch)
        assert configs, f"{strategy.name} proposed nothing after {len(seen)} configs"
        for config in configs:
            assert set(config) == set(space.names) and config in space
            seen.append(tuple(config[name] for name in space.names))
            strategy.tell(config, None if fails(config) else objective(config))
    assert len(set(seen)) == len(seen), "a config was proposed twice"
    assert not strategy.exhausted
    return seen


# -- the space and its positions ------------------------------------------------------------

def test_the_space_is_counted_beyond_len(huge):
    assert huge.size == 3**64 > INDEX_LIMIT
    with pytest.raises(SpaceTooLarge) as err:
        len(huge)
    assert "\n" not in str(err.value)
    assert space_size(huge) == 3**64
    assert space_size(Space({"A": [1, 2, 3]})) == 3
    assert space_size(["a", "b"]) == 2  # anything with len() only


def test_random_positions_of_any_size():
    rng = np.random.default_rng(5)
    small = random_positions(np.random.default_rng(1), 1000, 50)
    assert list(small) == list(np.random.default_rng(1).integers(1000, size=50))  # int64 sizes: numpy's draws
    size = 3 * 2**63 + 7  # 66 bits: most draws of 66 random bits are kept, some drawn again
    draws = random_positions(rng, size, 3000)
    assert draws.dtype == object and len(draws) == 3000
    assert all(type(v) is int and 0 <= v < size for v in draws)
    thirds = np.bincount([v * 3 // size for v in draws], minlength=3)
    assert thirds.min() > 850  # uniform: about 1000 in each third
    again = random_positions(np.random.default_rng(5), size, 3000)
    assert list(draws) == list(again)


def test_indexed_space_positions_are_exact_integers(constrained):
    ix = IndexedSpace(constrained)
    assert ix.huge and not ix.enumerated and ix.pos_dtype is object
    rng = np.random.default_rng(0)
    sample = ix.sample_positions(rng, 50, set())
    assert len(set(sample)) == len(sample) > 40
    assert any(int(p) > INDEX_LIMIT for p in sample)
    rows = ix.rows_of(sample)
    for p, row in zip(sample, rows):
        assert ix.position_of_row(row) == p == constrained.index(ix.config(p))
    near = ix.neighbours(rows[0])
    assert near.dtype == object and len(near) > 0
    assert all(((ix.rows_of(near) != rows[0]).sum(axis=1) == 1))
    ball = ix.ball(rows[0], 2, rng)
    d = (ix.rows_of(ball) != rows[0]).sum(axis=1)
    assert len(ball) == len(set(ball)) and d.min() == 1 and d.max() == 2
    assert ix.nearest(rows[0], {int(sample[0])}, rng) != sample[0]


# -- every strategy samples the space ---------------------------------------------------------

@pytest.mark.parametrize("name", ["grid", "random", "phased", "bayes", "surrogate", "auto"])
def test_every_strategy_samples_a_huge_space(name, huge):
    if name == "bayes":
        pytest.importorskip("optuna")
    n = 24 if name in ("bayes", "surrogate", "auto") else 40  # past the 10 random starts of the models
    strategy = make_strategy(name, huge, seed=0, budget_hint=n)
    search(strategy, huge, n)


@pytest.mark.parametrize("name", ["random", "surrogate"])
def test_a_constrained_huge_space_is_searched_the_same_for_a_seed(name, constrained):
    first = search(make_strategy(name, constrained, seed=4), constrained, 15)
    second = search(make_strategy(name, constrained, seed=4), constrained, 15)
    other = search(make_strategy(name, constrained, seed=5), constrained, 15)
    assert first == second and first != other


def test_grid_takes_the_first_configs_in_order(huge):
    strategy = make_strategy("grid", huge)
    got = search(strategy, huge, 8, batch=2)
    assert got == [tuple(huge[i].values()) for i in range(8)]


def test_auto_searches_with_the_surrogate_below_the_size(huge):
    assert AutoStrategy(huge, budget_hint=5).chosen == "surrogate"
    assert AutoStrategy(huge).chosen == "surrogate"  # a time limit or patience: no count
    assert run_key("auto", huge.size, 5) == "surrogate"


@pytest.mark.parametrize("name", ["auto", "grid", "random", "surrogate"])
def test_a_search_without_a_budget_is_refused_in_one_line(name, huge):
    with pytest.raises(NoBudget) as err:
        make_strategy(name, huge, seed=0, budget_hint=huge.size)  # the driver's hint for "no budget"
    text = str(err.value)
    assert isinstance(err.value, KsweepError) and "\n" not in text
    assert "--max-evals" in text and "--time-limit" in text and "3.434e+30" in text
    make_strategy(name, huge, seed=0, budget_hint=None)  # a time limit or patience stops it
    small = Space({"A": [1, 2, 3]})
    make_strategy(name, small, seed=0, budget_hint=len(small))  # a small space may be swept whole


# -- through the driver ----------------------------------------------------------------------

def huge_spec(folder: Path) -> Path:
    """A gcc program whose time is ``objective`` of its 64 defines."""
    terms = " + ".join(f"{i % 5 + 1} * (P{i} - 2) * (P{i} - 2)" for i in range(N_PARAMS))
    (folder / "huge.c").write_text(textwrap.dedent(f"""\
        #include <stdio.h>
        int main(void) {{
            double ms = 1.0 + ({terms}) / {N_PARAMS}.0;
            printf("@@RESULT ms=%.6f\\n", ms);
            return 0;
        }}
    """))
    params = "\n".join(f"{n} = {VALUES}" for n in NAMES)
    path = folder / "huge.toml"
    path.write_text(textwrap.dedent("""\
        [sweep]
        name = "huge"
        objective = "ms"
        [build]
        sources = ["huge.c"]
        command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "huge.c"]
        [run]
        command = ["{binary}"]
        timeout = 30
        [params]
    """) + params + "\n")
    return path


@pytest.mark.parametrize("strategy", ["random", "auto", "grid"])
def test_run_sweep_samples_a_huge_space(tmp_path, strategy):
    from ksweep.sweep.driver import SweepOptions
    from ksweep.app.sweep import run_sweep

    spec = load_spec(huge_spec(tmp_path))
    space = Space.from_spec(spec)
    summary, db = run_sweep(spec, options=SweepOptions(confirm=None, strategy=strategy, max_evals=5, seed=0), jobs=2)
    assert summary.evaluated == 5
    with Store(db) as store:
        results = [r for r in store.results() if r.status is not Status.PRUNED]
    configs = [dict(r.params) for r in results]
    assert len(results) == 5 and all(r.status is Status.OK for r in results)
    assert all(c in space for c in configs)
    assert len({tuple(c[n] for n in NAMES) for c in configs}) == 5
    for r in results:
        assert r.metrics["ms"] == pytest.approx(objective(r.params), abs=1e-5)
    if strategy == "grid":
        assert sorted(space.index(c) for c in configs) == [0, 1, 2, 3, 4]


def test_run_sweep_without_a_budget_is_refused_before_building(tmp_path):
    from ksweep.sweep.driver import SweepOptions
    from ksweep.app.sweep import run_sweep

    spec = load_spec(huge_spec(tmp_path))
    with pytest.raises(NoBudget) as err:
        run_sweep(spec, options=SweepOptions(confirm=None, strategy="grid"), jobs=2)
    assert "\n" not in str(err.value) and "--max-evals" in str(err.value)
    db = tmp_path / ".ksweep" / "huge.db"
    if db.exists():
        with Store(db) as store:
            assert [r for r in store.results() if r.status is not Status.PRUNED] == []


def test_ksweep_run_without_a_budget_says_so_in_one_line(tmp_path):
    path = huge_spec(tmp_path)
    r = ksweep_cli("run", path, "-q", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--max-evals" in lines[0] and "--time-limit" in lines[0], r.stderr
