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
# # 08 · The memory ladder: latency and bandwidth, level by level
#
# **The idea.** A GPU's memory is a ladder: registers, then L1 and shared memory in each SM,
# then the L2 shared by all SMs (on an H100 split into two partitions), then device memory
# (HBM). Each rung is larger, farther and slower than the one above. Two numbers describe a
# rung: how long *one* load waits for it (latency), and how many bytes per second it delivers
# when every SM keeps it busy (bandwidth).
#
# **Latency: a pointer chase.** The working set is a *ring* of `n = working_set / stride`
# nodes; each node holds the address of the next, in a pseudo-random order. One thread follows
# the links: every load's address is the value the previous load returned, so no two loads
# can overlap, and the time per step is the latency of whichever level holds the ring. The
# kernel reads the SM's cycle counter (`clock64()`) and the GPU's nanosecond timer
# (`%globaltimer`) around the timed steps, so cycles and nanoseconds come from one run.
# Growing the ring from 1 KiB to 2 GiB walks it down the ladder: each time it outgrows a
# level, the latency steps up. Where the steps are is where the caches end.
#
# **Bandwidth: the opposite.** A full grid, every thread with four independent 16-byte loads
# in flight, over a working set that stays resident in one level.
#
# `gm.latency(working_set, variant=...)` runs one chase; `gm.bandwidth(x, ...)` one bandwidth
# kernel; `gpumem.lessons.ladder` sweeps them (`latency_ladder`, `bandwidth_ladder`) and reads the cache
# sizes off the curve (`cache_sizes`).

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem.lessons import ladder
from gpumem.runtime.published import published

try:
    display                    # Jupyter's
except NameError:              # run as a plain script: the tables as text
    display = print

HAVE_GPU = gm.is_available()
print(gm.device().summary() if HAVE_GPU else
      "No GPU here: this notebook shows the ring, the published figures and what an H100 "
      "should give; the ladders need a GPU.")
KiB, MiB = 1 << 10, 1 << 20

for fam in ("latency", "bandwidth"):
    for v in gm.variants(fam):
        print(f"{fam:9s} {v.name:8s} {v.idea}")


def size(b):
    """Bytes as people say them."""
    b = float(b)
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b:.0f} B"


# %% [markdown]
# ## The ring
#
# `order[i]` is the node visited `i`-th: a keyed bijection of `0..n-1` (a small Feistel
# network, the same on the GPU and in NumPy), and node `order[i]` links to `order[i+1]`. So the
# chase is **one cycle through every node** — no node visited twice before all were — and
# consecutive nodes are far apart: nothing for a prefetcher or a cache line to exploit. Node
# `j` sits at byte `j * stride`; with the default stride of 128 bytes each node has a cache line
# of its own. The CPU knows where every chase must end, and the ladder checks each one.

# %%
n = 12
order = ladder.chain_order(n, seed=0)
nxt = ladder.latency_chain(n * 128, 128, seed=0)
print("visiting order:", order.tolist())
walk, j = [0], 0
for _ in range(n):
    j = int(nxt[j])
    walk.append(j)
print("walk from node 0:", walk, "-> back at 0 after", n, "steps")
image = ladder.chain_image(n * 128, 128, seed=0)
print("the ring as the shared/constant chases hold it (one word per 128-byte node):",
      image[::32].tolist())
print("lane ends, 4 lanes x (3 warm-up + 5 timed) steps:",
      ladder.latency_reference(n * 128, lanes=4, warmup=3, steps=5).tolist())

# %% [markdown]
# ## What the datasheets and public microbenchmarks report
#
# gpumem's published figures (`gpumem/data/published.json`, each with its source) for this
# GPU — without a GPU, for the H100 SXM: latency in SM cycles per dependent load (pointer
# chases; the method and the clocks move them), and the vendor's sizes and bandwidths. gpumem's ladder should land inside these
# ranges — and must show the **near/far split of the L2**: a ring larger than one L2 partition
# but smaller than the whole L2 is still an L2 hit, only a slower one.

# %%
display(ladder.published_figures())

# %% [markdown]
# What that means for an H100 (132 SMs, 256 KiB of L1 + shared per SM, 50 MiB of L2 in two
# partitions), before measuring anything: a staircase. The sizes are the device's stated
# ones; the L1 in use is 256 KiB minus the shared-memory carve-out, so its step comes a little
# earlier.

# %%
pub = published("H100 SXM")          # gpumem/data/published.json, each figure with its source
expected = [
    ("L1", "up to ~200 KiB", pub.latency("L1")),
    ("L2, near partition", "~0.25 .. 25 MiB", pub.latency("L2 near")),
    ("L2, far partition", "25 .. 50 MiB", pub.latency("L2 far")),
    ("device memory", "beyond 50 MiB", pub.latency("device memory")),
]
gm.Table([{"level": lv, "ring": ring, "cycles low": lo, "cycles high": hi,
           "ns at 1.98 GHz": f"{lo / 1.98:.0f}..{hi / 1.98:.0f}"}
          for lv, ring, (lo, hi) in expected],
         sources={"cycles low": "published", "cycles high": "published"},
         title="the staircase to expect on an H100 (ca path, one lane)")

# %% [markdown]
# ## The latency ladder (needs a GPU)
#
# Five paths: global memory through `ld.global.ca` (L1 → L2 → DRAM), `ld.global.cg` (L1
# skipped: even a tiny ring costs an L2 hit), `ld.global.nc` (the read-only path); the ring in
# shared memory; the ring in `__constant__` memory. Rings from 1 KiB to 2 GiB, denser around
# the L1 step and every 4 MiB between 12 and 56 MiB (the L2 split and the L2's end); 8192 timed
# loads each. Before each chase the ring is built on the device and L2 is evicted; then one
# untimed pass over the ring brings it into whatever caches hold it (for rings up to twice
# the L2 — larger rings are met cold). The passes dominate the run: a few seconds on an H100.

# %%
if HAVE_GPU:
    lat = ladder.latency_ladder(progress=False)
    dev = gm.device()
    sizes = ladder.cache_sizes(lat)
    levels = ladder.latency_levels(lat)
    by = {r["level"]: r for r in sizes}

    fig, ax = plt.subplots(figsize=(11, 5.5))
    for variant in ladder.LADDER_VARIANTS:
        rows = [r for r in lat if r["variant"] == variant]
        ax.plot([r["working set"] for r in rows], [r["cycles/load"] for r in rows],
                marker="o", ms=3, label=variant)
    here = published(dev.name) or pub                             # the published bands
    for name in ladder.LATENCY_LEVELS:
        if here.latency(name) is None:
            continue
        lo, hi = here.latency(name)
        ax.axhspan(lo, hi, color="grey", alpha=0.12)
        ax.text(0.995, (lo * hi) ** 0.5, f"{name} (published)", ha="right", va="center",
                fontsize=7, transform=ax.get_yaxis_transform())
    stated = [("L1+shared/SM", ladder.L1_SHARED_PER_SM.get(tuple(dev.compute_capability))),
              ("L2 / 2", dev.l2_cache_size // 2), ("L2", dev.l2_cache_size)]
    for label, s in stated:
        if s:
            ax.axvline(s, color="k", ls=":", lw=1)
            ax.text(s, 0.02, f" {label} {size(s)} (stated)", rotation=90, fontsize=7,
                    va="bottom", transform=ax.get_xaxis_transform())
    for level in ("L1 (capacity in use)", "L2 near partition", "L2"):
        m = by[level]["measured"]
        if m:
            ax.axvline(m, color="C3", ls="--", lw=1)
            ax.text(m, 0.98, f" {level.split(' (')[0]}: {size(m)} (measured)", rotation=90,
                    fontsize=7, color="C3", va="top", transform=ax.get_xaxis_transform())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("ring (working set), bytes")
    ax.set_ylabel("cycles per dependent load [measured]")
    ax.set_title(f"latency ladder on {dev.name}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    plt.show()
    display(sizes)
    display(levels)
else:
    plan = ladder.latency_ladder(progress=False)
    for variant in ladder.LADDER_VARIANTS:
        rings = [r["working set"] for r in plan if r["variant"] == variant]
        print(f"{variant:8s}: {len(rings):2d} rings, {size(rings[0])} .. {size(rings[-1])}")
    print("(measuring needs a GPU: per ring, cycles and ns per dependent load and the SM "
          "clock; then the steps read off the ca curve beside the device's stated sizes)")

# %% [markdown]
# How to read it: each plateau is one level; the ring's size where the curve leaves a plateau
# is that level's capacity. `cache_sizes` finds the plateaus (the smallest rings: L1; the
# lowest latency past the L1 step: the near L2; the largest rings: device memory) and reads
# each step where the curve crosses a threshold between two plateaus. The `cg` curve has no
# L1 plateau — its loads skip L1 — and the `shared` and `constant` curves stay on chip.
# With 32 lanes (`gm.latency(..., lanes=32)`) one warp-wide load asks for 32 unrelated lines:
# compare its latency with one lane's.

# %% [markdown]
# ### One lane against one warp
#
# The same chase with all 32 lanes of the warp, each on its own stretch of the ring: every
# warp-wide load now asks for 32 unrelated lines. Its latency per load grows (the L1 looks up
# 32 tags, the request fans out into 32 sectors), but 32 loads are in flight at once, so the
# loads per nanosecond grow far more: memory-level parallelism, the GPU's answer to latency.

# %%
if HAVE_GPU:
    rows = []
    for ws in (16 * KiB, 4 * MiB, 1 << 30):
        for lanes in (1, 32):
            c = gm.latency(ws, variant="ca", lanes=lanes, steps=4096)
            rows.append({"ring": size(ws), "lanes": lanes, "cycles/load": c.cycles_per_load,
                         "ns/load": c.ns_per_load,
                         "loads per us": lanes / c.ns_per_load * 1e3})
    display(gm.Table(rows, sources={c: "measured" for c in ("cycles/load", "ns/load",
                                                            "loads per us")},
                     title="one lane vs one warp (ca path)"))
else:
    print("(needs a GPU)")

# %% [markdown]
# ### gpumem's chase beside the papers' chase
#
# The published latencies come from a different chase (Mei and Chu's fine-grained
# P-chase, which Jia et al. and, on Hopper, Luo et al. use): an **ascending** ring
# `A[i] = (i + stride/4) % N` of 4-byte **indices** (each step computes its address from the
# index), and the 32-bit `clock()` read **around every load**, with the loaded value stored to
# shared memory in between. gpumem's chase follows 8-byte pointers around a shuffled ring and
# reads `clock64()` once around 8192 loads. `ring="strided"` and `clock="each"` switch to the
# papers' ring and clock one at a time, so the difference splits into what each adds
# (`gpumem report` prints the same split under the card).

# %%
if HAVE_GPU:
    display(ladder.latency_methods())       # each level's ring: ladder.chase_rings(L2 bytes)
    each = {}
    for level, (ws, path) in ladder.chase_rings(dev.l2_cache_size).items():
        c = gm.latency(ws, variant=path, steps=4096, ring="strided", clock="each")
        each[level] = c.each[:, 0]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    for level, v in each.items():
        ax.hist(v, bins=np.geomspace(max(1, v.min() * 0.8), v.max() * 1.2, 80), histtype="step",
                label=f"{level} (median {np.median(v):.0f})")
    ax.set_xscale("log")
    ax.set_xlabel("cycles between the two clock() reads around one load [measured]")
    ax.set_ylabel("loads")
    ax.set_title("the papers' chase: every load's own time (4096 loads per level)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
else:
    print("(needs a GPU: gm.latency(ws, ring='strided', clock='each') is the papers' chase)")

# %% [markdown]
# ## The bandwidth ladder (needs a GPU)
#
# Rows: the `shared` variant (the working set in each block's shared memory); `read` with
# `scope="block"` — every block reads the whole working set, so each SM keeps its own copy, in
# L1 while it fits (working sets per SM, up to 1 MiB); `read` and `copy` with `scope="grid"` —
# the grid reads the working set once per pass through `ld.global.cg`, from L2 while it fits,
# from HBM beyond (1 MiB .. 4 GiB for the whole GPU). Enough passes that a launch moves
# 4-16 GB; median of 5 launches. `cudaMemcpy` device to device of 1 GiB, in the same run, is
# the HBM reference. Bytes per clock per SM use the SM clock each read launch measured.

# %%
if HAVE_GPU:
    bw = ladder.bandwidth_ladder(progress=False)
    display(bw)
    d2d = next(r["GB/s"] for r in bw if r["variant"] == "cudaMemcpy D2D")
    fig, ax = plt.subplots(figsize=(11, 5))
    for v, scope in (("shared", "block"), ("read", "block"), ("read", "grid"), ("copy", "grid")):
        rows = [r for r in bw if r["variant"] == v and r["scope"] == scope]
        ax.plot([r["working set"] for r in rows], [r["GB/s"] for r in rows], marker="o", ms=3,
                label=f"{v}, scope={scope}" + (" (per SM)" if scope == "block" else ""))
    ax.axhline(d2d, color="k", ls="--", lw=1)
    ax.text(16 * KiB, d2d * 0.96, f" cudaMemcpy D2D {d2d:.0f} GB/s", va="top", fontsize=8)
    ax.axvline(dev.l2_cache_size, color="k", ls=":", lw=1)
    ax.text(dev.l2_cache_size, 0.5, f" L2 {size(dev.l2_cache_size)} (stated)", rotation=90,
            fontsize=7, transform=ax.get_xaxis_transform())
    l1 = max((r for r in bw if r["variant"] == "read" and r["scope"] == "block"
              and r["working set"] <= 64 * KiB), key=lambda r: r["GB/s"])
    l2 = max((r for r in bw if r["variant"] == "read" and r["scope"] == "grid"
              and 2 * MiB <= r["working set"] <= dev.l2_cache_size // 2), key=lambda r: r["GB/s"])
    hbm = [r["GB/s"] for r in bw if r["variant"] == "read" and r["scope"] == "grid"
           and r["working set"] >= 8 * dev.l2_cache_size]
    hbm = float(np.median(hbm))
    for x_, y, ha, text in (
            (l1["working set"], l1["GB/s"], "left",
             f"L1: {l1['GB/s'] / 1e3:.1f} TB/s, {l1['bytes/clk/SM']:.0f} B/clk/SM"),
            (l2["working set"], l2["GB/s"], "left",
             f"L2: {l2['GB/s'] / 1e3:.1f} TB/s ({l2['GB/s'] / hbm:.1f}x HBM)"),
            (2**32, hbm, "right", f"HBM: {hbm / 1e3:.2f} TB/s ({hbm / d2d:.2f}x D2D)")):
        ax.text(x_, y * 1.04, text, ha=ha, va="bottom", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("working set, bytes (per SM for scope=block)")
    ax.set_ylabel("GB/s [measured]")
    ax.set_title(f"bandwidth ladder on {dev.name}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    plt.show()
else:
    plan = ladder.bandwidth_ladder(progress=False)
    print(f"{len(plan)} rows would be measured:")
    for v, scope in (("shared", "block"), ("read", "block"), ("read", "grid"), ("copy", "grid")):
        sets = [r["working set"] for r in plan if r["variant"] == v and r["scope"] == scope]
        print(f"  {v:6s} scope={scope:5s}: {size(sets[0])} .. {size(sets[-1])}")
    pcie = published("H100 PCIe")
    lo, hi = pub.get("hbm_stream_gbps")
    print(f"published: L1 ~{pub.get('l1_bytes_per_clk_sm')} bytes/clk/SM; L2 "
          f"~{pcie.get('l2_gbps') / 1e3:.0f} TB/s (H100 PCIe, {pcie.get('sms')} SMs); HBM3 "
          f"streaming {lo / 1e3:.1f}-{hi / 1e3:.1f} TB/s on an H100 SXM")

# %% [markdown]
# ## Warm and cold: `gm.bench(..., l2="cold")`
#
# `gm.bench` times repeated calls; the data a call leaves in L2 is still there for the next
# (`l2="warm"`, the default). `l2="cold"` evicts L2 before every timed call (a kernel reads a
# buffer twice the L2's size, outside the timed events), so each call starts from device
# memory. For a working set that fits in L2 the difference is the L2/HBM gap above.

# %%
if HAVE_GPU:
    x = gm.empty((dev.l2_cache_size // 2 // 4,))
    rows = []
    for l2 in ("warm", "cold"):
        r = gm.bench(gm.bandwidth, x, repeat=20, l2=l2)
        rows.append({"l2": r.l2, "working set": size(x.nbytes), "median_ms": r.median_ms,
                     "GB/s": r.gbps})
    display(gm.Table(rows, sources={"median_ms": "measured", "GB/s": "measured"},
                     title="one read of half the L2, warm and cold"))
else:
    print("(needs a GPU)")

# %% [markdown]
# ## What to take away
#
# * Latency grows by an order of magnitude per rung: tens of cycles on chip, a few hundred in
#   L2, several hundred more in device memory. A single thread waiting on each load sees all
#   of it; a GPU hides it only with many loads in flight.
# * The L2 is not one flat level: a ring larger than one partition is still an L2 hit but
#   pays the trip to the far partition.
# * Bandwidth climbs the other way: each SM reads its L1 at about 128 bytes per clock; the L2
#   serves the whole GPU at several times the HBM rate; HBM is the floor a streaming kernel
#   meets, and `cudaMemcpy` shows where that floor is.
