"""References the model's tests hold gpumem.model to: a thread-by-thread
simulator that builds every warp-wide instruction from the kernels' sources
and counts it with coalesce_warps, and the per-warp walk of the same models
(gpumem.model.predict._predict_reference)."""
import numpy as np

from gpumem.model import METRICS, coalesce_warps, predict
from gpumem.model.registry import _predict_reference

WARP = 32


# ---- a thread-by-thread reference: the kernels' sources, literally -----------
BASES = (0, 1 << 30, 2 << 30, 3 << 30)     # every buffer its own 256-aligned cudaMalloc


def _threads_1d(grid, block, per_block=None):
    """Global thread index i (per_block: the block stride of i) and validity, shape (warps, 32)."""
    per_block = block if per_block is None else per_block
    wpb = -(-block // WARP)
    tid = np.arange(wpb * WARP).reshape(wpb, WARP)
    b = np.arange(grid)[:, None, None]
    i = (b * per_block + tid[None]).reshape(-1, WARP)
    valid = np.broadcast_to(tid < block, (grid, wpb, WARP)).reshape(-1, WARP)
    return i, valid, tid


def _warptiled_streams(p, A, B, C, WS):
    """cuda/matmul.cu's warptiled<BM = BN = T, BK = 16, WM, WN>, line by line, block by
    block (row-major tiles 0 .. full - 1 whole; with the split tail, ``splits`` slices of
    each of the last ``tail``, then matmul_split_sum thread by thread: the workspace WS
    holds slice j's T x T block at j T^2 floats).  A and B are read with rows lda and ldb
    floats apart: K and N, or round4 of them where the launcher padded the operand (into
    WS after the slices, B from a 256-byte boundary on)."""
    M, N, K, T = p["m"], p["n"], p["k"], p.get("tile", 128)
    splits, tail = p.get("splits", 1), p.get("tail", 0)
    WM, WN = {128: (64, 32), 64: (32, 32)}[T]
    BK, WARPS_N = 16, T // WN
    THREADS = (T // WM) * WARPS_N * 32
    tn, ktiles = -(-N // T), -(-K // BK)
    tiles = tn * -(-M // T)
    full = tiles - tail
    tid = np.arange(THREADS).reshape(-1, WARP)
    warp, lane = tid // 32, tid % 32
    wm, wn = (warp // WARPS_N) * WM, (warp % WARPS_N) * WN
    lm, ln = (lane % 8) * 4, (lane // 8) * 4
    out, lda, ldb = [], K, N
    if K and M and N:                                   # the launcher's padded copies
        dst = WS + 4 * tail * splits * T * T            # after the slices
        if K % 4:
            lda = -(-K // 4) * 4
            out += _pad_streams(A, M, K, dst)
            A, dst = dst, dst + -(-4 * M * lda // 256) * 256
        if N % 4:
            ldb = -(-N // 4) * 4
            out += _pad_streams(B, K, N, dst)
            B = dst
    for b in range(full + tail * splits):
        tile, kt0, kt1 = b, 0, ktiles
        if b >= full:
            item = b - full
            z, tile = item % splits, full + item // splits
            kt0, kt1 = z * ktiles // splits, (z + 1) * ktiles // splits
        bm, bn = (tile // tn) * T, (tile % tn) * T
        for kt in range(kt0, kt1):                          # each k step loaded once
            k0 = kt * BK
            for i in range(T * BK // 4 // THREADS):         # A: float4 or 4 scalars
                f = tid + i * THREADS
                r, k = bm + f // 4, k0 + (f % 4) * 4
                vec = (lda % 4 == 0) & (r < M) & (k + 3 < lda)
                out.append(("ld", A + 4 * (r * lda + k), vec, 16))
                for j in range(4):
                    out.append(("ld", A + 4 * (r * lda + k + j), ~vec & (r < M) & (k + j < lda),
                                4))
            for i in range(BK * T // 4 // THREADS):         # B: cp.async, 16 bytes
                f = tid + i * THREADS
                k, col = k0 + f // (T // 4), bn + (f % (T // 4)) * 4
                out.append(("cp", B + 4 * (k * ldb + col), (k < K) & (col < N), 16))
        slice_ = b >= full
        base = WS + 4 * (b - full) * T * T if slice_ else C
        pitch = T if slice_ else N
        for i in range(4 * (WM // 32)):
            r = bm + wm + (i // 4) * 32 + lm + i % 4
            for s in range(WN // 16):
                c = bn + wn + s * 16 + ln
                addr = base + 4 * ((r - bm * slice_) * pitch + (c - bn * slice_))
                vec = (slice_ or N % 4 == 0) & (r < M) & (c + 3 < N)
                out.append(("st", addr, vec, 16))
                for j in range(4):
                    out.append(("st", addr + 4 * j, ~vec & (r < M) & (c + j < N), 4))
    if tail == 0:
        return out
    # matmul_split_sum: 256 threads a block over tail x T^2 elements
    per = T * T
    e = np.arange(tail * per).reshape(-1, WARP)
    i, local = e // per, e % per
    t = full + i
    r, c = (t // tn) * T + local // T, (t % tn) * T + local % T
    ok = (r < M) & (c < N)
    for z in range(splits):
        out.append(("ld", WS + 4 * ((i * splits + z) * per + local), ok, 4))
    out.append(("st", C + 4 * (r * N + c), ok, 4))
    return out


def _pad_streams(src, rows, cols, dst):
    """cuda/matmul.cu, matmul_pad_rows: rows x cols floats at src copied to dst with rows of
    round4(cols) floats; block x, thread t, step j: column 1024 x + 256 j + t of each row,
    loaded where inside the row, stored where inside the padded one."""
    t, out = np.arange(256).reshape(-1, WARP), []
    pitch = -(-cols // 4) * 4
    for r in range(rows):
        for bx in range(-(-pitch // 1024)):
            for j in range(4):
                c = bx * 1024 + j * 256 + t
                out += [("ld", src + 4 * (r * cols + c), c < cols, 4),
                        ("st", dst + 4 * (r * pitch + c), c < pitch, 4)]
    return out


def simulate(family, variant, granularity=32, **p):
    """Every warp-wide instruction of the launch, built thread by thread from the
    kernel source, counted by coalesce_warps.  Slow; for small launches."""
    streams = []   # (op, addresses (W, 32), active (W, 32), width)
    A, B, C = BASES[:3]
    if family == "matmul" and variant in ("mma", "wgmma") and p["k"] and p["m"] and p["n"]:
        # the launcher pads A (m x k) where k % 4, then B (k x n) where n % 4
        dst = BASES[3]
        for src, rows, cols in ((A, p["m"], p["k"]), (B, p["k"], p["n"])):
            if cols % 4:
                streams += _pad_streams(src, rows, cols, dst)
                dst += -(-4 * rows * (-(-cols // 4) * 4) // 256) * 256   # B's on 256 bytes
    if family in ("read_offset", "write_offset", "vec_add"):
        n, block = p["n"], p.get("block", 512)
        off = p.get("offset", 0)
        u = 4 if variant == "unroll4" else 1
        i, valid, _ = _threads_1d(-(-n // (u * block)), block, u * block)
        for j in range(u):
            ij = i + j * block
            k = ij + off
            act = valid & (k < n)
            ld, st = (k, ij) if family == "read_offset" else (ij, k)
            streams += [("ld", A + 4 * ld, act, 4), ("ld", B + 4 * ld, act, 4),
                        ("st", C + 4 * st, act, 4)]
    elif family == "strided_read":
        n, s, block = p["n"], p["stride"], p.get("block", 512)
        m = -(-n // s)
        i, valid, _ = _threads_1d(-(-m // block), block)
        act = valid & (i < m)
        streams += [("ld", A + 4 * i * s, act, 4), ("st", C + 4 * i, act, 4)]
    elif family == "struct_update":
        n, block = p["n"], p.get("block", 512)
        i, valid, _ = _threads_1d(-(-n // block), block)
        act = valid & (i < n)
        if variant == "aos":
            for f in (0, 4):
                streams += [("ld", A + 8 * i + f, act, 4), ("st", C + 8 * i + f, act, 4)]
        else:
            for row in (0, n):
                streams += [("ld", A + 4 * (row + i), act, 4), ("st", C + 4 * (row + i), act, 4)]
    elif family == "distance":
        n, block = p["n"], p.get("block", 512)
        i, valid, _ = _threads_1d(-(-n // block), block)
        act = valid & (i < n)
        if variant == "aos":
            streams += [("ld", A + 12 * i + f, act, 4) for f in (0, 4, 8)]
        else:
            streams += [("ld", A + 4 * (row + i), act, 4) for row in (0, n, 2 * n)]
        streams.append(("st", C + 4 * i, act, 4))
    elif family == "copy":
        n, block = p["n"], p.get("block", 256)
        if variant == "float":
            i, valid, _ = _threads_1d(-(-n // block), block)
            act = valid & (i < n)
            streams += [("ld", A + 4 * i, act, 4), ("st", C + 4 * i, act, 4)]
        else:
            n4, r = n // 4, n % 4
            i, valid, _ = _threads_1d(-(-(n4 + r) // block), block)
            v4 = valid & (i < n4)
            vs = valid & (i >= n4) & (i < n4 + r)
            e = 4 * n4 + (i - n4)
            streams += [("ld", A + 16 * i, v4, 16), ("st", C + 16 * i, v4, 16),
                        ("ld", A + 4 * e, vs, 4), ("st", C + 4 * e, vs, 4)]
    elif family == "matmul" and variant == "register_tiled":
        M, N, K = p["m"], p["n"], p["k"]
        gx, gy = -(-N // 64), -(-M // 64)
        tid = np.arange(256).reshape(8, WARP)
        bn = (np.arange(gx)[:, None, None, None] * 64 + 0 * np.arange(gy)[None, :, None, None])
        bm = (np.arange(gy)[None, :, None, None] * 64 + 0 * bn)
        bn, bm = np.broadcast_arrays(bn, bm)

        def warps(x):
            return np.broadcast_to(x, (gx, gy, 8, WARP)).reshape(-1, WARP).astype(np.int64)

        def vec_or_scalar(op, base, row, col, row_len, vec_ok, lane_ok):
            addr = base + 4 * (row * row_len + col)
            streams.append((op, addr, vec_ok, 16))
            for j in range(4):
                streams.append((op, addr + 4 * j, ~vec_ok & lane_ok(j), 4))

        ar, ac, br, bc, ty, tx = tid // 4, tid % 4 * 4, tid // 16, tid % 16 * 4, tid // 16, tid % 16
        for k0 in range(0, K, 16):
            r, kk = warps(bm + ar), warps(k0 + ac + 0 * bm)
            vec = (r < M) & (kk + 3 < K) & (K % 4 == 0)
            vec_or_scalar("ld", A, r, kk, K, vec, lambda j: (r < M) & (kk + j < K))
            kr, c = warps(k0 + br + 0 * bn), warps(bn + bc)
            vec = (kr < K) & (c + 3 < N) & (N % 4 == 0)
            vec_or_scalar("ld", B, kr, c, N, vec, lambda j: (kr < K) & (c + j < N))
        for i in range(4):
            r, c = warps(bm + ty * 4 + i), warps(bn + tx * 4)
            vec = (r < M) & (c + 3 < N) & (N % 4 == 0)
            vec_or_scalar("st", C, r, c, N, vec, lambda j: (r < M) & (c + j < N))
    elif family == "matmul" and variant == "warptiled":
        streams += _warptiled_streams(p, A, B, C, BASES[3])
    elif family == "matmul" and variant == "wgmma":
        # cuda/matmul_wgmma.cuh, line by line: the tiles come by the tensor copy (no load
        # instructions); C leaves through shared memory, 256 x 128 per block of 8 warps:
        # for i = tid, tid + 256, ...: row i / 64, columns 2 (i % 64), + 1
        M, N = p["m"], p["n"]
        BM, BN, THREADS = 256, 128, 256
        gx, gy = -(-N // BN), -(-M // BM)
        vec_ok = N % 2 == 0                                 # cudaMalloc'd: aligned
        for bx in range(gx):
            for by in range(gy):
                for it in range(BM * BN // 2 // THREADS):
                    i = it * THREADS + np.arange(THREADS).reshape(-1, WARP)
                    row, col = by * BM + i // (BN // 2), bx * BN + 2 * (i % (BN // 2))
                    ok = (row < M) & (col < N)
                    vec = ok & (col + 1 < N) & vec_ok
                    streams += [("st", C + 4 * (row * N + col), vec, 8),
                                ("st", C + 4 * (row * N + col), ok & ~vec, 4),
                                ("st", C + 4 * (row * N + col + 1), ok & ~vec & (col + 1 < N), 4)]
    elif family == "matmul" and variant == "mma":
        # cuda/matmul_mma.cuh, line by line: BM = BN = 128, BK = 32, 4 warps of 64 x 64
        M, N, K = p["m"], p["n"], p["k"]
        BM = BN = 128
        BK, THREADS = 32, 128
        gx, gy = -(-N // BN), -(-M // BM)
        tid = np.arange(THREADS).reshape(-1, WARP)
        bn = np.arange(gx)[:, None, None, None] * BN        # blockIdx.x * MMA_BN
        bm = np.arange(gy)[None, :, None, None] * BM        # blockIdx.y * MMA_BM

        def warps(x):
            return np.broadcast_to(x, (gx, gy) + tid.shape).reshape(-1, WARP).astype(np.int64)

        # the launcher pads rows off the 16-byte grid (zeros): A's rows lda floats apart, B's ldb
        lda, ldb = -(-K // 4) * 4, -(-N // 4) * 4          # (cudaMalloc'd: aligned bases)

        def load_tiles(k0):                                 # mma_load_tiles
            for i in range(BM * BK // 4 // THREADS):
                f = tid + i * THREADS
                r, c = warps(bm + f // (BK // 4) + 0 * bn), warps(k0 + (f % (BK // 4)) * 4)
                streams.append(("cp", A + 4 * (r * lda + c), (r < M) & (c < K), 16))
            for i in range(BK * BN // 4 // THREADS):
                f = tid + i * THREADS
                k, c = warps(k0 + f // (BN // 4)), warps(bn + (f % (BN // 4)) * 4 + 0 * bm)
                streams.append(("cp", B + 4 * (k * ldb + c), (k < K) & (c < N), 16))

        tiles = -(-K // BK)
        for s in range(2):                                  # the prologue: slices 0, 1
            if s < tiles:
                load_tiles(s * BK)
        for kt in range(tiles):
            if kt + 2 < tiles:
                load_tiles((kt + 2) * BK)
        warp, lane = tid // 32, tid % 32
        wm, wn = (warp // 2) * 64, (warp % 2) * 64
        g, t = lane // 4, lane % 4
        vec_c = N % 2 == 0
        for i in range(8):                                  # C's transpose per warp
            for h in range(2):
                r = warps(bm + wm + i * 8 + 2 * t + h + 0 * bn)  # r >= M: continue
                for j in range(4):
                    c = warps(bn + wn + j * 16 + 2 * g + 0 * bm)
                    full = vec_c & (r < M) & (c + 1 < N)
                    streams.append(("st", C + 4 * (r * N + c), full, 8))
                    for e in range(2):
                        streams.append(("st", C + 4 * (r * N + c + e),
                                        ~full & (r < M) & (c + e < N), 4))
    elif family == "matmul":
        M, N, K, t = p["m"], p["n"], p["k"], p.get("tile", 16)
        gx, gy = -(-N // t), -(-M // t)
        lin = np.arange(t * t).reshape(-1, WARP)            # warps of one block
        tx, ty = lin % t, lin // t
        bx = np.arange(gx)[:, None, None, None]
        by = np.arange(gy)[None, :, None, None]
        row = (by * t + ty[None, None]).astype(np.int64)    # (1, gy, wpb, 32)
        col = (bx * t + tx[None, None]).astype(np.int64)    # (gx, 1, wpb, 32)
        row, col = np.broadcast_arrays(row, col)
        row, col = row.reshape(-1, WARP), col.reshape(-1, WARP)
        tx = np.broadcast_to(tx, (gx, gy) + tx.shape).reshape(-1, WARP)
        ty = np.broadcast_to(ty, (gx, gy) + ty.shape).reshape(-1, WARP)
        inside = (row < M) & (col < N)
        if variant == "naive":
            for kk in range(K):
                streams += [("ld", A + 4 * (row * K + kk), inside, 4),
                            ("ld", B + 4 * (kk * N + col), inside, 4)]
        else:
            for k0 in range(0, K, t):
                streams += [("ld", A + 4 * (row * K + k0 + tx), (row < M) & (k0 + tx < K), 4),
                            ("ld", B + 4 * ((k0 + ty) * N + col), (k0 + ty < K) & (col < N), 4)]
        streams.append(("st", C + 4 * (row * N + col), inside, 4))
    else:
        raise AssertionError(family)
    tot = {"ld": [0, 0, 0], "st": [0, 0, 0]}
    if family == "matmul" and variant in ("warptiled", "mma"):
        tot["cp"] = [0, 0, 0]           # cp.async (LDGSTS): 32-byte sectors, apart from ld
    for op, addr, act, width in streams:
        g = granularity if op == "ld" else 32
        res = coalesce_warps(np.where(act, addr, 0), width, g, act).total()
        sectors = res.transactions
        if op == "cp" and width == 16:  # 16-byte copies: sectors counted per quarter warp
            sectors = coalesce_warps(np.where(act, addr, 0).reshape(-1, 8), width, g,
                                     np.asarray(act).reshape(-1, 8)).total().transactions
        for x, v in enumerate((res.requests, sectors, res.bytes_requested)):
            tot[op][x] += v
    return tot


def assert_same(family, variant, granularity=32, **p):
    got = predict(family, variant, granularity=granularity, **p)
    ref = simulate(family, variant, granularity, **p)
    if "cp" in ref:                     # the load counters count the cp.async copies too
        ref["ld"] = [x + y for x, y in zip(ref["ld"], ref["cp"])]
    for op, pre in (("ld", "gld"), ("st", "gst"), ("cp", "gldgsts")):
        if op not in ref:               # no cp.async in the kernel: no cp.async keys
            assert not any(key.startswith(pre + "_") for key in got), (family, variant, got)
            continue
        r, t, b = ref[op]
        assert (got[f"{pre}_requests"], got[f"{pre}_transactions"], got[f"{pre}_bytes_requested"]) \
            == (r, t, b), (family, variant, p, op)


BLOCKS_1D = (1, 3, 31, 32, 33, 64, 100, 128, 257, 512, 1000, 1024)


def assert_fast_equals_reference(family, variant, **p):
    """predict (warp classes with weights) == the same generators walking every
    warp on its own, key for key, for both granularities; and the counts are ints."""
    for g in (32, 128):
        fast = predict(family, variant, granularity=g, **p)
        ref = _predict_reference(family, variant, granularity=g, **p)
        assert fast == ref, (family, variant, g, p)
        assert all(type(fast[k]) is int for k in METRICS
                   if not k.endswith(("efficiency", "per_request")))


def one_d_params(family, variant, rng, grid, block, cut):
    """Parameters of a launch of ``grid`` blocks whose data ends ``cut`` threads
    before the end of the last block."""
    unroll = 4 if variant == "unroll4" else 1
    threads = max(grid * block * unroll - cut, 0)
    p = {"block": block}
    if family == "strided_read":
        s = int(rng.integers(1, 65))
        p.update(stride=s, n=max(threads * s - int(rng.integers(0, s)), 0))
    elif family == "copy" and variant == "float4":
        r = min(int(rng.integers(0, 4)), threads)
        p["n"] = 4 * (threads - r) + r               # n // 4 + n % 4 == threads
    else:
        p["n"] = threads
    if family in ("read_offset", "write_offset"):
        n = p["n"]
        p["offset"] = int(rng.choice([0, 1, 11, 33, 127, n // 3, max(n - 1, 0), n,
                                      int(rng.integers(0, n + 1))]))
        p["offset"] = min(p["offset"], n)
    return p


def fast_path_1d(family, variant, rng):
    """The body of each 1-D family's fast-path test: predict (warp classes) equals
    the per-warp walk on grids past the 128-block period several times, blocks that
    are not multiples of 32, the data ending anywhere in the last block, random
    offsets (up to n) and strides, and n = 0."""
    unroll = 4 if variant == "unroll4" else 1
    cases = [(1, 32, 0), (1, 1, 0), (128, 32, 0), (129, 33, 1), (257, 100, 99), (300, 3, 2)]
    for _ in range(10):
        block = int(rng.choice(BLOCKS_1D))
        cases.append((int(rng.integers(1, 700)), block, int(rng.integers(0, block * unroll))))
    for grid, block, cut in cases:
        assert_fast_equals_reference(family, variant,
                                     **one_d_params(family, variant, rng, grid, block, cut))
    assert_fast_equals_reference(family, variant, n=0)
