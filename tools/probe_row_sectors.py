"""Probe: do partial 32-byte-sector writes cost the tiled copy/transpose at n = 8190?

Background.  gpumem's tiled copy and transpose (cuda/async_copy.cu: 32x32 float
tiles) run at ~0.95x of cudaMemcpy device-to-device for an 8192 x 8192 float32
array, but at only ~0.55-0.60x for 8190 x 8190.  A row of 8190 floats is 32,760
bytes, so row starts drift off the 32-byte sector grid (row r starts at byte
offset 0, 24, 16, 8, 0, ... mod 32) and a warp's 128-byte row segment touches 5
sectors, the first and last only partly, and shared with the neighbouring tile,
which another block writes.  Counters showed DRAM read bytes above the array's
size (306-334 MB for a 268 MB array) and 1.24x the L2 write sectors.

Hypothesis: what costs is the partial-sector WRITES (L2 filling a partly
written sector from DRAM before eviction, or an HBM read-modify-write), not the
extra read sectors.  Test: make every block write only whole sectors, by
shifting, in each row, which columns a block handles so that each warp's
32-float store starts on the sector grid.  If the hypothesis holds, the
``*_aligned`` kernels at n = 8190 come back near the device copy while the
plain ones stay at ~0.55-0.60x.

This script needs only numpy and cupy (no gpumem).  Kernels (block 32 x 8
threads, 32 x 32 tiles, every index in long long, everything bounds-checked):

  copy_tiles               out = a; block (bx, by) copies rows 32by.. of columns
                           32bx..32bx+31, each thread 4 rows of its column.
  copy_tiles_aligned       the same, but in row r the block copies columns
                           [32bx - d_r, 32bx - d_r + 32), d_r = (r*n) mod 8
                           (floats), clipped to [0, n), one extra column of
                           blocks for the right edge.  Every load and store of
                           a warp is 4 whole sectors away from the row ends
                           (the reads are aligned too).
  transpose_tiles          classic shared-memory transpose (32 x 33 tile): read
                           rows of a coalesced, write rows of out = a.T.
  transpose_tiles_aligned  out row c (= input column c) is written in segments
                           [32i - e_c, 32i - e_c + 32), e_c = (c*n) mod 8; the
                           block (input-column tile j, output-column tile i)
                           stages input rows [32i - 8, 32i + 32) x its 32
                           columns in a 40 x 33 tile.  Only the WRITES are
                           aligned: its reads of a are as unaligned as the
                           plain transpose's (plus 25% more rows read, mostly
                           L2 hits), so it isolates the write side.
  transpose_tiles_ymajor   transpose_tiles' body on a 1-D grid, input-row tile
                           fastest (tile_row = b % tiles, tile_col = b / tiles):
                           consecutive blocks write adjacent segments of the
                           same out rows, so both halves of a partial sector
                           at a segment boundary are written by neighbouring
                           (co-running) blocks, as in copy_tiles, not 256
                           blocks apart in launch order.
  transpose_tiles_aligned_fast  transpose_tiles_aligned's writes (segments
                           [32i - e_c, 32i - e_c + 32)) with ymajor order
                           (out-column tile i fastest) and only h = 8 -
                           gcd(n, 8) halo rows (h = max e_c; 0 at n = 8192),
                           loaded like transpose_tiles; e_c once per out row.
                           CHECK FIRST: at n = 8192 it must match
                           transpose_tiles_ymajor (same loads, grid, order);
                           if not, its 8190 number says nothing.
  t<TH>x<TW>_<y|x>[_al]    (transpose_wide; the two kernels above are its 32 x 32 y cases)
                           out = a.T through TH x TW tiles (TH input rows, TW input
                           columns), a 1-D grid with the input-row tile fastest (y) or
                           the input-column tile fastest (x); _al: sector-aligned writes
                           as transpose_tiles_aligned_fast.  Taller tiles write longer
                           segments of each out row (128 TH/32 bytes) in one block.
  memcpy                   cudaMemcpy device-to-device of the same n*n*4 bytes
                           (the anchor, "x memcpy" = anchor ms / kernel ms).

At n = 8192 every d_r and e_c is 0: the aligned kernels do the same work as
the plain ones plus one idle row/column of blocks (and the 40-row staging of
the transpose), so their 8192 rows show what the scheme itself costs.  One
partial sector per row remains at 8190 (the row end shares a sector with the
next row's start, written by another block): ~0.1% of the sectors.

Expected store sectors (counted from the kernels' index math; a warp store that
straddles the grid touches 5 sectors for 4 sectors' worth of data, and 3 rows in
4 do at n = 8190): the array is n*n*4/32 sectors = 8,388,608 at 8192 (every
kernel 1.00x) and 8,384,512.5 at 8190, where the plain kernels store 9,956,865
sector-writes (1.19x) and the aligned ones 8,390,655 (1.0007x).  Same numbers
for the copy and the transpose (out has the same row structure).

Reading the table.  GB/s counts 2 * n * n * 4 bytes (read + write) over the
median of 20 timed runs (cupy events, after 3 warm-up runs); "x memcpy" is the
memcpy's time over the kernel's, at the same n.
  * aligned ~0.9x at 8190, plain ~0.55-0.6x: partial-sector writes are the cost
    (confirm with ncu: the aligned kernel's dram__bytes_read.sum drops to about
    the array size and lts__t_sectors_op_write.sum to about n*n*4/32).
  * both aligned kernels recover: the writes were the cost, and the
    transpose's still unaligned reads do not matter.  copy_tiles_aligned alone
    recovering: the read side (or the transpose's 40-row staging) matters too.
  * neither recovers: partial writes are not the explanation; look elsewhere
    (row pitch vs. DRAM channel/bank mapping, the read side, L2 slices).

Counters for one launch (the correctness launch runs first, so skip it):

  ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum,gpu__time_duration.sum --kernel-name regex:NAME python tools/probe_row_sectors.py --kernel NAME --n 8190 --once

with NAME one of the kernel names above; add ``--launch-skip 1 --launch-count 1``
to see only the timed launch (without it ncu reports both), and use
``regex:^copy_tiles$`` for the plain copy (``regex:copy_tiles`` also matches
copy_tiles_aligned, though only one kernel runs with --once anyway; likewise
``regex:^transpose_tiles_aligned$`` vs ``regex:transpose_tiles_aligned_fast``).

Hypothesis 2 (ymajor kernels): in transpose_tiles, the two halves of a partial
out sector at a segment boundary are written by blocks of blockIdx.y i and i+1,
256 blocks apart in launch order (in copy_tiles by neighbours bx, bx+1 that run
together), so the sector sits half written in L2 long, or is evicted half
written.  transpose_tiles_ymajor ~ copy_tiles' x memcpy at 8190 (and no worse
at 8192) supports it; transpose_tiles_aligned_fast ~ transpose_tiles_ymajor at
8192 then shows whether whole-sector writes add anything at 8190.

Measured (H100, 2026-11-27, x memcpy at 8192 / 8190): transpose_tiles 0.93-0.95 / 0.63;
transpose_tiles_ymajor (32 x 32) 0.93-0.94 / 0.73-0.81; t64x32_y 0.94 / 0.90; t128x32_y 0.93 / 0.90-0.91;
t128x32_y_al 0.92-0.93 / 0.92; t64x64_y 0.92 / 0.87; t64x64_x 0.91 / 0.74; copy_tiles 0.94 /
0.93.  Neighbours in launch order, and longer segments per out row from one block, recover
most of the 8190 loss; aligning the writes to sectors adds at most 0.02 on top.
"""
import argparse
import math
import statistics
import sys

import numpy as np

try:
    import cupy as cp
except ImportError:  # pragma: no cover - the probe needs a GPU
    cp = None

TILE = 32
ROWS = 8  # blockDim.y; each thread handles TILE / ROWS = 4 rows
SECTOR_FLOATS = 8  # 32-byte sector / 4-byte float

SOURCE = r"""
#define TILE 32
#define ROWS 8
#define SECTOR_FLOATS 8

// out = a.  Block (bx, by): columns 32bx + tx, rows 32by + ty + {0, 8, 16, 24}.
extern "C" __global__ void copy_tiles(const float *__restrict__ a, float *__restrict__ out, int n)
{
    const long long nn = n;
    const long long col = (long long)blockIdx.x * TILE + threadIdx.x;
    const long long row0 = (long long)blockIdx.y * TILE + threadIdx.y;
    if (col >= nn)
        return;
    for (int k = 0; k < TILE; k += ROWS) {
        const long long r = row0 + k;
        if (r < nn)
            out[r * nn + col] = a[r * nn + col];
    }
}

// out = a.  In row r the block copies columns [32bx - d_r, 32bx - d_r + 32),
// d_r = (r*n) mod 8: element r*n + 32bx - d_r is a multiple of 8 floats, so each
// warp's 32 floats are exactly 4 whole sectors.  Grid x is n/32 rounded up, plus 1.
extern "C" __global__ void copy_tiles_aligned(const float *__restrict__ a, float *__restrict__ out, int n)
{
    const long long nn = n;
    const long long row0 = (long long)blockIdx.y * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS) {
        const long long r = row0 + k;
        if (r >= nn)
            continue;
        const long long d = (r * nn) & (SECTOR_FLOATS - 1);
        const long long col = (long long)blockIdx.x * TILE - d + threadIdx.x;
        if (col >= 0 && col < nn)
            out[r * nn + col] = a[r * nn + col];
    }
}

// out = a.T, the classic shared-memory transpose.  Block (bx, by) reads input rows
// 32by.., columns 32bx.. (coalesced along rows) and writes out rows 32bx..,
// columns 32by.. (coalesced along rows of out).
extern "C" __global__ void transpose_tiles(const float *__restrict__ a, float *__restrict__ out, int n)
{
    __shared__ float tile[TILE][TILE + 1];
    const long long nn = n;
    long long x = (long long)blockIdx.x * TILE + threadIdx.x; // input column
    long long y = (long long)blockIdx.y * TILE + threadIdx.y; // input row
    for (int k = 0; k < TILE; k += ROWS)
        if (x < nn && y + k < nn)
            tile[threadIdx.y + k][threadIdx.x] = a[(y + k) * nn + x];
    __syncthreads();
    x = (long long)blockIdx.y * TILE + threadIdx.x; // out column = input row
    y = (long long)blockIdx.x * TILE + threadIdx.y; // out row = input column
    for (int k = 0; k < TILE; k += ROWS)
        if (x < nn && y + k < nn)
            out[(y + k) * nn + x] = tile[threadIdx.x][threadIdx.y + k];
}

// out = a.T with sector-aligned writes.  Block (bx = j, by = i): input columns
// 32j.. (= out rows c), out columns (= input rows) [32i - e_c, 32i - e_c + 32)
// in out row c, e_c = (c*n) mod 8, so out element c*n + 32i - e_c starts a sector.
// The block stages input rows [32i - 8, 32i + 32) (40, clipped) x its 32 columns:
// out column 32i - e_c + tx is tile row 8 - e_c + tx (1..39).  Grid y is n/32
// rounded up, plus 1.
#define HALO SECTOR_FLOATS
extern "C" __global__ void transpose_tiles_aligned(const float *__restrict__ a, float *__restrict__ out, int n)
{
    __shared__ float tile[TILE + HALO][TILE + 1];
    const long long nn = n;
    const long long col = (long long)blockIdx.x * TILE + threadIdx.x;   // input column
    const long long rbase = (long long)blockIdx.y * TILE - HALO;        // input row of tile row 0
    for (int k = threadIdx.y; k < TILE + HALO; k += ROWS) {
        const long long r = rbase + k;
        if (r >= 0 && r < nn && col < nn)
            tile[k][threadIdx.x] = a[r * nn + col];
    }
    __syncthreads();
    for (int k = 0; k < TILE; k += ROWS) {
        const int tc = threadIdx.y + k;                                   // tile column
        const long long c = (long long)blockIdx.x * TILE + tc;           // out row
        if (c >= nn)
            continue;
        const int e = (int)((c * nn) & (SECTOR_FLOATS - 1));
        const long long oc = (long long)blockIdx.y * TILE - e + threadIdx.x; // out column
        if (oc >= 0 && oc < nn)
            out[c * nn + oc] = tile[HALO - e + threadIdx.x][tc];
    }
}

// transpose_tiles_ymajor: transpose_tiles' body on a 1-D grid with the INPUT ROW tile
// varying fastest (block b: input rows 32(b % tiles).., columns 32(b / tiles)..), so
// consecutive blocks write adjacent 32-column segments of the same 32 out rows.
// transpose_tiles_aligned_fast: out = a.T with sector-aligned writes (as
// transpose_tiles_aligned) in that block order.  Every e_c is a multiple of
// g = gcd(n, 8), so e_c <= h = 8 - g: the block stages only input rows [32i - h, 32i + 32)
// (clipped) and writes out column 32i - e_c + tx from tile row h - e_c + tx.  At
// n % 8 == 0, h = 0: the same loads, grid and order as transpose_tiles_ymajor.  Both are
// transpose_wide below with 32 x 32 tiles (grid: tiles_j * tiles_i, tiles_i =
// ceil((n + h) / 32), 257 at n = 8190).

// out = a.T through TH x TW tiles (TH input rows, TW input columns; blocks of 32 x 8
// threads), a 1-D grid with the input-row tile fastest (YMAJOR) or the input-column tile
// fastest.  ALIGN: sector-aligned writes (out row c, e_c = (c n) mod 8,
// out columns [TH i - e_c, TH i - e_c + TH), input rows [TH i - h, TH i + TH) staged).
// Grid: tiles_i * tiles_j, tiles_i = ceil((n + h) / TH), tiles_j = ceil(n / TW).
template <int TH, int TW, bool YMAJOR, bool ALIGN>
__device__ void transpose_wide(const float *__restrict__ a, float *__restrict__ out, int n)
{
    __shared__ float tile[TH + HALO][TW + 1];
    const long long nn = n;
    const int g = (n | SECTOR_FLOATS) & -(n | SECTOR_FLOATS);
    const int h = ALIGN ? SECTOR_FLOATS - g : 0;
    const int tiles_i = (n + h + TH - 1) / TH, tiles_j = (n + TW - 1) / TW;
    const long long i = YMAJOR ? blockIdx.x % tiles_i : blockIdx.x / tiles_j;
    const long long j = YMAJOR ? blockIdx.x / tiles_i : blockIdx.x % tiles_j;
    const long long rbase = i * TH - h;
#pragma unroll
    for (int x = 0; x < TW; x += TILE) {
        const long long col = j * TW + x + threadIdx.x;
        for (int k = threadIdx.y; k < TH + h; k += ROWS) {
            const long long r = rbase + k;
            if (r >= 0 && r < nn && col < nn)
                tile[k][x + threadIdx.x] = a[r * nn + col];
        }
    }
    __syncthreads();
    for (int k = threadIdx.y; k < TW; k += ROWS) {
        const long long c = j * TW + k;                           // out row
        if (c >= nn)
            continue;
        const long long row = c * nn;
        const int e = ALIGN ? (int)(row & (SECTOR_FLOATS - 1)) : 0;
#pragma unroll
        for (int x = 0; x < TH; x += TILE) {
            const long long oc = i * TH - e + x + threadIdx.x;    // out column
            if (oc >= 0 && oc < nn)
                out[row + oc] = tile[h - e + x + threadIdx.x][k];
        }
    }
}
#define WIDE(NAME, TH, TW, Y, AL) extern "C" __global__ void NAME(const float *__restrict__ a, float *__restrict__ out, int n) { transpose_wide<TH, TW, Y, AL>(a, out, n); }
WIDE(transpose_tiles_ymajor, 32, 32, true, false)
WIDE(transpose_tiles_aligned_fast, 32, 32, true, true)
WIDE(t64x32_y, 64, 32, true, false)
WIDE(t32x64_y, 32, 64, true, false)
WIDE(t64x64_y, 64, 64, true, false)
WIDE(t64x64_x, 64, 64, false, false)
WIDE(t32x64_x, 32, 64, false, false)
WIDE(t64x32_y_al, 64, 32, true, true)
WIDE(t64x64_y_al, 64, 64, true, true)
WIDE(t128x32_y_al, 128, 32, true, true)
WIDE(t128x32_y, 128, 32, true, false)
"""

KERNELS = ("copy_tiles", "copy_tiles_aligned", "transpose_tiles", "transpose_tiles_aligned")
WIDE = {"transpose_tiles_ymajor": (32, 32, 0), "transpose_tiles_aligned_fast": (32, 32, 1),
        "t64x32_y": (64, 32, 0), "t32x64_y": (32, 64, 0),
        "t64x64_y": (64, 64, 0), "t64x64_x": (64, 64, 0), "t32x64_x": (32, 64, 0),
        "t64x32_y_al": (64, 32, 1), "t64x64_y_al": (64, 64, 1), "t128x32_y_al": (128, 32, 1),
        "t128x32_y": (128, 32, 0)}
KERNELS = KERNELS + tuple(WIDE)   # transpose_tiles_ymajor and _aligned_fast first, as before
ALL = ("memcpy",) + KERNELS
# sizes checked for correctness (exact, bitwise) before anything is timed
# (62 has 8190's residues mod 32 and mod 8: transpose_tiles_aligned_fast's extra out-column tile)
SMALL_SIZES = (1, 7, 31, 33, 62, 64, 66, 70, 97, 130)


def _blocks(n):
    return (n + TILE - 1) // TILE


def grid(name, n):
    b = _blocks(n)
    if name in WIDE:
        th, tw, al = WIDE[name]
        h = SECTOR_FLOATS - math.gcd(n, SECTOR_FLOATS) if al else 0
        return (((n + h + th - 1) // th) * ((n + tw - 1) // tw),)
    return {
        "copy_tiles": (b, b),
        "copy_tiles_aligned": (b + 1, b),  # one extra column of blocks (right edge)
        "transpose_tiles": (b, b),
        "transpose_tiles_aligned": (b, b + 1),  # one extra row of blocks (last out columns)
    }[name]


_compiled = {}


def kernel(name):
    if name not in _compiled:
        _compiled[name] = cp.RawKernel(SOURCE, name, options=("-std=c++17",))
    return _compiled[name]


def make_input(n):
    # Distinct, normal, finite float32 values (bit patterns 0x3f800000 + i: 1.0 upwards),
    # so any misplaced or missing element shows, and none equals the NaN poison.
    bits = cp.arange(n * n, dtype=cp.uint32) + np.uint32(0x3F800000)
    return bits.view(cp.float32).reshape(n, n)


def launcher(name, a, out, n):
    """A no-argument function that runs `name` once on the current stream."""
    if name == "memcpy":
        nbytes = n * n * 4
        return lambda: out.data.copy_from_device_async(a.data, nbytes)
    k = kernel(name)
    g = grid(name, n)
    args = (a, out, np.int32(n))
    return lambda: k(g, (TILE, ROWS, 1), args)


def check(name, a, out, n, run):
    """Poison out with NaN, run once, compare bitwise with a (copy) or a.T (transpose)."""
    out.fill(cp.nan)
    run()
    cp.cuda.get_current_stream().synchronize()
    got_bits = out.view(cp.uint32)
    want_bits = a.view(cp.uint32)  # view the contiguous array, then transpose
    if name.startswith("transpose") or name in WIDE:
        want_bits = want_bits.T
    if not bool(cp.array_equal(got_bits, want_bits)):
        bad = int(cp.count_nonzero(got_bits != want_bits))
        nan = int(cp.count_nonzero(cp.isnan(out)))
        raise SystemExit(f"{name} n={n}: WRONG, {bad} of {n * n} elements differ "
                         f"({nan} still NaN, i.e. never written)")


def time_ms(run, warmup, reps):
    for _ in range(warmup):
        run()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def sector_note(n):
    nbytes = n * n * 4
    return (f"n={n}: array {nbytes:,} B = {nbytes / 32:,.1f} sectors; "
            f"d_r/e_c cycle {sorted({(r * n) % SECTOR_FLOATS for r in range(SECTOR_FLOATS)})} floats")


def selftest(names):
    for n in SMALL_SIZES:
        a = make_input(n)
        out = cp.empty_like(a)
        for name in names:
            check(name, a, out, n, launcher(name, a, out, n))
        del a, out
    print(f"correct (bitwise) on n in {SMALL_SIZES}: {', '.join(names)}", flush=True)


def device_name():
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Time tiled copy/transpose kernels whose writes are (or are not) aligned to "
                    "32-byte sectors, against cudaMemcpy D2D, at n x n float32.",
        epilog=(__doc__ or "")[(__doc__ or "").find("Reading the table."):],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", action="append", choices=ALL,
                    help="only this kernel (repeatable; default: all; memcpy is the anchor)")
    ap.add_argument("--n", type=int, action="append",
                    help="matrix size (repeatable; default: 8192 and 8190)")
    ap.add_argument("--once", action="store_true",
                    help="with one --kernel (and one --n, default 8190): allocate, check once, "
                         "then launch exactly once more (for ncu) and print no table; "
                         "memcpy is no kernel, ncu does not see it (use nsys)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--reps", type=int, default=20, help="timed runs, median reported (default 20)")
    ap.add_argument("--no-selftest", action="store_true",
                    help="skip the correctness check on small awkward sizes")
    args = ap.parse_args(argv)
    if cp is None:
        ap.error("needs cupy (and an NVIDIA GPU)")
    sizes = args.n or ([8190] if args.once else [8192, 8190])
    if any(n < 1 for n in sizes):
        ap.error("--n must be positive")

    if args.once:
        if not args.kernel or len(args.kernel) != 1 or len(sizes) != 1:
            ap.error("--once needs exactly one --kernel and at most one --n")
        name, n = args.kernel[0], sizes[0]
        a = make_input(n)
        out = cp.empty_like(a)
        run = launcher(name, a, out, n)
        check(name, a, out, n, run)  # launch 1 (correctness)
        run()                         # launch 2 (the one to profile)
        cp.cuda.get_current_stream().synchronize()
        print(f"{name} n={n}: correct; launched twice (check + once) on {device_name()}. "
              + sector_note(n))
        return 0

    names = list(dict.fromkeys(args.kernel)) if args.kernel else list(ALL)
    if "memcpy" not in names:
        names.insert(0, "memcpy")  # the anchor is always measured
    print(f"device: {device_name()}, cupy {cp.__version__}", flush=True)
    if not args.no_selftest:
        selftest(names)

    rows = []
    for n in sizes:
        print(sector_note(n), flush=True)
        a = make_input(n)
        out = cp.empty_like(a)
        assert a.data.ptr % 256 == 0 and out.data.ptr % 256 == 0, "allocations not 256-byte aligned"
        anchor = None
        for name in names:
            run = launcher(name, a, out, n)
            check(name, a, out, n, run)
            ms = time_ms(run, args.warmup, args.reps)
            if name == "memcpy":
                anchor = ms
            rows.append((name, n, ms, 2 * n * n * 4 / (ms * 1e-3) / 1e9, anchor / ms))
        del a, out
        cp.get_default_memory_pool().free_all_blocks()

    print()
    print("| kernel | n | ms | GB/s | x memcpy |")
    print("|---|---:|---:|---:|---:|")
    for name, n, ms, gbs, x in rows:
        print(f"| {name} | {n} | {ms:.3f} | {gbs:.0f} | {x:.2f} |")
    print()
    print(f"median of {args.reps} runs after {args.warmup} warm-up; GB/s counts 2*n*n*4 bytes; "
          "x memcpy = memcpy ms / kernel ms at the same n; every kernel checked bitwise "
          "(output poisoned with NaN first).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
