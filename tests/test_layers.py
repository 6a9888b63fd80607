"""The package's layers, read from the code itself (``ast`` over every module):

    gpumem._core (C) -> runtime -> tools -> lessons -> face (__init__, report, CLI, experiments)
    gpumem.model: pure Python, imports nothing of gpumem's outside gpumem.model

Every import is resolved (``import gpumem``, ``from gpumem import x``, relative
``from .. import x``, ``importlib.import_module("gpumem.x")`` with a literal
name) and must point down or sideways within a layer, never up; no lesson
imports another lesson; no circle among modules.  And a lesson is a plug-in:
its declaration (``LESSON``) names files that exist, families the core offers,
and everything that lists lessons reads the declarations.  No source file of a
checkout (gpumem/, csrc/, cuda/, tests/, benchmarks/, tools/) has over 800 lines.
"""
from __future__ import annotations

import ast
import importlib
import pathlib
import re

import pytest

import gpumem as gm

ROOT = pathlib.Path(gm.__file__).resolve().parent
REPO = ROOT.parent
SOURCE_TREE = (REPO / "csrc").is_dir()     # the checks on files beside the package
LAYERS = {"_core": 0, "runtime": 1, "tools": 2, "lessons": 3, "face": 4}


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "face"
    if parts[1] in ("_core", "runtime", "tools", "lessons", "model"):
        return parts[1]
    return "face"                       # report, experiments, __main__


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    is_package = MODULES[module].name == "__init__.py"
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str) -> set[str]:
    """The gpumem modules ``module`` imports (top-level or lazily inside functions)."""
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "gpumem"}
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            if target.split(".")[0] != "gpumem":
                continue
            for a in node.names:                       # from gpumem.x import y: y may be a module
                sub = f"{target}.{a.name}"
                found.add(sub if sub in MODULES or sub == "gpumem._core" else target)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and node.args[0].value.startswith("gpumem")):
            found.add(node.args[0].value)
    found.discard(module)
    return found


def _allowed(src: str, dst: str) -> bool:
    a, b = _layer(src), _layer(dst)
    if dst == "gpumem._core":
        return a != "model"
    if a == "model" or b == "model":
        return b == "model" or a != "model"     # the model imports only itself; all may use it
    if dst == "gpumem":
        return a == "face"                      # the package face is the top
    return LAYERS[b] <= LAYERS[a]


def test_every_module_is_in_a_layer():
    assert "gpumem.runtime.launches" in MODULES
    assert all(f"{gm.lessons.__name__}.{stem}" in MODULES for stem in gm.lessons.LESSONS)
    for name in MODULES:
        assert _layer(name) in (*LAYERS, "model"), name


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_call_down(module):
    bad = sorted(d for d in imports(module) if not _allowed(module, d))
    assert not bad, f"{module} ({_layer(module)}) imports upward: {bad}"


def test_no_lesson_imports_another_lesson():
    for module in MODULES:
        if _layer(module) != "lessons" or module == "gpumem.lessons":
            continue
        other = sorted(d for d in imports(module)
                       if d.startswith("gpumem.lessons.") and d != module)
        assert not other, f"{module} imports another lesson: {other}"


def test_no_circle_among_modules():
    graph = {m: {d for d in imports(m) if d in MODULES} for m in MODULES}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if d == "gpumem" or m == "gpumem":
                continue                         # the face imports everything; nothing imports it
            if state.get(d) == 1:
                raise AssertionError("import circle: " + " -> ".join(path + [m, d]))
            if d not in state:
                visit(d, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_the_layer_test_catches_an_upward_import(tmp_path, monkeypatch):
    # a runtime module importing the face, a tool importing a lesson, the model importing _core
    lesson = f"{gm.lessons.__name__}.{gm.lessons.LESSONS[0]}"
    for src, dst in (("gpumem.runtime.launches", "gpumem"),
                     ("gpumem.tools.sweep", lesson),
                     ("gpumem.model.coalescing", "gpumem._core"),
                     (lesson, "gpumem.report")):
        assert not _allowed(src, dst), (src, dst)
    fake = tmp_path / "gpumem" / "runtime" / "launches.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("import gpumem\nfrom .. import lessons\n")
    monkeypatch.setitem(MODULES, "gpumem.runtime.launches", fake)
    assert imports("gpumem.runtime.launches") == {"gpumem", "gpumem.lessons"}


# ---- a lesson is a plug-in ------------------------------------------------------------------
DECLARED = gm.lessons.declarations()


def test_lessons_are_the_modules_of_the_lessons_package():
    on_disk = {p.stem for p in (ROOT / "lessons").glob("*.py") if p.stem != "__init__"}
    assert set(gm.lessons.LESSONS) == on_disk
    assert [d.name for d in DECLARED] == list(gm.lessons.LESSONS)


def test_every_family_belongs_to_exactly_one_lesson():
    owners: dict[str, str] = {}
    for d in DECLARED:
        for f in d.families:
            assert f not in owners, f"{f} declared by {owners[f]} and {d.name}"
            owners[f] = d.name
    assert set(owners) == {v.family for v in gm.variants()}


def test_every_lesson_declares_what_the_rest_needs():
    for d in DECLARED:
        module = importlib.import_module(f"gpumem.lessons.{d.name}")
        assert d.idea and d.families and d.exports and d.notebooks, d.name
        assert callable(d.sanitize), f"{d.name} declares no sanitizer calls"
        assert callable(d.headline), f"{d.name} declares no report headline"
        assert callable(d.report_sweeps), f"{d.name} declares no report sweeps"
        for name in d.exports + d.sweeps:
            assert callable(getattr(module, name)), f"{d.name}.{name}"
            assert name in module.__all__, f"{d.name}.__all__ lacks {name}"
        for name in d.exports:
            assert getattr(gm, name) is getattr(module, name)
        assert set(d.model) <= set(gm.model.families()), d.name


@pytest.mark.skipif(not SOURCE_TREE, reason="the files beside the package: a source checkout")
def test_every_lesson_is_one_stem_in_every_folder():
    for d in DECLARED:
        assert (REPO / "cuda" / f"{d.name}.cu").is_file(), d.name
        assert (REPO / "csrc" / "lessons" / f"{d.name}.c").is_file(), d.name
        assert (REPO / "tests" / f"test_{d.name}.py").is_file(), d.name
        for nb in d.notebooks:
            assert re.fullmatch(r"\d\d_" + d.name + r"(_\w+)?", nb), nb
            assert (REPO / "notebooks" / f"{nb}.ipynb").is_file(), nb
        if d.benchmark:
            assert (REPO / "benchmarks" / f"bench_{d.benchmark}.py").is_file(), d.benchmark
    stems = {p.stem for p in (REPO / "csrc" / "lessons").glob("*.c")}
    assert stems == set(gm.lessons.LESSONS)


def test_the_report_and_its_sweeps_come_from_the_lessons():
    from gpumem import report

    assert [name for name, _ in report.HEADLINES] == ["device"] + [
        d.name for d in DECLARED if d.headline]
    for d in DECLARED:
        assert dict(report.HEADLINES)[d.name] is d.headline, d.name
        assert report.SWEEPS[d.name] is d.report_sweeps, d.name
    assert list(report.SWEEPS) == ["device"] + [d.name for d in DECLARED if d.report_sweeps]


@pytest.mark.skipif(not SOURCE_TREE, reason="the README beside the package: a source checkout")
def test_readme_lists_every_lesson_with_its_stems():
    text = (REPO / "README.md").read_text()
    for d in DECLARED:
        row = next((line for line in text.splitlines()
                    if line.startswith(f"| `{d.name}` |")), None)
        assert row is not None, f"README's lesson table has no row for {d.name}"
        assert d.idea in row, f"README's {d.name} row does not say the declared idea"
        for nb in d.notebooks:
            assert nb in row, f"README's {d.name} row does not name {nb}"


# ---- no source file over 800 lines (issue 48) ---------------------------------------------
MAX_LINES = 800
#: The folders of a checkout held to it, and the files in them that count (any depth).
SOURCE_DIRS = ("gpumem", "csrc", "cuda", "tests", "benchmarks", "tools")
SOURCE_SUFFIXES = (".py", ".c", ".h", ".cu", ".cuh")


def long_files(repo: pathlib.Path, limit: int = MAX_LINES) -> list[str]:
    """``"path: N lines"`` for every source file under :data:`SOURCE_DIRS` of ``repo``
    with more than ``limit`` lines, in path order."""
    found = []
    for folder in SOURCE_DIRS:
        for path in sorted((repo / folder).rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and path.is_file():
                n = len(path.read_text(errors="replace").splitlines())
                if n > limit:
                    found.append(f"{path.relative_to(repo).as_posix()}: {n} lines")
    return found


@pytest.mark.skipif(not SOURCE_TREE, reason="the sources beside the package: a source checkout")
def test_no_source_file_over_800_lines():
    found = long_files(REPO)
    assert not found, (f"over {MAX_LINES} lines -- split each into cohesive modules:\n  "
                       + "\n  ".join(found))


def test_the_line_limit_names_each_long_file_and_its_count(tmp_path):
    for rel, n in (("tests/deep/x.py", 801), ("cuda/y.cuh", 800), ("csrc/z.h", 900),
                   ("tools/w.txt", 900), ("docs/v.py", 900), ("gpumem/u.c", 1)):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * n)
    assert long_files(tmp_path) == ["csrc/z.h: 900 lines", "tests/deep/x.py: 801 lines"]


# ---- a lesson is a plug-in in the tests too (issue 48) ------------------------------------------
#: The test files every lesson shares: they iterate over gpumem.lessons.declarations() (what
#: a lesson declares: headline, card, sweeps, sanitizer calls, modelled families, stand-ins,
#: argument strategies, model launches) and name no lesson, so adding a lesson edits none.
SHARED_TESTS = ("test_report.py", "test_report_output.py", "test_properties.py",
                "model/test_predict.py", "test_layers.py", "test_notebooks.py", "_fake_gpu.py",
                "_helpers.py", "test_profile_mixed.py")
#: Every lesson's stem and family names.
LESSON_NAMES = {d.name for d in DECLARED} | {f for d in DECLARED for f in d.families}
#: Names of a lesson that are also plain words, allowed as a word of prose (a string with a
#: space: "each SM its own copy"), and those allowed as a whole string too: the report's card
#: figure names its two panels so (report.card_figure).
GENERIC_WORDS = {"copy", "latency", "bandwidth"}
REPORT_WORDS = {"latency", "bandwidth"}


def _gpumem_aliases(tree: ast.AST) -> set[str]:
    """The names a file binds to gpumem or its modules (``import gpumem as gm``, ``from
    gpumem import report`` ...): the roots of references into the package."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names
                    if a.name.split(".")[0] == "gpumem"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gpumem":
            out |= {a.asname or a.name for a in node.names}
    return out


def lesson_references(text: str, names: set[str], prose: set[str] = frozenset(),
                      whole: set[str] = frozenset()) -> list[str]:
    """Where Python source ``text`` names one of ``names``: a word of a string literal
    (f-strings' literal parts too; a word of ``prose`` in a string with a space, or a
    string that is a word of ``whole``, does not count), an attribute of gpumem or one of
    its modules (``gm.<name>``), an import of it (``from gpumem.lessons import <name>``,
    ``import gpumem.lessons.<name>``).  Comments are not code, nor are the words this
    check allows (the assignments of :data:`GENERIC_WORDS` and :data:`REPORT_WORDS`)."""
    tree = ast.parse(text)
    roots = _gpumem_aliases(tree)
    allowed = {id(c) for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and any(getattr(t, "id", "") in ("GENERIC_WORDS", "REPORT_WORDS")
                       for t in node.targets)
               for c in ast.walk(node.value)}
    found = []
    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value):
                if node.value in whole or (word in prose and " " in node.value.strip()):
                    continue
                if word in names:
                    found.append(f"{where}: {word!r} in the string {node.value[:60]!r}")
        elif isinstance(node, ast.Attribute) and node.attr in names:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in roots:
                found.append(f"{where}: {ast.unparse(node)}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for a in node.names:
                parts = set(f"{module}.{a.name}".split(".")) if module.startswith("gpumem") \
                    or a.name.startswith("gpumem") else set()
                for word in sorted(parts & names):
                    found.append(f"{where}: imports {word}")
    return found


@pytest.mark.skipif(not SOURCE_TREE, reason="the tests beside the package: a source checkout")
@pytest.mark.parametrize("path", SHARED_TESTS)
def test_no_shared_test_file_names_a_lesson(path):
    text = (REPO / "tests" / path).read_text()
    found = lesson_references(text, LESSON_NAMES, GENERIC_WORDS, REPORT_WORDS)
    assert not found, f"tests/{path} names a lesson (declare it in its Lesson instead):\n" + \
        "\n".join(found[:20])


def test_the_lesson_name_check_finds_each_kind_of_reference():
    stem, family = DECLARED[0].name, DECLARED[-1].families[0]
    names = {stem, family}
    for text in (f"x = {stem!r}", f"x = f'{{y}} {family} run'", f"x = 'a {stem}.png'",
                 f"import gpumem as gm\ngm.{family}(1)",
                 f"from gpumem import report\nreport.{family}",
                 f"from gpumem.lessons import {stem}", f"import gpumem.lessons.{stem}",
                 f"m = sys.modules['gpumem.lessons.{stem}']"):
        assert lesson_references(text, names), text
    for text in ("x = d.copy()", f"x = '{stem}_suffix'", f"# {stem} in a comment",
                 f"np.{family}", "import gpumem\nx = gpumem.lessons.declarations()"):
        assert not lesson_references(text, names), text
    # a plain word in prose; a whole string only where the report uses the word itself
    assert not lesson_references(f"x = 'a {stem} of it'", names, prose={stem})
    assert lesson_references(f"x = '{stem}'", names, prose={stem})
    assert not lesson_references(f"x = '{stem}'", names, whole={stem})
    assert lesson_references(f"import gpumem as gm\ngm.{stem}", names, {stem}, {stem})
    assert REPORT_WORDS <= GENERIC_WORDS <= LESSON_NAMES      # still a lesson's: say why above
