"""Whether a config gives the same outputs from one run to the next (pure).

A config's runs are its search run and its confirmation runs, each a fresh process in
program mode. What is compared is what the check reads: in program mode the checksum and
every metric the ``[check]`` compares or bounds, in kernel mode the digest of the output
buffers (``outputs_digest``, which the worker computes for the confirmation's runs). They
are compared bitwise: a checksum that moves within the check's tolerance passes the check,
but the config is nondeterministic. That is no failure (a reduction by atomics is right and
nondeterministic); ``--deterministic`` (``[harden] deterministic = true``) makes such a
config ineligible for BEST.
"""

from __future__ import annotations

import math
import struct
from typing import Iterable, Mapping, Sequence

DIGEST = "outputs_digest"  # kernel mode's: the first 48 bits of a BLAKE2b digest of the outputs, as a float


def fingerprint_keys(check, kernel_mode: bool) -> tuple[str, ...]:
    """The metrics compared across runs: the output digest in kernel mode; else the checksum
    and every key the check (``spec.model.Check``) compares or bounds."""
    if kernel_mode:
        return (DIGEST,)
    keys = ["checksum", *check.keys, *check.expected, *check.max_keys]
    return tuple(dict.fromkeys(keys))


def _bits(v) -> bytes | None:
    """A value's bits: 0.1 and 0.1000000001 differ, every NaN is the same."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return b"nan" if math.isnan(x) else struct.pack("<d", x)


def differs(runs: Sequence[Mapping[str, float]], keys: Iterable[str]) -> str | None:
    """How the runs' outputs differ ("checksum 1.0000001 in one run, 1.0000003 in another (of
    4 runs)"), or None when every key each run printed has the same bits in every run (or
    fewer than two runs printed it)."""
    for key in keys:
        seen = [(_bits(m[key]), m[key]) for m in runs if key in m and _bits(m[key]) is not None]
        if len(seen) < 2:
            continue
        distinct = list(dict.fromkeys(b for b, _ in seen))
        if len(distinct) > 1:
            values = {b: v for b, v in seen}
            a, b = (values[d] for d in distinct[:2])
            what = "the outputs' digest" if key == DIGEST else key
            shown = (f"{a!r}" if key != DIGEST else f"{int(a):012x}", f"{b!r}" if key != DIGEST else f"{int(b):012x}")
            return (f"{what} {shown[0]} in one run, {shown[1]} in another ({len(distinct)} different values in "
                    f"{len(seen)} runs)")
    return None


def digest_value(chunks: Iterable[bytes]) -> float:
    """The outputs' digest as a metric: the first 48 bits of their BLAKE2b digest, a float that
    holds them exactly (metrics are numbers)."""
    import hashlib

    h = hashlib.blake2b(digest_size=6)
    for c in chunks:
        h.update(c)
    return float(int.from_bytes(h.digest(), "big"))
