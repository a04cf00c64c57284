"""What an ELF file (a cubin, an object file, a program) holds that its code depends on,
cut into units that can be compared (pure, given the file's bytes; pyelftools reads it).

A unit is a function of a code section (its bytes and the relocations that land in it),
or a whole loaded section (its bytes and relocations; only its size when it takes no room
in the file, like ``.bss`` and a kernel's ``.nv.shared``), or the table of defined symbols.
A cubin's ``.nv.info*`` sections (registers, parameters, barriers of each kernel) and
constant banks count as loaded. Left out: what describes the build rather than the code —
debug sections, ``.comment`` (the compiler's version), notes (build ID, the tool that made
a cubin), the symbol and string tables themselves (file symbols name the source), and
relocations that only the debug sections use.

``code_digest``: one digest of every unit of a file (of its bytes, when it is not ELF), so
that two builds with the same digest are one program, as ``compare`` would find them.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any

_SHF_ALLOC = 0x2
_SHF_EXECINSTR = 0x4
_NOBITS = "SHT_NOBITS"


@dataclass(frozen=True)
class Difference:
    """Where two builds' units differ."""

    unit: str  # "function matmul_kernel (.text.matmul_kernel)", "section .rodata", "symbols"
    detail: str  # "only in the original", "byte 0x1a0 of 0x400 (0x420 in the guarded)", ...
    function: str | None = None  # the function's symbol, for disassembly


def is_elf(data: bytes) -> bool:
    return data[:4] == b"\x7fELF"


def is_cubin(data: bytes) -> bool:
    """An ELF file for an NVIDIA GPU (e_machine EM_CUDA, 190)."""
    if not is_elf(data) or len(data) < 20:
        return False
    order = "little" if data[5] == 1 else "big"
    return int.from_bytes(data[18:20], order) == 190


def units(data: bytes) -> dict[str, Any]:
    """The comparable units of an ELF file, by name."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(io.BytesIO(data))
        return _units(elf)
    except (ELFError, ValueError, KeyError, IndexError) as exc:
        raise ValueError(f"not a readable ELF file: {exc}") from None


def _kept(section) -> bool:
    name = section.name
    if section["sh_type"] in ("SHT_NOTE", "SHT_NULL") or name.startswith((".note", ".debug", ".comment")):
        return False
    return bool(section["sh_flags"] & (_SHF_ALLOC | _SHF_EXECINSTR)) or name.startswith(".nv.")


def _units(elf) -> dict[str, Any]:
    from elftools.elf.relocation import RelocationSection
    from elftools.elf.sections import SymbolTableSection

    sections = list(elf.iter_sections())
    symtabs = [s for s in sections if isinstance(s, SymbolTableSection)]
    relocated = elf["e_type"] != "ET_REL"  # symbol values are addresses, not offsets in the section

    def symbol_name(table, index: int) -> str:
        sym = table.get_symbol(index)
        if sym["st_info"]["type"] == "STT_SECTION" and isinstance(sym["st_shndx"], int):
            return sections[sym["st_shndx"]].name
        return sym.name

    relocs: dict[int, list[tuple]] = {}
    for sec in sections:
        if isinstance(sec, RelocationSection) and sec["sh_info"] and not _kept(sec):
            table = sections[sec["sh_link"]] if sec["sh_link"] else None
            rows = relocs.setdefault(sec["sh_info"], [])
            for r in sec.iter_relocations():
                name = symbol_name(table, r["r_info_sym"]) if table is not None and r["r_info_sym"] else ""
                rows.append((r["r_offset"], r["r_info_type"], name, r["r_addend"] if r.is_RELA() else None))

    functions: dict[int, list[tuple[str, int, int]]] = {}
    symbols = []
    for table in symtabs:
        for sym in table.iter_symbols():
            kind, shndx = sym["st_info"]["type"], sym["st_shndx"]
            if kind in ("STT_FILE", "STT_SECTION") or shndx == "SHN_UNDEF" or not sym.name:
                continue
            where = sections[shndx].name if isinstance(shndx, int) else str(shndx)
            symbols.append((sym.name, kind, sym["st_info"]["bind"], where, sym["st_value"], sym["st_size"]))
            if kind == "STT_FUNC" and isinstance(shndx, int) and sym["st_size"]:
                base = sections[shndx]["sh_addr"] if relocated else 0
                functions.setdefault(shndx, []).append((sym.name, sym["st_value"] - base, sym["st_size"]))

    out: dict[str, Any] = {}

    def put(name: str, value) -> None:  # a name seen twice (sections of COMDAT groups) gets a number
        key, n = name, 2
        while key in out:
            key, n = f"{name} #{n}", n + 1
        out[key] = value

    for index, sec in enumerate(sections):
        if not _kept(sec):
            continue
        rows = sorted(relocs.get(index, ()), key=lambda r: (r[0], r[1], r[2]))
        if sec["sh_type"] == _NOBITS:
            put(f"section {sec.name}", ("size", sec["sh_size"]))
            continue
        data = sec.data()
        funcs = sorted(functions.get(index, ()), key=lambda f: f[1])
        if sec["sh_flags"] & _SHF_EXECINSTR and funcs:
            spans = []
            for name, start, size in funcs:
                inside = tuple((o - start, *rest) for o, *rest in rows if start <= o < start + size)
                put(f"function {name} ({sec.name})", (data[start:start + size], inside))
                spans.append((start, start + size))
            # what no function covers (padding between them, code without a symbol)
            uncovered = bytearray(data)
            for start, end in spans:
                uncovered[start:end] = bytes(max(0, min(end, len(data)) - start))
            outside = tuple(r for r in rows if not any(a <= r[0] < b for a, b in spans))
            if any(uncovered) or outside:
                put(f"section {sec.name} (outside functions)", (bytes(uncovered), outside))
        else:
            put(f"section {sec.name}", (data, tuple(rows)))
    out["symbols"] = tuple(sorted(symbols))
    return out


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[Difference]:
    """Each unit that is not the same in both, in the order of the original file."""
    out = []
    for name in [*before, *(n for n in after if n not in before)]:
        function = name.split(" ")[1] if name.startswith("function ") else None
        if name not in after:
            out.append(Difference(name, "only in the original", function))
        elif name not in before:
            out.append(Difference(name, "only in the guarded file", function))
        elif before[name] != after[name]:
            out.append(Difference(name, _detail(name, before[name], after[name]), function))
    return out


def _detail(name: str, a, b) -> str:
    if name == "symbols":
        gone = sorted({s[0] for s in set(a) - set(b)})
        new = sorted({s[0] for s in set(b) - set(a)})
        names = sorted(set(gone) | set(new))
        return "symbols differ: " + ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
    if a[0] == "size":
        return f"size {a[1]} bytes, {b[1]} in the guarded build"
    (da, ra), (db, rb) = a, b
    if da != db:
        at = next((i for i, (x, y) in enumerate(zip(da, db)) if x != y), min(len(da), len(db)))
        sizes = f"of {len(da)}" if len(da) == len(db) else f"of {len(da)} ({len(db)} in the guarded build)"
        return f"bytes differ from offset 0x{at:x} {sizes}"
    at = next((x[0] for x, y in zip(ra, rb) if x != y), None)
    return (f"relocations differ (from offset 0x{at:x})" if at is not None
            else f"relocations differ ({len(ra)} and {len(rb)})")


def code_digest(data: bytes) -> str:
    """The digest of what a built file's code depends on: its units (``units``), or its bytes
    when it is not an ELF file or cannot be read as one. Two files with the same digest are
    the same program as ``compare`` sees it: a build that embeds its folder or the time in
    debug information or a note digests as one that does not."""
    h = hashlib.sha256()
    try:
        found = units(data) if is_elf(data) else None
    except ValueError:
        found = None
    if found is None:
        h.update(b"bytes\0" + data)
        return h.hexdigest()[:32]
    for name in sorted(found):
        h.update(b"\0unit\0" + name.encode())
        _feed(h, found[name])
    return h.hexdigest()[:32]


def _feed(h, value) -> None:
    """A unit's value into the digest: bytes as they are, everything else by its repr (tuples
    of numbers and names), each with its kind and length so that no two values run together."""
    if isinstance(value, (bytes, bytearray)):
        h.update(b"b%d:" % len(value) + bytes(value))
    elif isinstance(value, tuple) and any(isinstance(v, (bytes, bytearray, tuple)) for v in value[:2]):
        h.update(b"t%d(" % len(value))
        for item in value:
            _feed(h, item)
        h.update(b")")
    else:
        text = repr(value).encode()
        h.update(b"r%d:" % len(text) + text)
