"""Random values and types at every public function (issue 11).

Each call either runs (with a GPU), raises CudaUnavailableError (no GPU, valid
arguments; FileNotFoundError for compiler_report without cuobjdump), or raises
TypeError / ValueError whose message names the function and an argument --
never another exception, and never (without a GPU, or on an error path) more
than a second of CPU time (time.process_time: not the wall clock, which other
processes on the machine stretch) or 200 MB.  Derandomized, no example database: CI sees the same
calls every run.  gpumem.model has its own tests (tests/test_model.py); the
sweeps here ask a stand-in model, so what is timed is gpumem's own handling.

Every lesson is a plug-in here: the functions, the words, the kernels passed to
bench, the valid values of shapes the C tables cannot say (``Lesson.arguments``)
and the cheap measurements on a GPU (``Lesson.cheap``) come from
``gpumem.lessons.declarations()``; this file names no lesson.
"""
from __future__ import annotations

import ast
import inspect
import os
import re
import time
import tracemalloc
import typing
import warnings

import numpy as np
import pytest

import importlib

import gpumem as gm
from _helpers import base_call, kernel_functions, simplest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

GPU = gm.is_available()
SECONDS, BYTES = 1.0, 200 * 2**20

# ---- the functions --------------------------------------------------------------------------
_CLASSES = {"Table"}          # constructors that take user input (the rest are results)
_LEAVE_OUT = {"profiler_available"}  # no arguments (and profiles a launch on a GPU)


def _public() -> dict[str, object]:
    out = {}
    stems = ["", ".tools.introspect", ".experiments", ".runtime.counters"] + [
        f".lessons.{name}" for name in gm.lessons.LESSONS]
    for stem in stems:
        mod = importlib.import_module("gpumem" + stem)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if name in _LEAVE_OUT or not callable(obj):
                continue
            if inspect.isclass(obj) and name not in _CLASSES:
                continue
            out.setdefault(name, obj)
    return out


FUNCTIONS = _public()


def _table() -> gm.Table:
    return gm.Table([{"x": 1, "y": 2.5, "k": "a"}, {"x": 2, "y": 3.5, "k": "b"}])


METHODS = {"Table.plot": lambda *a, **k: _table().plot(*a, **k),
           "Table.panels": lambda *a, **k: _table().panels(*a, **k),
           "Table.__getitem__": lambda *a, **k: _table().__getitem__(*a, **k)}

# ---- the values -------------------------------------------------------------------------------
_INTS = [-2**63, -1, 0, 1, 2, 3, 4, 7, 8, 11, 16, 31, 32, 33, 64, 100, 256, 1000, 1024, 1025,
         2**40, 2**64]
_NP_INTS = [np.int8(4), np.int64(32), np.uint64(256), np.int32(-1), np.int64(2**40)]
_ODD = [0.5, float("nan"), float("inf"), -1.0, 1e300, 32.0, "", "x", "default", "read",
        "gld_efficiency", None, True, False,
        np.True_, [], [1, 2], [0], ["a"], [None], (32, 64), {"a": 1}, range(3), range(2**40),
        b"bytes", 1 + 2j, object()]
DECLARED = gm.lessons.declarations()
_FAMILIES = [f for d in DECLARED for f in d.families]
#: Words an argument may take: every family, variant and choice the lessons declare.
_WORDS = sorted(set(_FAMILIES) | {v.name for v in gm.variants()} | {
    c for f in _FAMILIES for r in gm._core.args(f) for c in (r["choices"] or ())})
_NAMES = ["block", "tile", "items", "n", "variant", "bogus", "offset", "stride"]


def _arrays() -> list:
    f32 = np.float32
    out = [np.ones(0, f32), np.ones(1, f32), np.ones(33, f32), np.linspace(0, 1, 256, dtype=f32),
           np.ones(256), np.arange(64, dtype=np.int32), np.ones((4, 4), f32),
           np.ones((64, 8), f32), np.ones((3, 5), bool), np.ones(8, np.complex64),
           np.array([1, None], dtype=object), np.array(3.0, f32), np.ones(64, f32)[::2],
           np.full(9, np.nan, f32), np.array(["a", "b"]), np.ones((2, 0), f32),
           np.ones((8, 2), f32), np.ones((3, 8), f32)]
    if GPU:
        out += [gm.to_device(np.ones(64, f32)), gm.to_device(np.ones((4, 4), f32))]
    return out


def _lesson_kernels() -> list:
    """Every lesson's family functions (what bench and block_size_sweep take)."""
    out = []
    for d in DECLARED:
        module = importlib.import_module(f"{gm.lessons.__name__}.{d.name}")
        out += [getattr(module, f) for f in d.families if callable(getattr(module, f, None))]
    return out


_KERNELS = _lesson_kernels() + [lambda *a, **k: None, len, 3, None]
VALUES = st.one_of(st.sampled_from(_INTS), st.sampled_from(_NP_INTS), st.sampled_from(_ODD),
                   st.sampled_from(_WORDS),
                   st.sampled_from(_arrays()), st.sampled_from(_KERNELS),
                   st.integers(-2**70, 2**12), st.integers(2**63, 2**70))  # valid sizes stay small


# ---- one call -----------------------------------------------------------------------------
class _StandIn:
    """A cheap model for the sweeps (gpumem.model's cost is its own tests' business)."""

    @staticmethod
    def predict(family, variant, **params):
        return {m: 1.0 for m in gm.experiments.METRICS}


@pytest.fixture(autouse=True)
def _cheap_model(monkeypatch):
    import gpumem.tools.sweep as sweep

    monkeypatch.setattr(sweep, "_model_predict", lambda: _StandIn.predict)
    import matplotlib

    matplotlib.use("Agg")


def _show(name: str, args: tuple, kw: dict) -> str:
    """The call, short (arrays summarised)."""
    with np.printoptions(threshold=8, edgeitems=2):
        s = f"{name}(*{args!r}, **{kw!r})"
    return " ".join(s.split())[:300]


def _call(name: str, fn, args: tuple, kw: dict, passed: set[str]) -> None:
    import matplotlib.pyplot as plt

    call = _show(name, args, kw)
    if os.environ.get("GPUMEM_SHOW_CALLS"):
        print("CALL", call, flush=True)
    tracemalloc.start()
    t0 = time.process_time()    # CPU seconds: other processes on the machine do not count
    ran = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kw)
        ran = True
    except MemoryError as e:  # valid, but more than the GPU holds or the host will pin
        assert GPU and ("out of device memory" in str(e) or "would not lock" in str(e)), \
            f"{call}: {e!r}"
    except (gm.CudaUnavailableError, FileNotFoundError) as e:
        assert not GPU or isinstance(e, FileNotFoundError), f"{name}: {e!r} with a GPU"
    except KeyError as e:      # t[column]: a missing column, as a mapping says it
        assert name == "Table.__getitem__" and "no column" in str(e), f"{call}: {e!r}"
    except (TypeError, ValueError) as e:
        msg = str(e)
        short = name.split(".")[0]
        # bench(fn, ...) and block_size_sweep(fn, ...) pass on the kernel's own error,
        # which names the kernel and its argument
        kernels = {getattr(a, "__name__", "") for a in args} - {""}
        words = set(msg.replace("(", " ").replace(":", " ").split())
        own = bool(kernels & words) and short in ("bench", "block_size_sweep")
        assert short in msg or own, \
            f"{call} raised {type(e).__name__} not naming the function: {msg}"
        assert own or not passed or any(p in msg for p in passed) or "argument" in msg, \
            f"{call} raised {type(e).__name__} naming none of {passed}: {msg}"
    finally:
        seconds = time.process_time() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        plt.close("all")
    if ran and GPU:
        return        # real work on a GPU may take its time
    assert seconds < SECONDS, f"{call} took {seconds:.2f} s"
    assert peak < BYTES, f"{call} took {peak / 2**20:.0f} MB"


# With a GPU the valid calls really run (sweeps, benches): fewer examples keep the
# suite's time on the device machine in bounds (15 draws of each function run on the
# hardware; the 150 of the run without a GPU test what is refused, which is the same code).
_SETTINGS = settings(max_examples=15 if GPU else 150, derandomize=True, database=None,
                     deadline=None,
                     suppress_health_check=list(HealthCheck))


@pytest.fixture
def cheap_measurements(monkeypatch, request):
    """On a GPU a valid call really runs: where one would measure for long (a sweep of
    chases, a GiB copy), the stand-ins its lesson declares for it (``Lesson.cheap``)."""
    if not GPU:
        return
    name = request.node.callspec.params["name"]
    for d in DECLARED:
        if d.cheap is None:
            continue
        module = importlib.import_module(f"{gm.lessons.__name__}.{d.name}")
        for attr, new in d.cheap(name).items():
            monkeypatch.setattr(module, attr, new)


@pytest.mark.parametrize("name", sorted(FUNCTIONS) + sorted(METHODS))
@_SETTINGS
@given(data=st.data())
def test_random_arguments(name, data, cheap_measurements):
    fn = FUNCTIONS.get(name) or METHODS[name]
    target = fn if name in FUNCTIONS else getattr(gm.Table, name.split(".")[1])
    params = [p for p in inspect.signature(target).parameters.values() if p.name != "self"]
    args, kw, passed = [], {}, set()
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            args += data.draw(st.lists(VALUES, max_size=3), label=p.name)
            continue
        if p.kind is p.VAR_KEYWORD and name == "Table.plot":
            continue                     # matplotlib's own keywords, passed through
        if p.kind is p.VAR_KEYWORD:
            extra = data.draw(st.dictionaries(st.sampled_from(_NAMES), VALUES, max_size=2),
                              label=p.name)
            kw.update({k: v for k, v in extra.items() if k not in kw})
            passed |= set(extra)
            continue
        required = p.default is p.empty
        if not required and not data.draw(st.booleans(), label=f"pass {p.name}"):
            continue
        if required and not data.draw(st.integers(0, 9), label=f"omit {p.name}"):
            continue                         # now and then a required argument is missing
        v = data.draw(VALUES, label=p.name)
        passed.add(p.name)
        if p.kind is p.POSITIONAL_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and not kw
                                           and len(args) == params.index(p)):
            args.append(v)
        else:
            kw[p.name] = v
    try:     # which parameters the values landed in (a missing one shifts the rest)
        bound = inspect.signature(target).bind_partial(*(["self"] if target is not fn else []),
                                                       *args, **kw).arguments
        passed = (set(bound) - {"self"}) | passed
    except TypeError:
        passed |= {p.name for p in params}
    _call(name, fn, tuple(args), kw, passed)


def test_every_public_function_is_covered():
    assert {"bench", "block_size_sweep", "Table", "variants", "compiler_report",
            "profile"} <= set(FUNCTIONS)
    for d in DECLARED:          # every lesson's exported functions and sweeps
        module = importlib.import_module(f"{gm.lessons.__name__}.{d.name}")
        names = [n for n in d.exports + d.sweeps if inspect.isfunction(getattr(module, n))]
        assert names and set(names) <= set(FUNCTIONS), d.name
    assert "predict" not in FUNCTIONS      # gpumem.model: tests/model/
    # what the lessons declare for these tests names what exists
    for d in DECLARED:
        for fam in (d.arguments(st) if d.arguments else {}):
            assert fam in d.families, (d.name, fam)
        for name in (n for n in FUNCTIONS if d.cheap):
            module = importlib.import_module(f"{gm.lessons.__name__}.{d.name}")
            assert all(hasattr(module, a) for a in d.cheap(name)), (d.name, name)


# ---- classes of inputs, generated for every argument of every kernel function (issue 29) ----
KERNEL_FUNCTIONS = kernel_functions()


#: Each family's strategy for the values its table alone does not say (its shape rules, a
#: wrapper's own defaults): Lesson.arguments.
STRATEGIES = {fam: strategy for d in DECLARED if d.arguments
              for fam, strategy in d.arguments(st).items()}


#: The simplest declared values of each family: {family: {argument: value}}.
_BASE = {fam: simplest(strategy) for fam, strategy in STRATEGIES.items()}


def _base_call(fn, rows: list[dict], declared: dict | None = None) -> tuple[list, dict]:
    """The smallest valid call (``base_call``) with the values its lesson declares."""
    return base_call(fn, rows, _BASE.get(fn.__name__, {}) if declared is None else declared)


def _checked(fn, args, kw):
    """fn(*args, **kw) with the C entry points checking only (nothing reaches a GPU)."""
    with gm.runtime.args._checking():
        return fn(*args, **kw)


@pytest.mark.parametrize("fam,fn,rows", KERNEL_FUNCTIONS, ids=[k[0] for k in KERNEL_FUNCTIONS])
def test_the_base_call_of_every_kernel_function_is_valid(fam, fn, rows):
    args, kw = _base_call(fn, rows)
    assert _checked(fn, args, kw) is None


# ---- every kernel function with other libraries' arrays, one field of one wrong (issue 49) ----
# (_Interface, an object with only an interface dict, is defined with the generated dicts below)
_ADDRESS = 2**40                  # 256-byte aligned: a fake device address, never followed
#: One field wrong at a time, and what the refusal says about the argument ({} its name).
_WRONG = {
    "dtype": ({"typestr": "<c16"}, TypeError, r"{} has dtype dtype\('complex128'\)"),
    "byte order": ({"typestr": "c16"}, ValueError, r"{}.__cuda_array_interface__\['typestr'\]"),
    "version": ({"version": -1}, ValueError, r"{}.__cuda_array_interface__ has version -1"),
    "no version": ({"version": None}, TypeError, r"{}.__cuda_array_interface__\['version'\]"),
    "read-only flag": ({"data": (_ADDRESS, "no")}, TypeError,
                       r"{}.__cuda_array_interface__\['data'\]\[1\]"),
    "alignment": ({"data": (_ADDRESS + 2, False)}, ValueError,
                  r"{}'s data pointer 0x\w+ is not aligned"),
    "stream": ({"stream": 0}, ValueError, r"{}.__cuda_array_interface__\['stream'\]=0"),
}


def _as_foreign(x, **wrong):
    return _Interface({"data": (_ADDRESS, False), "shape": x.shape, "typestr": x.dtype.str,
                       "version": 3, **wrong})


@pytest.mark.parametrize("fam,fn,rows", KERNEL_FUNCTIONS, ids=[k[0] for k in KERNEL_FUNCTIONS])
@pytest.mark.parametrize("what", sorted(_WRONG))
def test_a_wrong_foreign_operand_is_refused_by_name_before_the_gpu(fam, fn, rows, what):
    # the base call's arrays as another library's (same shape and dtype), one of them wrong:
    # the refusal names the function and that argument, with or without a GPU
    fields, exc, msg = _WRONG[what]
    args, kw = _base_call(fn, rows)
    arrays = [r["name"] for r in rows if r["kind"] == "array" and
              isinstance(_bound(fn, args, kw).get(r["name"]), np.ndarray)]
    assert arrays or not any(r["kind"] == "array" and r["required"] for r in rows), fam
    for bad in arrays:
        bound = _bound(fn, args, kw)
        call = {k: (_as_foreign(v, **(fields if k == bad else {})) if k in arrays else v)
                for k, v in bound.items()}
        with pytest.raises(exc, match=rf"^{fam}: " + msg.format(bad)):
            fn(**call)


def _bound(fn, args, kw):
    return dict(inspect.signature(fn).bind(*args, **kw).arguments)


_DECLARED_FAMILIES = [k for k in KERNEL_FUNCTIONS if k[0] in STRATEGIES]


@pytest.mark.parametrize("fam,fn,rows", _DECLARED_FAMILIES,
                         ids=[k[0] for k in _DECLARED_FAMILIES])
@settings(max_examples=25, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_draw_of_a_declared_strategy_is_a_valid_call(fam, fn, rows, data):
    declared = data.draw(STRATEGIES[fam], label=fam)
    assert declared and set(declared) <= {r["name"] for r in rows}, declared
    args, kw = _base_call(fn, rows, declared)
    assert _checked(fn, args, kw) is None


def test_every_declared_strategy_is_of_a_kernel_function():
    assert set(STRATEGIES) <= {k[0] for k in KERNEL_FUNCTIONS}
    assert len(STRATEGIES) >= 2


@pytest.mark.parametrize("fam,fn,rows", KERNEL_FUNCTIONS, ids=[k[0] for k in KERNEL_FUNCTIONS])
def test_none_is_the_default_exactly_where_the_signature_says_so(fam, fn, rows):
    sig = inspect.signature(fn).parameters
    args, kw = _base_call(fn, rows)
    for r in rows:
        name = r["name"]
        if r["required"] or name not in sig:
            continue
        default_is_none = sig[name].default is None
        # the Python signature and the C table agree on what None means, but where the
        # lesson declares the argument's values itself (a wrapper of several launches that
        # sets a value before the first, the kernel's table only there: Lesson.arguments)
        if name not in _BASE.get(fam, {}):
            assert default_is_none == (r["default"] is None), (fam, name, r)
        if default_is_none:
            continue
        with pytest.raises(TypeError, match=rf"^{fam}: {name} must be .*, not NoneType"):
            _checked(fn, args, {**kw, name: None})


def _literal_values(annotation) -> set:
    """The values of every ``Literal[...]`` in an annotation (``Literal[8, 16] | None``: 8, 16)."""
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    return {v for a in typing.get_args(annotation) for v in _literal_values(a)}


@pytest.mark.parametrize("fam,fn,rows", KERNEL_FUNCTIONS, ids=[k[0] for k in KERNEL_FUNCTIONS])
def test_every_wrapper_states_the_c_tables_defaults_and_choices(fam, fn, rows):
    # issue 48: the C argument table is the one statement of a default, a range and a
    # choice; a wrapper's signature and docstring may show them to readers, equal to the
    # table's: the default, a Literal[...] type, a "name : {...}" line of the docstring
    sig, hints = inspect.signature(fn).parameters, typing.get_type_hints(fn)
    doc = inspect.getdoc(fn) or ""
    for r in rows:
        name = r["name"]
        if name not in sig or r["required"]:
            continue
        if name not in _BASE.get(fam, {}):      # a wrapper's own default: Lesson.arguments
            assert sig[name].default == r["default"], (fam, name, sig[name].default, r)
        want = set(r["allowed"] or r["choices"] or ())
        values = _literal_values(hints.get(name))
        if values:
            assert values == want, (fam, name, values, r)
        stated = re.search(rf"^{name} : (\{{[^}}]*\}})", doc, re.M)
        if stated:
            assert ast.literal_eval(stated.group(1)) == want, (fam, name, stated.group(1), r)


def _bad_values(r: dict) -> list:
    """Values the row refuses, within int64 (beyond it C says "out of range")."""
    if r["kind"] in ("choice", "variant"):
        return ["bogus", 3]
    if r["kind"] != "int":
        return []
    if r["allowed"]:
        return [max(r["allowed"]) + 1, 0]
    bad = [r["lo"] - 1, r["hi"] + 1] + ([r["lo"] + 1] if r["whole_warps"] else [])
    return [v for v in bad if -2**63 <= v < 2**63]


@pytest.mark.parametrize("fam,fn,rows", KERNEL_FUNCTIONS, ids=[k[0] for k in KERNEL_FUNCTIONS])
def test_a_python_check_by_a_c_row_words_it_as_the_c_entry_point(fam, fn, rows):
    # runtime.args._checked: what a sweep or a reference checks by a kernel's C table row
    # (issue 48), refused in the kernel's own words
    args, kw = _base_call(fn, rows)
    sig = inspect.signature(fn).parameters
    for r in rows:
        if r["required"] or r["name"] not in sig:
            continue
        for bad in _bad_values(r):
            with pytest.raises((TypeError, ValueError)) as c_side:
                _checked(fn, args, {**kw, r["name"]: bad})
            with pytest.raises(c_side.type) as py_side:
                gm.runtime.args._checked(fam, fam, r["name"], bad)
            assert str(py_side.value) == str(c_side.value)


def test_the_literal_check_reads_every_literal():
    assert _literal_values(typing.Optional[typing.Literal[8, 16]]) == {8, 16}
    assert _literal_values(typing.Literal["a"] | None) == {"a"} and not _literal_values(int)
    # the wrappers' Literal types are many: the check above is not empty
    assert sum(bool(_literal_values(h)) for _, fn, _ in KERNEL_FUNCTIONS
               for h in typing.get_type_hints(fn).values()) >= 10


_NOT_INTS = [float("nan"), float("inf"), -float("inf"), 8.0, np.float32(8), "8", True, np.True_]


@pytest.mark.parametrize("fam,fn,rows", KERNEL_FUNCTIONS, ids=[k[0] for k in KERNEL_FUNCTIONS])
def test_every_integer_argument_refuses_floats_and_takes_numpy_integers(fam, fn, rows):
    args, kw = _base_call(fn, rows)
    for r in rows:
        if r["kind"] != "int" or r["required"] or r["name"] not in inspect.signature(fn).parameters:
            continue
        for bad in _NOT_INTS:
            with pytest.raises(TypeError, match=rf"^{fam}: {r['name']} must be an int"):
                _checked(fn, args, {**kw, r["name"]: bad})
        good = r["default"] if r["default"] is not None else r["lo"]
        if r["allowed"]:
            good = r["allowed"][0]
        for np_type in (np.int32, np.int64, np.uint16):
            if 0 <= good < 2**15:
                assert _checked(fn, args, {**kw, r["name"]: np_type(good)}) is None


# ---- malformed interface dicts, generated -------------------------------------------------------
class _Interface:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


_CAI_VALUES = st.one_of(st.sampled_from(_ODD), st.sampled_from(_INTS), st.just((0, False)),
                        st.just((3,)), st.just(()), st.just("<f4"), st.just("|O8"),
                        st.just("<c8"), st.just((4,)), st.just((-1,)))
_CAI = st.one_of(
    st.dictionaries(st.sampled_from(["data", "shape", "typestr", "strides", "mask", "stream",
                                     "version", "descr"]), _CAI_VALUES, max_size=7),
    st.fixed_dictionaries({"data": _CAI_VALUES, "shape": _CAI_VALUES, "typestr": _CAI_VALUES},
                          optional={"strides": _CAI_VALUES, "version": _CAI_VALUES}),
    _CAI_VALUES)


@_SETTINGS
@given(cai=_CAI)
def test_any_interface_dict_is_taken_or_refused_by_name(cai):
    try:
        d = gm.from_dlpack(_Interface(cai))
    except (TypeError, ValueError) as e:
        assert str(e).startswith("from_dlpack: "), f"{cai!r}: {e}"
        return
    except gm.CudaUnavailableError:
        assert not GPU
        return
    # taken: only an interface that claims no bytes can be (pointer 0 is no allocation)
    assert GPU and d.nbytes == 0, cai


# ---- paths for every CLI option that takes one ---------------------------------------------------
_PATHS = st.one_of(st.sampled_from(["", ".", "/", "/proc/gpumem-x", "/etc/hostname",
                                    "/etc/hostname/sub", "/dev/null", "/dev/null/x",
                                    "a" * 300, "nested/deeper/still", "with space",
                                    "-dash", "--json", "ünï", "x\ty"]),
                   st.text(alphabet="abc/._- ", min_size=1, max_size=12))


@_SETTINGS
@given(path=_PATHS)
def test_every_cli_path_is_used_or_refused_with_exit_2(path, tmp_path_factory, monkeypatch):
    from gpumem import report
    from gpumem.__main__ import main

    monkeypatch.chdir(tmp_path_factory.mktemp("cli"))
    monkeypatch.setattr(report, "headlines", lambda **kw: [])   # the path is what is tested
    monkeypatch.setattr(report, "write", lambda d, *a, **k: [str(d)])
    try:
        rc = main(["report", "--no-progress", "--out", path])
    except SystemExit as e:                 # argparse: one line, exit 2
        assert e.code == 2, (path, e.code)
        return
    assert rc == 0 and os.path.isdir(path), path
