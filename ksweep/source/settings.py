"""The settings of a source that are not macros (pure): what ``-D`` cannot set until they are.

A codebase's tile sizes are often constants (``const uint K10_BM = 128;``, ``constexpr int
kStages = 3;``, ``static constexpr int TILE = 64;``), enumerators (``enum { TILE = 64 };``)
or literal template arguments of a launch (``sgemm<128, 64><<<grid, block>>>(...)``). ``ksweep
init`` and ``ksweep guard`` say which ones a source has and where; ``guard --convert NAME``
turns such a constant into a guarded macro (``source/guard.py``).

Read from the code with comments and string literals blanked (the preprocessor's reader), so
a declaration in a comment is none. A constant is an integer declaration with ``const`` or
``constexpr`` (in any order with ``static``, ``inline``, ``__device__``...) and one
initializer, ``=`` or braces; several declarators on one line are each found. Whether it is
a member of a class, struct or union (``Setting.member``: ``Tile::BM`` outside it) and whether
it is alone on its line (what ``--convert`` replaces) are known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..preprocessor.directives import scan

_INT_TYPES = (r"(?:(?:unsigned|signed|long|short|int|char)\b\s*)+|uint|ulong|ushort|size_t|ssize_t|ptrdiff_t"
              r"|u?int(?:8|16|32|64)_t|std::size_t|std::u?int(?:8|16|32|64)_t|std::ptrdiff_t|index_t|auto|bool")
_QUALIFIER = r"(?:const|constexpr|static|inline|extern|__device__|__host__|__constant__|__forceinline__)"
_CONST = re.compile(
    rf"(?<![\w:.>])(?P<before>(?:{_QUALIFIER}\s+)*)(?P<type>{_INT_TYPES})\s*(?P<after>(?:\bconst\b\s*)?)"
    rf"(?P<decls>[A-Za-z_]\w*\s*(?:=\s*[^;{{}}]+?|\{{[^;{{}}]*\}})\s*(?:,\s*[A-Za-z_]\w*\s*(?:=\s*[^;,{{}}]+?|\{{[^;{{}}]*\}})\s*)*);")
_DECLARATOR = re.compile(r"\s*(?P<name>[A-Za-z_]\w*)\s*(?:=\s*(?P<value>.+?)|\{(?P<braced>[^{}]*)\})\s*$", re.S)
_ENUM = re.compile(r"\benum\b(?:\s+(?:class|struct)\b)?(?:\s+[A-Za-z_]\w*)?(?:\s*:\s*[\w:\s]+?)?\s*\{(?P<body>[^{}]*)\}")
_ENUMERATOR = re.compile(r"(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>[^,]+)")
_LAUNCH = re.compile(r"(?P<kernel>[A-Za-z_][\w:]*)\s*<(?P<args>[^<>;(){}]*)>\s*<<<")
_INT = re.compile(r"^[+-]?(?:0[xX][0-9a-fA-F']+|0[bB][01']+|0[0-7']*|[1-9][0-9']*)[uUlLzZ]*$")
_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_RECORD = re.compile(r"\b(?:struct|class|union)\b[^;(){}]*$")


@dataclass(frozen=True)
class Setting:
    """A value a source sets without a macro."""

    name: str  # the constant's or enumerator's name; for a template argument, kernel<…>#N
    kind: str  # "const", "constexpr", "static constexpr", ...; "enumerator"; "template argument"
    type: str  # the declared type ("uint"); "" for an enumerator or a template argument
    value: str  # as written
    line: int  # 1-based
    text: str  # its line of the source, stripped
    member: bool = False  # declared inside a class, struct or union
    alone: bool = False  # the only declaration on its line(s), nothing else of the code there
    first: int = 0  # 0-based physical lines of its declaration
    last: int = 0

    @property
    def number(self) -> bool:
        """Whether its value is an integer literal."""
        return bool(_INT.match(self.value.strip()))

    @property
    def convertible(self) -> bool:
        """Whether ``guard --convert`` can make it a macro as it is: an integer constant with a
        literal value, declared alone on one line, not a class member (and, which the file as a
        whole says, declared once)."""
        return (self.kind not in ("enumerator", "template argument") and self.number and self.alone
                and not self.member and self.first == self.last)

    @property
    def what(self) -> str:
        """'const uint, line 346'."""
        kind = f"{self.kind} {self.type}" if self.type else self.kind
        return f"{kind}{' (a member)' if self.member else ''}, line {self.line}"

    @property
    def said(self) -> str:
        """'a const uint at line 346', 'an enumerator at line 4'."""
        kind = f"{self.kind} {self.type}" if self.type else self.kind
        member = " member" if self.member else ""
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}{member} at line {self.line}"

    def described(self) -> str:
        """'K10_BM (const uint, line 346)'."""
        return f"{self.name} ({self.what})"


def settings(text: str) -> list[Setting]:
    """The constants, enumerators and literal launch template arguments of a source, in order."""
    found = scan(text)
    code = _LITERAL.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', found.code)
    lines = found.lines
    starts = [0]
    for line in code.split("\n")[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    directive_lines = {i for d in found.directives for i in range(d.first, d.last + 1)}

    def line_of(pos: int) -> int:
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def source_line(i: int) -> str:
        return lines[i].text.strip() if i < len(lines) else ""

    records = _records(code)
    out: list[tuple[int, Setting]] = []
    for m in _CONST.finditer(code):
        words = m.group("before").split() + m.group("after").split()
        if not ({"const", "constexpr"} & set(words)) or line_of(m.start()) in directive_lines:
            continue
        kind = " ".join(w for w in words if w in ("static", "inline", "constexpr", "const"))
        first, last = line_of(m.start()), line_of(m.end() - 1)
        decls = [d for d in (_DECLARATOR.match(part) for part in _top_level(m.group("decls"))) if d]
        rest = (code[starts[first]:m.start()] + code[m.end():starts[last] + len(code.split("\n")[last])]).strip()
        for d in decls:
            value = (d.group("value") if d.group("value") is not None else d.group("braced") or "").strip()
            where = m.start("decls") + m.group("decls").find(d.group(0))
            at = line_of(where)
            out.append((where, Setting(
                d.group("name"), kind, " ".join(m.group("type").split()), " ".join(value.split()), at + 1,
                source_line(at), member=_inside_record(records, m.start()), alone=len(decls) == 1 and not rest,
                first=first, last=last)))
    for m in _ENUM.finditer(code):
        body_at = m.start("body")
        for e in _ENUMERATOR.finditer(m.group("body")):
            at = line_of(body_at + e.start())
            out.append((body_at + e.start(), Setting(e.group("name"), "enumerator", "", " ".join(e.group("value").split()),
                                                     at + 1, source_line(at), first=at, last=at)))
    for m in _LAUNCH.finditer(code):
        at = line_of(m.start())
        for i, arg in enumerate(a.strip() for a in m.group("args").split(",")):
            if _INT.match(arg):
                out.append((m.start(), Setting(f"{m.group('kernel')}<…>#{i + 1}", "template argument", "", arg, at + 1,
                                               source_line(at), first=at, last=at)))
    return [s for _, s in sorted(out, key=lambda x: x[0])]


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, brackets and braces."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _records(code: str) -> list[tuple[int, int, bool]]:
    """(start, end, whether it is the body of a class, struct or union) of every braced block."""
    stack: list[tuple[int, bool]] = []
    out = []
    boundary = 0
    for i, c in enumerate(code):
        if c == "{":
            stack.append((i, bool(_RECORD.search(code[boundary:i]))))
            boundary = i + 1
        elif c == "}":
            if stack:
                start, record = stack.pop()
                out.append((start, i, record))
            boundary = i + 1
        elif c == ";":
            boundary = i + 1
    return out


def _inside_record(blocks: list[tuple[int, int, bool]], pos: int) -> bool:
    """Whether the innermost block around ``pos`` is a record's body (a member, not a local of a
    function defined in it)."""
    around = [b for b in blocks if b[0] < pos < b[1]]
    return bool(around) and max(around)[2]
