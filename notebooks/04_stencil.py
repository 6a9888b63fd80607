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
# # 04 · Constant memory and the read-only cache: a 1D stencil
#
# **The idea.** A stencil computes each output from a window of inputs and a few *coefficients*:
#
# $$out_i = \sum_{k=-R}^{R} w_{R+k}\, x_{i+k}$$
#
# The book's example is the 8th-order first derivative (radius 4):
# $out_i = \sum_{k=1}^{4} a_k (x_{i+k} - x_{i-k})$ with $a = (0.8, -0.2, 0.03809, -0.00357)$.
#
# Every thread needs the same coefficients, in the same order. That is exactly the access
# the **constant cache** is built for: when all 32 lanes of a warp read *one* address, the
# constant cache serves them all in one pass (a *broadcast*). The **read-only data cache**
# (`const __restrict__` + `__ldg`) is the other path for data no thread writes: it serves any
# words of one 128-byte line per pass, so it prefers scattered reads of larger data.
#
# In `gm.stencil_1d` the input tile and its halo are staged in **shared memory** in all three
# variants (each input is read from global memory once per block); only the place of the
# coefficients changes: `memory="constant"`, `"readonly"` or `"global"`.
#
# Boundary: the output has the length of `x`, which is read as **zero outside** `[0, n)`.

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem.lessons import stencil

try:
    display                    # Jupyter's
except NameError:              # run as a plain script: the tables as text
    display = print

HAVE_GPU = gm.is_available()
print(gm.device().summary() if HAVE_GPU else
      "No GPU here: this notebook shows the compiler's and the model's numbers; "
      "the timings need a GPU.")

def compiler(family):
    """The compiler's report for one family, or None (with the reason) without cuobjdump."""
    try:
        return gm.compiler_report(family)
    except FileNotFoundError as e:
        print(e)
        return None


for v in gm.variants("stencil_1d"):
    print(f"{v.name:9s} {v.idea}")

# %% [markdown]
# ## Correctness first
#
# Every variant against the NumPy reference (float64) on a length that is not a multiple of
# any block, and on the edges, where the zero padding shows.

# %%
rng = np.random.default_rng()
x = rng.standard_normal(10_001).astype(np.float32)
ref = stencil.stencil_1d_reference(x)
print("edges of the reference (zero padding):", ref[:3], "...", ref[-3:])
if HAVE_GPU:
    for memory in ("constant", "readonly", "global"):
        for items in (1, 4):
            got = gm.stencil_1d(x, memory=memory, items=items)
            print(f"{memory:9s} items={items}: max |error| = {np.abs(got - ref).max():.2e}")
else:
    print("(the GPU comparison needs a GPU; the test suite runs it on one)")

# %% [markdown]
# ## What each launch asks of the memory system (arithmetic, no GPU)
#
# Per output the stencil reads one input and writes one output: **8 bytes** of DRAM traffic,
# like a copy. A block of `block × items` outputs also reads `2R` halo elements (from L2,
# mostly) and holds `block × items + 2R` floats of shared memory. The coefficient reads are
# `R` per output per thread, but per *warp* they are `R` broadcasts from the constant cache
# (or `R` one-sector loads through the read-only cache) — nothing next to the data.

# %%
R = 4
rows = []
for block, items in [(32, 1), (256, 1), (256, 4), (256, 8), (512, 4)]:
    width = block * items
    rows.append({"block": block, "items": items, "outputs/block": width,
                 "halo overhead %": 100 * 2 * R / width,
                 "shared bytes/block": (width + 2 * R) * 4,
                 "loads in flight/thread": items})
gm.Table(rows, sources={c: "model" for c in rows[0] if c not in ("block", "items")},
         title="the stencil's launch arithmetic (radius 4)")

# %% [markdown]
# The book launches blocks of 32 threads, one output each: 25% extra halo reads, and only
# one load in flight per thread. An H100 needs tens of KiB of loads in flight per SM to cover
# its DRAM latency; 2048 resident threads × 4 bytes is 8 KiB. More outputs per thread
# (`items`) put more independent loads in flight. The compiler's register count per variant
# (no GPU needed, read from the built extension with `cuobjdump`):

# %%
report = compiler("stencil_1d")
if report is not None:
    display(report)

# %% [markdown]
# ## Measured: bandwidth of each variant (needs a GPU)
#
# Sizes: 2^24 floats (64 MiB in, 64 MiB out: DRAM, not L2), seven launch configurations per
# variant, 20 timed launches each; the broadcast sweep below runs 2^20 threads × 256 loads.
# The whole notebook takes a few seconds on an H100.
#
# `gm.bench` times the kernel alone with CUDA events. For the constant variant the
# coefficients are copied to the symbol (`cudaMemcpyToSymbol`) *before* the launch, outside
# the timed region. The device copy is the ceiling: the same 8 bytes per element.

# %%
if HAVE_GPU:
    n = 1 << 24
    xd = gm.to_device(rng.standard_normal(n).astype(np.float32))
    out = gm.empty((n,), np.float32)
    rows = []
    for memory in ("constant", "readonly", "global"):
        for block, items in [(32, 1), (128, 1), (256, 1), (256, 2), (256, 4), (256, 8), (512, 4)]:
            r = gm.bench(gm.stencil_1d, xd, memory=memory, block=block, items=items, out=out,
                         repeat=20)
            rows.append({"memory": memory, "config": f"{block}x{items}", "GB/s": r.gbps,
                         "median_ms": r.median_ms})
    measured = gm.Table(rows, sources={"GB/s": "measured", "median_ms": "measured"},
                        title=f"stencil radius 4, n = 2^24, on {gm.device().name}")
    display(measured)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    configs = list(dict.fromkeys(r["config"] for r in rows))
    for i, memory in enumerate(("constant", "readonly", "global")):
        ys = [r["GB/s"] for r in rows if r["memory"] == memory]
        ax.bar(np.arange(len(configs)) + 0.27 * (i - 1), ys, width=0.27, label=memory)
    ax.set_xticks(range(len(configs)), configs)
    ax.set_xlabel("block x outputs per thread"); ax.set_ylabel("GB/s [measured]")
    ax.legend(); plt.show()
else:
    print("(needs a GPU: on an H100 the book's launch, block 32, reaches ~420 GB/s and "
          "block 256 ~2000 GB/s; see benchmarks/bench_stencil.py)")

# %% [markdown]
# ## Broadcast against serialisation
#
# Where the constant cache loses: `gm.constant_broadcast(d)` makes each warp read `d`
# *different* table words per load. The constant cache serves one word per pass, so a warp's
# load takes `d` passes; the read-only cache serves all `d` words of a 128-byte line in one.
# Expected, then: the constant path's time grows about `d`-fold, the read-only path's stays.
# `gpumem.model` does not model the constant cache, so this part needs a GPU.

# %%
distincts = [1, 2, 4, 8, 16, 32]
if HAVE_GPU:
    sweep = stencil.broadcast_sweep(distincts, n=1 << 20, iters=256, repeat=20)
    display(sweep)
    ax = sweep.plot("distinct", ["constant_ms", "readonly_ms"])
    ax.set_xscale("log", base=2)
    plt.show()
else:
    print("(timing the two caches needs a GPU; see the expectation above)")

# %% [markdown]
# ## What to take away
#
# * Uniform reads (all lanes, one address) are what `__constant__` memory is for: a coefficient
#   costs one broadcast per warp, and it is read by the FMA straight from the constant bank.
# * Divergent addresses serialise in the constant cache — `d` distinct words cost about `d`
#   times as much — while the read-only cache takes them in one pass.
# * For a bandwidth-bound stencil the place of the coefficients matters far less than the
#   launch: the book's block of 32 leaves an H100 mostly idle; 256 threads with several
#   outputs each bring the stencil close to a device copy.
