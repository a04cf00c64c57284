"""``ksweep guard``: wrap plain ``#define NAME value`` lines in ``#ifndef NAME … #endif``
so that ``-DNAME=…`` can set them, and nothing else changes (pure).

Every physical line of the source is given back as it was, with its own line ending; the
inserted ``#ifndef``/``#endif`` lines take the define's indentation, its spacing after
``#`` (``#  define`` gives ``#  ifndef``) and its line ending. A define that goes on over
backslash continuations, or over a block comment that spans lines, is wrapped whole.

Without names, every object-like define with a value is guarded, except: function-like
macros, defines already guarded (``Define.guarded``: inside ``#ifndef NAME`` or ``#if
!defined(NAME)``, or after ``#ifdef NAME``'s ``#else``), defines inside ``#if 0``, empty
defines (flags, include guards) and defines whose value is code rather than a value (a
``;``, braces, ``#``/``##``, a statement or declaration keyword, a CUDA qualifier such as
``__device__``). Names given choose those defines alone, whatever their value; a
name the file does not define is an error with "did you mean" (or, when it is a setting that
is not a macro, ``source/settings.py``, what it is and where), and so is a function-like
macro.

``convert``: constants made guarded macros (``guard --convert``). The declaration of each
(``const uint K10_BM = 128;``, alone on its line; an integer literal; not a class member)
is replaced by ``#ifndef K10_BM`` / ``#define K10_BM 128u`` / ``#endif`` at its place, its
indentation and its comment kept. The value keeps the constant's type where a suffix can
say it (``u`` for unsigned, ``l``, ``ul``, ``ll``, ``ull``), else it is cast (``((T)v)``), so
that a build without ``-D`` makes the same code (``--check`` proves it); a ``-D`` value is
what it is written as.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import SourceError
from ..preprocessor.directives import Define, Line, join_lines, scan, split_lines
from ..spec.names import did_you_mean
from .settings import Setting, settings

# Tokens that make a replacement text code (a statement, a declaration, an attribute)
# rather than a value; type names (float, unsigned) and sizeof are values here.
CODE_WORDS = frozenset("""
    if else for while do switch case default break continue return goto try catch throw
    static extern inline register thread_local typedef struct class union enum template typename
    namespace using virtual explicit friend mutable public private protected operator asm
    constexpr consteval constinit static_assert
    __device__ __host__ __global__ __forceinline__ __noinline__ __inline__ __shared__ __constant__
    __managed__ __restrict__ __restrict restrict __launch_bounds__ __align__ __attribute__ __declspec
    __grid_constant__ _Pragma __pragma
""".split())
_TOKEN = re.compile(r'[A-Za-z_]\w*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|##|#|[;{}]')


@dataclass(frozen=True)
class Left:
    """A define ``guard`` left as it was, and why."""

    name: str
    line: int
    why: str


@dataclass(frozen=True)
class Guarded:
    """The guarded text, the defines guarded and those left alone."""

    text: str
    guarded: tuple[Define, ...]
    left: tuple[Left, ...]
    # the same with a #line after each inserted line, so that every original line keeps its
    # number (__LINE__, assertions): what --check compiles
    line_mapped: str = ""
    converted: tuple[Setting, ...] = ()  # constants made guarded macros

    @property
    def changed(self) -> bool:
        return bool(self.guarded or self.converted)


def is_value(text: str) -> bool:
    """Whether a replacement text is a literal or an expression (or a type name), not code."""
    if not text.strip():
        return False
    for tok in _TOKEN.findall(text):
        if tok in (";", "{", "}", "#", "##") or tok in CODE_WORDS:
            return False
    return True


def guard(text: str, names: Sequence[str] | None = None, *, label: str = "the file",
          convert: Sequence[str] = ()) -> Guarded:
    """Wrap the chosen defines of ``text`` in ``#ifndef NAME … #endif`` (with ``convert`` and no
    ``names``: none), and make the constants ``convert`` names guarded macros."""
    found = scan(text)
    chosen, left = _choose(found.defines, names, label, text) if names or not convert else ([], [])
    converted = _convertible(text, found, convert, label)
    if not chosen and not converted:
        return Guarded(text, (), tuple(left), text)
    ends = Counter(line.end for line in found.lines if line.end).most_common(1)
    eol = ends[0][0] if ends else "\n"
    opens = {d.directive.first: d for d in chosen}
    closes = {d.directive.last: d for d in chosen}
    replaced = {c.first: c for c in converted}
    codes = found.code.split("\n")
    out: list[tuple[Line, int | None]] = []  # each line, and its index in the original (None: inserted)
    for i, line in enumerate(found.lines):
        if i in replaced:
            out += [(new, None) for new in _macro_lines(replaced[i], line, eol, codes[i])]
            continue
        if i in opens:
            d = opens[i]
            bom = "\ufeff" if i == 0 and line.text.startswith("\ufeff") else ""
            line = Line(line.text[len(bom):], line.end)
            out.append((Line(f"{bom}{_head(d)}ifndef {d.name}", line.end or eol), None))
        if i in closes:
            d = closes[i]
            closing = Line(f"{_head(d)}endif", line.end)  # a last line without newline: #endif has none
            out += [(Line(line.text, line.end or found.lines[d.directive.first].end or eol), i), (closing, None)]
        else:
            out.append((line, i))
    mapped = []
    for k, (line, origin) in enumerate(out):
        following = out[k + 1][1] if k + 1 < len(out) else None
        if origin is None and following is not None:
            mapped += [line.text, line.end or eol, f"#line {following + 1}", eol]
        else:
            mapped += [line.text, line.end]
    return Guarded(join_lines(line for line, _ in out), tuple(chosen), tuple(left), "".join(mapped), tuple(converted))


def _head(d: Define) -> str:
    """What an inserted directive starts with: the define's indentation and spacing after '#'."""
    return f"{d.directive.indent}#{d.directive.gap}"


def _choose(defines: Iterable[Define], names: Sequence[str] | None, label: str,
            text: str = "") -> tuple[list[Define], list[Left]]:
    defines = list(defines)
    chosen, left = [], []
    if names:
        known = {d.name for d in defines}
        for name in dict.fromkeys(names):
            if name not in known:
                setting = next((s for s in settings(text) if s.name == name), None)
                if setting is not None:
                    raise SourceError(f"{label}: {name} is not #defined there: it is {setting.said} "
                                      f"({setting.text}); {_convert_hint(setting)}")
                close = did_you_mean(name, known)
                hint = f" — did you mean {close}?" if close else ""
                raise SourceError(f"{label}: {name} is not #defined there{hint}")
        for d in defines:
            if d.name not in names:
                continue
            if d.function_like:
                raise SourceError(f"{label}:{d.line}: {d.name} is a function-like macro: only an object-like "
                                  f"#define NAME value can be guarded")
            if d.guarded:
                left.append(Left(d.name, d.line, "already guarded"))
            else:
                chosen.append(d)
        return chosen, left
    for d in defines:
        why = ("function-like" if d.function_like else "already guarded" if d.guarded
               else "inside #if 0" if d.dead else "no value" if not d.value
               else "code, not a value" if not is_value(d.value) else None)
        if why:
            left.append(Left(d.name, d.line, why))
        else:
            chosen.append(d)
    return chosen, left


def _convert_hint(setting: Setting) -> str:
    if setting.kind in ("enumerator", "template argument"):
        return (f"-D cannot set an {setting.kind} until the source reads a macro for it (a guarded #define "
                f"of another name, its value there)")
    return f"--convert {setting.name} makes it a guarded macro"


def _convertible(text: str, found, names: Sequence[str], label: str) -> list[Setting]:
    """The constants ``names`` declares, each checked to be one ``convert`` can replace."""
    if not names:
        return []
    every = settings(text)
    defined = {d.name for d in found.defines}
    out = []
    for name in dict.fromkeys(names):
        mine = [s for s in every if s.name == name]
        if not mine:
            close = did_you_mean(name, [s.name for s in every if s.kind not in ("enumerator", "template argument")])
            raise SourceError(f"{label}: {name} is no integer const or constexpr there"
                              + (f" — did you mean {close}?" if close else ""))
        s = mine[0]
        why = ("it is #defined there too" if name in defined
               else f"it is declared {len(mine)} times (lines {', '.join(str(m.line) for m in mine)}): rename all "
                    f"but one first" if len(mine) > 1
               else f"it is an {s.kind}: {_convert_hint(s)}" if s.kind in ("enumerator", "template argument")
               else "it is a member of a class, struct or union (used as Type::NAME)" if s.member
               else f"its value {s.value} is not an integer literal" if not s.number
               else "its declaration spans lines: put it on one line" if s.first != s.last
               else "its line holds other code too: give the declaration a line of its own" if not s.alone
               else None)
        if why:
            raise SourceError(f"{label}:{s.line}: cannot convert {name} ({s.text}): {why}")
        out.append(s)
    return out


_SUFFIX = {"unsigned": "u", "unsigned int": "u", "uint": "u", "uint32_t": "u", "std::uint32_t": "u",
           "long": "l", "long int": "l", "signed long": "l", "int64_t": "l", "std::int64_t": "l", "ssize_t": "l",
           "ptrdiff_t": "l", "std::ptrdiff_t": "l", "unsigned long": "ul", "unsigned long int": "ul", "ulong": "ul",
           "size_t": "ul", "std::size_t": "ul", "uint64_t": "ul", "std::uint64_t": "ul", "long long": "ll",
           "long long int": "ll", "unsigned long long": "ull", "unsigned long long int": "ull",
           "int": "", "signed": "", "signed int": "", "int32_t": "", "std::int32_t": "", "auto": ""}


def macro_value(type_: str, value: str) -> str:
    """A constant's value as a macro's, of the constant's type: 128u for a uint."""
    if re.search(r"[uUlL]$", value):
        return value
    return value + _SUFFIX[type_] if type_ in _SUFFIX else f"(({type_}){value})"


def _macro_lines(s: Setting, line: Line, eol: str, code: str) -> list[Line]:
    """The lines that replace a constant's declaration: #ifndef, #define (its comment kept), #endif."""
    bom = "\ufeff" if line.text.startswith("\ufeff") else ""
    body = line.text[len(bom):]
    indent = body[: len(body) - len(body.lstrip())]
    comment = line.text[len(code.rstrip()):].strip()
    end = line.end or eol
    return [Line(f"{bom}{indent}#ifndef {s.name}", end),
            Line(f"{indent}#define {s.name} {macro_value(s.type, s.value)}" + (f" {comment}" if comment else ""), end),
            Line(f"{indent}#endif", line.end)]


def unified_diff(before: str, after: str, path: str) -> str:
    """A unified diff (as ``diff -u`` and ``git apply`` read it) from ``before`` to ``after``.
    Guarding only inserts lines: then ``before`` is a subsequence of ``after``, and the diff
    is found in one pass (difflib's matcher is quadratic: 15 s for 4,000 defines); any other
    edit falls back on difflib."""
    a = [line.text + line.end for line in split_lines(before)]
    b = [line.text + line.end for line in split_lines(after)]
    matcher = _Inserted(a, b) if _inserted_only(a, b) else difflib.SequenceMatcher(None, a, b, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(3))
    if not groups:
        return ""
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for group in groups:
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + line for line in a[i1:i2])
                continue
            out.extend("-" + line for line in a[i1:i2])
            out.extend("+" + line for line in b[j1:j2])
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in out)


def _range(start: int, stop: int) -> str:
    """A hunk's range as diff -u writes it: 'first,count', 'first' alone for one line."""
    count = stop - start
    if count == 1:
        return str(start + 1)
    return f"{start + 1 if count else start},{count}"


def _inserted_only(a: list[str], b: list[str]) -> bool:
    """Whether ``a`` is a subsequence of ``b`` (every difference an inserted line)."""
    i = 0
    for line in b:
        if i < len(a) and line == a[i]:
            i += 1
    return i == len(a)


class _Inserted(difflib.SequenceMatcher):
    """The opcodes of an edit that only inserts lines, matched in one pass; difflib groups them
    into hunks."""

    def __init__(self, a: list[str], b: list[str]):
        super().__init__(None, a, b, autojunk=False)

    def get_opcodes(self):
        a, b = self.a, self.b
        ops, i, j = [], 0, 0
        while j < len(b):
            start_i, start_j = i, j
            while i < len(a) and j < len(b) and a[i] == b[j]:
                i, j = i + 1, j + 1
            if j > start_j:
                ops.append(("equal", start_i, i, start_j, j))
            start_j = j
            while j < len(b) and (i >= len(a) or b[j] != a[i]):
                j += 1
            if j > start_j:
                ops.append(("insert", i, i, start_j, j))
        if not ops:
            ops.append(("equal", 0, 0, 0, 0))
        return ops

