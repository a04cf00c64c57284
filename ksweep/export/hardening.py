"""What shipping knows of the hardening (pure): each shipped config's verdict, said in the
header and the JSON, and the configs export refuses.

The rule (docs/cli.md, "export"):

- a config the hardening found a fault in (UNSAFE, or wrong outputs for the further inputs)
  is never shipped;
- where the database holds a sanitizer's verdict on any config (the sanitizers ran on it:
  ``ksweep run`` with compute-sanitizer present, or ``ksweep harden``), a shipped config
  without a clean verdict under its current result key (never hardened, or a tool that did
  not finish) is refused unless ``--allow-unhardened``;
- a database without any (swept before ksweep hardened leaders, with ``--no-harden``, or
  where compute-sanitizer was missing) is exported as it always was, each config said
  "not hardened" in the header and one note saying how to harden them.
"""

from __future__ import annotations

from typing import Sequence

from ..errors import ExportError
from ..job import config_id
from ..store.standings import Standings


def _kinds(standings: Standings, variant: str, shape: str, cid: str) -> dict:
    conf = standings.confirmations.get((variant, shape))
    return dict(conf.hardening.get(cid, {})) if conf is not None else {}


def said(standings: Standings, variant: str, shape: str, cid: str) -> str:
    """'hardened: clean (memcheck, racecheck, initcheck, synccheck); deterministic', 'not hardened', ..."""
    kinds = _kinds(standings, variant, shape, cid)
    tools = kinds.get("sanitizer")
    if tools is None:
        parts = ["not hardened"]
    elif tools.verdict == "clean":
        parts = [f"hardened: clean ({', '.join(tools.tools)})"]
    elif tools.verdict == "unsafe":
        parts = [f"UNSAFE: {tools.detail}"]
    else:
        parts = [f"not hardened: {tools.detail}"]
    inputs = kinds.get("inputs")
    if inputs is not None:
        parts.append("further inputs passed" if inputs.verdict == "passed" else f"further inputs: {inputs.detail}")
    determinism = kinds.get("determinism")
    if determinism is not None:
        parts.append("deterministic" if determinism.verdict == "deterministic"
                     else f"nondeterministic: {determinism.detail}")
    return "; ".join(parts)


def hardened_here(standings: Standings) -> bool:
    """Whether any config of the database has a sanitizer's verdict (the sanitizers ran on it)."""
    return any(kinds.get("sanitizer") is not None for conf in standings.confirmations.values()
               for kinds in conf.hardening.values())


def check_shipped(standings: Standings, entries: Sequence, allow_unhardened: bool = False) -> list[str]:
    """Refuse (ExportError, one line) what the rule above refuses; the notes to say otherwise."""
    failed, unhardened = [], []
    for e in entries:
        kinds = _kinds(standings, e.variant, e.shape, config_id(e.result.params))
        tools, inputs = kinds.get("sanitizer"), kinds.get("inputs")
        where = f"{e.shape}/{e.variant} " + " ".join(f"{k}={v}" for k, v in e.result.params.items())
        if (tools is not None and tools.verdict == "unsafe") or (inputs is not None and inputs.verdict == "failed"):
            failed.append(f"{where} ({tools.detail if tools is not None and tools.verdict == 'unsafe' else inputs.detail})")
        elif tools is None or tools.verdict != "clean":
            unhardened.append(where + (f" ({tools.detail})" if tools is not None else ""))
    if failed:
        raise ExportError(f"refused: the hardening found a fault in {len(failed)} shipped config(s): {failed[0]}")
    if not hardened_here(standings):
        return ["not hardened: no config of this database ran under compute-sanitizer (ksweep harden DB runs "
                "the shipped configs under it)"] if entries else []
    if unhardened and not allow_unhardened:
        raise ExportError(f"refused: {len(unhardened)} shipped config(s) were not hardened (no clean verdict of "
                          f"the sanitizers under their current result): {unhardened[0]} — run ksweep harden DB, "
                          "or give --allow-unhardened to ship them as they are")
    return [f"{len(unhardened)} shipped config(s) not hardened (--allow-unhardened): the header says which"] \
        if unhardened else []
