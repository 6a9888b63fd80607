"""Every notebook runs end to end: on the model without a GPU, measured with one."""
import os
import pathlib

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_notebooks_are_there():
    names = [p.name for p in NOTEBOOKS]
    assert "01_matmul_naive_vs_tiled.ipynb" in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="pip install '.[test]' brings nbformat")
    nbclient = pytest.importorskip("nbclient", reason="pip install '.[test]' brings nbclient")
    nb = nbformat.read(path, as_version=4)
    import gpumem

    # The kernel imports the same gpumem as this test run (source tree or wheel).
    saved = {k: os.environ.get(k) for k in ("MPLBACKEND", "PYTHONPATH")}
    os.environ["MPLBACKEND"] = "Agg"
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
