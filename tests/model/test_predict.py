"""gpumem.model.predict over every family the lessons model (``Lesson.model``): what a
prediction costs at the largest launches gpumem accepts (``Lesson.model_launches``), its
integer counts, the arguments it refuses, what it names -- and, on a GPU, every family
against Nsight Compute (``Lesson.model_counters``).  A lesson is a plug-in here: this file
names none; a family's own closed forms, refusals and launch configurations are tested in
its lesson's ``tests/test_<lesson>.py``."""
import functools
import time
from collections import namedtuple

import numpy as np
import pytest

import gpumem
from gpumem import model
from gpumem.model import predict

from ._ncu import (AVERAGES, COUNTERS, EXACT, LDGSTS_COUNTERS, PCT_TOL, SHARED_COUNTERS,
                   SHARED_OVER, case, dims, merge_helpers, number, require_family,
                   reweigh_load_average, run_ncu)

DECLARED = gpumem.lessons.declarations()
#: Every lesson's model launches: "largest", "large", "copy_engine", "left_out".
LAUNCHES = {d.name: d.model_launches() for d in DECLARED if d.model_launches}
LARGEST = [x for got in LAUNCHES.values() for x in got["largest"]]
LARGE = [x for got in LAUNCHES.values() for x in got["large"]]
ENGINE = {tuple(x) for got in LAUNCHES.values() for x in got["copy_engine"]}
#: One launch of each family at the large sizes: the family's arguments, as predict takes them.
ONE = list({f: (f, v, p) for f, v, p in reversed(LARGE)}.values())


# ---- the lessons' model families and launches ---------------------------------------------
def test_every_modelled_family_is_one_lessons_and_has_its_launches():
    modelled = [f for d in DECLARED for f in d.model]
    assert sorted(modelled) == sorted(model.families())           # each family once
    for d in DECLARED:
        if not d.model:
            assert d.model_launches is None, d.name
            continue
        got = LAUNCHES[d.name]
        largest = {(f, v) for f, v, _ in got["largest"]}
        # the same variants at both sizes, every variant of each family named, the rest
        # of the lesson's families left out with a reason
        assert largest == {(f, v) for f, v, _ in got["large"]}, d.name
        named = {f for f, _ in largest}
        assert named | set(got["left_out"]) == set(d.model) and not named & set(got["left_out"])
        assert all(why for why in got["left_out"].values()), d.name
        for f in named:
            assert {v for g, v in largest if g == f} == set(model.families()[f]), (d.name, f)
        assert {tuple(x) for x in got["copy_engine"]} <= largest, d.name
    assert len(LARGEST) >= len(LARGE) >= len(model.families())


# ---- what a prediction costs, and the launches gpumem cannot make -----------------
def test_predict_at_the_largest_launch_takes_under_a_second_and_100_mb():
    import tracemalloc

    f, v, p = LARGE[0]
    predict(f, v, **p)                                          # warm-up: imports, caches
    for family, variant, p in LARGEST + LARGE:
        for g in (32, 128):
            tracemalloc.start()
            try:
                t0 = time.perf_counter()
                r = predict(family, variant, granularity=g, **p)
                dt = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert dt < 1.0, (family, variant, p, dt)
            assert peak < 100 * 2 ** 20, (family, variant, p, peak)
            # the copy engine's reads are no LSU load requests
            engine = (family, variant) in ENGINE
            assert (r["gld_requests"] > 0 or engine) and r["gst_requests"] > 0


def test_predict_returns_int_counts_and_percentages_to_four_places():
    assert model.DECIMALS == 4
    for family, variant, p in LARGE:
        r = predict(family, variant, **p)
        for key in model.METRICS:
            if key.endswith(("efficiency", "per_request")):
                assert type(r[key]) is float and r[key] == round(r[key], 4), (family, key)
            else:
                assert type(r[key]) is int, (family, key)
        # every key of METRICS, in that order, then what the family adds
        assert tuple(r)[:len(model.METRICS)] == model.METRICS, family


def test_predict_refuses_wrong_types_naming_the_argument():
    family, variant, p = LARGE[0]
    with pytest.raises(TypeError, match="model.predict: family must be a str, not list"):
        predict([family], variant, **p)
    with pytest.raises(TypeError, match="model.predict: variant must be a str, not int"):
        predict(family, 1, **p)
    with pytest.raises(TypeError, match="model.predict: granularity must be an int"):
        predict(family, variant, granularity=32.0, **p)
    for family, variant, p in LARGE:
        for name in p:
            for bad in (True, 4.0, "4", None):
                with pytest.raises(TypeError, match=rf"{name} must be an int"):
                    predict(family, variant, **{**p, name: bad})
        # NumPy integers are integers, everywhere
        assert predict(family, variant, **{k: np.int64(x) for k, x in p.items()}) == \
            predict(family, variant, **p), (family, variant)


def test_predict_record_names_itself():
    for bad in (None, 3, {"kernel": LARGE[0][0]}):
        with pytest.raises(TypeError, match="model.predict_record: record must be a "
                                            "gpumem.LaunchRecord"):
            model.predict_record(bad)


# ---- families, variants, parameters -------------------------------------------
def test_predict_names_what_is_allowed():
    with pytest.raises(ValueError, match="family='nope'") as e:
        predict("nope", "x", n=1)
    assert all(repr(f) in str(e.value) for f in model.families())
    for family, variant, p in ONE:
        with pytest.raises(ValueError, match=rf"variant='nope' is unknown for family "
                                             rf"'{family}'") as e:
            predict(family, "nope", **p)
        assert all(repr(v) in str(e.value) for v in model.families()[family][:3])
        with pytest.raises(ValueError, match=rf"parameter 'bogus' is unknown for "
                                             rf"{family}/{variant}; allowed: .*") as e:
            predict(family, variant, bogus=1, **p)
        assert all(k in str(e.value) for k in p), (family, str(e.value))
        required = 0
        for k in p:              # each parameter left out: a default, or named as needed
            without = {x: y for x, y in p.items() if x != k}
            try:
                predict(family, variant, **without)
            except ValueError as e:
                assert f"{family}/{variant} needs parameter '{k}'" in str(e), (family, k, e)
                required += 1
        assert required, family               # a size, at least
        with pytest.raises(ValueError, match="granularity"):
            predict(family, variant, granularity=64, **p)


def test_predict_takes_a_launch_record():
    rec = namedtuple("Rec", "kernel variant params")
    for family, variant, p in LARGE:
        assert model.predict_record(rec(family, variant, dict(p))) == \
            predict(family, variant, **p), (family, variant)


def test_families_are_what_the_model_modules_declare():
    """The registry is not a hand list: every module of gpumem.model with FAMILIES
    (one per lesson that models, named as the lesson) contributes its families, in
    module-name order."""
    import importlib
    import pkgutil

    declared = {}
    for info in sorted(pkgutil.iter_modules(model.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            module = importlib.import_module(f"gpumem.model.{info.name}")
            for family, spec in getattr(module, "FAMILIES", {}).items():
                declared[family] = tuple(spec["variants"])
    assert list(model.families().items()) == list(declared.items())
    assert {d.name for d in DECLARED if d.model} == {
        info.name for info in pkgutil.iter_modules(model.__path__)
        if hasattr(importlib.import_module(f"gpumem.model.{info.name}"), "FAMILIES")}
    for d in DECLARED:                       # a lesson's model module holds its families
        if d.model:
            module = importlib.import_module(f"gpumem.model.{d.name}")
            assert set(d.model) == set(module.FAMILIES), d.name


# ==== on the GPU: the model against Nsight Compute ==================================
# (the assumptions these launches check are listed in _ncu.py; the launches are each
# lesson's Lesson.model_counters)
#: The lesson whose model_counters name each family's launches.
COUNTED = {f: d for d in reversed(DECLARED) if d.model_counters
           for f, _, _ in d.model_counters(None)["cases"]}
_LOAD_AVERAGE = next(iter(AVERAGES))          # the load counters' bytes per sector
_EXTRA = tuple(LDGSTS_COUNTERS.values()) + tuple(SHARED_COUNTERS.values())


@functools.cache
def _family(family):
    """A family's launches (as ``case`` dicts), their predictions and the counters to read:
    the load and store counters, and cp.async and shared memory where its predictions
    count them."""
    declared = COUNTED[family].model_counters(tuple(gpumem.device().compute_capability))
    cases = [case(f, v, **p) for f, v, p in declared["cases"] if f == family]
    wants = [model.predict(c["family"], c["variant"], **c["params"]) for c in cases]
    extra = any(k in w for w in wants for k in _EXTRA)
    counters = dict(COUNTERS, **(dict(LDGSTS_COUNTERS, **SHARED_COUNTERS) if extra else {}))
    return declared, cases, wants, counters


#: Nsight Compute's launches of each family, filled by one ncu process per counter set:
#: every family read with the same counters runs in one process (each process costs a few
#: seconds of start-up, as much as a family's launches).
_PROFILED: dict[str, list] = {}


def _profiled(family, tmp_path_factory):
    if family not in _PROFILED:
        counters = _family(family)[3]
        group = [f for f in sorted(COUNTED) if f not in _PROFILED and _family(f)[3] == counters]
        cases = [c for f in group for c in _family(f)[1]]
        hw = run_ncu(cases, tmp_path_factory.mktemp("ncu"), list(counters))
        for f in group:                    # a family's kernels are named after it
            _PROFILED[f] = [h for h in hw if f in h["kernel"] or
                            any(helper in h["kernel"] for helper in _family(f)[0]["helpers"])]
    return _PROFILED[family]


@pytest.mark.gpu
@pytest.mark.parametrize("family", sorted(COUNTED))
def test_model_equals_nsight_compute(family, tmp_path_factory):
    require_family(family)
    declared, cases, wants, counters = _family(family)
    hw = _profiled(family, tmp_path_factory)
    for helper in declared["helpers"]:
        hw = merge_helpers(hw, helper, list(counters))
    assert len(hw) == len(cases), (
        f"{len(cases)} {family} launches made, {len(hw)} profiled: "
        f"{[h['kernel'] for h in hw][:5]} ...")
    bad = []
    for c, h, want in zip(cases, hw, wants):
        cfg = model.launch_config(c["family"], c["variant"], **c["params"])
        # a call whose own kernel both loads and copies by 16-byte cp.async, after a helper
        if ("helpers" in h and want.get("gldgsts_transactions")
                and number(h["own"][_LOAD_AVERAGE])):
            reweigh_load_average(h, want["gld_transactions"] - want["gldgsts_transactions"])
        where = f"{c['variant']} {c['params']}"
        if h["grid"] and (dims(h["grid"]), dims(h["block"])) != (cfg["grid"], cfg["block"]):
            bad.append(f"{where}: launched grid {h['grid']} block {h['block']}, model "
                       f"assumes {cfg}")
            continue
        for metric, key in counters.items():
            got = number(h[metric])
            exp = want.get(key, 0) if metric in LDGSTS_COUNTERS else want[key]
            if key == "gldgsts_transactions" and exp:
                continue                  # 16-byte copies: not exact on the H100 (_ncu.py)
            over = declared["over"].get((c["variant"], key), SHARED_OVER.get(key))
            if over is not None:          # the model a floor (the lesson says why)
                ok = exp <= got <= exp * (1 + over)
            else:
                ok = got == exp if key in EXACT else abs(got - exp) <= PCT_TOL
            if not ok:
                bad.append(f"{where}: {key} hardware {got:g}, model {exp:g}")
    assert not bad, f"{len(bad)} mismatches of {len(cases)} launches:\n" + "\n".join(bad[:40])
