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

# %% [markdown]
# **Sizes.** On a GPU each array holds 2^23 floats (32 MiB; the three arrays are about twice an
# H100's 50 MB L2, so the times are DRAM times), each row is timed over 5 launches, and the
# sweeps stay short: offsets 0 to 32 (four periods of the 8-float sector grid), reads and
# writes in one sweep, a handful of offsets for the unrolled kernel and the five cache paths.
# Every sweep reads its counters in one profile block. The notebook runs in well under 20 s
# on an H100. Without a GPU the model alone runs on 2^20 floats (the efficiencies do not
# depend on n).

# %%
import os

import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem.lessons import access

gpu = gm.is_available()
counters = gpu and gm.profiler_available()
n = 2**23 if gpu else 2**20
REPEAT = 5
OFFSETS = range(0, 33)
print(gm.device().summary() if gpu else
      "No GPU here: times are not measured (they need a GPU), efficiencies come from gpumem.model.")
print("efficiency columns:", "measured (hardware counters)" if counters else "model")


def where(table, title, **match):
    """The rows of a table whose columns equal the given values, as a Table of their own."""
    rows = [r for r in table.rows if all(r.get(k) == v for k, v in match.items())]
    return gm.Table(rows, columns=table.columns, sources=table.sources, title=title)


def save_for_docs(fig, name):
    """tools/run-notebooks sets GPUMEM_DOCS_DIR: the headline figure goes to docs/."""
    folder = os.environ.get("GPUMEM_DOCS_DIR")
    if folder and gpu:
        fig.savefig(os.path.join(folder, name), dpi=120, bbox_inches="tight")


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
#
# One sweep gives both halves of the lesson, misaligned reads and (further down) misaligned
# writes; its rows are split by kernel.

# %%
sweep = access.offset_sweep(OFFSETS, kind=["read", "write"], n=n, repeat=REPEAT,
                           progress=False)
reads = where(sweep, f"misaligned reads, n={n}", kernel="read_offset")
writes = where(sweep, f"misaligned writes, n={n}", kernel="write_offset")
reads.panels("offset", ["gld_transactions", "GB/s"])
plt.show()

# %% [markdown]
# The headline: the load efficiency against the offset, with the model's line over the
# counters where they can be read (the model alone otherwise).

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.5))
off = reads["offset"]
if "gld_efficiency_model" in reads.columns:
    ax.plot(off, reads["gld_efficiency"], "o", ms=5, label="measured (counters)")
    ax.plot(off, reads["gld_efficiency_model"], "-", color="black", lw=1, label="model")
else:
    ax.plot(off, reads["gld_efficiency"], "-o", ms=3, label="model")
ax.set_xlabel("offset (floats)")
ax.set_ylabel("gld_efficiency (%)")
ax.set_ylim(0, 105)
ax.set_title(f"read_offset: load efficiency against the offset"
             + (f" on {gm.device().name}" if gpu else " (model)"))
ax.legend(loc="lower right")
save_for_docs(fig, "gld_efficiency_vs_offset.png")
plt.show()

# %%
gm.Table([r for r in reads.rows if r["offset"] in (0, 1, 8, 11, 32)],
         columns=["offset", "ms", "GB/s", "gld_efficiency", "gld_transactions", "gld_requests"],
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
print("\n".join(f"{k:8s} {v}" for k, v in access.CACHE_PATHS.items()))
paths = access.cache_path_compare(offsets=(0, 1, 8, 11, 32), n=n, repeat=REPEAT, progress=False,
                                  metrics=["gld_efficiency"])
paths.panels("offset", ["gld_efficiency", "GB/s"], by="cache")
plt.show()

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
unrolled = access.offset_sweep(range(0, 33, 4), unroll=[1, 4], n=n, repeat=REPEAT, progress=False,
                               metrics=["gld_efficiency"])
unrolled.panels("offset", ["ms", "gld_efficiency"], by="unroll")
plt.show()

# %% [markdown]
# ## Misaligned writes
#
# `write_offset` keeps the loads aligned and shifts the stores. Stores are not cached in L1;
# L2 takes them in 32-byte sectors, so offset 11 again costs five sectors for four sectors'
# worth of data: `gst_efficiency` 80%, `gld_efficiency` 100%.

# %%
writes.panels("offset", [["gld_efficiency", "gst_efficiency"], "GB/s"])
plt.show()

# %% [markdown]
# ## Alignment is per warp: the block size
#
# Offset 0 is not enough. With 100 threads per block, block 1's first warp starts at
# element 100 — 400 bytes, not a multiple of 32 — so its warps straddle sectors although
# the array is aligned. Block sizes that are multiples of 8 threads keep every warp on the
# sector grid; a block that is not a multiple of 32 also leaves idle lanes in its last warp.

# %%
blocks = access.idle_lanes_sweep(n=n, repeat=REPEAT, progress=False, metrics=["gld_efficiency"])
print(blocks)
blocks.panels("block", ["gld_efficiency", "GB/s"])
plt.show()

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
