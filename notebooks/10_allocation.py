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
# # 10 · What allocation costs, and the first write into fresh memory
#
# **The idea.** Every array on the GPU begins with an allocation and ends with a free, and both
# are host calls into the driver. Three questions:
#
# 1. **What does an allocation cost**, by size, for each allocator: `cudaMalloc`, a
#    *stream-ordered pool* that keeps freed blocks (`cudaMallocFromPoolAsync` /
#    `cudaFreeAsync`; gpumem allocates every output from one), the first allocation of a new
#    pool (it has to grow), managed memory and pinned host memory?
# 2. **What does `cudaFree` wait for?** It synchronizes the whole device first: a free in a
#    loop stalls the host behind every kernel still running. `cudaFreeAsync` does not.
# 3. **Is the first write into fresh memory slower?** On a CPU it is (a page fault per page).
#    A `cudaMalloc`'d page is mapped when it is allocated, so the GPU takes no fault — but
#    its TLBs have never seen the pages. We measure.

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem.lessons import allocation

try:
    display                    # Jupyter's
except NameError:              # run as a plain script: the tables as text
    display = print

HAVE_GPU = gm.is_available()
print(gm.device().summary() if HAVE_GPU else
      "No GPU here: this notebook shows what it would measure and a sketch of the timeline; "
      "the numbers need a GPU.")
print("gpumem's own allocator:", gm.allocator())
for v in gm.variants("first_touch"):
    print(f"{v.name:6s} {v.idea}")

# %% [markdown]
# ## Correctness first
#
# `gm.first_touch(n)` writes `out[i] = i mod 2^24`; `touch="page"` writes only one float per
# 64 KiB. Into a NaN-poisoned output, every element against the reference.

# %%
n = 100_003
for touch in ("write", "page"):
    ref = allocation.first_touch_reference(n, touch)
    if HAVE_GPU:
        out = gm.to_device(np.full(n, np.nan, np.float32))
        gm.first_touch(n, touch=touch, out=out)
        print(f"{touch:5s}: equal to the reference: {np.array_equal(out.get(), ref, equal_nan=True)}")
    else:
        print(f"{touch:5s}: the reference writes {np.count_nonzero(~np.isnan(ref))} of {n} floats")

# %% [markdown]
# ## 1. Allocation and free, by size
#
# Host microseconds of an allocate-and-free pair (median), nothing else running on the device.
# Pinned host memory stops at 256 MiB here (pinning is slow: the OS locks every page).

# %%
if HAVE_GPU:
    cost = allocation.alloc_cost_sweep(allocation.SIZES[::2], host_max=256 << 20,
                                       progress=False)
    display(cost)
    fig, ax = plt.subplots(figsize=(7, 4))
    for kind in allocation.KINDS:
        rs = [r for r in cost if r["kind"] == kind]
        ax.plot([r["bytes"] for r in rs], [r["us"] for r in rs], "o-", label=kind)
    ax.set_xscale("log", base=2); ax.set_yscale("log")
    ax.set_xlabel("bytes"); ax.set_ylabel("us per allocate + free [measured]")
    ax.legend(); plt.show()
else:
    display(gm.Table([{"kind": k, "what it times": v} for k, v in allocation.KINDS.items()],
                     title="what alloc_cost_sweep would time, per size (no GPU here)"))

# %% [markdown]
# ## 2. `cudaFree` waits for the device
#
# A kernel keeps the device busy for 2 ms (one thread waiting on the GPU's timer). Right after
# launching it the host frees a buffer the kernel never touches: with `cudaFree` the call
# returns only when the kernel is done; with `cudaFreeAsync` it returns at once, and the host
# waits later, when it asks to (`sync`).

# %%
if HAVE_GPU:
    timeline = allocation.free_sync_timeline(2000)
    display(timeline)
else:
    rows = [{"mode": m, "op": op, "start_us": s, "end_us": e, "us": e - s}
            for m, spans in (("cudaFree", ((0, 8), (9, 2000), (2001, 2004))),
                             ("cudaFreeAsync", ((0, 8), (9, 11), (12, 2000))))
            for op, (s, e) in zip(("launch", "free", "sync"), spans)]
    timeline = gm.Table(rows, title="a sketch, not a measurement (no GPU here): what the "
                                    "timeline looks like")
    timeline.kernel_us = {"cudaFree": 2000.0, "cudaFreeAsync": 2000.0}
allocation.plot_free_sync(timeline)
plt.title(timeline.title, fontsize="small"); plt.show()

# %% [markdown]
# ## 3. The first write into fresh memory
#
# `first_touch` into memory `cudaMalloc`'d just before each launch (*fresh*; plain `cudaMalloc`,
# not gpumem's pool, which would hand back the same block) against one buffer written before
# (*reused*). The kernel alone is timed (CUDA events).

# %%
if HAVE_GPU:
    touch = allocation.first_touch_sweep(repeat=3, progress=False)
    display(touch)
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, style in (("fresh", "o-"), ("reused", "s--")):
        rs = [r for r in touch if r["touch"] == "write"]
        ax.plot([r["bytes"] for r in rs], [r[f"{key} GB/s"] for r in rs], style, label=key)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes written"); ax.set_ylabel("GB/s [measured]")
    ax.set_title("first_touch (write): fresh against reused"); ax.legend(); plt.show()
else:
    print("(needs a GPU: first_touch_sweep times both, 1 MiB .. 1 GiB)")

# %% [markdown]
# ### What the counters say
#
# Each counter in a profile block of its own, so the fresh launch is counted on its first run.
# The profiler offers no TLB counter (CUDA 13's metric tables name none); L2 and device memory
# are what it can read. A row whose `note` is set was tried and could not be read here.

# %%
if HAVE_GPU and gm.profiler_available():
    display(allocation.first_touch_counters(64 << 20))
else:
    print("(needs a GPU with readable counters; tried:", ", ".join(allocation.COUNTERS), ")")

# %% [markdown]
# ## What to take away
#
# * `cudaMalloc` and `cudaFree` are driver calls of microseconds (small) to milliseconds (GiB);
#   a pool that keeps freed blocks makes a reused allocation bookkeeping. A new pool pays the
#   mapping on its first, growing allocation instead.
# * `cudaFree` synchronizes the device: never free inside a loop of kernels. `cudaFreeAsync`
#   orders the free on the stream and returns.
# * On the GPU, fresh `cudaMalloc`'d memory is already mapped: compare the two GB/s columns
#   above to see what the first touch costs on this GPU (and the counters for why, or that
#   they cannot say).
