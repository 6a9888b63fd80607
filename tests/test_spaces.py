"""Memory spaces, register caps, occupancy, divergence: validation and the
NumPy references without a GPU; every kernel against its reference, with
poisoned outputs, and the attributes/occupancy numbers on a GPU."""
import numpy as np
import pytest

import gpumem as gm
from gpumem import spaces
from gpumem.spaces import (REGCAP_CAPS, REGCAP_LIVE, constant_broadcast_reference,
                           divergence_reference, register_pressure_reference,
                           thread_histogram_reference)

X = np.ones(100, np.float32)
XR = np.ones((REGCAP_LIVE, 10), np.float32)


# ---- references (no GPU) ---------------------------------------------------------------
def test_broadcast_reference():
    table = spaces.broadcast_table()
    one = constant_broadcast_reference(1, n=64, iters=8)
    assert np.all(one == one[0])
    assert one[0] == sum(table[(32 * i) % 256] for i in range(8))
    many = constant_broadcast_reference(32, n=64, iters=3)
    assert many[33] == table[1] + table[33] + table[65]
    assert np.array_equal(many[:32], many[32:])


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
    assert {"broadcast", "private_array", "lifetime", "register_cap", "divergence"} <= fams
    assert [v.name for v in gm.variants("register_cap")] == list(REGCAP_CAPS)
    assert {v.name for v in gm.variants("divergence")} == {"odd_even", "warp"}


def test_model_occupancy_answers_or_says_why():
    try:
        r = spaces.model_occupancy("9.0", 256, 32, 0)
    except ImportError as e:
        assert "gpumem.model.occupancy is not available" in str(e)
    else:
        assert r["blocks_per_sm"] == 8 and r["occupancy"] == pytest.approx(1.0)


def test_compiler_report_sees_local_memory_and_caps():
    try:
        t = gm.compiler_report()
    except FileNotFoundError:
        pytest.skip("cuobjdump not found")
    by = {(r["family"], r["variant"], r["arch"]): r for r in t}
    archs = {r["arch"] for r in t}
    for arch in archs:
        cap32 = by[("register_cap", "cap32", arch)]
        unc = by[("register_cap", "uncapped", arch)]
        assert cap32["registers"] <= 32 < unc["registers"]
        assert cap32["stack bytes"] > 0 and unc["stack bytes"] == 0
        loc = by[("private_array", "local", arch)]
        reg = by[("private_array", "registers", arch)]
        assert loc["stack bytes"] >= 16 * 4 and reg["stack bytes"] == 0
        if "LDL" in loc:
            assert loc["LDL"] > 0 and loc["STL"] > 0 and reg["LDL"] == reg["STL"] == 0
            assert cap32["LDL"] > 0 and unc["LDL"] == 0


def test_compiler_report_says_what_it_needs(monkeypatch):
    monkeypatch.setattr(spaces, "_find_tool", lambda name: None)
    with pytest.raises(FileNotFoundError, match="compiler_report needs cuobjdump"):
        gm.compiler_report()


# ---- validation before any device call (no GPU) -------------------------------------------
@pytest.mark.parametrize("distinct", [0, 33, -1])
def test_broadcast_bad_distinct(distinct):
    with pytest.raises(ValueError, match=rf"distinct={distinct} is not allowed; distinct must "
                                         r"be 1\.\.32"):
        gm.constant_broadcast(distinct)


def test_broadcast_bad_arguments():
    with pytest.raises(TypeError, match="distinct must be an int"):
        gm.constant_broadcast(2.0)
    with pytest.raises(ValueError, match="memory='global' is unknown; allowed: 'constant', "
                                         "'readonly'"):
        gm.constant_broadcast(2, memory="global")
    with pytest.raises(ValueError, match="n=0 is not allowed"):
        gm.constant_broadcast(2, n=0)
    with pytest.raises(ValueError, match="iters=0 is not allowed"):
        gm.constant_broadcast(2, iters=0)
    with pytest.raises(ValueError, match="block=100 is not allowed"):
        gm.constant_broadcast(2, block=100)


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
        gm._core.lifetime(blocks=0)
    with pytest.raises(ValueError, match="block=16 is not allowed"):
        gm._core.lifetime(block=16)
    with pytest.raises(ValueError, match="value=1099511627776 is not allowed"):
        gm._core.lifetime(value=2**40)
    with pytest.raises(ValueError, match="counter=-1 is not allowed"):
        gm._core.lifetime(counter=-1)
    with pytest.raises(ValueError, match="launches=0 is not allowed"):
        gm.lifetimes(0)
    with pytest.raises(TypeError, match="launches must be an int"):
        gm.lifetimes(2.0)


def test_attributes_and_occupancy_bad_arguments():
    with pytest.raises(ValueError, match="variant='x' is unknown; allowed: 'odd_even', 'warp'"):
        gm.kernel_attributes("divergence", "x")
    with pytest.raises(ValueError, match="variant='x' is unknown"):
        gm.kernel_attributes("nosuchfamily", "x")
    with pytest.raises(TypeError, match="family must be a str"):
        gm.kernel_attributes(3, "x")
    with pytest.raises(ValueError, match="parameter tile is not one that picks a "
                                         "divergence/warp kernel; allowed: none"):
        gm.kernel_attributes("divergence", "warp", tile=16)
    with pytest.raises(ValueError, match="tile=12 is not allowed"):
        gm.kernel_attributes("matmul", "tiled", tile=12)
    with pytest.raises(ValueError, match="items=3 is not allowed"):
        gm.kernel_attributes("stencil", "readonly", items=3)
    with pytest.raises(ValueError, match="block=0 is not allowed; block must be 1..1024"):
        gm.occupancy("vec_add", "default", 0)
    with pytest.raises(ValueError, match="block=2048 is not allowed"):
        gm.occupancy("vec_add", "default", 2048)
    with pytest.raises(ValueError, match="smem=-1 is not allowed"):
        gm.occupancy("vec_add", "default", 256, -1)


# ---- on the GPU ---------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("memory", ["constant", "readonly"])
@pytest.mark.parametrize("distinct", [1, 2, 3, 4, 8, 16, 32])
def test_broadcast_matches_reference(memory, distinct, no_leak):
    n, iters = 5000, 37
    out = gm.to_device(np.full(n, np.nan, np.float32))
    got = gm.constant_broadcast(distinct, memory=memory, n=n, iters=iters, block=96, out=out)
    assert got is out
    np.testing.assert_array_equal(out.get(), constant_broadcast_reference(distinct, n, iters))
    host = gm.constant_broadcast(distinct, memory=memory, n=33, iters=5)
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, constant_broadcast_reference(distinct, 33, 5))


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
    r = gm._core.lifetime(blocks=blocks, block=block, value=11, counter=0)
    assert r.dtype == np.int64 and r.shape == (3, blocks)
    assert r[0].tolist() == [block] * blocks                       # __shared__: this block only
    assert sorted(r[1].tolist()) == [64, 128, 192]                 # __device__: grid-wide sum
    assert r[2].tolist() == [11] * blocks                          # __constant__ from the host
    r = gm._core.lifetime(blocks=blocks, block=block)              # the host sets nothing
    assert r[0].tolist() == [block] * blocks                       # shared started over
    assert r[1].max() == 2 * blocks * block                        # the counter went on
    assert r[2].tolist() == [11] * blocks                          # the constant persisted
    r = gm._core.lifetime(blocks=2, block=32, counter=5, value=-3)
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
def test_kernel_attributes_numbers():
    caps = {v: gm.kernel_attributes("register_cap", v) for v in REGCAP_CAPS}
    for v, a in caps.items():
        assert a.max_threads_per_block == 256                     # __launch_bounds__(256, B)
        assert a.registers_per_thread <= REGCAP_CAPS[v]
    assert caps["uncapped"].local_bytes_per_thread == 0 < caps["cap32"].local_bytes_per_thread
    assert caps["cap32"].local_bytes_per_thread >= caps["cap64"].local_bytes_per_thread
    loc = gm.kernel_attributes("private_array", "local")
    reg = gm.kernel_attributes("private_array", "registers")
    assert loc.local_bytes_per_thread >= 64 and reg.local_bytes_per_thread == 0
    t32 = gm.kernel_attributes("matmul", "tiled", tile=32)
    assert 8192 <= t32.static_shared_bytes <= 8192 + 1024
    assert gm.kernel_attributes("matmul", "naive").static_shared_bytes <= 1024
    assert 4 <= gm.kernel_attributes("lifetime", "default").static_shared_bytes <= 4 + 1024
    assert gm.kernel_attributes("vec_add", "default").registers_per_thread > 0
    assert caps["uncapped"].binary_version >= 50 and caps["uncapped"].ptx_version >= 50


def _blocks_by_registers(dev, regs, block):
    per_warp = -(-regs * dev.warp_size // 256) * 256             # allocated per warp, 256 at a time
    warps = -(-block // dev.warp_size)
    return dev.registers_per_multiprocessor // (per_warp * warps)


@pytest.mark.gpu
def test_occupancy_numbers():
    dev = gm.device()
    by_threads = dev.max_threads_per_multiprocessor // 256
    for v in ("uncapped", "cap32"):
        o = gm.occupancy("register_cap", v, 256)
        expect = min(by_threads, dev.max_blocks_per_multiprocessor,
                     _blocks_by_registers(dev, o.registers_per_thread, 256))
        assert o.blocks_per_sm == expect
        assert o.warps_per_block == 8 and o.active_warps == 8 * expect
        assert o.occupancy == pytest.approx(8 * expect / (dev.max_threads_per_multiprocessor // 32))
        assert (o.model is None) == bool(o.model_note)
    assert gm.occupancy("register_cap", "cap32", 256).blocks_per_sm > \
        gm.occupancy("register_cap", "uncapped", 256).blocks_per_sm
    # shared memory limits blocks: the largest dynamic tile the kernel allows by default
    smem = gm.kernel_attributes("stencil", "constant").max_dynamic_shared_bytes
    o = gm.occupancy("stencil", "constant", 128, smem)
    assert 1 <= o.blocks_per_sm <= dev.shared_memory_per_multiprocessor // smem
    assert o.blocks_per_sm < gm.occupancy("stencil", "constant", 128, 0).blocks_per_sm
    with pytest.raises(ValueError, match="bytes of dynamic shared memory per block"):
        gm.occupancy("stencil", "constant", 128, smem + 1)
    with pytest.raises(ValueError, match="at most 256 threads per block"):
        gm.occupancy("register_cap", "cap32", 512)


@pytest.mark.gpu
def test_block_size_sweep_any_kernel(rng):
    x = rng.standard_normal(10_000).astype(np.float32)
    t = gm.block_size_sweep(gm.vec_add, x, x, blocks=(32, 256), repeat=2, warmup=1)
    assert t["block"] == [32, 256] and t["threads/block"] == [32, 256]
    dev = gm.device()
    for row in t:
        assert 1 <= row["blocks/SM"] <= dev.max_blocks_per_multiprocessor
        assert row["occupancy"] == pytest.approx(
            row["blocks/SM"] * row["threads/block"] / dev.max_threads_per_multiprocessor)
        assert row["median_ms"] > 0
    s = gm.block_size_sweep(gm.stencil_1d, x, blocks=(64, 1024), repeat=2, warmup=1, items=8)
    assert s["threads/block"] == [64, 1024] and all(b >= 1 for b in s["blocks/SM"])
    m = gm.block_size_sweep(gm.matmul, np.ones((40, 40), np.float32), np.ones((40, 40), np.float32),
                            blocks=(8, 32), param="tile", repeat=2, warmup=1)
    assert m["threads/block"] == [64, 1024]


@pytest.mark.gpu
def test_sweeps_are_consistent():
    b = spaces.broadcast_sweep((1, 32), n=1 << 14, iters=64, repeat=3)
    for row in b:
        assert row["constant / readonly"] == pytest.approx(row["constant_ms"] / row["readonly_ms"])
    assert b["constant vs 1 word"][0] == 1.0
    r = spaces.register_cap_sweep(1 << 12, rounds=2, repeat=3)
    assert r["variant"] == list(REGCAP_CAPS)
    assert r["blocks/SM"][-1] >= r["blocks/SM"][0]
    d = spaces.divergence_compare(1 << 14, iters=16, repeat=3)
    assert d["variant"] == ["warp", "odd_even"] and d["x warp"][0] == 1.0
    lv = spaces.local_vs_registers(1 << 14, threads=1 << 10, repeat=3)
    assert lv["local bytes/thread"][0] >= 64 and lv["local bytes/thread"][1] == 0


@pytest.mark.parametrize("mangled, pretty", [
    ("_Z19register_cap_kernelILi8EEvPKfPfxi", "void register_cap_kernel<8>(...)"),
    ("_Z20private_array_kernelILb1EEvPKfPixi", "void private_array_kernel<true>(...)"),
    ("_Z17stencil_1d_kernelILi0ELi4ELi2EEvPKfPfS1_xi", "void stencil_1d_kernel<0, 4, 2>(...)"),
    ("_Z14vec_add_kernelPKfS0_Pfx", "void vec_add_kernel(...)"),
    ("_ZN3foo3barEv", "_ZN3foo3barEv"),
])
def test_compiler_report_names_kernels_without_a_demangler(mangled, pretty, monkeypatch):
    # The GPU machine may have neither cu++filt nor c++filt: the fallback must
    # still give each kernel its family and variant.
    assert spaces._demangle_simple(mangled) == pretty
    monkeypatch.setattr(spaces, "_find_tool", lambda name: None)
    monkeypatch.setattr(spaces.shutil, "which", lambda name: None)
    assert spaces._demangle([mangled]) == {mangled: pretty}
    if pretty.startswith("void register_cap"):
        assert spaces._variant_of("register_cap", pretty) == "cap32"


def test_compiler_report_reads_cu_filt_template_arguments():
    # cu++filt (the CUDA toolkit's demangler) writes "(int)8" and "(bool)1"
    v = spaces._variant_of
    assert v("register_cap", "void register_cap_kernel<(int)8>(const float *, float *)") == "cap32"
    assert v("private_array", "void private_array_kernel<(bool)1>(const float *)") == "registers"
    assert v("private_array", "void private_array_kernel<false>(const float *)") == "local"
    assert v("stencil", "void stencil_1d_kernel<(int)1, (int)4, (int)2>(...)") == \
        "readonly (items=2)"
    assert v("matmul", "void matmul_tiled_kernel<(int)16>(...)") == "tiled (tile=16)"
