"""A C/C++ header of the shipped configs (pure): each shape's macros behind ``#if`` guards, and
a dispatch table keyed by shape name for host code.

Device or host code chooses a shape before including the header and gets the macros its
config was built and measured with::

    #define KSWEEP_SHAPE_sq4096
    #include "tuned.h"          // TN, N_STAGES, ... as the measured build defined them

A shape's macros are the ``-D`` flags of the config's stored build command (parameters
under their macro names, derived values passed as defines, the shape's and variant's
defines): what the compiler saw when the config was measured. ksweep's own
``-Dmain=ksweep_main`` (persistent mode) is left out; a build with no ``-D`` flag at all
(through make or a script) gets its parameters under their own names. Where the database
holds several GPU models or variants, ``KSWEEP_GPU_<MODEL>`` and ``KSWEEP_VARIANT_<NAME>``
choose among them (one is the default when it is the only one). GPU models are chosen by
name, not by ``__CUDA_ARCH__``: that macro is undefined in nvcc's host pass, and a launch
configured from macros must see the same values on both sides.

The dispatch table is keyed by the shape's name. The table and its lookup are ``constexpr``
in C++14 and later, ``static const`` and ``static inline`` in C. Where the database keeps the
shapes' sizes, ``<sweep>_select(gpu, arch, variant, sizes)`` chooses a config for any size:
export/selector.py's rule, in C (``math.h``'s ``log``: link C programs with ``-lm``).
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

from ..build.argv import ENTRY_DEFINE
from ..job import config_id
from ..result import Result
from ..spec.model import define_value
from .selection import Selection
from .selector import Selector

_MACRO = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\([A-Za-z0-9_, .]*\))?$")


def identifier(text: str) -> str:
    """``text`` as the tail of a C identifier: every run of other characters one underscore."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "_"


def defines_of(r: Result) -> list[tuple[str, str]]:
    """(name, value) of each macro the config's build defined, in command-line order (a name
    given twice keeps its last value, as the compiler does); its parameters by their own
    names when the build command has no ``-D`` flag."""
    argv, found = list(r.build_argv), {}
    for i, arg in enumerate(argv):
        if arg == ENTRY_DEFINE:
            continue
        if arg in ("-D", "--define-macro") and i + 1 < len(argv):
            text = argv[i + 1]
        elif arg.startswith("--define-macro="):
            text = arg[len("--define-macro="):]
        elif arg.startswith("-D") and len(arg) > 2:
            text = arg[2:]
        else:
            continue
        name, _, value = text.partition("=")
        if _MACRO.match(name) and "\n" not in value:
            found.pop(name, None)
            found[name] = value if "=" in text else "1"
    if not found and not any(a.startswith("-D") or a == "--define-macro" or a.startswith("--define-macro=")
                             for a in argv):
        found = {name: define_value(v) for name, v in r.params.items() if _MACRO.match(name)}
    return list(found.items())


def header(selection: Selection, *, name: str, source: str = "", generator: str = "ksweep",
           hardening: Mapping[tuple[str, str, str], str] | None = None, selector: Selector | None = None) -> str:
    """The header's text; ``name`` (the sweep's) prefixes its C identifiers and include guard;
    ``hardening``: (variant, shape, config id) -> what the hardening said of that entry's config;
    with ``selector``, the size selector too."""
    entries = selection.entries
    prefix = identifier(name).lower()
    if prefix[0].isdigit():
        prefix = "k_" + prefix
    upper = prefix.upper()
    shapes = _macros("KSWEEP_SHAPE_", [(e.shape, e.shape) for e in entries])
    gpus = _macros("KSWEEP_GPU_", [(e.gpu, _gpu_label(e.gpu).upper()) for e in entries])
    variants = _macros("KSWEEP_VARIANT_", [(e.variant, e.variant) for e in entries])
    out = [_comment(selection, shapes, gpus, variants, source, generator, prefix, hardening or {})]
    out += [f"#ifndef KSWEEP_TUNED_{upper}_H", f"#define KSWEEP_TUNED_{upper}_H", ""]
    out += _selection_macros(selection, shapes, gpus, variants, upper)
    out += _table(selection, prefix, upper)
    if selector is not None and selector.axes:
        out += _selector(selector, prefix, upper)
    out += ["", f"#endif /* KSWEEP_TUNED_{upper}_H */", ""]
    return "\n".join(out)


def _gpu_label(gpu: str | None) -> str:
    return "UNKNOWN" if gpu is None else re.sub(r"^NVIDIA\s+", "", gpu)


def _macros(stem: str, names: Sequence[tuple[Any, str]]) -> dict[Any, str]:
    """key -> the selector macro of its text, made unique (``_2``, ``_3``, ... where two
    texts sanitise alike)."""
    out: dict[Any, str] = {}
    for key, text in dict.fromkeys(names):
        if key in out:
            continue
        base = stem + identifier(text)
        macro, i = base, 2
        while macro in out.values():
            macro, i = f"{base}_{i}", i + 1
        out[key] = macro
    return out


def _comment_text(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")


def _comment(selection: Selection, shapes, gpus, variants, source, generator, prefix, hardening) -> str:
    better = "lower" if selection.direction == "min" else "higher"
    lines = [f"Tuned configs exported by {generator}" + (f" from {source}" if source else "") + ".",
             f"Objective: {selection.metric}, {better} is better; a value is the median of the config's",
             "confirmation runs where the confirmation measured it, else its single measurement.", ""]
    if selection.cover_pct is not None:
        n = len(selection.configs)
        lines += [f"Cover: {n} config{'s' * (n != 1)} keep every shape within {selection.cover_pct:g}% of its "
                  f"own best" + (" (the fewest that do)." if selection.exact else
                                 " (the search stopped early: perhaps not the fewest)."), ""]
    lines += ["Device or host code: define one shape's macro (and a GPU model's or a variant's where",
              "several are listed) before including this file; the config's macros are then defined:",
              f"    #define {next(iter(shapes.values()))}", '    #include "<this file>"',
              f"and {prefix.upper()}_CONFIG_INDEX says which distinct config it is (the table's config:",
              f"one kernel per value), {prefix.upper()}_ENTRY_INDEX its entry of {prefix}_configs.",
              f"Host code: {prefix}_find_config(shape, gpu, variant) (NULL matches any) returns the",
              f"entry of {prefix}_configs, or NULL.", ""]
    for title, macros in (("shapes", shapes), ("GPU models, by the name the driver reports", gpus),
                          ("variants", variants)):
        default = " (the only one: the default)" if len(macros) == 1 and title != "shapes" else ""
        lines.append(f"{title}{default}:")
        lines += [f"    {m}  {n if n is not None else '(not recorded)'}" for n, m in macros.items()]
    lines += ["", "variant / GPU model / shape: config, value, loss against the shape's own best"
              + ("; its hardening" if hardening else "")]
    for e in selection.entries:
        said = hardening.get((e.variant, e.shape, config_id(e.result.params)))
        lines.append(f"    {e.variant} / {e.gpu or 'GPU not recorded'} / {e.shape}: config {selection.config_index(e)}, "
                     f"{e.value:.6g} {selection.metric}, loss {100 * e.loss:.2f}%" + (f"; {said}" if said else ""))
    return "/*\n" + "\n".join((" * " + _comment_text(x)).rstrip() for x in lines) + "\n */"


def _selection_macros(selection: Selection, shapes, gpus, variants, upper: str) -> list[str]:
    out = ["/* ---- the chosen shape's macros ---- */"]
    for title, macros in (("shape", shapes), ("GPU model", gpus), ("variant", variants)):
        if len(macros) > 1:
            out += [f"#if {' + '.join(f'defined({m})' for m in macros.values())} > 1",
                    f'#error "ksweep export: define one {title} macro, not several"', "#endif"]
    if len(gpus) > 1 and portable(selection):  # --robust: a shape's config is the same on every model
        gpus = {}
    seen: set = set()
    for i, e in enumerate(selection.entries):
        if not gpus and (e.variant, e.shape) in seen:
            continue
        seen.add((e.variant, e.shape))
        test = [f"defined({shapes[e.shape]})"]
        if len(gpus) > 1:
            test.append(f"defined({gpus[e.gpu]})")
        if len(variants) > 1:
            test.append(f"defined({variants[e.variant]})")
        out.append(f"#{'if' if i == 0 else 'elif'} {' && '.join(test)}")
        out += [f"#define {n} {v}".rstrip() for n, v in defines_of(e.result)]
        # which distinct config (the kernel a build compiles: the table's `config`), and the row
        out.append(f"#define {upper}_CONFIG_INDEX {selection.config_index(e)}")
        out.append(f"#define {upper}_ENTRY_INDEX {i}")
    if len(gpus) > 1 or len(variants) > 1:
        need = [m for ms in (gpus, variants) if len(ms) > 1 for m in ms.values()]
        out += [f"#elif {' || '.join(f'defined({m})' for m in shapes.values())}",
                f'#error "ksweep export: no tuned config for this shape on the chosen GPU model and variant '
                f'(one of {", ".join(need)})"']
    return out + ["#endif", ""]


def portable(selection: Selection) -> bool:
    """Whether every shape × variant ships one config on all its GPU models (``--robust``)."""
    configs: dict = {}
    for e in selection.entries:
        configs.setdefault((e.variant, e.shape), set()).add(selection.config_index(e))
    return all(len(c) == 1 for c in configs.values())


def _ctype(values: list) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "int"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "long long"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "double"
    return "const char *"


def _c_value(v: Any, ctype: str) -> str:
    if v is None:
        return "0"
    if ctype == "int":
        return "1" if v else "0"
    if ctype == "long long":
        return f"{v}LL"
    if ctype == "double":
        return _c_double(float(v))
    return _c_string(define_value(v))


def _c_double(x: float) -> str:
    if math.isfinite(x):
        text = repr(x)
        return text if any(c in text for c in ".e") else text + ".0"
    return "(1e300 * 1e300)" if x > 0 else "(-1e300 * 1e300)" if x < 0 else "0.0"


def _c_string(text: str) -> str:
    out = []
    for b in text.encode():
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 32 <= b < 127 and c != "?":  # '?' escaped: no trigraphs
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


_COMMON = """#ifndef KSWEEP_EXPORT_COMMON
#define KSWEEP_EXPORT_COMMON
#if defined(__cplusplus) && __cplusplus >= 201402L
#define KSWEEP_EXPORT_TABLE constexpr
#define KSWEEP_EXPORT_FN constexpr
#else
#define KSWEEP_EXPORT_TABLE const
#define KSWEEP_EXPORT_FN inline
#endif
#if defined(__GNUC__)
#define KSWEEP_EXPORT_UNUSED __attribute__((unused))
#else
#define KSWEEP_EXPORT_UNUSED
#endif
/* a == b as strings; a null pointer matches anything */
static KSWEEP_EXPORT_FN int ksweep_export_match(const char *a, const char *b) {
    if (!a) return 1;
    while (*a && *a == *b) { ++a; ++b; }
    return *a == *b;
}
#endif
"""


def _table(selection: Selection, prefix: str, upper: str) -> list[str]:
    entries = selection.entries
    names = list(dict.fromkeys(k for e in entries for k in e.result.params))
    fields: dict[str, str] = {}
    for n in names:
        field, i = "param_" + identifier(n), 2
        while field in fields.values():
            field, i = f"param_{identifier(n)}_{i}", i + 1
        fields[n] = field
    types = {n: _ctype([e.result.params.get(n) for e in entries]) for n in names}
    out = ["/* ---- host code: the dispatch table, keyed by shape name ---- */", _COMMON,
           "typedef struct {",
           "    const char *variant;",
           '    const char *gpu;     /* the GPU model\'s name as the driver reports it ("": not recorded) */',
           "    const char *shape;",
           "    int config;          /* which of the distinct configs: entries with one ship one kernel */",
           f"    double value;        /* {_comment_text(selection.metric)} of this config on this shape */",
           "    double loss;         /* how much worse than the shape's own best config: 0.02 is 2% */"]
    out += [f"    {types[n]}{'' if types[n].endswith('*') else ' '}{fields[n]};" + ("" if fields[n] == "param_" + n else f"  /* {_comment_text(n)} */")
            for n in names]
    out += [f"}} {prefix}_config;", "",
            f"#define {upper}_CONFIG_COUNT {len(entries)}",
            f"static KSWEEP_EXPORT_TABLE {prefix}_config {prefix}_configs[{upper}_CONFIG_COUNT] KSWEEP_EXPORT_UNUSED = {{"]
    for e in entries:
        cells = [_c_string(e.variant), _c_string(e.gpu or ""), _c_string(e.shape), str(selection.config_index(e)),
                 _c_double(e.value), _c_double(e.loss), *(_c_value(e.result.params.get(n), types[n]) for n in names)]
        out.append("    {" + ", ".join(cells) + "},")
    out += ["};", "",
            "/* the entry of a shape (of a GPU model and a variant: NULL matches any), or NULL */",
            f"static KSWEEP_EXPORT_FN const {prefix}_config *{prefix}_find_config(const char *shape, "
            f"const char *gpu, const char *variant) {{",
            f"    for (int i = 0; i < {upper}_CONFIG_COUNT; ++i) {{",
            f"        const {prefix}_config *c = &{prefix}_configs[i];",
            "        if (ksweep_export_match(shape, c->shape) && ksweep_export_match(gpu, c->gpu)",
            "            && ksweep_export_match(variant, c->variant))",
            "            return c;",
            "    }",
            "    return 0;",
            "}"]
    return out


def _selector(selector: Selector, prefix: str, upper: str) -> list[str]:
    """``<prefix>_select``: export/selector.py's rule in C, over its axes and rows."""
    axes, rows = selector.axes, selector.rows
    out = ["", "/* ---- any size: the selector (ksweep select): the nearest tuned shape in log-size space ---- */",
           "#include <math.h>", f"#define {upper}_SIZE_COUNT {len(axes)}"]
    out += [f"#define {upper}_SIZE_{identifier(a.name)} {k}  /* sizes[{k}]: {_comment_text(a.name)} */"
            for k, a in enumerate(axes)]
    out += ["typedef struct {",
            "    const char *name;",
            "    int log;             /* 1: the axis is the log of the size; 0: (size - lo) * scale */",
            "    double lo, hi;       /* the range the size was tuned over */",
            "    double scale;",
            f"}} {prefix}_size_axis;",
            f"static KSWEEP_EXPORT_TABLE {prefix}_size_axis {prefix}_axes[{upper}_SIZE_COUNT] KSWEEP_EXPORT_UNUSED = {{"]
    out += [f"    {{{_c_string(a.name)}, {int(a.log)}, {_c_double(a.lo)}, {_c_double(a.hi)}, {_c_double(a.scale)}}},"
            for a in axes]
    out += ["};", "typedef struct {",
            "    const char *variant;",
            "    const char *gpu;     /* NULL: any GPU model (each shape's config that loses least on the others) */",
            "    int arch;            /* the GPU model's compute capability x 10 (0: not known) */",
            "    const char *shape;",
            f"    int entry;           /* its entry of {prefix}_configs */",
            f"    double at[{upper}_SIZE_COUNT];  /* the shape's place on the axes */",
            f"}} {prefix}_tuned_shape;",
            f"#define {upper}_TUNED_COUNT {len(rows)}",
            f"static KSWEEP_EXPORT_TABLE {prefix}_tuned_shape {prefix}_tuned[{upper}_TUNED_COUNT] "
            f"KSWEEP_EXPORT_UNUSED = {{"]
    out += ["    {" + ", ".join([_c_string(r.variant), "0" if r.gpu is None else _c_string(r.gpu), str(r.arch),
                                 _c_string(r.shape), str(r.entry), "{" + ", ".join(map(_c_double, r.at)) + "}"]) + "},"
            for r in rows]
    out += ["};", "",
            f"/* The config for sizes[{upper}_SIZE_COUNT] (indexed by the {upper}_SIZE_* macros): of the GPU model",
            " * named gpu (exactly as the driver reports it), else of the first tuned model of compute capability",
            " * arch (x 10: 90 for sm_90; 0: not known), else each shape's config that loses least on the other",
            " * GPU models; of the variant (NULL: the first); at the tuned shape nearest in log-size space. As",
            " * `ksweep select` chooses. NULL only for a variant with no tuned config. */",
            f"static inline const {prefix}_config *{prefix}_select(const char *gpu, int arch, const char *variant,",
            " " * len(f"static inline const {prefix}_config *{prefix}_select(") + "const double *sizes) {",
            f"    double q[{upper}_SIZE_COUNT];",
            "    const char *model = 0;",
            "    int which = 2, best = -1, i, k;",
            "    double best_d = 0.0;",
            f"    for (k = 0; k < {upper}_SIZE_COUNT; ++k)",
            f"        q[k] = {prefix}_axes[k].log ? log(sizes[k]) : (sizes[k] - {prefix}_axes[k].lo) * {prefix}_axes[k].scale;",
            f"    for (i = 0; gpu && i < {upper}_TUNED_COUNT; ++i)",
            f"        if ({prefix}_tuned[i].gpu && ksweep_export_match(gpu, {prefix}_tuned[i].gpu)) {{",
            f"            model = {prefix}_tuned[i].gpu; which = 0; break;",
            "        }",
            f"    for (i = 0; which == 2 && arch > 0 && i < {upper}_TUNED_COUNT; ++i)",
            f"        if ({prefix}_tuned[i].gpu && {prefix}_tuned[i].arch == arch) {{",
            f"            model = {prefix}_tuned[i].gpu; which = 1; break;",
            "        }",
            "    if (!variant)",
            f"        variant = {prefix}_tuned[0].variant;",
            f"    for (i = 0; i < {upper}_TUNED_COUNT; ++i) {{",
            f"        const {prefix}_tuned_shape *r = &{prefix}_tuned[i];",
            "        double d = 0.0;",
            "        if (which == 2 ? r->gpu != 0 : (r->gpu == 0 || !ksweep_export_match(model, r->gpu)))",
            "            continue;",
            "        if (!ksweep_export_match(variant, r->variant))",
            "            continue;",
            f"        for (k = 0; k < {upper}_SIZE_COUNT; ++k) {{",
            "            double t = q[k] - r->at[k];",
            "            d += t * t;",
            "        }",
            "        if (best < 0 || d < best_d - 1e-9 * (1.0 + best_d)) {",
            "            best = i;",
            "            best_d = d;",
            "        }",
            "    }",
            f"    return best < 0 ? 0 : &{prefix}_configs[{prefix}_tuned[best].entry];",
            "}"]
    return out
