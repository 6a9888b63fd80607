"""gpumem.spaces: thread_histogram, lifetimes, register_pressure, divergence --
validation and the NumPy references without a GPU; every kernel against its
reference with poisoned outputs on a GPU, and the sweeps."""
import numpy as np
import pytest

import gpumem as gm
from gpumem import _core
from gpumem.lessons import spaces
from gpumem.lessons.spaces import (REGCAP_CAPS, REGCAP_LIVE, divergence_reference,
                           register_pressure_reference, thread_histogram_reference)
import types
from gpumem import report
from _fake_gpu import FakeGPU, first_with

X = np.ones(100, np.float32)
XR = np.ones((REGCAP_LIVE, 10), np.float32)


# ---- references and tables (no GPU) -------------------------------------------------------
def test_histogram_reference(rng):
    x = np.concatenate([rng.random(1000, dtype=np.float32), [-1.0, 5.0, np.nan, 0.999, 1.0]])
    x = x.astype(np.float32)
    h = thread_histogram_reference(x, 7)
    assert h.shape == (16, 7) and h.dtype == np.int32 and h.sum() == x.size
    assert h[:, 1000 % 7].sum() == len(range(1000 % 7, x.size, 7))
    single = thread_histogram_reference(np.array([-1, 0.0, 0.07, 0.999, 1.0, 7, np.nan],
                                                 np.float32), 1)
    assert single[:, 0].tolist() == [3, 1] + [0] * 13 + [3]


def test_divergence_reference_converges():
    y = divergence_reference(np.zeros(128, np.float32), 200)
    t = np.arange(128)
    np.testing.assert_allclose(y[t % 2 == 1], 2.0)
    np.testing.assert_allclose(y[t % 2 == 0], 4.0)
    w = divergence_reference(np.zeros(128, np.float32), 200, variant="warp")
    np.testing.assert_allclose(w[(t // 32) % 2 == 1], 2.0)
    np.testing.assert_allclose(w[(t // 32) % 2 == 0], 4.0)


def test_register_pressure_reference_is_the_loop(rng):
    x = rng.standard_normal((REGCAP_LIVE, 3)).astype(np.float32)
    got = register_pressure_reference(x, rounds=2)
    for t in range(3):
        v = [float(a) for a in x[:, t]]
        for _ in range(2):
            for j in range(REGCAP_LIVE):
                v[j] = v[j] * 0.5 + v[(j + 1) % REGCAP_LIVE] * 0.25
        assert abs(got[t] - sum(v)) <= 1e-5 * sum(abs(a) for a in v)


def test_variant_tables_name_their_kernels():
    fams = {v.family for v in gm.variants()}
    assert {"constant_broadcast", "thread_histogram", "lifetimes", "register_pressure",
            "divergence"} <= fams
    assert [v.name for v in gm.variants("register_pressure")] == list(REGCAP_CAPS)
    assert {v.name for v in gm.variants("divergence")} == {"odd_even", "warp"}


def test_register_caps_come_from_the_launch_bounds():
    # __launch_bounds__(256, select): 65536 registers over select blocks of 256 threads,
    # allotted 8 per thread at a time, at most 255
    assert REGCAP_CAPS == {"uncapped": 255, "cap128": 128, "cap64": 64, "cap40": 40, "cap32": 32}
    selects = {v.name: v.select for v in gm.variants("register_pressure")}
    assert selects == {"uncapped": 1, "cap128": 2, "cap64": 4, "cap40": 6, "cap32": 8}
    assert all(name == "uncapped" or name == f"cap{REGCAP_CAPS[name]}" for name in REGCAP_CAPS)


# ---- validation before any device call (no GPU) -------------------------------------------
def test_histogram_bad_arguments():
    with pytest.raises(ValueError, match="variant='shared' is unknown; allowed: 'local', "
                                         "'registers'"):
        gm.thread_histogram(X, variant="shared")
    with pytest.raises(ValueError, match="threads=0 is not allowed"):
        gm.thread_histogram(X, threads=0)
    with pytest.raises(TypeError, match="dtype"):
        gm.thread_histogram(X.astype(np.int32))
    with pytest.raises(ValueError, match="block=1 is not allowed"):
        gm.thread_histogram(X, block=1)
    with pytest.raises(TypeError, match="out must be a gpumem.DeviceArray"):
        gm.thread_histogram(X, out=np.zeros((16, 100), np.int32))


def test_register_pressure_bad_arguments():
    with pytest.raises(ValueError, match=r"x has shape \(63, 10\); it must be \(64, n\)"):
        gm.register_pressure(np.ones((63, 10), np.float32))
    with pytest.raises(ValueError, match=r"x has shape \(640,\)"):
        gm.register_pressure(np.ones(640, np.float32))
    with pytest.raises(ValueError, match="variant='cap16' is unknown; allowed: 'uncapped', "
                                         "'cap128', 'cap64', 'cap40', 'cap32'"):
        gm.register_pressure(XR, variant="cap16")
    with pytest.raises(ValueError, match="block=512 is not allowed; .* from 32 to 256"):
        gm.register_pressure(XR, block=512)
    with pytest.raises(ValueError, match="rounds=-1 is not allowed"):
        gm.register_pressure(XR, rounds=-1)


def test_divergence_bad_arguments():
    with pytest.raises(ValueError, match="variant='lane' is unknown; allowed: 'odd_even', 'warp'"):
        gm.divergence(X, variant="lane")
    with pytest.raises(ValueError, match="iters=-1 is not allowed"):
        gm.divergence(X, iters=-1)
    with pytest.raises(ValueError, match="block=33 is not allowed"):
        gm.divergence(X, block=33)
    with pytest.raises(ValueError, match=r"x must be 1-D"):
        gm.divergence(np.ones((2, 2), np.float32))


def test_lifetime_bad_arguments():
    with pytest.raises(ValueError, match="blocks=0 is not allowed"):
        _core.lifetimes(blocks=0)
    with pytest.raises(ValueError, match="block=16 is not allowed"):
        _core.lifetimes(block=16)
    with pytest.raises(ValueError, match="value=1099511627776 is not allowed"):
        _core.lifetimes(value=2**40)
    with pytest.raises(ValueError, match="counter=-1 is not allowed"):
        _core.lifetimes(counter=-1)
    with pytest.raises(ValueError, match="launches=0 is not allowed"):
        gm.lifetimes(0)
    with pytest.raises(TypeError, match="launches must be an int"):
        gm.lifetimes(2.0)


# ---- on the GPU ---------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["local", "registers"])
@pytest.mark.parametrize("n,threads,block", [(1, 1, 32), (1000, 7, 32), (4097, 1000, 96),
                                             (100_003, 65_536, 256), (50, 300, 1024)])
def test_histogram_matches_reference(rng, variant, n, threads, block, no_leak):
    x = (rng.random(n, dtype=np.float32) * 1.2 - 0.1).astype(np.float32)
    x[:: 97] = np.nan
    out = gm.to_device(np.full((16, threads), -1, np.int32))
    gm.thread_histogram(gm.to_device(x), variant=variant, threads=threads, block=block, out=out)
    np.testing.assert_array_equal(out.get(), thread_histogram_reference(x, threads))


@pytest.mark.gpu
def test_histogram_default_threads_and_empty(rng):
    x = rng.random(70_000, dtype=np.float32)
    h = gm.thread_histogram(x)
    assert h.shape == (16, 65_536)
    np.testing.assert_array_equal(h, thread_histogram_reference(x, 65_536))
    z = gm.thread_histogram(np.zeros(0, np.float32))
    assert z.shape == (16, 1) and not z.any()


@pytest.mark.gpu
def test_lifetimes_device_persists_shared_does_not_constant_persists(no_leak):
    blocks, block = 3, 64
    r = _core.lifetimes(blocks=blocks, block=block, value=11, counter=0)
    assert r.dtype == np.int64 and r.shape == (3, blocks)
    assert r[0].tolist() == [block] * blocks                       # __shared__: this block only
    assert sorted(r[1].tolist()) == [64, 128, 192]                 # __device__: grid-wide sum
    assert r[2].tolist() == [11] * blocks                          # __constant__ from the host
    r = _core.lifetimes(blocks=blocks, block=block)              # the host sets nothing
    assert r[0].tolist() == [block] * blocks                       # shared started over
    assert r[1].max() == 2 * blocks * block                        # the counter went on
    assert r[2].tolist() == [11] * blocks                          # the constant persisted
    r = _core.lifetimes(blocks=2, block=32, counter=5, value=-3)
    assert sorted(r[1].tolist()) == [37, 69] and r[2].tolist() == [-3, -3]
    t = gm.lifetimes(3, blocks=4, block=32, value=9, counter=100)
    assert t["__device__ counter after"] == [228, 356, 484]
    assert t["__shared__ count (every block)"] == [[32]] * 3
    assert t["__constant__ read (every block)"] == [[9]] * 3


@pytest.mark.gpu
@pytest.mark.parametrize("variant", list(REGCAP_CAPS))
@pytest.mark.parametrize("n,block", [(1, 32), (1000, 96), (5003, 256)])
def test_register_pressure_matches_reference(rng, variant, n, block, no_leak):
    x = rng.standard_normal((REGCAP_LIVE, n)).astype(np.float32)
    out = gm.to_device(np.full(n, np.nan, np.float32))
    gm.register_pressure(gm.to_device(x), variant=variant, rounds=5, block=block, out=out)
    np.testing.assert_allclose(out.get(), register_pressure_reference(x, 5), rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["odd_even", "warp"])
@pytest.mark.parametrize("n,block", [(1, 32), (1000, 64), (4097, 96), (100_003, 1024)])
def test_divergence_matches_reference(rng, variant, n, block, no_leak):
    x = rng.standard_normal(n).astype(np.float32)
    out = gm.to_device(np.full(n, np.nan, np.float32))
    gm.divergence(gm.to_device(x), variant=variant, iters=13, block=block, out=out)
    np.testing.assert_allclose(out.get(), divergence_reference(x, 13, variant=variant, block=block),
                               rtol=1e-6, atol=0)


@pytest.mark.gpu
def test_sweeps_are_consistent():
    r = spaces.register_pressure_sweep(1 << 12, rounds=2, repeat=3)
    assert r["variant"] == list(REGCAP_CAPS)
    assert r["blocks/SM"][-1] >= r["blocks/SM"][0]
    d = spaces.divergence_compare(1 << 14, iters=16, repeat=3)
    assert d["variant"] == ["warp", "odd_even"] and d["x warp"][0] == 1.0
    lv = spaces.local_vs_registers(1 << 14, threads=1 << 10, repeat=3)
    assert lv["local bytes/thread"][0] >= 64 and lv["local bytes/thread"][1] == 0


# ---- issue 11: arguments first ----------------------------------------------------------
def test_spaces_check_their_arguments_before_the_device():
    with pytest.raises(TypeError, match=r"lifetimes: launches must be an int, not bool"):
        gm.lifetimes(True)
    with pytest.raises(ValueError, match=r"lifetimes: blocks=0 is not allowed"):
        gm.lifetimes(np.int64(2), blocks=0)           # checked before the first launch
    with pytest.raises(ValueError, match=r"lifetimes: launches=0 is not allowed"):
        gm.lifetimes(np.uint8(0))
    with pytest.raises(ValueError, match=r"divergence_reference: block=33 is not allowed"):
        divergence_reference(np.ones(4, np.float32), block=33)
    with pytest.raises(ValueError, match=r"divergence_reference: variant='odd' is unknown"):
        divergence_reference(np.ones(4, np.float32), variant="odd")
    with pytest.raises(TypeError, match=r"divergence: x must be a numpy.ndarray"):
        gm.divergence(None)
    with pytest.raises(ValueError, match=r"register_pressure_reference: x must have shape \(64, n\)"):
        spaces.register_pressure_reference(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"local_vs_registers: n=0 is not allowed"):
        spaces.local_vs_registers(0)
    with pytest.raises(TypeError, match=r"divergence_compare: iters must be an int, not str"):
        spaces.divergence_compare(iters="8")
    with pytest.raises(ValueError, match=r"register_pressure_sweep: repeat=0 is not allowed"):
        spaces.register_pressure_sweep(repeat=0)


def test_lifetimes_under_a_check_returns_none_without_launching():
    with gm.runtime.args._checking():
        assert gm.lifetimes(np.int64(2)) is None


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline on the model, on the fake GPU (the stand-ins spaces declares), on a GPU
def test_report_headline_without_a_gpu_is_the_models_spills_and_occupancy():
    rows = spaces.LESSON.headline(False, False)
    m = first_with(rows, "cap32_blocks_per_sm")["model"]
    assert (m["cap32_blocks_per_sm"], m["uncapped_blocks_per_sm"]) == (8.0, 1.0)
    assert first_with(rows, "local_bytes_per_thread_local")["model"][
        "local_bytes_per_thread_local"] == 64.0


def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    rows = spaces.LESSON.headline(True, True)
    reg = first_with(rows, "cap32_blocks_per_sm")["measured"]
    assert (reg["cap32_blocks_per_sm"], reg["cap32_local_load_transactions"]) == (8.0, 2e6)
    assert first_with(rows, "odd_even_over_warp")["measured"]["odd_even_over_warp"] == 2.0


@pytest.mark.gpu
def test_report_headline_on_a_gpu():
    rows = spaces.LESSON.headline(True, False)
    hist = first_with(rows, "local_bytes_per_thread_local")["measured"]
    assert hist["local_bytes_per_thread_local"] >= 64 and \
        hist["local_bytes_per_thread_registers"] == 0
    reg = first_with(rows, "cap32_blocks_per_sm")["measured"]
    assert reg["cap32_registers"] <= 32 < reg["uncapped_registers"]
    assert reg["cap32_local_bytes_per_thread"] > reg["uncapped_local_bytes_per_thread"]
    assert reg["cap32_blocks_per_sm"] > reg["uncapped_blocks_per_sm"]
    div = first_with(rows, "odd_even_over_warp")["measured"]
    assert div["odd_even_over_warp"] > 1.3


# the memory card: the registers' row
def test_card_row_without_a_gpu_is_the_model_gpus_register_file():
    (row,) = spaces.LESSON.card(False, True)
    assert row["level"] == "registers" and row["lesson"] == "spaces"
    assert row["size"] == 256 * 2**10 and row["size_text"] == "256 KiB/SM (64 Ki x 32-bit)"
    assert row["published"] == "64 Ki x 32-bit/SM (cc 9.0)"
    assert row["cycles"] is None and row["ns"] is None
    assert "64 Ki x 32-bit/SM (cc 9.0)" in report.card_table([row]).to_text(0)


def test_card_row_on_a_gpu_without_published_figures(monkeypatch):
    FakeGPU(monkeypatch)
    (row,) = spaces.LESSON.card(True, True)
    # the register file is published per compute capability, not per GPU
    assert row["published"] == "64 Ki x 32-bit/SM (cc 9.0)"
    assert row["size"] == 4 * 65536 and row["ns"] is None


def test_the_registers_of_a_compute_capability_the_model_lacks(monkeypatch):
    monkeypatch.setattr(gm.runtime, "device", lambda: types.SimpleNamespace(
        registers_per_multiprocessor=32768, compute_capability=(8, 8)))
    (row,) = spaces.LESSON.card(True, True)
    assert (row["level"], row["size"], row["size_text"]) == ("registers", 131072,
                                                            "128 KiB/SM (32 Ki x 32-bit)")
    assert row["published"] == "" and row["source"] is None and row["cycles"] is None
    assert "the device's attributes" in row["how"]


@pytest.mark.gpu
def test_card_row_on_a_gpu():
    (row,) = spaces.LESSON.card(True, True)
    # the register file, from the device's attributes; an operand, no load to time
    assert row["size"] == 4 * gm.device().registers_per_multiprocessor and row["ns"] is None
