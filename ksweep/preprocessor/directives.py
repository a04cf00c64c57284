"""The preprocessor lines of a C, C++ or CUDA source (pure): the one reader of them, for
``ksweep guard`` and ``ksweep init`` (source/) and for plan's warning of a ``-D`` name that an
unguarded ``#define`` replaces (spec/collisions.py).

A source is split into physical lines that keep their own endings (``\\n``, ``\\r\\n`` or
``\\r``), so a rewrite can give every line back as it was. A small lexer follows comments,
string and character literals and raw strings across lines, so that a ``#define`` inside
a comment is not taken for one. A directive is a line that starts outside a comment and
whose first character, once comments are blanked as the preprocessor does, is ``#``; it
goes on over backslash continuations and over a block comment that spans lines (``#define
X 4 /* ... */`` ends where the comment ends). Conditionals are followed: each define
knows the branches it sits in (``Branch``), and so whether it is guarded (in a branch
taken only when NAME is not defined: the first of ``#ifndef NAME`` / ``#if
!defined(NAME)``, a later one of ``#ifdef NAME`` / ``#if defined(NAME)``, at any depth),
whether it is inside ``#if 0``, and whether a build that defines other macros ever takes it
(``Define.kept_out``).

Not handled (the preprocessor would accept them, sources rarely hold them): a directive
whose ``#`` follows a comment that began on an earlier line, trigraphs and digraphs (``%:``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_EOL = re.compile(r"\r\n|\n|\r")
_SPLICE = re.compile(r"\\[ \t]*$")  # gcc also splices a backslash followed by blanks
_DIRECTIVE = re.compile(r"\s*#\s*([A-Za-z_]\w*)?(.*)", re.S)
_HEAD = re.compile(r"^([ \t\ufeff]*)#([ \t]*)")
_NAME = re.compile(r"[A-Za-z_]\w*")
_NOT_DEFINED = re.compile(r"!\s*defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))")
_ONLY_DEFINED = re.compile(r"defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))")
_DEFINED = re.compile(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))")
_HEADER = re.compile(r'\s*(?:<([^>]+)>|"([^"]+)")')
_RAW_DELIM = re.compile(r'([^ ()\\\t\n"]{0,16})\(')
_ZERO = ("0", "(0)")  # the condition of a branch no build takes


@dataclass(frozen=True)
class Line:
    """One physical line: its text and its own ending ('' for a last line without one)."""

    text: str
    end: str


@dataclass(frozen=True)
class Directive:
    """A preprocessor line, over physical lines ``first`` to ``last`` (0-based, inclusive)."""

    first: int
    last: int
    keyword: str  # "define", "ifndef", ...; "" for a lone '#'
    rest: str  # what follows the keyword: comments blanked, continuations spliced, stripped
    indent: str  # what stands before '#' on the first line
    gap: str  # what stands between '#' and the keyword ("#  define": two spaces)


@dataclass(frozen=True)
class Branch:
    """One branch of a conditional (``#if`` ... ``#elif`` ... ``#else`` ... ``#endif``)."""

    tested: str | None  # the NAME its conditional's first condition tests, when it tests one alone
    # the first branch is taken when NAME is defined (#ifdef, #if defined(NAME): True), when it
    # is not (#ifndef, #if !defined(NAME): False); None: another condition
    when: bool | None
    index: int  # 0: the first branch, then one per #elif and #else
    dead: bool  # #if 0 / #elif 0: no build takes it

    @property
    def needs_undefined(self) -> bool:
        """Taken only when ``tested`` is not defined: the first branch of #ifndef NAME, and every
        later one (#elif, #else) of #ifdef NAME."""
        return self.when is not None and (not self.when if self.index == 0 else self.when)


@dataclass(frozen=True)
class Define:
    """An object-like or function-like ``#define``."""

    name: str
    value: str  # the replacement text, comments blanked ('' when empty)
    function_like: bool
    directive: Directive
    branches: tuple[Branch, ...] = ()  # the conditionals' branches it sits in, outermost first

    @property
    def line(self) -> int:
        """1-based number of its first line."""
        return self.directive.first + 1

    @property
    def guarded(self) -> bool:
        """In a branch taken only when NAME is not defined, at any depth: a -DNAME keeps its value."""
        return any(b.needs_undefined and b.tested == self.name for b in self.branches)

    @property
    def dead(self) -> bool:
        """Inside #if 0 (or #elif 0)."""
        return any(b.dead for b in self.branches)

    def kept_out(self, defined=()) -> bool:
        """Whether this definition never replaces a -DNAME value: it is guarded, dead, or in a
        branch that a build defining the macros ``defined`` never takes (``#ifndef AUTOTUNE``
        under -DAUTOTUNE)."""
        return self.dead or any(b.needs_undefined and (b.tested == self.name or b.tested in defined)
                                for b in self.branches)


@dataclass(frozen=True)
class Include:
    """An #include, and whether the default build (no -D) reads it as far as this file says."""

    header: str
    line: int
    default_build: bool


@dataclass
class _Frame:
    tested: str | None  # as Branch's
    when: bool | None
    dead: bool  # this branch is #if 0 / #elif 0
    branch: int = 0
    known: bool | None = None  # True: a branch so far is surely taken by the default build
    taken: bool = True  # the current branch may be taken by the default build


@dataclass(frozen=True)
class Scan:
    """What ``scan`` found in a source."""

    lines: tuple[Line, ...]
    directives: tuple[Directive, ...]
    defines: tuple[Define, ...]
    includes: tuple[Include, ...] = ()
    code: str = ""  # the text with comments blanked
    tested: dict[str, int] = field(default_factory=dict)  # name -> 1-based line of its first defined-ness test


def split_lines(text: str) -> list[Line]:
    """The physical lines of a text, each with its own ending; '' gives no line."""
    out, pos = [], 0
    for m in _EOL.finditer(text):
        out.append(Line(text[pos:m.start()], m.group(0)))
        pos = m.end()
    if pos < len(text):
        out.append(Line(text[pos:], ""))
    return out


def join_lines(lines) -> str:
    return "".join(line.text + line.end for line in lines)


# The lexer's state between lines: None (code), "block", "line" (a // comment continued by a
# backslash), '"' or "'" (a literal continued by a backslash), or ("raw", delimiter).

def _code(text: str, state):
    """The line with comments blanked, and the state at its end."""
    out, i, n = [], 0, len(text)
    while i < n:
        if state == "block":
            end = text.find("*/", i)
            if end < 0:
                out.append(" " * (n - i))
                return "".join(out), "block"
            out.append(" " * (end + 2 - i))
            i, state = end + 2, None
        elif state == "line":
            out.append(" " * (n - i))
            return "".join(out), ("line" if _SPLICE.search(text) else None)
        elif isinstance(state, tuple):  # inside a raw string
            close = ")" + state[1] + '"'
            end = text.find(close, i)
            if end < 0:
                out.append(text[i:])
                return "".join(out), state
            out.append(text[i:end + len(close)])
            i, state = end + len(close), None
        elif state in ('"', "'"):
            j = i
            while j < n and text[j] != state:
                j += 2 if text[j] == "\\" else 1
            if j >= n:  # unterminated: continued by a backslash, else ill-formed and ended here
                out.append(text[i:])
                return "".join(out), (state if _SPLICE.search(text) else None)
            out.append(text[i:j + 1])
            i, state = j + 1, None
        else:
            j = i
            while j < n and text[j] not in "/\"'R":
                j += 1
            out.append(text[i:j])
            i = j
            if i >= n:
                break
            c = text[i]
            if text.startswith("//", i):
                state = "line"
            elif text.startswith("/*", i):
                out.append("  ")
                i, state = i + 2, "block"
            elif c in "\"'":
                if c == "'" and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
                    out.append(c)  # a digit separator (1'000'000) or a prefix's quote
                    i += 1
                    continue
                out.append(c)
                i, state = i + 1, c
            elif c == "R":
                m = _RAW_DELIM.match(text, i + 2) if text.startswith('R"', i) and _raw_prefix(text, i) else None
                if m:
                    out.append(text[i:m.end()])
                    i, state = m.end(), ("raw", m.group(1))
                else:
                    out.append(c)
                    i += 1
            else:  # a lone '/'
                out.append(c)
                i += 1
    if state == "line":
        return "".join(out), ("line" if _SPLICE.search(text) else None)
    if state in ('"', "'"):
        return "".join(out), (state if _SPLICE.search(text) else None)
    return "".join(out), state


def _raw_prefix(text: str, i: int) -> bool:
    """Whether the R at ``i`` begins a raw string literal (R"(, u8R"(, LR"(...) rather than ends a name."""
    for prefix in ("u8", "u", "U", "L", ""):
        k = i - len(prefix)
        if text.startswith(prefix, k) and k >= 0 and (k == 0 or not (text[k - 1].isalnum() or text[k - 1] == "_")):
            return True
    return False


def scan(text: str) -> Scan:
    """Split a source into lines and find its directives, defines and defined-ness tests."""
    lines = split_lines(text)
    codes, starts_in = [], []
    state = None
    for line in lines:
        starts_in.append(state)
        code, state = _code(line.text, state)
        codes.append(code)
    ends_in = starts_in[1:] + [state]

    directives: list[Directive] = []
    i = 0
    while i < len(lines):
        if starts_in[i] is not None or not codes[i].lstrip(" \t\ufeff\f\v").startswith("#"):
            i += 1
            continue
        j, parts = i, []
        while True:
            code = codes[j]
            splice = _SPLICE.search(lines[j].text) is not None and ends_in[j] not in ("block",)
            if splice:
                parts.append(_SPLICE.sub("", code))
            else:
                parts.append(code)
            if (splice or ends_in[j] == "block") and j + 1 < len(lines):
                if not splice:
                    parts.append(" ")
                j += 1
                continue
            break
        m = _DIRECTIVE.match("".join(parts).lstrip("\ufeff"))
        head = _HEAD.match(lines[i].text)
        directives.append(Directive(
            first=i, last=j, keyword=(m.group(1) or "") if m else "", rest=(m.group(2) or "").strip() if m else "",
            indent=head.group(1).lstrip("\ufeff") if head else "", gap=head.group(2) if head else "",
        ))
        i = j + 1
    return _read(lines, directives, "\n".join(codes))


def _read(lines: list[Line], directives: list[Directive], code: str) -> Scan:
    stack: list[_Frame] = []
    defines: list[Define] = []
    includes: list[Include] = []
    tested: dict[str, int] = {}
    now: set[str] = set()  # what the default build has defined at this point, as far as is known

    def test(name: str, d: Directive) -> None:
        if not any(f.dead for f in stack):
            tested.setdefault(name, d.first + 1)

    def known(kw: str, rest: str) -> bool | None:
        """A condition's value in the default build (-D nothing), when this file alone says it."""
        if kw in ("ifdef", "ifndef", "elifdef", "elifndef"):
            name = _NAME.match(rest)
            if not name or name.group(0).startswith("_"):  # the compiler's own (__CUDACC__): unknown
                return None
            return (name.group(0) in now) == kw.endswith("ifdef")
        return {"0": False, "1": True}.get(rest)

    for d in directives:
        kw, rest = d.keyword, d.rest
        first_name = _NAME.match(rest)
        if kw in ("if", "elif"):
            for m in _DEFINED.finditer(rest):
                test(m.group(1) or m.group(2), d)
        elif kw in ("ifdef", "ifndef", "elifdef", "elifndef") and first_name:
            test(first_name.group(0), d)
        if kw in ("if", "ifdef", "ifndef"):
            name, when = ((first_name.group(0), kw == "ifdef") if kw != "if" and first_name else
                          _defined_test(rest) if kw == "if" else (None, None))
            value = known(kw, rest)
            stack.append(_Frame(tested=name, when=when, dead=kw == "if" and rest in _ZERO, known=value,
                                taken=value is not False))
        elif kw in ("elif", "elifdef", "elifndef", "else") and stack:
            top = stack[-1]
            top.branch += 1
            top.dead = kw == "elif" and rest in _ZERO
            value = True if kw == "else" else known(kw, rest)
            if top.known is True:  # an earlier branch is taken: this one is not
                top.taken = False
            else:
                top.taken = value is not False
                if value is not False:
                    top.known = value
        elif kw == "endif":
            if stack:
                stack.pop()
        elif kw == "undef" and first_name:
            if all(f.taken for f in stack):
                now.discard(first_name.group(0))
        elif kw == "include":
            m = _HEADER.match(rest)
            if m:
                includes.append(Include(m.group(1) or m.group(2), d.first + 1, all(f.taken for f in stack)))
        elif kw == "define" and first_name:
            name = first_name.group(0)
            after = rest[first_name.end():]
            defines.append(Define(
                name=name, value=after.strip(), function_like=after.startswith("("), directive=d,
                branches=tuple(Branch(f.tested, f.when, f.branch, f.dead) for f in stack),
            ))
            if all(f.taken for f in stack):
                now.add(name)
    return Scan(lines=tuple(lines), directives=tuple(directives), defines=tuple(defines), includes=tuple(includes),
                code=code, tested=tested)


def _defined_test(condition: str) -> tuple[str | None, bool | None]:
    """(NAME, False) for a condition that is exactly !defined(NAME) or !defined NAME, (NAME,
    True) for defined(NAME) or defined NAME, else (None, None)."""
    for pattern, when in ((_NOT_DEFINED, False), (_ONLY_DEFINED, True)):
        m = pattern.fullmatch(condition)
        if m:
            return m.group(1) or m.group(2), when
    return None, None
