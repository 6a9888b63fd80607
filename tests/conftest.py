"""GPU tests are marked ``gpu``: skipped without a GPU, and failed instead
when GPUMEM_REQUIRE_GPU=1 (so a GPU run can never pass by skipping)."""
import os
import sys
import types

import numpy as np
import pytest

# tools/gpu-check's one-process-per-GPU phase: this worker sees its GPU alone (before
# anything starts CUDA; child processes inherit it).
if os.environ.get("GPUMEM_TEST_GPU_PER_WORKER") and os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(
        int(os.environ["PYTEST_XDIST_WORKER"][2:]) % int(os.environ["GPUMEM_TEST_GPU_PER_WORKER"]))

import gpumem  # noqa: E402  (after the GPU is chosen)

REQUIRE_GPU = os.environ.get("GPUMEM_REQUIRE_GPU", "") not in ("", "0")
_ALL_GPUS = ("all_gpus: times work across every GPU of the machine: tools/gpu-check runs it "
             "last, in one process that sees them all, alone")
_ALONE = ("alone: needs its GPU to itself (reads counters, times a whole command, "
          "measures a cache, or fills the device memory): tools/gpu-check runs it after the "
          "shared phase")


def pytest_configure(config):
    # Also registered in pyproject.toml; here for runs against the installed
    # wheel, from a folder without it.
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one; fails "
                                       "instead when GPUMEM_REQUIRE_GPU=1)")
    config.addinivalue_line("markers", _ALONE)
    config.addinivalue_line("markers", _ALL_GPUS)


@pytest.fixture(autouse=True)
def _gpu_gate(request):
    if request.node.get_closest_marker("gpu") is None:
        return
    if gpumem.is_available():
        # The pool keeps what earlier tests freed; past 8 GiB it goes back, so that a test's
        # child process (a fresh context) and the next large test find device memory.
        if gpumem.memory_info().get("pool_reserved", 0) > 8 << 30:
            gpumem.empty_cache()
        return
    if REQUIRE_GPU:
        pytest.fail("GPUMEM_REQUIRE_GPU=1 but no usable GPU: " + _why_unavailable())
    pytest.skip("needs a CUDA GPU")


def _why_unavailable() -> str:
    try:
        gpumem.device()
    except gpumem.CudaError as e:
        return str(e)
    return "unknown"


# ---- every GPU of the machine -------------------------------------------------------------
#: The GPUs a test that takes ``each_device`` runs on: every one present ([0] without any,
#: where the test skips as every GPU test does).
DEVICES = list(range(gpumem.device_count())) or [0]


# Under pytest-xdist on several GPUs, worker k runs its tests on GPU k mod N (its current
# device from the start): every GPU carries a share of the suite, and the suite runs on all
# of them at once.  The one-process phase, and a run without workers, start on GPU 0.
if len(DEVICES) > 1 and os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw"):
    gpumem._core._set_device(int(os.environ["PYTEST_XDIST_WORKER"][2:]) % len(DEVICES))


@pytest.fixture(params=DEVICES, ids=lambda i: f"gpu{i}")
def each_device(request):
    """The test once per GPU, that GPU current (``with gpumem.Device(i):``) while it runs."""
    if not gpumem.is_available():
        yield request.param
        return
    with gpumem.Device(request.param):
        yield request.param


# ---- several pytest processes on one machine (pytest-xdist) -------------------------------
# CUPTI's profiler serves a GPU only while no other process runs kernels on it (else
# CUPTI_ERROR_HARDWARE_BUSY, and Nsight Compute fails), and a test that times a whole
# command or report, or a cache's latency, measures the other processes too.  So under
# GPUMEM_TEST_DEFER=FILE a pytest-xdist worker neither profiles nor runs a test marked
# ``alone`` (a module's ``pytestmark = pytest.mark.alone`` marks all of its tests):
# the test is skipped there and its node ID appended to
# FILE.  tools/gpu-check then runs FILE's tests with one process per GPU
# (GPUMEM_TEST_GPU_PER_WORKER=N: worker k sees GPU k mod N alone, its child processes too).
_DEFER = os.environ.get("GPUMEM_TEST_DEFER") if os.environ.get("PYTEST_XDIST_WORKER") else None

if _DEFER:
    from _helpers import defer_to_one_process

    def _deferred_profile_begin(*args, **kwargs):
        defer_to_one_process("it reads hardware counters")

    gpumem._core._profile_begin = _deferred_profile_begin


def pytest_collection_modifyitems(config, items):
    only = os.environ.get("GPUMEM_TEST_ONLY")
    if only:
        with open(only) as f:
            want = {line.strip() for line in f if line.strip()}
        keep = [it for it in items if it.nodeid in want or it.nodeid.split("::")[0] in want]
        config.hook.pytest_deselected(items=[it for it in items if it not in keep])
        items[:] = keep
    _deadline["items"] = [it.nodeid for it in items]


@pytest.fixture(autouse=True)
def _one_process_phase(request):
    if _DEFER and request.node.get_closest_marker("all_gpus") is not None:
        defer_to_one_process("it times work across every GPU", all_gpus=True)
    if _DEFER and request.node.get_closest_marker("alone") is not None:
        defer_to_one_process("it runs child processes that read counters, or times the "
                             "whole GPU")
    yield


@pytest.fixture
def rng(request):
    """Fresh random data each run; the seed is printed on failure."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


@pytest.fixture
def no_leak():
    """Assert that the test leaves no device memory held by gpumem."""
    import gc

    gc.collect()        # what an earlier test's garbage still holds is not this test's
    before = gpumem._core.bytes_held()
    yield
    gc.collect()
    assert gpumem._core.bytes_held() == before


def pytest_report_header(config):
    return f"gpumem {gpumem.__version__} from {gpumem.__file__}; GPU: {gpumem.is_available()}"


def pytest_sessionstart(session):
    # .ci/run tests the installed wheel: make sure that is what was imported.
    if os.environ.get("GPUMEM_EXPECT_INSTALLED") and "site-packages" not in gpumem.__file__:
        raise pytest.UsageError(f"expected an installed gpumem, imported {gpumem.__file__}")


# ---- a suite longer than one device call: stop at a deadline, go on later ---------------
# GPUMEM_TEST_DEADLINE=S: start no test after S seconds; the node IDs of the tests not run
# are written to GPUMEM_TEST_REST (a file).  GPUMEM_TEST_ONLY=FILE: run only the tests
# (node IDs, or whole test files) that FILE names (such a rest), so tools/gpu-check can
# split the suite over calls by time instead of by guessed file groups.
_deadline = {"start": None, "ran": set(), "items": []}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    limit = os.environ.get("GPUMEM_TEST_DEADLINE")
    if not limit:
        return None
    import time
    if _deadline["start"] is None:
        _deadline["start"] = time.monotonic()
    if time.monotonic() - _deadline["start"] > float(limit):
        item.session.shouldstop = f"GPUMEM_TEST_DEADLINE ({limit} s) reached"
        return True                      # not run: listed in GPUMEM_TEST_REST
    _deadline["ran"].add(item.nodeid)
    return None


def pytest_sessionfinish(session, exitstatus):
    rest = os.environ.get("GPUMEM_TEST_REST")
    if rest and os.environ.get("GPUMEM_TEST_DEADLINE"):
        left = [n for n in _deadline["items"] if n not in _deadline["ran"]]
        with open(rest, "w") as f:
            f.writelines(n + "\n" for n in left)


def pytest_terminal_summary(terminalreporter):
    if os.environ.get("GPUMEM_TEST_DEADLINE"):
        left = len(_deadline["items"]) - len(_deadline["ran"])
        terminalreporter.write_line(f"GPUMEM_TEST_DEADLINE: {len(_deadline['ran'])} tests started, "
                                    f"{left} not run" + (f" (listed in {os.environ['GPUMEM_TEST_REST']})"
                                                         if left and os.environ.get("GPUMEM_TEST_REST")
                                                         else ""))


# GPUMEM_TEST_TIMES=FILE: every test's node ID, phase outcome and seconds, one line each as
# it ends (appended; safe under pytest-xdist), so a run cut short still says where time went.
def pytest_runtest_logreport(report):
    path = os.environ.get("GPUMEM_TEST_TIMES")
    if path and (report.when == "call" or report.outcome != "passed"):
        with open(path, "a") as f:
            f.write(f"{report.duration:.3f}\t{report.when}\t{report.outcome}\t{report.nodeid}\n")


# ---- sweeps without a GPU: a stand-in model that remembers what it was asked -----------
class FakeModel(types.ModuleType):
    def __init__(self):
        super().__init__("gpumem.model")
        self.calls = []

    def predict(self, family, variant, **params):
        self.calls.append((family, variant, params))
        off = params.get("offset", 0) + params.get("stride", 0)
        return {"gld_efficiency": 100.0 - off, "gld_transactions": 1000 + off, "gld_requests": 7,
                "gst_efficiency": 50.0 + off, "gst_transactions": 2000 + off, "gst_requests": 9}


@pytest.fixture
def fake_model(monkeypatch):
    m = FakeModel()
    monkeypatch.setitem(sys.modules, "gpumem.model", m)
    return m


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(gpumem, "is_available", lambda: False)
    monkeypatch.setattr(gpumem.runtime, "is_available", lambda: False)


@pytest.fixture
def pretend_cc():
    """pretend_cc(major, minor): the lessons' refusals of an older GPU (gm_need_cc) see that
    compute capability until the test ends; the GPU itself and device() are unchanged."""
    yield gpumem._core._pretend_compute_capability
    gpumem._core._pretend_compute_capability(0, 0)


# ---- hardware counters: readable wherever a GPU is required ------------------------------
@pytest.fixture
def counters():
    """Counters must be readable on a GPU machine: fail under GPUMEM_REQUIRE_GPU=1."""
    if gpumem.profiler_available():
        return
    try:
        with gpumem.profile(["gld_requests"]):
            gpumem.vec_add(np.ones(64, np.float32), np.ones(64, np.float32))
        why = "profiling ran but read no counters"
    except Exception as e:  # the reason, for the failure message
        why = f"{type(e).__name__}: {e}"
    if os.environ.get("GPUMEM_REQUIRE_GPU", "") not in ("", "0"):
        pytest.fail("GPUMEM_REQUIRE_GPU=1 but hardware counters cannot be read: " + why)
    pytest.skip("hardware counters cannot be read here: " + why)
