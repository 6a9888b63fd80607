"""Foreign arrays (the CUDA array interface and DLPack, csrc/runtime/dlpack.c): every
interface is checked as a whole before any device call, and on a GPU the memory it
claims must lie inside one allocation of this context.  Also: masked arrays are
refused, and after a fault the context cannot recover from, every call says so.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpumem as gm

GOOD = {"data": (0, False), "shape": (0,), "typestr": "<f4", "version": 3}


class Interface:
    """An object with only a __cuda_array_interface__ (a dict, or an exception it raises)."""

    def __init__(self, cai):
        self.cai = cai

    @property
    def __cuda_array_interface__(self):
        if isinstance(self.cai, BaseException):
            raise self.cai
        return self.cai


MALFORMED = [
    (5, TypeError, r"x.__cuda_array_interface__ must be a dict, not int"),
    ({}, ValueError, r"has no 'data'"),
    ({**GOOD, "data": None}, TypeError, r"\['data'\] must be a tuple, not NoneType"),
    ({**GOOD, "data": [0, False]}, TypeError, r"\['data'\] must be a tuple, not list"),
    ({**GOOD, "data": (0,)}, ValueError, r"\['data'\] must be \(pointer, read_only\)"),
    ({**GOOD, "data": (-8, False)}, ValueError, r"\['data'\]\[0\]=-8 is not an address"),
    ({**GOOD, "data": ("0x10", False)}, TypeError, r"\['data'\]\[0\] must be an int, not str"),
    ({**GOOD, "shape": None}, TypeError, r"\['shape'\] must be a tuple, not NoneType"),
    ({**GOOD, "shape": [3]}, TypeError, r"\['shape'\] must be a tuple, not list"),
    ({**GOOD, "shape": (-3,)}, ValueError, r"\['shape'\]\[0\]=-3 is negative"),
    ({**GOOD, "shape": (2.0,)}, TypeError, r"\['shape'\]\[0\] must be an int, not float"),
    ({**GOOD, "shape": (True,)}, TypeError, r"\['shape'\]\[0\] must be an int, not bool"),
    ({**GOOD, "typestr": "|O8"}, TypeError, r"x has dtype dtype\('O'\), which cannot live"),
    ({**GOOD, "typestr": "<zz"}, ValueError, r"\['typestr'\]='<zz' is not a NumPy type string"),
    ({**GOOD, "typestr": 4}, TypeError, r"\['typestr'\] must be a str, not int"),
    ({**GOOD, "strides": (8,), "shape": (3,)}, ValueError, r"x is not C-contiguous"),
    ({**GOOD, "strides": [4]}, TypeError, r"\['strides'\] must be a tuple, not list"),
    ({**GOOD, "mask": object()}, ValueError, r"x has a mask"),
    ({**GOOD, "version": 9}, ValueError, r"has version 9; gpumem reads 0..3"),
    ({**GOOD, "stream": "s"}, TypeError, r"\['stream'\] must be an int, not str"),
    ({**GOOD, "stream": 0}, ValueError, r"\['stream'\]=0 is not a stream"),
    ({**GOOD, "stream": -1}, ValueError, r"\['stream'\]=-1 is not a stream"),
    ({**GOOD, "stream": 2**64}, ValueError, r"\['stream'\]=18446744073709551616 is not a stream"),
    ({**GOOD, "version": None}, TypeError, r"\['version'\] must be an int, not NoneType"),
    ({**GOOD, "version": -1}, ValueError, r"has version -1; gpumem reads 0..3"),
    ({k: v for k, v in GOOD.items() if k != "version"}, ValueError, r"has no 'version'"),
    ({**GOOD, "data": (0, "no")}, TypeError, r"\['data'\]\[1\] \(read-only\) must be True or "
                                            r"False, not 'no'"),
    ({**GOOD, "data": (0, None)}, TypeError, r"\['data'\]\[1\] \(read-only\) must be True or "
                                            r"False, not None"),
    ({**GOOD, "data": (2**40 + 2, False), "shape": (3,)}, ValueError,
     r"x's data pointer 0x10000000002 is not aligned to its dtype dtype\('float32'\) \(4 "
     r"bytes\)"),
    ({**GOOD, "typestr": "f4"}, ValueError, r"\['typestr'\]='f4' is not byte order, kind and "
                                            r"size \(e.g. '<f4'\)"),
    ({**GOOD, "shape": (3,)}, ValueError, r"x's data pointer is 0 \(NULL\) while it claims 12 "
                                          r"bytes"),
    ({**GOOD, "shape": (2**62, 8)}, ValueError, r"shape: array is too big"),
]


@pytest.mark.parametrize("cai,exc,msg", MALFORMED, ids=[m[2][:40] for m in MALFORMED])
def test_a_malformed_interface_is_refused_before_the_gpu(cai, exc, msg):
    # no GPU is needed to say any of these: they never reach CudaUnavailableError
    with pytest.raises(exc, match=r"^from_dlpack: .*" + msg):
        gm.from_dlpack(Interface(cai))


@pytest.mark.parametrize("fn", [gm.from_dlpack, gm.to_device])
def test_an_interface_that_raises_is_chained_not_hidden(fn):
    with pytest.raises(TypeError, match=r"x?a?.__cuda_array_interface__ raised: RuntimeError: "
                                        r"driver on fire") as e:
        fn(Interface(RuntimeError("driver on fire")))
    assert isinstance(e.value.__cause__, RuntimeError)


def test_no_interface_at_all_says_what_is_taken():
    with pytest.raises(TypeError, match=r"from_dlpack: x must have __dlpack__ or "
                                        r"__cuda_array_interface__"):
        gm.from_dlpack(object())


@pytest.mark.parametrize("call", [
    lambda m: gm.copy(m), lambda m: gm.vec_add(m, m), lambda m: gm.to_device(m),
    lambda m: gm.transpose(m.reshape(2, 4)), lambda m: gm.matmul(m.reshape(2, 4), m.reshape(4, 2)),
    lambda m: gm.to_device(m, out=None)])
def test_masked_arrays_are_refused_not_unmasked(call):
    m = np.ma.masked_array(np.arange(8, dtype=np.float32), mask=[0, 1] * 4)
    with pytest.raises(TypeError, match=r"is a numpy.ma masked array; gpumem's kernels would "
                                        r"ignore its mask"):
        call(m)


@pytest.mark.parametrize("shape,msg", [((4.0,), r"shape\[0\] must be an int, not float"),
                                       ((4, "2"), r"shape\[1\] must be an int, not str")])
def test_shapes_name_the_element_that_is_wrong(shape, msg):
    for fn in (gm.pinned_empty, gm.empty):
        with pytest.raises(TypeError, match=rf"^{fn.__name__}: {msg}"):
            fn(shape, np.float32)


# ---- on a GPU: the memory itself --------------------------------------------------------------
@pytest.fixture
def cupy():
    return pytest.importorskip("cupy", reason="CuPy makes the foreign allocations")


class Claims:
    """A real allocation's pointer with a shape the test chooses (a lying interface)."""

    def __init__(self, ptr, shape, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "version": 3}


@pytest.mark.gpu
def test_an_interface_that_claims_more_than_its_allocation_is_refused(cupy, no_leak):
    x = cupy.arange(16, dtype=cupy.float32)                   # a 64-byte allocation
    base = x.data.ptr
    with pytest.raises(ValueError, match=r"from_dlpack: x claims 67108864 bytes from .*, but the "
                                         r"allocation there holds \d+ bytes"):
        gm.from_dlpack(Claims(base, (1 << 24,)))
    # inside it: accepted, shared, right values
    d = gm.from_dlpack(Claims(base + 16, (8,)))
    np.testing.assert_array_equal(d.get(), np.arange(4, 12, dtype=np.float32))
    np.testing.assert_array_equal(gm.copy(d).get(), np.arange(4, 12, dtype=np.float32))
    with pytest.raises(ValueError, match=r"x's data at .* is not device memory of a GPU"):
        gm.from_dlpack(Claims(np.zeros(4, np.float32).ctypes.data, (4,)))   # a host pointer
    with pytest.raises(ValueError, match=r"data pointer is 0 \(NULL\) while it claims 64 bytes"):
        gm.from_dlpack(Claims(0, (16,)))
    assert gm.from_dlpack(Claims(0, (0,))).shape == (0,)
    gm.copy(gm.to_device(np.ones(8, np.float32)))             # and the next call works


@pytest.mark.gpu
def test_after_a_fault_every_call_says_the_context_is_lost(tmp_path):
    pytest.importorskip("cupy")
    script = textwrap.dedent("""
        import numpy as np, cupy, gpumem as gm
        gm.copy(gm.to_device(np.ones(8, np.float32)))
        bad = cupy.RawKernel('extern "C" __global__ void f(int *p) { *(volatile int *)8 = 1; }', 'f')
        bad((1,), (1,), (cupy.zeros(1, cupy.int32),))
        try:
            cupy.cuda.runtime.deviceSynchronize()
        except Exception as e:
            print("cupy:", type(e).__name__)
        for attempt in range(2):
            try:
                gm.copy(gm.to_device(np.ones(8, np.float32)))
                print("ran")
            except gm.CudaError as e:
                print("gpumem:", e.name, "|", e)
    """)
    gm.empty_cache()       # this process's pool may hold most of the GPU: the child needs some
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("gpumem:")]
    assert len(lines) == 2, out.stdout + out.stderr
    for ln in lines:
        assert "the CUDA context is lost" in ln and "restart the process" in ln, ln
        # the fault as the runtime names it (an illegal address; a launch failure on some drivers)
        assert "cudaErrorIllegalAddress" in ln or "cudaErrorLaunchFailure" in ln, ln


# ---- another library's CUDA arrays as operands and out= (issue 30) ------------------------------
def test_a_foreign_operand_is_checked_like_from_dlpack():
    with pytest.raises(TypeError, match=r"^copy: a.__cuda_array_interface__ must be a dict"):
        gm.copy(Interface(5))
    with pytest.raises(TypeError, match=r"^copy: out.__cuda_array_interface__ must be a dict"):
        gm.copy(np.ones(4, np.float32), out=Interface(5))
    with pytest.raises(ValueError, match=r"^vec_add: b's data pointer is 0 \(NULL\)"):
        gm.vec_add(np.ones(3, np.float32), Interface({**GOOD, "shape": (3,)}))
    with pytest.raises(TypeError, match=r"^vec_add: b.__cuda_array_interface__ raised: "
                                        r"RuntimeError: no"):
        gm.vec_add(np.ones(4, np.float32), Interface(RuntimeError("no")))
    with pytest.raises(TypeError, match=r"^copy: a must be a numpy.ndarray or gpumem.DeviceArray, "
                                        r"not object \(a CUDA array with __cuda_array_interface__ "
                                        r"or __dlpack__ is taken too\)"):
        gm.copy(object())


ADDRESS = 2**40                   # 256-byte aligned: a fake device address no check follows


def test_a_read_only_foreign_out_is_refused():
    a = np.ones(8, np.float32)
    ro = Interface({"data": (ADDRESS, True), "shape": (8,), "typestr": "<f4", "version": 3})
    with pytest.raises(ValueError, match=r"^copy: out is read-only \(its owner says so\)"):
        gm.copy(a, out=ro)
    with pytest.raises(ValueError, match=r"^vec_add: out is read-only"):
        gm.vec_add(a, a, out=ro)


def test_foreign_shapes_and_out_are_checked_before_the_gpu():
    f = lambda shape, t="<f4": Interface({"data": (ADDRESS, False), "shape": shape,  # noqa: E731
                                          "typestr": t, "version": 3})
    with pytest.raises(ValueError, match=r"^vec_add: a and b must have the same shape"):
        gm.vec_add(f((999,)), f((1000,)))
    with pytest.raises(ValueError, match=r"^vec_add: out has shape \(10,\); the result has "
                                         r"shape \(1000,\)"):
        gm.vec_add(f((1000,)), f((1000,)), out=f((10,)))
    with pytest.raises(TypeError, match=r"^vec_add: out has dtype dtype\('float64'\)"):
        gm.vec_add(f((1000,)), f((1000,)), out=f((1000,), "<f8"))
    with pytest.raises(ValueError, match=r"^matmul: inner dimensions differ"):
        gm.matmul(f((4, 5)), f((6, 4)))
    with pytest.raises(ValueError, match=r"^matmul: a must be 2-D"):
        gm.matmul(f((4,)), f((4,)))
    # read whole and right: only then the device (none here)
    if not gm.is_available():
        with pytest.raises(gm.CudaUnavailableError):
            gm.vec_add(f((1000,)), f((1000,)))


@pytest.mark.gpu
def test_cupy_arrays_are_operands_and_outputs_without_a_copy(cupy, no_leak):
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(1001).astype(np.float32) for _ in range(2))
    ca, cb = cupy.asarray(a), cupy.asarray(b)
    got = gm.vec_add(ca, cb)
    assert isinstance(got, gm.DeviceArray)
    np.testing.assert_array_equal(got.get(), a + b)
    out = cupy.full(1001, cupy.nan, dtype=cupy.float32)
    assert gm.vec_add(ca, cb, out=out) is not None
    np.testing.assert_array_equal(cupy.asnumpy(out), a + b)    # written in CuPy's memory
    m = rng.standard_normal((37, 41)).astype(np.float32)
    np.testing.assert_allclose(gm.transpose(cupy.asarray(m)).get(), m.T)
    with pytest.raises(TypeError, match=r"vec_add: a has dtype dtype\('float64'\)"):
        gm.vec_add(cupy.ones(8), cupy.ones(8))
    with pytest.raises(ValueError, match=r"^copy: a is not C-contiguous"):
        gm.copy(cupy.ones(64, dtype=cupy.float32)[::2])


@pytest.mark.gpu
def test_work_on_the_producers_stream_is_waited_for(cupy):
    # CuPy fills x on a stream of its own and hands it over at once: gpumem waits for that
    # stream (the interface's 'stream', version 3) before its kernel reads x
    s = cupy.cuda.Stream(non_blocking=True)
    for _ in range(5):
        with s:
            x = cupy.zeros(1 << 24, dtype=cupy.float32)
            for _ in range(20):
                x += 1.0
            got = gm.copy(x)
        assert float(got.get().min()) == 20.0
    s.synchronize()


@pytest.mark.gpu
def test_torch_tensors_are_operands_through_dlpack():
    torch = pytest.importorskip("torch")
    t = torch.arange(1000, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):                 # the producer's stream: DLPack's stream= handshake
        u = t * 3
        got = gm.vec_add(u, t)
    np.testing.assert_array_equal(got.get(), 4 * np.arange(1000, dtype=np.float32))
    out = torch.empty(1000, dtype=torch.float32, device="cuda")
    gm.copy(t, out=out)
    assert torch.equal(out, t)


class Both:
    """An array with both protocols, as CuPy's and PyTorch's have: which one gpumem reads is
    counted (``dlpack``: calls of __dlpack_device__ or __dlpack__)."""

    def __init__(self, cai):
        self.cai, self.dlpack = cai, 0

    @property
    def __cuda_array_interface__(self):
        if isinstance(self.cai, BaseException):
            raise self.cai
        return self.cai

    def __dlpack_device__(self):
        self.dlpack += 1
        return (1, 0)                    # the host: refused by name, before any capsule

    def __dlpack__(self, stream=None, max_version=None):
        self.dlpack += 1
        raise AssertionError("not reached: the host device is refused first")


@pytest.mark.parametrize("cai, via_dlpack", [
    ({**GOOD, "stream": 1}, False),           # version 3 naming its stream: read directly
    ({**GOOD, "stream": None}, True),         # no stream to wait for said: DLPack's stream=
    ({**GOOD, "version": 2}, True),           # PyTorch's version 2: DLPack's stream=
    (RuntimeError("requires grad"), True),    # an interface that raises: DLPack decides
])
def test_an_array_with_both_protocols_is_read_through_the_one_that_names_its_stream(
        cai, via_dlpack):
    """A version-3 interface with a stream costs no capsule (and no producer-side event, as
    CuPy's __dlpack__(stream=) records each call); otherwise DLPack orders the streams."""
    x = Both(cai)
    try:
        gm.from_dlpack(x)
    except (ValueError, gm.CudaUnavailableError):
        pass                 # a 0-byte array, or no GPU: only the route matters here
    assert (x.dlpack > 0) == via_dlpack, x.dlpack


@pytest.mark.parametrize("typestr", ["<f2", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2",
                                     "<u4", "<u8", "|b1", "<c8", "|f4", ">f4", "<f16"])
def test_each_type_string_reads_as_numpy_reads_it(typestr):
    """The plain little-endian codes are read without NumPy's converter: the dtype a kernel
    is told about is the one NumPy gives the same string (or its refusal)."""
    x = Interface({"data": (ADDRESS, False), "shape": (4,), "typestr": typestr, "version": 3})
    try:
        want = np.dtype(typestr)
    except TypeError:
        with pytest.raises(ValueError, match=r"is not a NumPy type string"):
            gm.vec_add(x, x)
        return
    if want == np.float32 and want.isnative:
        # taken: the call goes on to the device, which refuses the fake address (or is absent)
        with pytest.raises((gm.CudaUnavailableError, ValueError)) as e:
            gm.vec_add(x, x)
        assert "dtype" not in str(e.value)
        return
    with pytest.raises((TypeError, ValueError), match=r"^vec_add: a has dtype ") as e:
        gm.vec_add(x, x)
    assert repr(want) in str(e.value) or not want.isnative


class Counted(Interface):
    """An interface that counts its reads (CuPy builds the dict anew on each)."""

    reads = 0

    @property
    def __cuda_array_interface__(self):
        Counted.reads += 1
        return self.cai


def test_an_operands_interface_is_read_once():
    x = Counted({"data": (ADDRESS, False), "shape": (4,), "typestr": "<f8", "version": 3})
    for call in (lambda: gm.vec_add(x, np.ones(4, np.float32)), lambda: gm.copy(x),
                 lambda: gm.vec_add(np.ones(4, np.float32), np.ones(4, np.float32), out=x)):
        Counted.reads = 0
        with pytest.raises(TypeError, match=r"dtype"):
            call()
        assert Counted.reads == 1
