import itertools
import random

import pytest

from ksweep import Space
from ksweep.errors import SpecError

CLBLAST = {
    "MWG": [16, 32, 64, 128], "NWG": [16, 32, 64, 128], "KWG": [16, 32],
    "MDIMC": [8, 16, 32], "NDIMC": [8, 16, 32], "MDIMA": [8, 16, 32], "NDIMB": [8, 16, 32],
    "KWI": [2], "VWM": [1, 2, 4, 8], "VWN": [1, 2, 4, 8],
    "STRM": [0, 1], "STRN": [0, 1], "SA": [0, 1], "SB": [0, 1],
}
CLBLAST_RULES = [
    "KWG % KWI == 0", "MWG % (MDIMC*VWM) == 0", "NWG % (NDIMC*VWN) == 0",
    "MWG % (MDIMA*VWM) == 0", "NWG % (NDIMB*VWN) == 0",
    "KWG % ((MDIMC*NDIMC)/MDIMA) == 0", "KWG % ((MDIMC*NDIMC)/NDIMB) == 0",
]
HOTSPOT = {
    "block_size_x": [1, 2, 4, 8, 16] + [32 * i for i in range(1, 33)],
    "block_size_y": [2**i for i in range(6)],
    "tile_size_x": list(range(1, 11)), "tile_size_y": list(range(1, 11)),
    "temporal_tiling_factor": list(range(1, 11)), "max_tfactor": [10],
    "loop_unroll_factor_t": list(range(1, 11)), "sh_power": [0, 1], "blocks_per_sm": list(range(5)),
}
_SH = "(block_size_x*tile_size_x + temporal_tiling_factor*2) * (block_size_y*tile_size_y + temporal_tiling_factor*2) * (2+sh_power) * 4"
HOTSPOT_RULES = [
    "block_size_x*block_size_y >= 32",
    "temporal_tiling_factor % loop_unroll_factor_t == 0",
    "block_size_x*block_size_y <= 1024",
    f"{_SH} <= 49152",
    f"blocks_per_sm == 0 or ({_SH}) * blocks_per_sm <= 102400",
]


def brute(params, rules):
    names = list(params)
    out = []
    for values in itertools.product(*params.values()):
        env = dict(zip(names, values))
        if all(eval(r, {}, env) for r in rules):  # reference: plain Python on each config
            out.append(env)
    return out


def test_clblast_counts():
    s = Space(CLBLAST, CLBLAST_RULES)
    assert s.raw_size == 663_552
    assert len(s) == 120_800


def test_hotspot_counts():
    s = Space(HOTSPOT, HOTSPOT_RULES)
    assert s.raw_size == 22_200_000
    assert len(s) == 349_853


def test_matches_brute_force_and_is_lazy_product():
    params = {"A": [1, 2, 4, 8], "B": [1, 2, 3], "C": [0, 1], "D": ["x", "y"], "E": [5, 6, 7]}
    rules = ["A * B <= 8", "B != 3 or C == 1", "D == 'x' or E > 5"]
    s = Space(params, rules)
    expected = brute(params, rules)
    got = list(s)
    assert sorted(map(str, got)) == sorted(map(str, expected))
    assert len(s) == len(expected)
    assert sorted(map(sorted, s.group_names)) == [["A", "B", "C"], ["D", "E"]]
    for i, config in enumerate(s):
        assert s[i] == config
        assert s.index(config) == i
        assert config in s
    assert {"A": 8, "B": 2, "C": 0, "D": "x", "E": 5} not in s


def test_sample_is_distinct_valid_and_seeded():
    s = Space(HOTSPOT, HOTSPOT_RULES)
    a = s.sample(50, seed=3)
    assert a == s.sample(50, seed=3)
    assert a != s.sample(50, seed=4)
    assert len({str(c) for c in a}) == 50
    for c in a:
        env = dict(c)
        assert all(eval(r, {}, env) for r in HOTSPOT_RULES)


def test_derived_values_and_constants():
    s = Space({"TN": [64, 128, 256], "S": [2, 3]}, ["SMEM <= 600"],
              derived={"STAGE": "TN * 2", "SMEM": "STAGE * S"}, constants={"PAD": 1})
    assert sorted((c["TN"], c["S"]) for c in s) == [(64, 2), (64, 3), (128, 2)]
    assert s.derive({"TN": 128, "S": 2}) == {"STAGE": 256, "SMEM": 512}
    v = s.explain({"TN": 256, "S": 2})
    assert not v.ok and v.constraint == "c0"


def test_huge_raw_space_counts_without_materialising():
    params = {f"P{i}": [1, 2, 3, 4] for i in range(22)}  # 4**22 ≈ 1.8e13
    rules = [f"P{i} * P{i + 1} <= 8" for i in range(0, 22, 2)]
    s = Space(params, rules)
    assert s.raw_size == 4**22
    per_pair = sum(1 for a in range(1, 5) for b in range(1, 5) if a * b <= 8)
    assert len(s) == per_pair**11
    assert s[len(s) - 1] in s
    r = random.Random(0).randrange(len(s))
    assert s.index(s[r]) == r


def test_unknown_name_suggests():
    with pytest.raises(SpecError, match="unknown name STAGE_BYTE — did you mean STAGE_BYTES"):
        Space({"TN": [1]}, ["STAGE_BYTE > 0"], derived={"STAGE_BYTES": "TN"})


def test_constraint_over_constants_only():
    assert len(Space({"A": [1, 2]}, ["K > 3"], constants={"K": 4})) == 2
    assert len(Space({"A": [1, 2]}, ["K > 3"], constants={"K": 1})) == 0


def test_empty_space():
    s = Space({"A": [1, 2]}, ["A > 5"])
    assert len(s) == 0 and list(s) == [] and s.sample(3, seed=0) == []


def test_outside_values_names_each_value_that_is_not_one_of_its_parameters():
    space = Space({"A": [1, 2, 4], "F": [0.5, 2.0], "B": [True, False]}, ["A * 2 <= 8"])
    assert space.outside_values({"A": 2, "F": 2, "B": False}) == {}  # 2 is the value 2.0
    assert space.outside_values({"A": 3, "F": 0.5, "B": 1}) == {"A": (1, 2, 4), "B": (True, False)}
    assert space.outside_values({"A": 1, "F": 0.5}) == {"B": (True, False)}  # missing
    assert {"A": 3, "F": 0.5, "B": True} not in space
