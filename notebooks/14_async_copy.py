# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 14 · Filling a shared-memory tile: registers, cp.async, the bulk copy engine, TMA
#
# **The idea.** Every tiled kernel starts by moving a tile from global into shared memory.
# There are four ways to do it on a Hopper GPU, each handing more of the work to the hardware:
#
# 1. **`ldg_sts`** -- each thread loads into registers (LDG) and stores into shared memory (STS).
#    The data passes through the register file, and a thread waits for its loads before it can
#    store them.
# 2. **`cp_async4` / `cp_async16`** -- `cp.async` (compute capability 8.0+, SASS `LDGSTS`):
#    global to shared without registers, 4 or 16 bytes per thread and instruction; the block
#    commits a group per tile and waits until only the newest groups are in flight.
# 3. **`bulk`** -- the bulk copy engine (TMA, compute capability 9.0+): one thread per tile row
#    issues a 1-D `cp.async.bulk` of the row's bytes, completing on an *mbarrier* that was told
#    how many bytes to expect.
# 4. **`tensor` / `tensor_swizzle128`** -- `cp.async.bulk.tensor.2d` with a `CUtensorMap`: ONE
#    thread issues the whole 32 x 32 tile; the engine clips it at the matrix's edges (zero fill),
#    and with the 128-byte swizzle it stores 16-byte chunk `j` of tile row `r` at chunk
#    `j ^ (r % 8)`.
#
# The lesson runs them in two streaming tiled kernels -- a copy (`out = a`) and a transpose
# (`out = a.T`) -- each block moving a run of tiles along a tile row through a ring of up to 4
# tile buffers (the copy's runs are 8 tiles long by default, the transpose's 2 -- 8 where
# `out`'s rows are off the 32-byte grid, below), beside the
# device copy of the same bytes. Without a GPU (or below compute capability 9.0 for the engine) the notebook shows the
# model's side: sectors, shared-memory wavefronts, and what it would measure.

# %%
import numpy as np
import gpumem as gm
from gpumem.lessons import async_copy as ac

HAVE_GPU = gm.is_available()
CC = tuple(gm.device().compute_capability) if HAVE_GPU else None
RUN = [v for v in ac.VARIANTS if HAVE_GPU and ac.variant_capable(v, CC)]
if not HAVE_GPU:
    print("No GPU here: this notebook shows the model's side and what it would measure.")
else:
    print(gm.device().summary())
    print("variants this GPU runs:", ", ".join(RUN))
for v in gm.variants("tile_transpose"):
    print(f"{v.name:18s} {v.idea}")

# %% [markdown]
# ## Correctness first
#
# Both kernels are checked against NumPy bit for bit, into outputs poisoned with NaN, on sizes
# that are no multiple of the tile -- including rows of 8190 and 8191 floats, which the tensor
# map cannot take as they are (next section).

# %%
rng = np.random.default_rng(14)
for m, n in ((190, 257), (257, 65), (33, 8190 // 30)):
    a = rng.standard_normal((m, n)).astype(np.float32)
    for v in RUN:
        if v in ("cp_async16", "bulk") and n % 4:
            continue
        out = gm.to_device(np.full((n, m), np.nan, np.float32))
        assert np.array_equal(gm.tile_transpose(a, variant=v, out=out).get(), a.T), (v, m, n)
        assert np.array_equal(gm.tile_copy(a, variant=v), a), (v, m, n)
print("every variant this GPU runs equals NumPy" if RUN else
      "(no GPU: the kernels are checked by the test suite on one)")

# %% [markdown]
# ## The tensor map's view of awkward rows
#
# A `CUtensorMap` holds the matrix's shape and its row stride in bytes, which must be a multiple
# of 16. Rows of 8192 floats (32768 bytes) are; rows of 8190 (32760 bytes) are not. The tensor
# variants view such a matrix **two rows at a time** (rows of 16380 floats, 65520 bytes), four
# at a time when N is odd, and fetch a tile as 2 (or 4) boxes: the even rows at view column
# `c0`, the odd rows at `n + c0`. Past the right edge an even-row box reads into the odd row
# (the kernel never stores those columns); past the view's end the engine fills zeros. The rows
# after the last whole pair (an odd M) are loaded by the block's threads.

# %%
for m, n in ((8192, 8192), (8190, 8190), (8191, 8191), (3, 5)):
    print(f"{m} x {n}:", ac.tensor_view(m, n))

# %% [markdown]
# ## Bank conflicts of the transposed read, and what the swizzle does
#
# The transpose reads a tile *column*: warp `w` reads 16-byte chunk `w` of all 32 tile rows (lane
# `l`: row `l`, one float4). Tile rows are 128 bytes apart, so without a swizzle the 8 lanes of
# a quarter warp hit the same 4 banks: **8 wavefronts where 1 would do**. The 128-byte swizzle
# moves chunk `j` of row `r` to `j ^ (r % 8)`: 8 consecutive rows, 8 different chunks, all 32
# banks. The model counts it; on a GPU the counters show it.

# %%
for v in ("tensor", "tensor_swizzle128"):
    p = gm.model.predict("tile_transpose", v, m=8192, n=8192)
    print(f"{v:18s} shared load wavefronts per instruction: "
          f"{p['shared_load_transactions'] / p['shared_load_requests']:.0f}")
for n in (8192, 8190):
    p = gm.model.predict("tile_transpose", "tensor_swizzle128", m=n, n=n)
    start = 4 * n * np.arange(n)                       # out's rows, n floats each
    spans = int(((start + 4 * n - 1) // 32 - start // 32 + 1).sum())
    print(f"{n} x {n}: global store sectors per request {p['gst_transactions_per_request']:.2f}, "
          f"{p['gst_transactions'] / spans:.4f}x the sectors out's rows span")

# %% [markdown]
# ## The four ways side by side
#
# Per variant: time, GB/s of the 8*M*N bytes moved, the ratio to the device copy of the same
# bytes (`cudaMemcpy`, timed in the same run), the compiler's registers per thread, warp
# instructions issued per tile and the shared-memory bank conflicts -- measured where the
# profiler reads counters, the model's beside them. (4096^2 here to stay quick; the benchmark,
# `benchmarks/bench_async_copy.py`, runs 8192^2 and 8190^2.)

# %%
size = 4096 if HAVE_GPU else 1024
t = ac.async_compare(size, size, family="tile_transpose", repeat=10, progress=False)
t

# %%
t2 = ac.async_compare(size - 2, size - 2, family="tile_transpose", repeat=10, progress=False)
t2

# %% [markdown]
# ## Rows off the 32-byte grid: whole sectors
#
# At 8190 (or 4094) floats a row is no whole number of 32-byte sectors, so in every row of `out`
# the 128 bytes a tile's 32 rows give would share a sector with the next 128 bytes, written by
# another block. If that block comes much later, L2 has evicted the half-written sector and must
# read it back from DRAM to complete it (on the H100: 0.53x the device copy at 8190^2 with the
# blocks numbered along the tile row, 0.69x numbered down the column of runs, against 0.90x at
# 8192^2). So where M % 8 != 0 the transpose's tiles hold the **8 rows below them** too, and a
# block writes columns `r0 + s .. r0 + s + 31` of out row `o`, `s = (-o M) mod 8`: every sector
# whole, written by one warp's store (four sectors of four rows per store; the model's sector
# count above is exactly the sectors `out` spans). The price: 1.25x the reads from L2 (the 8
# rows are the next block's first ones, in L2 by then), and a shared load of one word per lane
# (the lane's offsets are the same in every tile of a block). The default run is 8 tiles there, which
# spreads each block's set-up; the cell below runs 1, 2 and 8 at the second size. What is left
# between it and 8192^2 is mostly reading: L2 sends the SMs 1.42x the array's sectors at 8190^2
# (the ext rows' 1.25x, and view rows of which every other one starts 16 bytes into a sector:
# 1.125x), against 1.00x at 8192^2 (Nsight Compute on the H100).

# %%
if HAVE_GPU and "tensor_swizzle128" in RUN:
    for tiles in (1, 2, 8):
        r = ac.async_compare(size - 2, size - 2, family="tile_transpose",
                             variants=["tensor_swizzle128"], tiles=tiles, repeat=10,
                             progress=False).rows[0]
        print(f"tensor_swizzle128, {size - 2}^2, {tiles} tiles per block: "
              f"{r['GB/s']:,.0f} GB/s, {r['x copy']:.2f}x the device copy")
else:
    print("needs a GPU of compute capability 9.0: nothing measured here")

# %%
t3 = ac.async_compare(size, size, family="tile_copy", repeat=10, progress=False)
t3

# %%
t4 = ac.async_compare(size - 2, size - 2, family="tile_copy", repeat=10, progress=False)
t4

# %% [markdown]
# ## In one picture
#
# The four tables above as bars (the last one is the copy at the second size): per variant,
# the copy and the transpose at both sizes, as a fraction of the device copy of the same
# bytes (`x copy`; the dashed line at 1.0 is the device copy itself, the dotted one at 0.95
# the lesson's target for the tensor-copy transpose). A variant without a bar did not run:
# the second size's rows are no whole number of 16-byte chunks for `cp_async16` and `bulk`,
# or the GPU is too old for it. Without a GPU there is nothing measured to draw: the bars are
# then the model's shared-memory wavefronts per 32 × 32 tile, where the swizzle is the one
# change the transpose shows.

# %%
import matplotlib.pyplot as plt

measured = "x copy" in t.columns
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
x = np.arange(len(ac.VARIANTS))
top = 0.0
for ax, (n, tables) in zip(axes, [(size, {"copy": t3, "transpose": t}),
                                  (size - 2, {"copy": t4, "transpose": t2})]):
    tiles = (-(-n // ac.TILE)) ** 2
    for i, (what, table) in enumerate(tables.items()):
        by = {r["variant"]: r for r in table.rows}
        y = [by[v]["x copy"] if measured else by[v]["shared_load_transactions"]
             for v in ac.VARIANTS]
        y = np.array([np.nan if v is None else v for v in y], dtype=float)
        if not measured:
            y /= tiles
        top = max(top, np.nanmax(y, initial=0.0))
        at = x + (i - 0.5) * 0.4
        ax.bar(at, y, 0.4, label=what, color=("#4a8", "#26a")[i], hatch=("", "//")[i],
               edgecolor="white")
        for xi in at[np.isnan(y)]:
            ax.text(xi, 0.03, "not run", rotation=90, ha="center", va="bottom",
                    fontsize="x-small", color="grey", transform=ax.get_xaxis_transform())
    if measured:
        ax.axhline(1.0, color="black", lw=1, ls="--", label="device copy")
        ax.axhline(0.95, color="grey", lw=1, ls=":", label="target 0.95")
    ax.set_xticks(x, ac.VARIANTS, rotation=30, ha="right")
    ax.set_xlabel("variant")
    ax.set_title(f"{n} x {n}", fontsize="medium")
if measured:
    axes[0].set_ylim(0, max(top, 1.0) * 1.3)
    axes[0].set_ylabel("x the device copy [measured]")
else:
    axes[0].set_yscale("log")
    axes[0].set_ylim(8, top * 10)
    axes[0].set_ylabel("shared wavefronts per tile [model]")
axes[0].legend(fontsize="small", loc="upper left", ncol=4)
fig.suptitle(f"filling the tile four ways, {gm.device().name}" if measured else
             "filling the tile four ways: the model's shared-memory wavefronts (no GPU)",
             fontsize="medium")
fig.tight_layout()
plt.show()
if not measured:
    print("No GPU here: nothing measured to plot; the bars are the model's shared-memory "
          "wavefronts per tile.")

# %% [markdown]
# ## What to take away
#
# * `cp.async` and the copy engine take the load side off the threads: `ldg_sts` spends 4 LDG
#   and 4 STS per thread and tile, `cp_async16` one LDGSTS, `bulk` 32 instructions per tile for
#   one warp, the tensor copy one for one thread.
# * The engine writes the tile where the tensor map says; its **swizzle is the only layout
#   choice left**, and for a transposed read it decides between 8 wavefronts and 1.
# * Rows that are no multiple of 16 bytes do not stop the tensor copy: view them in pairs (or
#   fours), and load the few rows left over by hand.
