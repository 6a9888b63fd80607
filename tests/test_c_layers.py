"""The C units of gpumem._core call only down (no GPU, no compiler: reads the sources).

csrc/gm.h declares the layers in a comment block ("gm-layers (lowest first):" ...
"gm-layers end"): each layer lists its units in order.  For every unit (csrc/**/*.c,
cuda/*.cu) this finds the gm_ functions and variables it defines (not static) and the
gm_ names it uses, and fails on

* a unit of no layer, or a gm_ symbol defined by two units;
* a unit naming a symbol defined by a higher layer, or by a later unit of its own layer;
* a lesson (csrc/lessons/<stem>.c, cuda/<stem>.cu) naming another lesson's symbols
  (its own .c may use its own .cu, not the other way round);
* any circle between units (reported as the units on it);
* a C or CUDA file over 800 lines.
"""
from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the C sources sit beside the tests in a checkout; a wheel's test run has none to read
pytestmark = pytest.mark.skipif(not (ROOT / "csrc" / "gm.h").is_file(),
                                reason="no C sources here (tests run against an installed wheel)")
GM_H = ROOT / "csrc" / "gm.h"
MAX_LINES = 800


# ---- the declared layers --------------------------------------------------------------
def declared_layers() -> list[tuple[str, list[str]]]:
    """[(layer, [path or pattern, ...])] from gm.h's gm-layers block, lowest first."""
    text = GM_H.read_text()
    m = re.search(r"gm-layers \(lowest first\):\n(.*?)\n\s*\*\s*gm-layers end", text, re.S)
    assert m, "csrc/gm.h has no 'gm-layers (lowest first):' ... 'gm-layers end' block"
    layers: list[tuple[str, list[str]]] = []
    for line in m.group(1).splitlines():
        line = re.sub(r"\(.*?\)", "", line.strip().lstrip("*"))  # drop remarks in parentheses
        head = re.match(r"\s*(\w+):\s*(.*)", line)
        if head:
            layers.append((head.group(1), []))
            line = head.group(2)
        assert layers, f"gm.h's layer block starts with no 'layer:': {line!r}"
        layers[-1][1].extend(w.replace("<stem>", "*") for w in line.split())
    return layers


def units() -> list[str]:
    paths = sorted(ROOT.glob("csrc/**/*.c")) + sorted(ROOT.glob("cuda/*.cu"))
    return [p.relative_to(ROOT).as_posix() for p in paths]


def placement(layers, unit: str):
    """(layer index, position in the layer, layer name, is a lesson pattern) of a unit."""
    for li, (name, entries) in enumerate(layers):      # exact paths first
        if unit in entries:
            return li, entries.index(unit), name, False
    for li, (name, entries) in enumerate(layers):
        for e in entries:
            if "*" in e and fnmatch.fnmatch(unit, e):
                return li, 0, name, True
    return None


def stem(unit: str) -> str:
    return Path(unit).stem


# ---- reading a unit ----------------------------------------------------------------------
def strip_code(text: str) -> str:
    """Comments, strings and char literals blanked (newlines kept)."""
    text = text.replace('extern "C"', "extern_C")
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_preprocessor(code: str) -> str:
    code = re.sub(r"\\\n", "  ", code)
    lines = []
    for line in code.split("\n"):
        s = line.strip()
        # directives, and macro invocations that stand alone at file scope (GM_THUNKS(x))
        if s.startswith("#") or re.fullmatch(r"[A-Z][A-Z0-9_]*\([^;{}]*\)", s):
            line = ""
        lines.append(line)
    return "\n".join(lines)


def definitions(code: str) -> set[str]:
    """The gm_ functions and variables a unit defines at file scope (not static)."""
    code = without_preprocessor(code)
    found: set[str] = set()
    stmt, depth, i, n = [], 0, 0, len(code)
    while i < n:
        c = code[i]
        if c == "{":
            head = "".join(stmt).strip()
            if head.endswith(")") and "=" not in head:           # a function's body
                j, d = i, 0
                while j < n:
                    d += {"{": 1, "}": -1}.get(code[j], 0)
                    if d == 0:
                        break
                    j += 1
                if not re.match(r"(static|typedef)\b", head):
                    name = re.search(r"(\w+)\s*\(", head)
                    if name and name.group(1).startswith("gm_"):
                        found.add(name.group(1))
                stmt, i = [], j + 1
                continue
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";" and depth == 0:
            head = " ".join("".join(stmt).split())
            stmt = []
            i += 1
            if not head or re.match(r"(static|extern|extern_C|typedef)\b", head):
                continue
            fp = re.search(r"\(\s*\*\s*(gm_\w+)\s*\)", head)   # a function pointer variable
            if fp:
                found.add(fp.group(1))
                continue
            decl = re.split(r"[=\[]", head, maxsplit=1)[0]
            if "(" in decl:                                     # a prototype
                continue
            names = re.findall(r"\bgm_\w+", decl)
            if names:
                found.add(names[-1])
            continue
        stmt.append(c)
        i += 1
    return found


def macro_pastes() -> dict[str, list[tuple[str, str]]]:
    """For macros like GM_THUNKS(f): the gm_ names their bodies paste from the argument."""
    out: dict[str, list[tuple[str, str]]] = {}
    for header in (GM_H, ROOT / "cuda" / "gm_kernels.h"):
        text = re.sub(r"\\\n", " ", header.read_text())
        for m in re.finditer(r"#define\s+(GM_\w+)\((\w+)[^)]*\)(.*)", text):
            name, param, body = m.groups()
            pastes = re.findall(r"(\w*)##" + param + r"(?:##(\w+))?", body)
            pastes = [(p, s) for p, s in pastes if (p + "x").startswith("gm_")]
            if pastes:
                out[name] = pastes
    return out


def references(code: str, pastes) -> set[str]:
    refs = set(re.findall(r"\bgm_\w+", code))
    for macro, names in pastes.items():
        for arg in re.findall(r"\b" + macro + r"\(\s*(\w+)", code):
            refs.update(p + arg + s for p, s in names)
    return refs


def read_units():
    pastes = macro_pastes()
    defs, refs = {}, {}
    for u in units():
        code = strip_code((ROOT / u).read_text())
        defs[u] = definitions(code)
        refs[u] = references(code, pastes)
    return defs, refs


# ---- the checks ------------------------------------------------------------------------------
def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one unit (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def layer_violations() -> list[str]:
    layers = declared_layers()
    defs, refs = read_units()
    problems: list[str] = []
    where = {}
    for u in units():
        p = placement(layers, u)
        if p is None:
            problems.append(f"{u}: in no layer -- add it to the gm-layers block of csrc/gm.h")
        where[u] = p
    owner: dict[str, str] = {}
    for u, names in defs.items():
        for s in names:
            if s in owner:
                problems.append(f"{s} is defined by both {owner[s]} and {u}")
            owner[s] = u
    edges: dict[str, set[str]] = {u: set() for u in units()}
    for u in units():
        for s in sorted(refs[u] - defs[u]):
            d = owner.get(s)
            if d is None or d == u:
                continue
            edges[u].add(d)
            pu, pd = where[u], where[d]
            if pu is None or pd is None:
                continue
            (lu, iu, nu, lesson_u), (ld, id_, nd, lesson_d) = pu, pd
            if lesson_u and lesson_d:
                if stem(u) != stem(d):
                    problems.append(f"{u} (lesson {stem(u)}) names {s}, defined by {d}: "
                                    f"another lesson's ({stem(d)})")
                elif not (u.endswith(".c") and d.endswith(".cu")):
                    problems.append(f"{u} names {s}, defined by {d}: a lesson's kernels "
                                    f"(cuda/) do not call its csrc/ file")
            elif (ld, id_) >= (lu, iu):
                what = ("a higher layer" if ld > lu
                        else "a later unit of its own layer" if id_ > iu else "itself")
                problems.append(f"{u} ({nu}, unit {iu + 1}) names {s}, defined by {d} "
                                f"({nd}, unit {id_ + 1}): {what}")
    for comp in circles(edges):
        problems.append("a circle between units: " + " <-> ".join(comp))
    return problems


def test_gm_h_declares_the_layers():
    layers = declared_layers()
    names = [n for n, _ in layers]
    assert names[:3] == ["kernels", "errors", "device"] and names[-1] == "module", names
    for entry in (e for _, es in layers for e in es if "*" not in e):
        assert (ROOT / entry).is_file(), f"gm.h's layer block names {entry}, which is not there"


def test_the_reader_finds_definitions_and_uses():
    code = strip_code('''
        #include "gm.h"
        static int gm_hidden(void) { return 0; }
        int gm_public(int a) { return gm_other(a) + gm_hidden(); }
        PyObject *gm_Error;
        const gm_family gm_table = {"gm_not_this", 1};
        CUresult (*gm_fnptr)(int *);
        int gm_proto(void);
        extern int gm_declared;
        extern "C" cudaError_t gm_launcher(const gm_x_params *p) { return gm_run(k); }
        GM_THUNKS(read_sum)
        const gm_family gm_after_macro = {0};
    ''')
    assert definitions(code) == {"gm_public", "gm_Error", "gm_table", "gm_fnptr",
                                 "gm_launcher", "gm_after_macro"}
    refs = references(code, {"GM_THUNKS": [("gm_", ""), ("gm_", "_kernel")]})
    assert {"gm_other", "gm_read_sum", "gm_read_sum_kernel"} <= refs
    assert "gm_not_this" not in refs


def test_every_unit_calls_only_down():
    problems = layer_violations()
    assert not problems, "C layers broken:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", sorted(ROOT.glob("csrc/**/*.[ch]")) + sorted(ROOT.glob("cuda/*.c*"))
                         + sorted(ROOT.glob("cuda/*.h")), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_c_file_over_800_lines(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(ROOT)} has {n} lines; split it by job (at most {MAX_LINES})"
