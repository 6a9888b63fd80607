"""Access generators: the global-memory instructions of every gpumem kernel,
warp by warp, for one launch with its real configuration.

Each generator follows its kernel's source (``cuda/*.cu``) address for
address: the grid and block the launcher picks, warps cut from consecutive
``threadIdx.x`` (then ``threadIdx.y``), partial last warps of a block, the
bounds checks, and where each array starts.  Every buffer comes from its own
``cudaMalloc`` (256-byte aligned) and arrays inside one buffer start where the
kernel says (``struct_update`` and ``distance`` in SoA layout keep x, y, z one
after the other in one buffer, so y starts ``4*n`` bytes in -- off the
32-byte grid unless n is a multiple of 8).

The work is vectorized over warps; most instructions of a 1-D kernel are
"affine" (active lanes a run of lanes, addresses a fixed stride apart), and
their sector counts depend on the start address only modulo the sector size,
so a launch of 2^24 threads costs a few passes over its 2^19 warps.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .coalescing import _check_granularity, affine_units, efficiency, runs_units

__all__ = ["predict", "launch_config", "matmul_traffic", "families", "METRICS"]

#: The keys of :func:`predict`'s result (nvprof names, plus requested bytes).
METRICS = (
    "gld_requests", "gld_transactions", "gld_efficiency", "gld_transactions_per_request",
    "gst_requests", "gst_transactions", "gst_efficiency", "gst_transactions_per_request",
    "gld_bytes_requested", "gst_bytes_requested",
)

WARP = 32
CACHES = ("default", "ca", "cg", "ldg", "cs")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---- the tally --------------------------------------------------------------
class _Tally:
    """Requests, transactions and requested bytes of loads and stores."""

    def __init__(self, granularity: int):
        self.g = {"ld": granularity, "st": 32}  # stores go to L2 in 32-byte sectors everywhere
        self.req = {"ld": 0, "st": 0}
        self.tx = {"ld": 0, "st": 0}
        self.bytes = {"ld": 0, "st": 0}

    def add(self, op: str, requests, transactions, nbytes, weight: int = 1) -> None:
        self.req[op] += int(requests) * weight
        self.tx[op] += int(transactions) * weight
        self.bytes[op] += int(nbytes) * weight

    def affine(self, op: str, first_addr, count, stride: int, width: int, weight: int = 1) -> None:
        """Instructions whose active lanes are ``count`` lanes ``stride`` bytes apart."""
        count = np.asarray(count, np.int64)
        on = count > 0
        c = count[on]
        if c.size == 0:
            return
        fa = np.broadcast_to(np.asarray(first_addr, np.int64), count.shape)[on]
        units = affine_units(fa, c, stride, width, self.g[op])
        lanes = c if stride else np.minimum(c, 1)        # same bytes for every lane: once
        self.add(op, c.size, units.sum(dtype=np.int64), width * lanes.sum(dtype=np.int64), weight)

    def runs(self, op: str, first_byte, last_byte, nruns, lanes, weight: int = 1) -> None:
        """Instructions made of sorted, non-overlapping byte runs (one per matrix row).

        ``first_byte``/``last_byte`` (instructions, R): the runs; only the
        first ``nruns`` of each row take part; ``lanes``: active lanes of each
        instruction (requested bytes = 4 per active lane).
        """
        nruns = np.asarray(nruns, np.int64)
        on = nruns > 0
        if not on.any():
            return
        g = self.g[op]
        units = runs_units(np.asarray(first_byte)[on] // g, np.asarray(last_byte)[on] // g,
                           nruns[on])
        lanes = np.broadcast_to(np.asarray(lanes, np.int64), nruns.shape)[on]
        self.add(op, on.sum(), units.sum(dtype=np.int64), 4 * lanes.sum(dtype=np.int64), weight)

    def result(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for op, p in (("ld", "gld"), ("st", "gst")):
            r, t, b = self.req[op], self.tx[op], self.bytes[op]
            out[f"{p}_requests"] = float(r)
            out[f"{p}_transactions"] = float(t)
            out[f"{p}_efficiency"] = efficiency(b, t, self.g[op])
            out[f"{p}_transactions_per_request"] = t / r if r else 0.0
            out[f"{p}_bytes_requested"] = float(b)
        return {k: out[k] for k in METRICS}


# ---- 1-D launches -----------------------------------------------------------
def _warps_1d(grid: int, block: int, per_block: int | None = None):
    """First thread index and lane count of every warp of a 1-D launch.

    Returns ``(base, w32, lanes)``: ``base`` is ``blockIdx.x * per_block``
    (``per_block`` defaults to ``block``), ``w32`` is ``32 * warp index in the
    block`` (so warp w's thread t has ``threadIdx.x = w32 + t``), ``lanes`` how
    many threads the warp has (the last warp of a block may be partial).
    """
    per_block = block if per_block is None else per_block
    wpb = _cdiv(block, WARP)
    w32 = (WARP * np.arange(wpb, dtype=np.int64))
    lanes = np.minimum(WARP, block - w32)
    base = per_block * np.arange(grid, dtype=np.int64)
    return np.repeat(base, wpb), np.tile(w32, grid), np.tile(lanes, grid)


def _active(limit, first, lanes):
    """Active lanes of a warp whose lane t handles index ``first + t`` and runs while < limit."""
    return np.clip(np.minimum(lanes, limit - first), 0, WARP)


def _grid1(threads: int, block: int) -> int:
    return _cdiv(threads, block)


def _offset_family(tally: _Tally, p: dict, unroll: int, shifted: str) -> None:
    """read_offset / write_offset: ``k = i + offset``; ``shifted`` is "ld" or "st"."""
    n, off, block = p["n"], p["offset"], p["block"]
    if n == 0:
        return
    grid = _cdiv(n, unroll * block)
    base, w32, lanes = _warps_1d(grid, block, unroll * block)
    for j in range(unroll):
        i0 = base + j * block + w32            # thread index of lane 0
        cnt = _active(n - off, i0, lanes)      # guard: i + offset < n
        ld0, st0 = (i0 + off, i0) if shifted == "ld" else (i0, i0 + off)
        tally.affine("ld", 4 * ld0, cnt, 4, 4, weight=2)   # A and B: separate 256-aligned buffers
        tally.affine("st", 4 * st0, cnt, 4, 4)


def _gen_read_offset(tally, variant, p):
    _offset_family(tally, p, 1 if variant == "unroll1" else 4, "ld")


def _gen_write_offset(tally, variant, p):
    _offset_family(tally, p, 1 if variant == "unroll1" else 4, "st")


def _gen_vec_add(tally, variant, p):
    n, block = p["n"], p["block"]
    if n == 0:
        return
    base, w32, lanes = _warps_1d(_grid1(n, block), block)
    i0 = base + w32
    cnt = _active(n, i0, lanes)
    tally.affine("ld", 4 * i0, cnt, 4, 4, weight=2)
    tally.affine("st", 4 * i0, cnt, 4, 4)


def _gen_strided_read(tally, variant, p):
    n, s, block = p["n"], p["stride"], p["block"]
    m = _cdiv(n, s)
    if m == 0:
        return
    base, w32, lanes = _warps_1d(_grid1(m, block), block)
    i0 = base + w32
    cnt = _active(m, i0, lanes)
    tally.affine("ld", 4 * s * i0, cnt, 4 * s, 4)
    tally.affine("st", 4 * i0, cnt, 4, 4)


def _gen_struct_update(tally, variant, p):
    n, block = p["n"], p["block"]
    if n == 0:
        return
    base, w32, lanes = _warps_1d(_grid1(n, block), block)
    i0 = base + w32
    cnt = _active(n, i0, lanes)
    if variant == "aos":   # {float x, y}: data[i].x at 8i, .y at 8i + 4; the same for result
        for field in (0, 4):
            tally.affine("ld", 8 * i0 + field, cnt, 8, 4)
            tally.affine("st", 8 * i0 + field, cnt, 8, 4)
    else:                  # x = data, y = data + n; rx = result, ry = result + n
        for row in (0, 4 * n):
            tally.affine("ld", row + 4 * i0, cnt, 4, 4)
            tally.affine("st", row + 4 * i0, cnt, 4, 4)


def _gen_distance(tally, variant, p):
    n, block = p["n"], p["block"]
    if n == 0:
        return
    base, w32, lanes = _warps_1d(_grid1(n, block), block)
    i0 = base + w32
    cnt = _active(n, i0, lanes)
    if variant == "aos":   # {float x, y, z}: three 4-byte loads 12 bytes apart per lane
        for field in (0, 4, 8):
            tally.affine("ld", 12 * i0 + field, cnt, 12, 4)
    else:                  # x, y, z = points, points + n, points + 2n
        for row in (0, 4 * n, 8 * n):
            tally.affine("ld", row + 4 * i0, cnt, 4, 4)
    tally.affine("st", 4 * i0, cnt, 4, 4)


def _gen_copy(tally, variant, p):
    n, block = p["n"], p["block"]
    if n == 0:
        return
    if variant == "float":
        base, w32, lanes = _warps_1d(_grid1(n, block), block)
        i0 = base + w32
        cnt = _active(n, i0, lanes)
        tally.affine("ld", 4 * i0, cnt, 4, 4)
        tally.affine("st", 4 * i0, cnt, 4, 4)
        return
    n4, r = n // 4, n % 4
    base, w32, lanes = _warps_1d(_grid1(n4 + r, block), block)
    i0 = base + w32
    c4 = _active(n4, i0, lanes)                       # threads i < n4: one float4 each
    tally.affine("ld", 16 * i0, c4, 16, 16)
    tally.affine("st", 16 * i0, c4, 16, 16)
    lo = np.maximum(i0, n4)                           # threads n4 <= i < n4 + r: the tail
    cs = np.clip(np.minimum(i0 + lanes, n4 + r) - lo, 0, WARP)
    e0 = 4 * n4 + (lo - n4)
    tally.affine("ld", 4 * e0, cs, 4, 4)
    tally.affine("st", 4 * e0, cs, 4, 4)


# ---- matmul -----------------------------------------------------------------
def _matmul_shape(p):
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    rpw = WARP // t                     # rows of the block per warp: 4, 2, 1
    wpb = t * t // WARP                 # warps per block: 2, 8, 32
    gx, gy = _cdiv(n, t), _cdiv(m, t)
    return m, n, k, t, rpw, wpb, gx, gy


def _rows_per_warp(first_row, limit, rpw):
    """How many of the warp's rows ``first_row .. first_row + rpw - 1`` are < limit."""
    return np.clip(limit - first_row, 0, rpw)


def _gen_matmul(tally, variant, p):
    m, n, k, t, rpw, wpb, gx, gy = _matmul_shape(p)
    if m == 0 or n == 0:
        return                                           # gpumem launches nothing
    j = np.arange(rpw, dtype=np.int64)[None, :]          # row of the warp
    # the warps of one block column: (by, w) -> first row, active rows (row < M)
    by = np.repeat(np.arange(gy, dtype=np.int64), wpb)
    w = np.tile(np.arange(wpb, dtype=np.int64), gy)
    row0 = by * t + w * rpw
    nrow = _rows_per_warp(row0, m, rpw)
    # the warps of one block row: bx -> first column, active columns (col < N)
    bx = np.arange(gx, dtype=np.int64)
    col0 = bx * t
    ncol = np.minimum(t, n - col0)

    # ---- store C[row][col] (both variants: threads outside C exit / skip) ----
    # every (bx, by, w): runs = the warp's active rows, each over its active columns
    r = (row0[:, None] + j)[None, :, :]                  # (1, P, rpw)
    first = 4 * (r * n + col0[:, None, None])            # (gx, P, rpw)
    last = first + 4 * ncol[:, None, None] - 1
    nr = np.broadcast_to(nrow[None, :], (gx, nrow.size))
    tally.runs("st", first.reshape(-1, rpw), last.reshape(-1, rpw), nr.ravel(),
               (nr * ncol[:, None]).ravel())
    if k == 0:
        return

    if variant == "naive":
        _naive_loads(tally, m, n, k, t, rpw, row0, nrow, col0, ncol)
    else:
        _tiled_loads(tally, m, n, k, t, rpw, wpb, gx, gy, row0, nrow, col0, ncol)


def _naive_loads(tally, m, n, k, t, rpw, row0, nrow, col0, ncol):
    """acc += a[row*K + kk] * b[kk*N + col] for kk < K, threads with row < M, col < N."""
    g = tally.g["ld"]
    live = nrow > 0
    nwarps = int(live.sum())                 # warps with an active row, in one block column
    gx = len(col0)
    # A: each active row of the warp reads one word (a broadcast across its
    # columns); rows are 4K bytes apart, so from 4K >= granule on they never
    # share a sector (line).  Smaller K: count row by row.
    if 4 * k >= g:
        tx_a = int(nrow.sum()) * k * gx
    else:
        kk = np.arange(k, dtype=np.int64)
        rows = row0[live][:, None, None] + np.arange(rpw)[None, None, :]      # (P, 1, rpw)
        unit = 4 * (rows * k + kk[None, :, None]) // g                        # (P, K, rpw)
        nr = np.broadcast_to(nrow[live][:, None], unit.shape[:2])
        tx_a = int(runs_units(unit.reshape(-1, rpw), unit.reshape(-1, rpw), nr.ravel()).sum()) * gx
    # requested bytes are distinct per instruction: one word per active row
    tally.add("ld", nwarps * k * gx, tx_a, 4 * k * int(nrow.sum()) * gx)
    # B: every active row of the warp reads the same columns of row kk (a broadcast)
    kk = np.arange(k, dtype=np.int64)[:, None]
    fb = 4 * (kk * n + col0[None, :])
    lb = fb + 4 * ncol[None, :] - 1
    tx_b = int((lb // g - fb // g + 1).sum())
    tally.add("ld", nwarps * k * gx, nwarps * tx_b, 4 * k * nwarps * int(ncol.sum()))


def _tiled_loads(tally, m, n, k, t, rpw, wpb, gx, gy, row0, nrow, col0, ncol):
    """Per tile step k0: As <- A[row][k0 + tx] if row < M and k0 + tx < K;
    Bs <- B[k0 + ty][col] if k0 + ty < K and col < N (predicated loads)."""
    steps = _cdiv(k, t)
    k0 = t * np.arange(steps, dtype=np.int64)
    ka = np.minimum(t, k - k0)                           # active tx per step (k0 + tx < K)
    j = np.arange(rpw, dtype=np.int64)
    # A: identical for every block column bx (A's guard ignores col)
    rows = row0[:, None, None] + j[None, None, :]        # (P, 1, rpw)
    first = 4 * (rows * k + k0[None, :, None])           # (P, S, rpw)
    last = first + 4 * ka[None, :, None] - 1
    nr = np.broadcast_to(nrow[:, None], first.shape[:2])
    tally.runs("ld", first.reshape(-1, rpw), last.reshape(-1, rpw), nr.ravel(),
               (nr * ka[None, :]).ravel(), weight=gx)
    # B: identical for every block row by (B's guard ignores row)
    w = np.arange(wpb, dtype=np.int64)
    brow = k0[None, :, None] + (w * rpw)[:, None, None] + j[None, None, :]     # (W, S, rpw)
    nb = np.clip(k - (k0[None, :] + (w * rpw)[:, None]), 0, rpw)               # (W, S)
    first = 4 * (brow[None] * n + col0[:, None, None, None])                   # (gx, W, S, rpw)
    last = first + 4 * ncol[:, None, None, None] - 1
    nbb = np.broadcast_to(nb[None], first.shape[:3])
    tally.runs("ld", first.reshape(-1, rpw), last.reshape(-1, rpw), nbb.ravel(),
               (nbb * ncol[:, None, None]).ravel(), weight=gy)


# ---- the family table ------------------------------------------------------
_REQUIRED = object()

_FAMILIES: dict[str, dict[str, Any]] = {
    "vec_add": {"variants": ("default",), "params": {"n": _REQUIRED, "block": 256},
                "gen": _gen_vec_add},
    "matmul": {"variants": ("naive", "tiled"),
               "params": {"m": _REQUIRED, "n": _REQUIRED, "k": _REQUIRED, "tile": 16},
               "gen": _gen_matmul},
    "read_offset": {"variants": ("unroll1", "unroll4"),
                    "params": {"n": _REQUIRED, "offset": 0, "block": 512, "cache": "default"},
                    "gen": _gen_read_offset},
    "write_offset": {"variants": ("unroll1", "unroll4"),
                     "params": {"n": _REQUIRED, "offset": 0, "block": 512, "cache": "default"},
                     "gen": _gen_write_offset},
    "strided_read": {"variants": ("default",),
                     "params": {"n": _REQUIRED, "stride": 1, "block": 512},
                     "gen": _gen_strided_read},
    "struct_update": {"variants": ("aos", "soa"), "params": {"n": _REQUIRED, "block": 512},
                      "gen": _gen_struct_update},
    "distance": {"variants": ("aos", "soa"), "params": {"n": _REQUIRED, "block": 512},
                 "gen": _gen_distance},
    "copy": {"variants": ("float", "float4"), "params": {"n": _REQUIRED, "block": 256},
             "gen": _gen_copy},
}


def families() -> dict[str, tuple[str, ...]]:
    """The modelled kernel families and their variants."""
    return {f: spec["variants"] for f, spec in _FAMILIES.items()}


def _int_param(fn: str, name: str, v: Any, lo: int, hi: int | None = None,
               allowed: tuple[int, ...] | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fn}: {name} must be an int, not {type(v).__name__}")
    v = int(v)
    if allowed is not None and v not in allowed:
        raise ValueError(f"{fn}: {name}={v} is not allowed; {name} must be one of "
                         f"{', '.join(map(str, allowed))}")
    if v < lo or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ValueError(f"{fn}: {name}={v} is not allowed; {name} must be {rng}")
    return v


def _resolve(family: str, variant: str, params: dict[str, Any]) -> tuple[dict, dict[str, Any]]:
    fn = "model.predict"
    if family not in _FAMILIES:
        raise ValueError(f"{fn}: family={family!r} is unknown; allowed: "
                         f"{', '.join(repr(f) for f in _FAMILIES)}")
    spec = _FAMILIES[family]
    if variant not in spec["variants"]:
        raise ValueError(f"{fn}: variant={variant!r} is unknown for family {family!r}; allowed: "
                         f"{', '.join(repr(v) for v in spec['variants'])}")
    allowed = spec["params"]
    for name in params:
        if name not in allowed:
            raise ValueError(f"{fn}: parameter {name!r} is unknown for {family}/{variant}; "
                             f"allowed: {', '.join(allowed)}")
    p = {}
    for name, default in allowed.items():
        if name in params:
            p[name] = params[name]
        elif default is _REQUIRED:
            raise ValueError(f"{fn}: {family}/{variant} needs parameter {name!r} "
                             f"(parameters: {', '.join(allowed)})")
        else:
            p[name] = default
    where = f"{fn}({family}/{variant})"
    for name in ("n", "m", "k"):
        if name in p:
            p[name] = _int_param(where, name, p[name], 0)
    if "block" in p:
        p["block"] = _int_param(where, "block", p["block"], 1, 1024)
    if "offset" in p:
        p["offset"] = _int_param(where, "offset", p["offset"], 0)
    if "stride" in p:
        p["stride"] = _int_param(where, "stride", p["stride"], 1, 64)
    if "tile" in p:
        p["tile"] = _int_param(where, "tile", p["tile"], 1, allowed=(8, 16, 32))
    if "cache" in p and p["cache"] not in CACHES:
        raise ValueError(f"{where}: cache={p['cache']!r} is not allowed; cache must be one of "
                         f"{', '.join(repr(c) for c in CACHES)} (all touch the same sectors)")
    return spec, p


def predict(family: str, variant: str, *, granularity: int = 32, **params: Any) -> dict[str, float]:
    """Predict the global-memory counters of one launch of a gpumem kernel.

    Parameters
    ----------
    family, variant : str
        As in ``gpumem.variants()``: ``"read_offset"``/``"unroll1"``,
        ``"matmul"``/``"tiled"``, ... (see :func:`families`).
    granularity : {32, 128}
        Load transaction unit: 32-byte sectors (every GPU since Maxwell, and
        what Nsight Compute counts) or 128-byte lines (Fermi/Kepler loads
        cached in L1).  Stores are always counted in 32-byte sectors.
    **params
        The launch parameters, the same names as ``LaunchRecord.params``:
        ``n``, ``block``, ``offset``, ``cache``, ``stride`` (1-D families);
        ``m``, ``n``, ``k``, ``tile`` (matmul).  Omitted ones take the
        defaults of the gpumem function.

    Returns
    -------
    dict
        ``gld_requests``, ``gld_transactions``, ``gld_efficiency`` (percent),
        ``gld_transactions_per_request``, the same four for ``gst``, and
        ``gld_bytes_requested``, ``gst_bytes_requested``.  Requests are warp
        instructions with at least one active lane; transactions are distinct
        sectors (lines) per instruction, summed; requested bytes are the
        distinct bytes of each instruction's active lanes (a word read by
        several lanes counts once, as the hardware counts it).

    Raises
    ------
    ValueError
        Unknown family, variant or parameter, or a value out of range.

    Examples
    --------
    >>> r = predict("read_offset", "unroll1", n=2**24, offset=11, block=512)
    >>> r["gld_transactions"], round(r["gld_efficiency"], 2)
    (5242876.0, 80.0)
    """
    granularity = _check_granularity(granularity)
    spec, p = _resolve(family, variant, params)
    tally = _Tally(granularity)
    spec["gen"](tally, variant, p)
    return tally.result()


def predict_record(record, granularity: int = 32) -> dict[str, float]:
    """:func:`predict` for a :class:`gpumem.LaunchRecord` (its kernel, variant and params)."""
    return predict(record.kernel, record.variant, granularity=granularity, **dict(record.params))


def launch_config(family: str, variant: str, **params: Any) -> dict[str, tuple[int, int, int]]:
    """The grid and block a gpumem launcher picks: ``{"grid": (x, y, z), "block": (x, y, z)}``."""
    _, p = _resolve(family, variant, params)
    if family == "matmul":
        t = p["tile"]
        return {"grid": (_cdiv(p["n"], t), _cdiv(p["m"], t), 1), "block": (t, t, 1)}
    n, b = p["n"], p["block"]
    if family in ("read_offset", "write_offset"):
        grid = _cdiv(n, 4 * b) if variant == "unroll4" else _cdiv(n, b)
        return {"grid": (grid, 1, 1), "block": (b, 1, 1)}
    if family == "strided_read":
        threads = _cdiv(n, p["stride"])
    elif family == "copy" and variant == "float4":
        threads = n // 4 + n % 4
    else:
        threads = n
    return {"grid": (_cdiv(threads, b), 1, 1), "block": (b, 1, 1)}


def matmul_traffic(m: int, n: int, k: int, variant: str = "tiled",
                   tile: int = 16) -> dict[str, float]:
    """Global traffic of one gpumem matmul launch ``C[m,n] = A[m,k] @ B[k,n]`` (no GPU needed).

    The bytes are what the kernel's loads and stores *request* (4 per active
    thread and access), not the DRAM-side minimum: the naive kernel asks for
    every A and B element once per use, the tiled one once per tile.

    Parameters
    ----------
    m, n, k : int
        Matrix sizes.
    variant : {"tiled", "naive"}
    tile : {8, 16, 32}

    Returns
    -------
    dict
        ``load_bytes``, ``store_bytes``, ``flops`` (2*m*n*k), ``cgma`` (the
        compute-to-global-memory-access ratio: FLOPs per 4-byte global load;
        1.0 for naive, ``tile`` for tiled when the sizes are multiples of the
        tile), ``flops_per_byte`` (FLOPs per loaded byte) and
        ``min_bytes`` (each of A, B, C moved once: 4*(mk + kn + mn)).
    """
    _, p = _resolve("matmul", variant, {"m": m, "n": n, "k": k, "tile": tile})
    m, n, k, t = p["m"], p["n"], p["k"], p["tile"]
    gx, gy = _cdiv(n, t), _cdiv(m, t)
    if m == 0 or n == 0:
        loads = 0
    elif variant == "naive":
        loads = 2 * m * n * k                   # every thread: K of A and K of B
    else:
        loads = k * (gx * m + gy * n)           # every block column reads A once, every block row B
    flops = 2.0 * m * n * k
    load_bytes = 4.0 * loads
    return {
        "load_bytes": load_bytes,
        "store_bytes": 4.0 * m * n,
        "flops": flops,
        "cgma": flops / loads if loads else 0.0,
        "flops_per_byte": flops / load_bytes if loads else 0.0,
        "min_bytes": 4.0 * (m * k + k * n + m * n),
    }
