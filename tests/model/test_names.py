"""gpumem.model.names and the variant names each kernel model declares: the same
as the core's (no GPU needed, only the built extension) -- and the model itself
imports nothing of gpumem outside gpumem.model."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import gpumem
from gpumem import _core, model
from gpumem.model.names import CACHE_PATHS

MODEL = Path(model.__file__).resolve().parent


def test_model_names_come_from_the_core():
    # every modelled family's variants, in the core's order (gm_kernels.h's enums)
    for family, variants in model.families().items():
        assert variants == tuple(row[1] for row in _core.variants(family)), family


def test_model_cache_paths_are_the_cores():
    # read_offset's load paths, in gm_cache_path order
    assert CACHE_PATHS == tuple(_core.CACHE_PATHS)


def test_model_variant_names_are_gpumem_variant_names():
    have = {}
    for v in gpumem.variants():
        have.setdefault(v.family, set()).add(v.name)
    for family, variants in model.families().items():
        assert family in have, family
        assert set(variants) == have[family], family
    assert {"vec_add", "matmul"} <= set(have)


def test_the_model_imports_only_itself_numpy_and_the_standard_library():
    allowed = set(sys.stdlib_module_names) | {"numpy"}
    for path in sorted(MODEL.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                # relative: from this package only (level 1), never gpumem's others
                assert node.level == 1, f"{path.name}:{node.lineno} imports from outside the model"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module])
                for name in names:
                    top = name.split(".")[0]
                    assert top in allowed or top == "__future__", \
                        f"{path.name}:{node.lineno} imports {name}"


def test_the_model_runs_without_the_core():
    """gpumem.model imported on its own (gpumem's __init__ and _core never loaded)
    predicts and lists its families."""
    code = f"""
import sys, types
pkg = types.ModuleType("gpumem")
pkg.__path__ = [{str(MODEL.parent)!r}]
sys.modules["gpumem"] = pkg
import gpumem.model as m
assert m.predict("read_offset", "unroll1", n=2**24, offset=11)["gld_transactions"] == 5242876
assert len(m.families()) >= 10 and m.occupancy("9.0", 256, 32, 0).occupancy == 1.0
loaded = sorted(k for k in sys.modules
                if k.startswith("gpumem") and not k.startswith("gpumem.model"))
assert loaded == ["gpumem"], loaded
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=str(MODEL.parent.parent))


def test_the_rings_limits_are_the_latency_kernels():
    # the model restates the latency kernel's limits (it never imports _core): checked here
    from gpumem import _core
    from gpumem.model import ring

    rows = {r["name"]: r for r in _core.args("latency")}
    assert (ring.MAX_WORKING_SET, ring.MAX_STRIDE, ring.MAX_STEPS, ring.MAX_WARMUP) == (
        rows["working_set"]["hi"], rows["stride"]["hi"], rows["steps"]["hi"],
        rows["warmup"]["hi"])


def test_the_models_defaults_are_the_c_tables():
    # every modelled family's parameter that is an argument of the kernel's C table: the
    # same default where both state one, and a range that takes every value the kernel does
    from gpumem.model import _launch, registry

    compared = 0
    for family, spec in registry._registry().items():
        rows = {r["name"]: r for r in _core.args(family)}
        limits = {**_launch.RANGES, **spec.get("limits", {})}
        for key, default in spec["params"].items():
            r = rows.get(key)
            if r is None:
                continue
            if default not in (None, _launch.REQUIRED) and r["default"] is not None:
                assert default == r["default"], (family, key, default, r)
                compared += 1
            if key in limits and r["lo"] is not None:
                lo, hi = limits[key]
                assert lo <= r["lo"] and r["hi"] <= hi, (family, key, limits[key], r)
    assert compared >= 20


def test_the_models_restated_rules_are_the_kernels():
    # the model restates these C table rows (it never imports _core): checked here
    from gpumem.model import async_copy, clusters, dram, l2_persistence

    def row(family, name):
        return next(r for r in _core.args(family) if r["name"] == name)

    assert l2_persistence.MAX_REUSE == row("hot_cold", "reuse")["hi"]
    assert clusters.STREAM_VARIANTS == row("dsmem_stream", "variant")["choices"]
    assert clusters.HISTOGRAM_VARIANTS == row("cluster_histogram", "variant")["choices"]
    assert dram._PIECES == row("dram_burst", "piece")["allowed"]
    for family in ("dram_stream", "dram_burst", "dram_channels"):   # the model's _block rule
        r = row(family, "block")
        assert r["whole_warps"] and (r["lo"], r["hi"]) == (dram.BLOCK_MIN, dram.BLOCK_MAX), r
    assert async_copy.TILES_PER_BLOCK == row("tile_copy", "tiles")["default"]
    for family in ("tile_copy", "tile_transpose"):
        assert async_copy.VARIANTS == row(family, "variant")["choices"]
        taken = set()
        for tiles in range(1, 2 * max(row(family, "tiles")["allowed"]) + 1):
            try:
                model.predict(family, "ldg_sts", m=32, n=32, tiles=tiles)
            except ValueError:
                continue
            taken.add(tiles)
        assert taken == set(row(family, "tiles")["allowed"]), family
