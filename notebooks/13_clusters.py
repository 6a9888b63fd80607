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
# # 13 · Distributed shared memory: the blocks of a cluster share their shared memory
#
# **The idea.** Since Hopper (compute capability 9.0) blocks can be launched in *thread block
# clusters* of up to 8 blocks (16 where the GPU allows the non-portable size). A cluster's
# blocks run at the same time on SMs of one GPC, and each can map another's shared memory into
# its own address space (`cluster.map_shared_rank`, or `mapa` in PTX): loads, stores and
# atomics to it travel over the SM-to-SM network, never through L2. Three questions:
#
# 1. **How far away is another block's shared memory?** A dependent pointer chase in a block's
#    own shared memory, in its own through the cluster window, and in rank 1's.
# 2. **How fast can blocks stream through each other's shared memory**, by cluster size, with
#    coalesced 16-byte accesses (as the Hopper tuning guide asks)?
# 3. **What is it good for?** The CUDA Programming Guide's histogram: more bins than one block
#    can hold, spread over the shared memories of a cluster, against global atomics; and a
#    producer handing tiles to a consumer block through its shared memory instead of through
#    global memory.
#
# Everything here needs a GPU of compute capability 9.0 or newer; without one the notebook
# shows the kernels, the references and what it would measure.

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem.lessons import clusters

try:
    display                    # Jupyter's
except NameError:              # run as a plain script: the tables as text
    display = print

HAVE_GPU = gm.is_available()
CC = tuple(gm.device().compute_capability) if HAVE_GPU else None
RUN = HAVE_GPU and clusters.cluster_capable(CC)
if not HAVE_GPU:
    print("No GPU here: this notebook shows the kernels and what it would measure.")
elif not RUN:
    print(f"{gm.device().name} has compute capability {CC[0]}.{CC[1]}: clusters need "
          f"{clusters.CC_NEEDED[0]}.{clusters.CC_NEEDED[1]}; what follows says what it would "
          "measure.")
else:
    print(gm.device().summary())
for fam in ("dsmem_chase", "dsmem_stream", "cluster_histogram", "dsmem_pipeline"):
    for v in gm.variants(fam):
        print(f"{fam:18s} {v.name:8s} {v.idea}")

# %% [markdown]
# ## Correctness first
#
# Each kernel has a NumPy reference: the node the chase ends at, the checksum of every word a
# stream read (or wrote), and `np.bincount` for the histogram (values at or above `bins` are not
# counted). The histogram writes into an output poisoned with `0xFFFFFFFF`.

# %%
rng = np.random.default_rng(13)
x = rng.integers(0, 70_000, size=1_000_003, dtype=np.uint32)
bins = 65_537
ref = clusters.cluster_histogram_reference(x, bins)
print("chase of 1000 nodes ends at", clusters.dsmem_chase_reference(1000, steps=4096),
      "| stream checksum (read, 64 KiB, 4 passes, 8 blocks):",
      clusters.dsmem_stream_reference("read", smem=65536, passes=4, blocks=8))
if RUN:
    r = gm.dsmem_chase(1000, variant="remote", steps=4096)
    print("remote chase ends at", r[0])
    print("stream checksum", gm.dsmem_stream(variant="read", smem=65536, passes=4, clusters=4,
                                             cluster=2)[0])
    for v in ("cluster", "global", "owner"):
        out = gm.to_device(np.full(bins, 0xFFFFFFFF, np.uint32))
        gm.cluster_histogram(x, bins, variant=v, out=out)
        print(f"histogram {v:7s} equal to np.bincount: {np.array_equal(out.get(), ref)}, "
              f"cluster size {gm.last_record().params['cluster']}")

# %% [markdown]
# ## 1. A load from another block's shared memory
#
# One thread follows a ring of 1024 links; every load's address is the value the previous one
# returned, so nothing overlaps and the cycles per load are the latency. `self` uses the same
# `ld.shared::cluster` instruction as `remote`, pointed at its own rank: the difference between
# `self` and `remote` is the trip over the SM-to-SM network. (For comparison the latency
# ladder, `08_ladder`, measures an L2 hit at about 250 cycles on an H100.)

# %%
if RUN:
    lat = clusters.dsmem_latency()
    display(lat)
else:
    display(gm.Table([{"variant": v.name, "what": v.idea} for v in gm.variants("dsmem_chase")],
                     title="what dsmem_latency would time (cycles per load)"))

# %% [markdown]
# ## 2. Bandwidth by cluster size
#
# Every block fills half an SM's shared memory (so that no two blocks share an SM: every access
# to another rank crosses the SM-to-SM network), then reads the next rank's (`read`), writes the
# next rank's (`write`) or reads its own (`local`) 32 times with 16-byte accesses; a full wave
# of clusters. Clusters of 16 need the non-portable size: where the GPU refuses them the row
# says so.

# %%
if RUN:
    bw = clusters.dsmem_bandwidth(passes=32, repeat=5)
    display(bw)
    fig, ax = plt.subplots(figsize=(7, 4))
    for v, style in (("read", "o-"), ("write", "s--"), ("local", "^:")):
        rs = [r for r in bw if r["variant"] == v and r["GB/s"]]
        ax.plot([r["cluster"] for r in rs], [r["GB/s"] for r in rs], style, label=v)
    ax.set_xscale("log", base=2); ax.set_xticks(clusters.CLUSTER_SIZES, clusters.CLUSTER_SIZES)
    ax.set_xlabel("blocks per cluster"); ax.set_ylabel("GB/s [measured]")
    ax.set_title("distributed shared memory: 16-byte accesses, a full wave"); ax.legend()
    plt.show()
else:
    print("(needs compute capability 9.0: dsmem_bandwidth times read, write and local at cluster "
          "sizes", clusters.CLUSTER_SIZES, ")")

# %% [markdown]
# ## 3. A histogram with more bins than one block holds
#
# 2^16 bins are 256 KiB of counts: more than one block's shared memory (227 KiB on an H100), so
# a per-block shared histogram (`block`) is impossible and the usual fallback is one atomic in
# global memory per value (`global`). The cluster histogram gives each of `cluster` blocks a
# slice of the bins and sends each value's atomic to the block that owns its bin.
#
# `owner` keeps the same slices but moves the values instead of the atomics: every block of a
# cluster reads all of the cluster's values (L2 serves the repeats, the blocks run at the same
# time) and counts only those in its own slice, with atomics in its own shared memory and none
# over the SM-to-SM network. Where DSMEM's atomics cost more than re-reading the values, it
# wins: compare the two lines as the bins, and with them the cluster, grow.

# %%
if RUN:
    hist = clusters.histogram_sweep(n=1 << 23, repeat=5)
    display(hist)
    fig, ax = plt.subplots(figsize=(7, 4))
    for v, style in (("cluster", "o-"), ("block", "s--"), ("global", "^:"), ("owner", "d-.")):
        rs = [r for r in hist if r["variant"] == v and r["ms"]]
        ax.plot([r["bins"] for r in rs], [r["Gvalues/s"] for r in rs], style, label=v)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bins"); ax.set_ylabel("Gvalues/s [measured]"); ax.legend(); plt.show()
else:
    rows = [{"bins": b, "bytes of counts": 4 * b,
             "fits one H100 block (227 KiB)": 4 * b <= 227 * 1024,
             "smallest cluster whose slices fit": next(k for k in clusters.CLUSTER_SIZES
                                                       if -(-b // k) * 4 <= 227 * 1024)}
            for b in clusters.HISTOGRAM_BINS]
    display(gm.Table(rows, title="the bins by size (no GPU here: histogram_sweep would time "
                                 "cluster, block, global and owner)"))

# %% [markdown]
# ## 4. Producer -> consumer
#
# In clusters of two, rank 0 computes tiles (`2 x + 1`) and rank 1 stores them: the tile is
# handed over either straight into the consumer's shared memory (`dsmem`) or through a global
# buffer that the consumer reads back from L2 (`global`). One `cluster.sync()` per tile, two
# tiles in flight. (Lühnen et al., HPEC 2024, report the shared-memory hand-off up to 2.3x
# faster.)

# %%
if RUN:
    y = rng.standard_normal(1 << 20, dtype=np.float32)
    print("dsmem_pipeline equal to 2x + 1:",
          all(np.array_equal(gm.dsmem_pipeline(y, variant=v), clusters.dsmem_pipeline_reference(y))
              for v in clusters.PIPELINE_VARIANTS))
    display(clusters.pipeline_sweep(repeat=5))
else:
    display(gm.Table([{"variant": v.name, "what": v.idea} for v in gm.variants("dsmem_pipeline")],
                     title="what pipeline_sweep would time, by size (no GPU here)"))

# %% [markdown]
# ## What to take away
#
# * Another block's shared memory is a few times farther than your own, and still much closer
#   than L2: compare `remote` with `local` above and with the ladder's L2 hit.
# * Coalesced 16-byte accesses move DSMEM bytes at a rate set by the SM-to-SM network; compare
#   the `read` and `write` rows with each SM's own (`local`) and with how they change as the
#   clusters grow.
# * A cluster's shared memories add up: bins that no single block can hold still get on-chip
#   atomics, split over the cluster, instead of one global atomic per value.
# * A block can hand its results to another block without a round trip through L2: compare the
#   `global / dsmem` column of the pipeline.
