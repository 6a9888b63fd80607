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
# # 02 · Coalescing and offsets
#
# A warp of 32 threads that each load one `float` asks for 128 bytes. How many bytes the
# memory system actually moves depends on **where** those 128 bytes sit:
#
# * *aligned* — the first address is a multiple of the transaction size;
# * *coalesced* — the 32 threads touch one contiguous run.
#
# This notebook runs the classic `readOffset` / `writeOffset` experiment of *Professional
# CUDA C Programming* from Python: `C[i] = A[i + offset] + B[i + offset]` (misaligned
# reads) and `C[i + offset] = A[i] + B[i]` (misaligned writes), and sweeps the offset.
#
# On a GPU every row is timed (median of repeated launches, CUDA events) and, where the
# hardware counters can be read, the efficiencies are measured. Without a GPU the same
# tables come from `gpumem.model`, which counts the sectors of every warp of the launch.

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem import experiments

gpu = gm.is_available()
counters = getattr(gm, "profiler_available", lambda: False)()
# On a GPU: 64 MiB per array, as in the book's lesson scaled to today's GPUs.
# Without one, the model alone runs (the efficiencies do not depend on n).
n = 2**24 if gpu else 2**20
print(gm.device().summary() if gpu else "No GPU here: times are not measured, efficiencies come from gpumem.model.")
print("efficiency columns:", "measured (hardware counters)" if counters else "model")


def panels(table, x, ys, by=None):
    """One row of plots of table columns against x; an empty column says why."""
    fig, axes = plt.subplots(1, len(ys), figsize=(5 * len(ys), 3.5), squeeze=False)
    for ax, y in zip(axes[0], ys):
        first = y[0] if isinstance(y, list) else y
        if all(v is None for v in table[first]):
            ax.text(0.5, 0.5, f"{first}: not available here\n(times need a GPU)",
                    ha="center", va="center", transform=ax.transAxes)
            ax.set_xlabel(x)
        else:
            table.plot(x=x, y=y, by=by, ax=ax)
        ax.set_title("")
    fig.suptitle(table.title)
    fig.tight_layout()
    plt.show()


# %% [markdown]
# ## The kernel, once
#
# `gm.read_offset(a, b, offset=k)` returns the elements it wrote: `(a + b)[k:]`. The last
# `k` elements of `C` are never written (their threads would read past the end).

# %%
rng = np.random.default_rng()
a = rng.standard_normal(1000, dtype=np.float32)
b = rng.standard_normal(1000, dtype=np.float32)
if gpu:
    c = gm.read_offset(a, b, offset=11)
    assert np.array_equal(c, (a + b)[11:])
    print(gm.last_record())
else:
    print("skipped: needs a GPU (the lesson below runs on the model)")


# %% [markdown]
# ## One warp by hand: 128-byte lines then, 32-byte sectors now
#
# On Fermi and Kepler, loads cached in L1 moved whole **128-byte lines**; uncached loads
# (and every store) moved **32-byte segments**. Every GPU since Maxwell moves 32-byte
# **sectors** for all global loads and stores (an L1 line is still 128 bytes, but it is
# filled sector by sector). Count both for the first warp at each offset:

# %%
def transfers(offset, unit):
    """Distinct unit-sized blocks touched by 32 lanes loading 4-byte floats from offset*4."""
    addr = (np.arange(32) + offset) * 4
    return len(np.unique(addr // unit))

for off in (0, 1, 11, 31, 32, 128):
    lines, sectors = transfers(off, 128), transfers(off, 32)
    print(f"offset {off:3d}: {lines} line(s) of 128 B -> {128 / (128 * lines):5.0%}   "
          f"{sectors} sectors of 32 B -> {128 / (32 * sectors):5.0%}")

# %% [markdown]
# Offset 11 costs one extra 128-byte line (50% — the book's `gld_efficiency 49.81%`) but only
# one extra 32-byte sector (80% — the book's number with `-Xptxas -dlcm=cg`, and what an H100
# reports for the default path). `gpumem.model.predict(..., granularity=128)` reproduces the
# old rule for a whole launch.
#
# ## Misaligned reads: efficiency and time against the offset

# %%
reads = experiments.offset_sweep(range(0, 129), kind="read", n=n)
panels(reads, "offset", ["gld_efficiency", "gld_transactions", "GB/s"])

# %%
rows = [r for r in reads.rows if r["offset"] in (0, 1, 11, 32, 33, 128)]
gm.Table(rows, columns=["offset", "ms", "GB/s", "gld_efficiency", "gld_transactions", "gld_requests"],
         sources=reads.sources, title="misaligned reads")

# %% [markdown]
# The efficiency drops to 80% at every offset that is not a multiple of 8 floats (32 bytes):
# each warp's 128 bytes straddle five sectors instead of four. The number of *requests* does
# not change — one per warp-wide load — only the sectors per request.
#
# The **time** barely moves on a modern GPU (on an H100 less than 2% between offsets 0 and 11
# at 2^24 floats). The extra sector of each warp is the *same* sector the neighbouring warp
# needs: it is fetched from DRAM once and served to the second warp from L1 or L2. DRAM
# traffic — what limits a streaming kernel — stays at the useful bytes; only the L1↔L2
# traffic grows by a quarter, and the caches have bandwidth to spare. The counters count
# sectors requested from L1; the stopwatch counts DRAM.
#
# ## Cached vs uncached loads
#
# `cache=` picks the load instruction per load, in one build (no `-Xptxas -dlcm=...`):
# `"ca"` caches in L1 and L2, `"cg"` in L2 only, `"ldg"` takes the read-only path,
# `"cs"` marks the data evict-first (streaming).

# %%
print("\n".join(f"{k:8s} {v}" for k, v in gm.access.CACHE_PATHS.items()))
paths = experiments.cache_path_compare(offsets=range(0, 65), n=n)
panels(paths, "offset", ["gld_efficiency", "GB/s"], by="cache")

# %% [markdown]
# All five paths touch the same sectors, so the efficiency curves lie on top of each other.
# On Fermi, bypassing L1 (`cg`) *raised* the efficiency of misaligned loads from 50% to 80%,
# because it shrank the transaction from 128 to 32 bytes; today every path already moves
# 32-byte sectors.
#
# ## Unrolling: four loads in flight per thread
#
# `unroll=4` is the book's `readOffsetUnroll4`: each thread handles four elements one block
# apart and issues all eight loads before its four stores. Same sectors, a quarter of the
# threads, more independent loads in flight per thread.

# %%
unrolled = experiments.offset_sweep(range(0, 129, 4), unroll=[1, 4], n=n)
panels(unrolled, "offset", ["ms", "gld_efficiency"], by="unroll")

# %% [markdown]
# ## Misaligned writes
#
# `write_offset` keeps the loads aligned and shifts the stores. Stores are not cached in L1;
# L2 takes them in 32-byte sectors, so offset 11 again costs five sectors for four sectors'
# worth of data: `gst_efficiency` 80%, `gld_efficiency` 100%.

# %%
writes = experiments.offset_sweep(range(0, 129), kind="write", n=n)
panels(writes, "offset", [["gld_efficiency", "gst_efficiency"], "GB/s"])

# %% [markdown]
# ## Alignment is per warp: the block size
#
# Offset 0 is not enough. With 100 threads per block, block 1's first warp starts at
# element 100 — 400 bytes, not a multiple of 32 — so its warps straddle sectors although
# the array is aligned. Block sizes that are multiples of 8 threads keep every warp on the
# sector grid; a block that is not a multiple of 32 also leaves idle lanes in its last warp.

# %%
blocks = experiments.block_size_sweep(n=n)
print(blocks)
panels(blocks, "block", ["gld_efficiency", "GB/s"])

# %% [markdown]
# ## What changed since the book
#
# | | Fermi / Kepler (the book) | Maxwell and later (H100) |
# |---|---|---|
# | transaction unit of cached loads | 128-byte L1 line | 32-byte sector |
# | offset-11 read efficiency | 50% (L1), 80% (`-dlcm=cg`) | 80% on every path |
# | choosing the path | compiler flag for the whole file | per load: `__ldca`, `__ldcg`, `__ldg`, `__ldcs` |
# | effect on time | up to ×1.3 | a few percent: the extra sectors hit in L1/L2 |
#
# The sector counts are still the right thing to look at: they predict the time whenever the
# extra sectors *cannot* be served from cache — strided and scattered access, the subject of
# the next notebook.
