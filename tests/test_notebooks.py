"""The notebooks: each is authored once, as a jupytext percent source, and runs end to end.

notebooks/NN_<lesson>.py (percent format) is the text people edit and review;
notebooks/NN_<lesson>.ipynb is the same cells for Jupyter.  These tests check
that the two exist in pairs and hold the same cells (types and sources; outputs
are ignored, so tools/run-notebooks may save executed notebooks), and that
every notebook runs from a clean copy: on the model without a GPU, measured
with one.  After editing a .py: ``jupytext --sync notebooks/NN_<lesson>.py``.
"""
import os
import pathlib

import pytest

import gpumem

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
SOURCES = sorted(NOTEBOOK_DIR.glob("*.py"))
#: Every notebook the lessons declare (gpumem.lessons: LESSON.notebooks), in number order.
LESSONS = sorted(nb for d in gpumem.lessons.declarations() for nb in d.notebooks)


def test_notebooks_are_there():
    assert [p.stem for p in NOTEBOOKS] == LESSONS


def test_every_notebook_has_its_source_and_every_source_its_notebook():
    notebooks = {p.stem for p in NOTEBOOKS}
    sources = {p.stem for p in SOURCES}
    assert not notebooks - sources, f"notebooks without a .py source: {sorted(notebooks - sources)}"
    assert not sources - notebooks, f".py sources without a notebook: {sorted(sources - notebooks)}"


def _cells(nb):
    return [(c.cell_type, c.source) for c in nb.cells]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_matches_its_source(path):
    jupytext = pytest.importorskip("jupytext", reason="pip install '.[test]' brings jupytext")
    nbformat = pytest.importorskip("nbformat", reason="pip install '.[test]' brings nbformat")
    source = path.with_suffix(".py")
    if not source.exists():
        pytest.fail(f"{path.name} has no {source.name}")
    text = jupytext.read(source)
    fmt = text.metadata.get("jupytext", {}).get("text_representation", {}).get("format_name")
    assert fmt == "percent", f"{source.name} is not in jupytext's percent format ({fmt})"
    committed = nbformat.read(path, as_version=4)
    assert "py:percent" in committed.metadata.get("jupytext", {}).get("formats", ""), \
        f"{path.name} is not paired with its percent source (jupytext --set-formats ipynb,py:percent)"
    want, got = _cells(text), _cells(committed)
    hint = f"{path.name} and {source.name} differ: run jupytext --sync notebooks/{source.name}"
    for i, (w, g) in enumerate(zip(want, got)):
        assert g == w, f"{hint} (cell {i}: {g[0]} in the notebook, {w[0]} in the source)"
    assert len(got) == len(want), f"{hint} ({len(got)} cells in the notebook, {len(want)} in the source)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="pip install '.[test]' brings nbformat")
    nbclient = pytest.importorskip("nbclient", reason="pip install '.[test]' brings nbclient")
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:                       # a clean copy, whatever was saved with it
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    import gpumem

    # The kernel imports the same gpumem as this test run (source tree or wheel);
    # the figures for docs/ are tools/run-notebooks' business, not the tests'.
    saved = {k: os.environ.get(k) for k in ("MPLBACKEND", "PYTHONPATH", "GPUMEM_DOCS_DIR")}
    os.environ["MPLBACKEND"] = "Agg"
    os.environ.pop("GPUMEM_DOCS_DIR", None)
    here = os.path.dirname(os.path.dirname(os.path.abspath(gpumem.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, saved["PYTHONPATH"]) if p)
    try:
        client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                         resources={"metadata": {"path": str(tmp_path)}})
        client.execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    # every code cell ran
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code" and c.source.strip())
