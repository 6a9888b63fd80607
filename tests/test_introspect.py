"""gpumem.introspect: kernel attributes, occupancy, the block-size sweep and the
compiler's report -- validation, the demangler and the report's naming without
a GPU; the attributes and occupancy numbers on a GPU."""
import os

import numpy as np
import pytest

import gpumem as gm
from gpumem.tools import introspect
from gpumem.lessons.spaces import REGCAP_CAPS


# ---- the model's occupancy and the compiler's report (no GPU) ------------------------------
def test_model_occupancy_answers_or_says_why():
    try:
        r = introspect._model_occupancy("9.0", 256, 32, 0)
    except ImportError as e:
        assert "gpumem.model.occupancy is not available" in str(e)
    else:
        assert r["blocks_per_sm"] == 8 and r["occupancy"] == pytest.approx(1.0)


def test_compiler_report_sees_local_memory_and_caps():
    try:
        t = gm.compiler_report()
    except FileNotFoundError:
        if os.environ.get("GPUMEM_REQUIRE_GPU", "") not in ("", "0"):
            raise                    # the GPU check has the toolkit: a missing tool is a failure
        pytest.skip("cuobjdump not found (CUDA toolkit bin/ or pip's nvidia-cuda-cuobjdump): "
                    "the compiler's report cannot be read on this machine")
    by = {(r["family"], r["variant"], r["arch"]): r for r in t}
    archs = {r["arch"] for r in t}
    checked = 0
    for arch in archs:
        cap32 = by[("register_pressure", "cap32", arch)]
        unc = by[("register_pressure", "uncapped", arch)]
        assert unc["stack bytes"] == 0
        # __launch_bounds__(256, 8) asks for 2048 resident threads: where the SM holds
        # fewer (sm_75: 1024; sm_86, 89, 120: 1536) the compiler cannot honour it and
        # keeps the registers it wants (measured in the multi-arch wheel: 75-80, no spills)
        digits = arch[3:].rstrip("af")      # sm_90a: 9.0's architecture-specific build
        cc = f"{digits[:-1]}.{digits[-1]}"
        sm = gm.model.ARCHS.get(cc)
        if sm is None:
            continue                     # an architecture the occupancy table lacks
        checked += 1
        if 8 * 256 <= sm.threads_per_sm:
            assert cap32["registers"] <= 32 < unc["registers"], arch
            assert cap32["stack bytes"] > 0, arch
        else:
            assert cap32["registers"] > 32, arch
        loc = by[("thread_histogram", "local", arch)]
        reg = by[("thread_histogram", "registers", arch)]
        assert loc["stack bytes"] >= 16 * 4 and reg["stack bytes"] == 0
        if "LDL" in loc:
            assert loc["LDL"] > 0 and loc["STL"] > 0 and reg["LDL"] == reg["STL"] == 0
            assert unc["LDL"] == 0
            if cap32["stack bytes"] > 0:
                assert cap32["LDL"] > 0
    assert checked >= 1


def test_compiler_report_says_what_it_needs(monkeypatch):
    monkeypatch.setattr(introspect, "_find_tool", lambda name: None)
    with pytest.raises(FileNotFoundError, match="compiler_report needs cuobjdump"):
        gm.compiler_report()


@pytest.mark.parametrize("mangled, pretty, family, variant", [
    ("_Z24register_pressure_kernelILi8EEvPKfPfxi", "void register_pressure_kernel<8>(...)",
     "register_pressure", "cap32"),
    ("_Z23thread_histogram_kernelILi1EEvPKfPixi", "void thread_histogram_kernel<1>(...)",
     "thread_histogram", "registers"),
    ("_Z17stencil_1d_kernelILi0ELb1ELi4EEvPKfPfS1_xi", "void stencil_1d_kernel<0, true, 4>(...)",
     "stencil_1d", "constant"),
    ("_Z14vec_add_kernelPKfS0_Pfx", "void vec_add_kernel(...)", "vec_add", "default"),
    ("_ZN3foo3barEv", "_ZN3foo3barEv", None, None),
])
def test_compiler_report_names_kernels_without_a_demangler(mangled, pretty, family, variant,
                                                           monkeypatch):
    # The GPU machine may have neither cu++filt nor c++filt: the fallback must
    # still give each kernel its family and variant.
    assert introspect._demangle_simple(mangled) == pretty
    monkeypatch.setattr(introspect, "_find_tool", lambda name: None)
    monkeypatch.setattr(introspect.shutil, "which", lambda name: None)
    assert introspect._demangle([mangled]) == {mangled: pretty}
    assert introspect._family_of(pretty) == family
    assert introspect._variant_of(family, pretty) == variant
    if pretty.startswith("void register_pressure"):
        assert introspect._variant_of("register_pressure", pretty) == "cap32"


def test_compiler_report_reads_cu_filt_template_arguments():
    # cu++filt (the CUDA toolkit's demangler) writes "(int)8" and "(bool)1"; the
    # first template argument is the variant's select value, the rest go as they are
    v, targs = introspect._variant_of, introspect._template_args
    assert v("register_pressure", "void register_pressure_kernel<(int)8>(const float *, float *)") == "cap32"
    assert v("thread_histogram", "void thread_histogram_kernel<(int)1>(const float *)") == "registers"
    assert v("thread_histogram", "void thread_histogram_kernel<0>(const float *)") == "local"
    pretty = "void stencil_1d_kernel<(int)1, (bool)1, (int)4>(...)"
    assert v("stencil_1d", pretty) == "readonly" and targs(pretty) == ["1", "true", "4"]
    assert v("matmul", "void matmul_kernel<(int)1, (int)16>(...)") == "tiled"
    assert v("matmul", "void matmul_kernel<0, 0>(float const*, float const*, float*, int, int, int)") == "naive"
    assert v("divergence", "void divergence_kernel<(unsigned int)1>(...)") == "warp"
    assert v("copy", "void copy_kernel<7>(...)") is None and v(None, "void foo<1>(...)") is None


def test_every_family_is_named_by_its_kernel():
    for f in {v.family for v in gm.variants()}:
        assert introspect._family_of(f"void {f}_kernel<0>(...)") == f
        assert introspect._family_of(f"{f}_kernel(float const*)") == f
    assert introspect._family_of("void matmul_naive_kernel(...)") is None


# ---- validation before any device call (no GPU) -------------------------------------------
def test_attributes_and_occupancy_bad_arguments():
    # the message names the family, and an unknown family is said to be one
    with pytest.raises(ValueError, match="variant='x' is not a variant of divergence; "
                                         "allowed: 'odd_even', 'warp'"):
        gm.kernel_attributes("divergence", "x")
    with pytest.raises(ValueError, match="family='nosuchfamily' is unknown; allowed: .*'matmul'"):
        gm.kernel_attributes("nosuchfamily", "x")
    with pytest.raises(TypeError, match="family must be a str"):
        gm.kernel_attributes(3, "x")
    with pytest.raises(ValueError, match="parameter tile is not one that picks a "
                                         "divergence/warp kernel; allowed: none"):
        gm.kernel_attributes("divergence", "warp", tile=16)
    with pytest.raises(ValueError, match="tile=12 is not allowed"):
        gm.kernel_attributes("matmul", "tiled", tile=12)
    with pytest.raises(ValueError, match="items=3 is not allowed"):
        gm.kernel_attributes("stencil_1d", "readonly", items=3)
    with pytest.raises(ValueError, match="cache='l3' is unknown; allowed: 'default', 'ca'"):
        gm.kernel_attributes("read_offset", "unroll1", cache="l3")
    with pytest.raises(ValueError, match="block=0 is not allowed; block must be 1..1024"):
        gm.kernel_occupancy("vec_add", "default", 0)
    with pytest.raises(ValueError, match="block=2048 is not allowed"):
        gm.kernel_occupancy("vec_add", "default", 2048)
    with pytest.raises(ValueError, match="smem=-1 is not allowed"):
        gm.kernel_occupancy("vec_add", "default", 256, -1)


# ---- on the GPU ---------------------------------------------------------------------------
@pytest.mark.gpu
def test_every_variant_names_its_kernel():
    # Each family's own selector finds the kernel of every variant (the access
    # variants had none before): attributes and occupancy answer for all of them.
    for v in gm.variants():
        a = gm.kernel_attributes(v.family, v.name)
        assert a.registers_per_thread > 0 and a.max_threads_per_block >= 128, (v, a)
        assert gm.kernel_occupancy(v.family, v.name, 128).blocks_per_sm >= 1, v
    # the load path picks one of five read_offset kernels: every one is built
    for cache in gm._core.CACHE_PATHS:
        assert gm.kernel_attributes("read_offset", "unroll4", cache=cache).registers_per_thread > 0


@pytest.mark.gpu
def test_kernel_attributes_numbers():
    caps = {v: gm.kernel_attributes("register_pressure", v) for v in REGCAP_CAPS}
    for v, a in caps.items():
        assert a.max_threads_per_block == 256                     # __launch_bounds__(256, B)
        assert a.registers_per_thread <= REGCAP_CAPS[v]
    assert caps["uncapped"].local_bytes_per_thread == 0 < caps["cap32"].local_bytes_per_thread
    assert caps["cap32"].local_bytes_per_thread >= caps["cap64"].local_bytes_per_thread
    loc = gm.kernel_attributes("thread_histogram", "local")
    reg = gm.kernel_attributes("thread_histogram", "registers")
    assert loc.local_bytes_per_thread >= 64 and reg.local_bytes_per_thread == 0
    t32 = gm.kernel_attributes("matmul", "tiled", tile=32)
    assert 8192 <= t32.static_shared_bytes <= 8192 + 1024
    assert gm.kernel_attributes("matmul", "naive").static_shared_bytes <= 1024
    assert 4 <= gm.kernel_attributes("lifetimes", "default").static_shared_bytes <= 4 + 1024
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
        o = gm.kernel_occupancy("register_pressure", v, 256)
        expect = min(by_threads, dev.max_blocks_per_multiprocessor,
                     _blocks_by_registers(dev, o.registers_per_thread, 256))
        assert o.blocks_per_sm == expect
        assert o.warps_per_block == 8 and o.active_warps == 8 * expect
        assert o.occupancy == pytest.approx(8 * expect / (dev.max_threads_per_multiprocessor // 32))
        assert (o.model is None) == bool(o.model_note)
    assert gm.kernel_occupancy("register_pressure", "cap32", 256).blocks_per_sm > \
        gm.kernel_occupancy("register_pressure", "uncapped", 256).blocks_per_sm
    # shared memory limits blocks: the largest dynamic tile the kernel allows by default
    smem = gm.kernel_attributes("stencil_1d", "constant").max_dynamic_shared_bytes
    o = gm.kernel_occupancy("stencil_1d", "constant", 128, smem)
    assert 1 <= o.blocks_per_sm <= dev.shared_memory_per_multiprocessor // smem
    assert o.blocks_per_sm < gm.kernel_occupancy("stencil_1d", "constant", 128, 0).blocks_per_sm
    with pytest.raises(ValueError, match="bytes of dynamic shared memory per block"):
        gm.kernel_occupancy("stencil_1d", "constant", 128, smem + 1)
    with pytest.raises(ValueError, match="at most 256 threads per block"):
        gm.kernel_occupancy("register_pressure", "cap32", 512)


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


# ---- issue 11: arguments first -------------------------------------------------------------
def _no_device(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("reached the device")
    monkeypatch.setattr(gm.runtime, "bench", refuse)
    monkeypatch.setattr(gm.runtime, "to_device", refuse)


@pytest.mark.parametrize("kw, exc, msg", [
    ({"blocks": [0]}, ValueError, r"block_size_sweep: blocks=0 is not allowed; blocks must be 1..1024"),
    ({"blocks": [32, True]}, TypeError, r"block_size_sweep: blocks must be an int, not bool"),
    ({"param": "blok"}, TypeError, r"block_size_sweep: blok=32: vec_add\(\) got an unexpected keyword"),
    ({"param": 3}, TypeError, r"block_size_sweep: param must be a str"),
    ({"repeat": np.int64(0)}, ValueError, r"block_size_sweep: repeat=0 is not allowed"),
    ({"block": 64}, TypeError, r"block_size_sweep: block= is what the sweep sets"),
])
def test_block_size_sweep_checks_before_any_device_work(monkeypatch, kw, exc, msg):
    _no_device(monkeypatch)
    a = np.ones(64, np.float32)
    with pytest.raises(exc, match=msg):
        gm.block_size_sweep(gm.vec_add, a, a, **kw)


def test_block_size_sweep_checks_every_call_of_the_kernel(monkeypatch):
    _no_device(monkeypatch)
    a = np.ones(64, np.float32)
    with pytest.raises(TypeError, match=r"block_size_sweep: block=32: vec_add: b has dtype"):
        gm.block_size_sweep(gm.vec_add, a, a.astype(np.float64))
    with pytest.raises(ValueError, match=r"block_size_sweep: tile=64: matmul: tile=64"):
        gm.block_size_sweep(gm.matmul, np.ones((4, 4), np.float32), np.ones((4, 4), np.float32),
                            blocks=[8, 64], param="tile")


def test_compiler_report_checks_the_family_before_cuobjdump(monkeypatch):
    def no_tool(name):
        raise AssertionError("looked for " + name)
    monkeypatch.setattr(introspect, "_find_tool", no_tool)
    with pytest.raises(ValueError, match=r"compiler_report: family='matmull' is unknown; "
                                         r"allowed: 'vec_add', 'read_offset'"):
        gm.compiler_report("matmull")
    with pytest.raises(TypeError, match=r"compiler_report: family must be a str or None, not int"):
        gm.compiler_report(3)
    with pytest.raises(TypeError, match=r"compiler_report: sass must be a bool"):
        gm.compiler_report("matmul", sass="yes")


def test_kernel_occupancy_ints_refuse_bool():
    with pytest.raises(TypeError, match=r"kernel_occupancy: block must be an int, not bool"):
        gm.kernel_occupancy("matmul", "tiled", True)
    with pytest.raises(TypeError, match=r"kernel_occupancy: smem must be an int, not float"):
        gm.kernel_occupancy("matmul", "tiled", 256, 1.5)
