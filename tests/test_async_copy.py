"""gpumem.lessons.async_copy: a tile filled through registers, cp.async, the bulk copy
engine and the tensor copy, in a tiled copy and transpose.

Without a GPU: the variant tables, which GPUs run which variant, the tensor map's view
of rows that are not whole 16-byte chunks (and, element by element, that a tile
fetched through that view -- boxes, zero fill, rest rows, the 128-byte swizzle --
lands where the kernels read it), every bad argument refused by name, the model-only
comparison and the report's unmeasured row.  On a GPU: every variant of both families
equals NumPy bit for bit on awkward sizes into poisoned outputs; the model's sectors
and shared wavefronts equal the counters; the swizzle removes the transpose's bank
conflicts; nothing leaks and the next call works."""
import itertools
import re

import numpy as np
import pytest

import gpumem as gm
from gpumem import experiments
from gpumem.lessons import async_copy as ac
from gpumem.lessons.async_copy import tensor_view, tile_copy_reference, tile_transpose_reference

from _helpers import poisoned
from _fake_gpu import FakeGPU, first_with

gpu = pytest.mark.gpu
VARIANTS = ("ldg_sts", "cp_async4", "cp_async16", "bulk", "tensor", "tensor_swizzle128")
FAMILIES = ("tile_copy", "tile_transpose")
# awkward sizes: 1, primes, one past and one short of the tile, 8190-like rows in pairs
# (n % 4 == 2) and in fours (n odd), the rest rows of an odd m
SIZES = [(1, 1), (1, 7), (7, 1), (3, 5), (2, 190), (33, 127), (127, 33), (190, 257),
         (257, 65), (65, 68), (64, 64), (31, 190), (35, 4 * 37 + 2), (97, 1023), (4, 4)]


# ---- tables, declaration (no GPU) ----------------------------------------------------------
def test_variants_tables():
    for fam in FAMILIES:
        vs = gm.variants(fam)
        assert [v.name for v in vs] == list(VARIANTS)
        assert [v.select for v in vs] == [0, 1, 2, 3, 4, 5]
        assert all(v.bytes == "8*M*N" for v in vs)
        for v in vs:        # every variant past ldg_sts says which GPUs run it
            need = ac.CC_NEEDED[v.name]
            if need != (0, 0):
                assert f"compute capability {need[0]}.{need[1]}+" in v.idea, (fam, v.name)
    assert gm.tile_transpose is ac.tile_transpose and gm.tile_copy is ac.tile_copy
    assert experiments.async_compare is ac.async_compare
    assert ac.LESSON.notebooks == ("14_async_copy",) and ac.LESSON.benchmark == "async_copy"
    assert "async_copy" in gm.lessons.LESSONS
    rows = {r["name"]: r for r in gm._core.args("tile_transpose")}
    assert rows["variant"]["default"] == "tensor_swizzle128"


@pytest.mark.parametrize("variant, cc, ok", [
    ("ldg_sts", (7, 5), True), ("cp_async4", (7, 5), False), ("cp_async4", (8, 0), True),
    ("cp_async16", (8, 9), True), ("bulk", (8, 9), False), ("bulk", (9, 0), True),
    ("tensor", (9, 0), True), ("tensor_swizzle128", (8, 6), False),
    ("tensor_swizzle128", (12, 0), True), ("tensor", (np.int64(9), np.int64(0)), True)])
def test_which_gpus_run_each_variant(variant, cc, ok):
    assert ac.variant_capable(variant, cc) is ok


def test_the_tensor_view():
    v = tensor_view(8190, 8190)          # 32760-byte rows: in pairs, 65520 = 16 * 4095
    assert v == {"k": 2, "view_rows": 4095, "view_cols": 16380, "stride_bytes": 65520,
                 "box": (32, 16), "rest_rows": 0}
    assert tensor_view(8192, 8192)["k"] == 1 and tensor_view(8192, 8192)["rest_rows"] == 0
    v = tensor_view(8191, 8191)          # odd rows: in fours, 131056 = 16 * 8191
    assert v["k"] == 4 and v["stride_bytes"] == 131056 and v["view_rows"] == 2047
    assert v["rest_rows"] == 3
    assert tensor_view(3, 5)["view_rows"] == 0 and tensor_view(3, 5)["rest_rows"] == 3
    for m, n in SIZES:
        v = tensor_view(m, n)
        assert v["stride_bytes"] % 16 == 0 and 0 <= v["rest_rows"] < v["k"]
        assert v["k"] * v["view_rows"] + v["rest_rows"] == m


# ---- the tile, element by element, as the kernels fill and read it ---------------------
def _emulate(a, variant, transpose):
    """The kernels of cuda/async_copy.cu on the CPU, element by element: the tile filled
    as each variant fills it (the tensor copy: boxes of the view, each starting on the
    16-byte grid of its view row -- the engine faults otherwise -- with zero fill past
    the view's bounds and elements outside the tile left stale; a box whose data starts
    off the grid is read shifted, its last columns from the next box; the rest rows read
    from a; the other variants: row-major), stale shared memory as NaN, then read back
    and stored (masked) as the consumers do.  Every view element the engine reads must
    lie inside a.  The transpose at m % 8 != 0: the tile's 8 rows below too (the ext
    rows: in k slots of 256 words after the tile, box j's rows in slot j), and the
    steps that write whole sectors of out -- each element of out written once."""
    m, n = a.shape
    v = tensor_view(m, n)
    tensor = variant in ("tensor", "tensor_swizzle128")
    k = v["k"] if tensor else 1
    per = 32 // k
    sw = variant == "tensor_swizzle128"
    first = k * v["view_rows"] if tensor else m
    flat = a.ravel()
    out = np.full((n, m) if transpose else (m, n), np.nan, np.float32)
    ext = transpose and m % 8 != 0
    written = np.zeros((n, m), np.int64)

    def place(s, col):                   # word of (smem row s, tile column col)
        j = col // 4
        return s * 32 + 4 * ((j ^ (s & 7)) if sw else j) + col % 4

    def tile_row(s):
        return k * (s % per) + s // per

    def shift(s):                        # words box s // per's data lies past the grid
        return ((s // per) * n) % 4

    def box(r0, cb):                     # the k boxes of the tile at column cb
        st = np.full(32 * 32 + 256 * k, np.nan, np.float32)
        if v["view_rows"] == 0:
            return st
        for j in range(k):
            x0 = (j * n) // 4 * 4 + cb
            assert x0 % 4 == 0           # the box starts on the 16-byte grid
            # the tile's box, then (ext) the ext box into slot j, if the view reaches it
            boxes = [(0, j * per, r0 // k, per)]       # (base, smem row, view row, rows)
            if ext and (r0 + 32) // k < v["view_rows"]:
                boxes.append((1024 + 256 * j, 0, (r0 + 32) // k, 8 // k))
            for at, s0, y0, rows in boxes:
                for sp in range(rows):
                    y = y0 + sp
                    for x in range(32):
                        X = x0 + x
                        inside = X < k * n and y < v["view_rows"]
                        if inside:
                            assert y * k * n + X < m * n   # never past a's end
                        st[at + place(s0 + sp, x)] = flat[y * k * n + X] if inside else 0
        return st

    def word(st, nx, s, p):              # tile column p of smem row s, shifted
        p += shift(s)
        return st[place(s, p)] if p < 32 else nx[place(s, p - 32)]

    def ext_word(st, nx, t, p):          # box word p of tile row t (t < 40)
        j, x = t % k, t // k
        at, row = (0, j * per + x) if t < 32 else (1024 + 256 * j, x - per)
        return st[at + place(row, p)] if p < 32 else nx[at + place(row, p - 32)]

    for r0 in range(0, m, 32):
        for c0 in range(0, n, 32):
            if tensor:
                st = box(r0, c0)
                nx = box(r0, c0 + 32) if k > 1 else None
            else:
                st, nx = np.full(32 * 32 + 256, np.nan, np.float32), None
                for R in range(min(40 if ext else 32, m - r0)):
                    for x in range(min(32, n - c0)):
                        st[place(R, x)] = a[r0 + R, c0 + x]
            if ext:                      # the steps: lane l of warp w, step q
                for w, lane, q in itertools.product(range(8), range(32), range(-1, 4)):
                    g, i = lane % 8, (lane // 8 + q) % 4
                    o = c0 + 4 * w + i
                    t = (-o * m) % 8 + 8 * q + g
                    R = r0 + t
                    if (q < 0 and r0) or t < 0 or R >= m or o >= n:
                        continue
                    p = 4 * w + i + ((t % k) * n) % 4
                    out[o, R] = a[R, o] if R >= first else ext_word(st, nx, t, p)
                    written[o, R] += 1
                continue
            for s in range(32):
                r = r0 + tile_row(s)
                for col in range(32):
                    c = c0 + col
                    if r < m and c < n:
                        got = a[r, c] if r >= first else word(st, nx, s, col)
                        if transpose:
                            out[c, r] = got
                        else:
                            out[r, c] = got
    assert not ext or (written == 1).all()
    return out


@pytest.mark.parametrize("variant", ["ldg_sts", "tensor", "tensor_swizzle128"])
@pytest.mark.parametrize("m, n", [(1, 1), (3, 5), (2, 6), (37, 41), (33, 70), (70, 33),
                                  (67, 65), (35, 4 * 9 + 2), (64, 36), (8, 2), (7, 1),
                                  (40, 99), (33, 127)])
def test_the_tile_path_lands_every_element(variant, m, n, rng):
    a = rng.standard_normal((m, n)).astype(np.float32) + 1   # no element is 0
    np.testing.assert_array_equal(_emulate(a, variant, False), a)
    np.testing.assert_array_equal(_emulate(a, variant, True), a.T)


def test_references(rng):
    a = rng.standard_normal((37, 41)).astype(np.float32)
    t = tile_transpose_reference(a)
    assert t.flags.c_contiguous and t.shape == (41, 37) and np.array_equal(t, a.T)
    c = tile_copy_reference(a[:, ::2])
    assert c.flags.c_contiguous and np.array_equal(c, a[:, ::2])


_A = np.ones((5, 6), np.float32)
BAD = [
    (lambda: gm.tile_copy(_A.astype(np.float64)), TypeError, "tile_copy: a has dtype"),
    (lambda: gm.tile_transpose(np.ones(6, np.float32)), ValueError, "tile_transpose: a must be 2-D"),
    (lambda: gm.tile_transpose([[1.0]]), TypeError, "tile_transpose: a must be"),
    (lambda: gm.tile_transpose(None), TypeError, "tile_transpose: a"),
    (lambda: gm.tile_copy(_A, variant="tma"), ValueError, "variant='tma' is unknown"),
    (lambda: gm.tile_copy(_A, variant=5), TypeError, "tile_copy: variant must be"),
    (lambda: gm.tile_copy(_A, variant="cp_async16"), ValueError,
     "tile_copy: a is (5, 6); variant='cp_async16' copies whole 16-byte chunks of a row, so "
     "a's rows must be multiples of 16 bytes (N a multiple of 4)"),
    (lambda: gm.tile_transpose(_A, variant="bulk"), ValueError,
     "tile_transpose: a is (5, 6); variant='bulk' copies whole 16-byte chunks"),
    (lambda: gm.tile_transpose(np.broadcast_to(np.float32(0), (65535 * 32 + 1, 4))),
     ValueError, "tile_transpose: a is (2097121, 4), too large for one launch"),
    (lambda: gm.tile_copy(np.broadcast_to(np.float32(0), (1, (1 << 29) + 4))), ValueError,
     "too large for one launch"),
    (lambda: gm.tile_copy(_A, out=np.ones((5, 6), np.float32)), TypeError, "tile_copy: out"),
    (lambda: gm.tile_copy(_A, tiles=3), ValueError, "tile_copy: tiles=3 is not allowed"),
    (lambda: gm.tile_transpose(_A, tiles=128), ValueError, "tile_transpose: tiles=128"),
    (lambda: gm.tile_transpose(_A, tiles=2.0), TypeError, "tile_transpose: tiles must be"),
    (lambda: tensor_view(0, 5), ValueError, "tensor_view: m=0"),
    (lambda: tensor_view(5, 2.0), TypeError, "tensor_view: n must be"),
    (lambda: ac.variant_capable("tma", (9, 0)), ValueError, "variant_capable: variant"),
    (lambda: ac.variant_capable("tensor", 9.0), TypeError, "variant_capable: cc must be"),
    (lambda: ac.variant_capable("tensor", (9,)), TypeError, "variant_capable: cc must be"),
    (lambda: ac.async_compare(0, 5), ValueError, "async_compare: m=0"),
    (lambda: ac.async_compare(family="copy"), ValueError, "async_compare: family"),
    (lambda: ac.async_compare(variants=["x"]), ValueError, "variant='x'"),
    (lambda: ac.async_compare(repeat=0), ValueError, "async_compare: repeat=0"),
    (lambda: ac.async_compare(tiles=3), ValueError, "async_compare: tiles=3 is not allowed"),
    (lambda: ac.async_compare(progress=2), TypeError, "async_compare: progress must be"),
    (lambda: ac.registers("transpose", "tensor"), ValueError, "registers: family"),
    (lambda: tile_transpose_reference(np.ones(3)), ValueError, "tile_transpose_reference: a"),
]


@pytest.mark.parametrize("call, exc, msg", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_every_bad_argument_is_refused_by_name(call, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        call()


def test_valid_arguments_are_only_checked():
    with gm.runtime.args._checking():
        for v in VARIANTS:
            assert gm.tile_copy(np.ones((7, 8), np.float32), variant=v) is None
            assert gm.tile_transpose(np.ones((9, 12), np.float32), variant=v) is None
        for v in ("ldg_sts", "cp_async4", "tensor", "tensor_swizzle128"):   # any N
            assert gm.tile_transpose(np.ones((9, 8191), np.float32), variant=v) is None
        assert gm.tile_copy(np.ones((0, 5), np.float32)) is None


def test_compare_without_a_gpu_is_the_model(no_gpu):
    t = ac.async_compare(256, 190, progress=False)
    rows = {r["variant"]: r for r in t}
    assert list(rows) == list(VARIANTS)
    for v in ("cp_async16", "bulk"):           # 190 floats: no whole 16-byte chunks
        assert "not a multiple of 4" in rows[v]["note"]
    p = gm.model.predict("tile_transpose", "tensor", m=256, n=190)
    assert rows["tensor"]["gst_transactions"] == p["gst_transactions"]
    assert rows["tensor_swizzle128"]["shared_load_bank_conflict"] < \
        rows["tensor"]["shared_load_bank_conflict"]
    assert "ms" not in rows["tensor"] and "no GPU" in t.title


def test_report_without_a_gpu():
    (row,) = ac._headline(False, True)
    assert row["lesson"] == "async_copy" and row["measured"] == {}
    assert row["measured_text"].startswith("would measure: ")
    mod = row["model"]
    assert mod["transpose_tensor_shared_load_transactions"] == \
        8 * mod["transpose_tensor_swizzle128_shared_load_transactions"]
    assert "8x the wavefronts without the swizzle" in row["model_text"]


# ---- on a GPU ------------------------------------------------------------------------------
def _capable(variant):
    cc = tuple(gm.device().compute_capability)
    if not ac.variant_capable(variant, cc):
        pytest.skip(f"{variant} needs compute capability {ac.CC_NEEDED[variant]} (this GPU: {cc})")


@gpu
@pytest.mark.parametrize("variant", [v for v in VARIANTS if ac.CC_NEEDED[v] > (0, 0)])
def test_a_gpu_below_the_variant_is_refused_naming_both_capabilities(variant, pretend_cc,
                                                                      rng, no_leak):
    """The C refusal (gm_need_cc) through a pretended compute capability just below the
    variant's: CudaError, nothing launched, and at the variant's own capability it runs."""
    _capable(variant)
    need = ac.CC_NEEDED[variant]
    below = (8, 9) if need == (9, 0) else (7, 5)
    a = rng.standard_normal((33, 64)).astype(np.float32)
    pretend_cc(*below)
    for fn in (gm.tile_copy, gm.tile_transpose):
        with pytest.raises(gm.CudaError, match=rf"^{fn.__name__}: variant='{variant}' needs "
                                               rf"compute capability {need[0]}\.{need[1]} or "
                                               rf"newer \(.*\); this GPU has compute capability "
                                               rf"{below[0]}\.{below[1]}$") as e:
            fn(a, variant=variant)
        assert e.value.name == "cudaErrorNotSupported"
    np.testing.assert_array_equal(gm.tile_copy(a, variant="ldg_sts"), a)
    pretend_cc(*need)
    np.testing.assert_array_equal(gm.tile_transpose(a, variant=variant), a.T)


@gpu
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_equals_numpy_on_awkward_sizes(family, variant, rng, no_leak):
    _capable(variant)
    fn = gm.tile_copy if family == "tile_copy" else gm.tile_transpose
    ref = tile_copy_reference if family == "tile_copy" else tile_transpose_reference
    for m, n in SIZES + [(int(rng.integers(1, 300)), int(rng.integers(1, 300)))]:
        if variant in ("cp_async16", "bulk") and n % 4:
            continue
        a = rng.standard_normal((m, n)).astype(np.float32)
        launched = (m, n)
        want = ref(a)
        out = poisoned(want.shape)
        got = fn(gm.to_device(a), variant=variant, out=out)
        assert got is out
        np.testing.assert_array_equal(out.get(), want, err_msg=f"{variant} {m} x {n}")
        np.testing.assert_array_equal(fn(a, variant=variant), want)     # ndarray in, out
    rec = gm.last_record()
    m, n = launched                      # the last size run (cp_async16 and bulk skip some)
    assert rec.kernel == family and rec.variant == variant
    assert rec.params["tiles"] == (8 if family == "tile_copy" else 2 if m % 8 == 0 else 8)
    assert rec.block == (256, 1, 1) and rec.bytes == 8 * a.size
    assert rec.grid == gm.model.launch_config(family, variant, m=m, n=n)["grid"]
    # 10 tile columns; rows of whole 16-byte chunks, and (the tensor variants' shifted
    # runs, whose last tile reads the run's tail) rows viewed in pairs and in fours
    for m, n in ((97, 32 * 9 + 4), (70, 32 * 9 + 2), (37, 32 * 9 + 3)):
        if variant in ("cp_async16", "bulk") and n % 4:
            continue
        a = rng.standard_normal((m, n)).astype(np.float32)
        for tiles in (1, 2, 4, 16, 64):  # a ring longer and shorter than the block's run
            out = poisoned(ref(a).shape)
            np.testing.assert_array_equal(fn(a, variant=variant, tiles=tiles, out=out).get(),
                                          ref(a), err_msg=f"{variant} {m} x {n} tiles={tiles}")
            runs, rows = -(-10 // tiles), -(-m // 32)   # the transpose: one row of blocks
            assert gm.last_record().grid == ((runs, rows, 1) if family == "tile_copy" else
                                             (runs * rows, 1, 1))


@gpu
@pytest.mark.parametrize("m, n", [(8190, 8190), (4097, 8191), (2048, 8192)])
def test_the_tensor_copy_at_large_awkward_sizes(m, n, rng, no_leak):
    _capable("tensor")
    a = rng.standard_normal((m, n)).astype(np.float32)
    d = gm.to_device(a)
    for v in ("tensor", "tensor_swizzle128"):
        out = poisoned((n, m))
        np.testing.assert_array_equal(gm.tile_transpose(d, variant=v, out=out).get(), a.T)
        out = poisoned((m, n))
        np.testing.assert_array_equal(gm.tile_copy(d, variant=v, out=out).get(), a)


@gpu
def test_registers_and_the_launch(no_leak):
    for fam in FAMILIES:
        for v in VARIANTS:
            r = ac.registers(fam, v)
            assert 8 <= r <= 255, (fam, v, r)
            attrs = gm.kernel_attributes(fam, v)
            assert attrs.local_bytes_per_thread == 0, (fam, v)   # no spills
    t = ac.async_compare(256, 256, repeat=2, progress=False)
    for row in t:
        if not row["note"]:
            assert row["ms"] > 0 and row["registers"] >= 8


@gpu
@pytest.mark.parametrize("family", FAMILIES)
def test_model_equals_counters(family, counters, no_leak):
    """Sizes that are multiples of 32: every tile whole, the shared counts exact."""
    cc = tuple(gm.device().compute_capability)
    fn = gm.tile_copy if family == "tile_copy" else gm.tile_transpose
    m, n = 256, 192
    a = gm.to_device(np.ones((m, n), np.float32))
    vs = [v for v in VARIANTS if ac.variant_capable(v, cc)]
    keys = ("gst_transactions", "gst_requests", "shared_load_transactions")
    with gm.profile(metrics=list(keys) + ["gld_transactions", "gldgsts_transactions",
                                          "shared_store_transactions"]) as p:
        for v in vs:
            fn(a, variant=v)
    for v, rec in zip(vs, p.records):
        want = gm.model.predict(family, v, m=m, n=n)
        for k in keys:
            assert rec.metrics[k] == want[k], (v, k, rec.metrics[k], want[k])
        if v == "ldg_sts":      # every global load an LDG, every shared store an STS
            assert rec.metrics["gld_transactions"] == want["gld_transactions"]
            assert rec.metrics["shared_store_transactions"] == \
                want["shared_store_transactions"] == 32 * 48
        if v in ("bulk", "tensor", "tensor_swizzle128"):   # the engine's reads: no LSU loads
            assert rec.metrics["gld_transactions"] == want["gld_transactions"] == 0
        if v == "cp_async4":   # exact for 4-byte copies (gpumem.metrics says so)
            assert rec.metrics["gldgsts_transactions"] == want["gldgsts_transactions"]
    if family == "tile_transpose" and "tensor" in vs:
        conflicts = {v: r.metrics["shared_load_transactions"] for v, r in zip(vs, p.records)}
        assert conflicts["tensor"] == 8 * conflicts["tensor_swizzle128"]


@gpu
@pytest.mark.parametrize("m, n", [(250, 192), (190, 190)])
def test_the_transpose_writes_whole_sectors_off_the_grid(m, n, counters, no_leak):
    """m % 8 != 0: out's rows are off the 32-byte grid, and every variant's stores are the
    model's whole sectors (as many as the rows of out span, no more)."""
    cc = tuple(gm.device().compute_capability)
    a = gm.to_device(np.ones((m, n), np.float32))
    vs = [v for v in VARIANTS if ac.variant_capable(v, cc) and (n % 4 == 0 or v in
                                                                  ("ldg_sts", "cp_async4",
                                                                   "tensor",
                                                                   "tensor_swizzle128"))]
    with gm.profile(metrics=["gst_transactions", "gst_requests", "gld_transactions"]) as p:
        for v in vs:
            gm.tile_transpose(a, variant=v)
    spans = sum((4 * (o * m + m) - 1) // 32 - 4 * o * m // 32 + 1 for o in range(n))
    for v, rec in zip(vs, p.records):
        want = gm.model.predict("tile_transpose", v, m=m, n=n)
        assert rec.metrics["gst_transactions"] == want["gst_transactions"] == spans, v
        assert rec.metrics["gst_requests"] == want["gst_requests"], v
        if v == "ldg_sts":
            assert rec.metrics["gld_transactions"] == want["gld_transactions"]


class _Claims:
    """Another library's view of device memory: a pointer and a shape (CUDA array interface)."""

    def __init__(self, ptr, shape):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": "<f4", "version": 3}


@gpu
def test_data_off_the_16_byte_grid(rng, no_leak):
    """A view 4 bytes into an allocation: the variants that need 16-byte alignment refuse it
    by name before any launch; the others move it right."""
    m, n = 37, 68
    host = rng.standard_normal(m * n + 1).astype(np.float32)
    d = gm.to_device(host)
    a = gm.from_dlpack(_Claims(d.ptr + 4, (m, n)))
    want = host[1:].reshape(m, n)
    cc = tuple(gm.device().compute_capability)
    for v in VARIANTS:
        if not ac.variant_capable(v, cc):
            continue
        if v in ("ldg_sts", "cp_async4"):
            np.testing.assert_array_equal(gm.tile_transpose(a, variant=v).get(), want.T)
            np.testing.assert_array_equal(gm.tile_copy(a, variant=v).get(), want)
        else:
            for fn in (gm.tile_copy, gm.tile_transpose):
                with pytest.raises(ValueError, match=rf"{fn.__name__}: a's data at .* is not "
                                                     rf"16-byte aligned; variant='{v}' needs it"):
                    fn(a, variant=v)
    np.testing.assert_array_equal(gm.tile_copy(d.get()[:m * n].reshape(m, n)),
                                  host[:m * n].reshape(m, n))      # and the next call works


@gpu
def test_the_next_call_works_after_a_refusal(no_leak):
    a = np.ones((5, 6), np.float32)
    with pytest.raises(ValueError, match="whole 16-byte chunks"):
        gm.tile_copy(a, variant="bulk")
    np.testing.assert_array_equal(gm.tile_copy(a, variant="ldg_sts"), a)


# ---- the shared tests' checks of this lesson (issue 48: they name no lesson) -------------------
# gpumem report: the headline on the fake GPU (the stand-ins async_copy declares)
def test_report_headline_on_a_fake_gpu(monkeypatch):
    FakeGPU(monkeypatch)
    tma = first_with(ac.LESSON.headline(True, True),
                     "transpose_tensor_swizzle128_x_copy")["measured"]
    assert tma["transpose_tensor_swizzle128_x_copy"] == pytest.approx(1 / 1.04)
    assert tma["copy_ldg_sts_x_copy"] == pytest.approx(1 / 1.25)
