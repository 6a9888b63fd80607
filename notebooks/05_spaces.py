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
# # 05 · Memory spaces, registers and occupancy, warp divergence
#
# | declaration | memory | scope | lifetime |
# |---|---|---|---|
# | automatic scalar | register | thread | kernel |
# | automatic array | local (off-chip, cached) | thread | kernel |
# | `__shared__` | shared | block | kernel (the block) |
# | `__device__` | global | grid | application |
# | `__constant__` | constant | grid | application |
#
# Registers and shared memory are fast and *scarce*: how much of each a block takes decides
# how many blocks an SM holds at once (**occupancy**). Warps run one instruction for 32 threads;
# when lanes disagree on a branch, the warp runs both paths (**divergence**).

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem import model
from gpumem.lessons import spaces

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


# %% [markdown]
# **Sizes.** The timed parts (GPU only) stay small: a 2^24-float histogram over 2^16 threads,
# 2^20 threads × 64 live floats for the register caps (256 MiB), 2^22 elements for the
# divergence, 2^24 floats for the block-size sweep, 20 timed launches each. The notebook runs
# in well under 20 s on an H100; most of it is the compiler's report (`cuobjdump`).
#
# ## The seed's arithmetic: a G80 SM (no GPU, no model needed)
#
# A GeForce 8800 GTX SM has 8 K registers, at most 768 threads and 8 blocks, and 16 KiB of
# shared memory. To run 768 threads each may use 8192 / 768 ≈ 10 registers. At 11 registers
# and 256-thread blocks, three blocks would need 8448 registers: only two fit, and the SM
# runs 512 threads — a third fewer. Shared memory: a 16 × 16 matmul tile pair is 2 KiB per
# block (8 blocks fit); a 32 × 32 pair is 8 KiB (2 blocks).

# %%
G80 = {"registers": 8192, "threads": 768, "blocks": 8, "shared": 16384}

def g80_blocks(threads_per_block, regs_per_thread, smem_per_block):
    limits = {"threads": G80["threads"] // threads_per_block, "blocks": G80["blocks"],
              "registers": G80["registers"] // (regs_per_thread * threads_per_block),
              "shared": G80["shared"] // smem_per_block if smem_per_block else G80["blocks"]}
    blocks = min(limits.values())
    return blocks, min(limits, key=limits.get)

rows = []
for what, tpb, regs, smem in [("10 regs", 256, 10, 0), ("11 regs", 256, 11, 0),
                              ("tile 16 (2 KiB)", 256, 10, 2048), ("tile 32 (8 KiB)", 1024, 10, 8192)]:
    blocks, limiter = g80_blocks(tpb, regs, smem)
    rows.append({"case": what, "threads/block": tpb, "blocks/SM": blocks,
                 "threads/SM": blocks * tpb, "limiter": limiter,
                 "blocks by shared memory alone": G80["shared"] // smem if smem else None})
gm.Table(rows, sources={"blocks/SM": "model", "threads/SM": "model", "limiter": "model",
                       "blocks by shared memory alone": "model"},
         title="G80 occupancy arithmetic (the seed's example)")

# %% [markdown]
# (The 32 × 32 tile needs 1024 threads per block, more than a G80 SM holds at all: the
# seed's "2 blocks" counts shared memory only.) The same arithmetic for this machine's kind of
# GPU comes from `gpumem.model.occupancy`, with the allocation granularities of a real SM:

# %%
cc = "%d.%d" % gm.device().compute_capability if HAVE_GPU else "9.0"
rows = []
for regs in (16, 32, 40, 48, 64, 80, 96, 128, 168, 255):
    m = model.occupancy(cc, 256, regs, 0)
    rows.append({"regs/thread": regs, "blocks_per_sm": m.blocks_per_sm, "occupancy": m.occupancy,
                 "limiter": m.limiter})
t = gm.Table(rows, sources={"blocks_per_sm": "model", "occupancy": "model", "limiter": "model"},
             title=f"occupancy at 256 threads per block, cc {cc} (model)")
display(t)
t.plot("regs/thread", "occupancy"); plt.show()

# %% [markdown]
# ## Local memory: a per-thread array indexed at run time
#
# `gm.thread_histogram` gives each thread a private 16-bin histogram. `variant="local"` does
# `h[bin] += 1`: registers cannot be indexed by a run-time value, so the compiler puts `h` in
# **local memory** (the thread's stack frame, in DRAM, cached in L1) and each count is a
# load (`LDL`) and a store (`STL`). `variant="registers"` adds `(bin == b)` to every bin —
# compile-time indices only — and `h` stays in registers. The compiler says so (no GPU needed):

# %%
report = compiler("thread_histogram")
if report is not None:
    display(report)

# %%
if HAVE_GPU:
    x = np.random.default_rng().random(1 << 22, dtype=np.float32)
    h = gm.thread_histogram(x, variant="local", threads=4096)
    assert (h == gm.thread_histogram(x, variant="registers", threads=4096)).all()
    display(spaces.local_vs_registers(1 << 24, threads=1 << 16))
else:
    print("(timing local memory against registers needs a GPU)")

# %% [markdown]
# ## Lifetimes: `__device__` persists, `__shared__` does not, `__constant__` is set from the host
#
# `gm.lifetimes(3)` sets a `__constant__ int` and a `__device__` counter from the host
# (`cudaMemcpyToSymbol`) before the first launch only. Each block counts its threads in a
# `__shared__` int — zeroed by the block, because shared memory starts undefined every launch —
# and adds the count to the `__device__` counter.

# %%
if HAVE_GPU:
    display(gm.lifetimes(3, blocks=4, block=64, value=7))
else:
    print("(needs a GPU) Expected: the shared count is 64 in every block of every launch; the "
          "device counter reads 256, 512, 768 after launches 1, 2, 3; every block reads the "
          "constant 7 in all three launches, though the host set it once.")

# %% [markdown]
# ## Register caps: `__launch_bounds__`, spills and occupancy
#
# `gm.register_pressure` keeps 64 floats per thread live. Built with
# `__launch_bounds__(256, B)` the compiler must fit in 65536 / (256 B) registers per thread;
# the rest spills to local memory. Fewer registers: more resident blocks — and more local
# traffic. The compiler's side (no GPU):

# %%
report = compiler("register_pressure")
if report is not None:
    display(report)
    rows = []
    for r in report:
        m = model.occupancy(cc, 256, r["registers"], 0)
        rows.append({"variant": r["variant"], "registers": r["registers"],
                     "stack bytes": r["stack bytes"], "occupancy": m.occupancy,
                     "limiter": m.limiter})
    display(gm.Table(rows, sources={"occupancy": "model", "limiter": "model"},
                     title="register caps: compiler + model"))

# %%
if HAVE_GPU:
    caps = spaces.register_pressure_sweep(1 << 20, rounds=8)
    display(caps)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.bar(caps["variant"], caps["median_ms"], color="tab:blue")
    ax.set_ylabel("ms [measured]")
    ax2 = ax.twinx(); ax2.plot(caps["variant"], caps["occupancy"], "o-", color="tab:red")
    ax2.set_ylabel("occupancy [occupancy API]", color="tab:red"); plt.show()
else:
    print("(timing the caps needs a GPU)")

# %% [markdown]
# ## Warp divergence
#
# `gm.divergence` gives half the threads one loop and half another, the same work. Branching on
# `threadIdx.x % 2` splits every warp, so every warp runs both loops one after the other;
# branching on the warp index splits none. Expected: about twice the time. With the profiler
# (`gm.profile`, where this build has it) the branch counters show the split directly.

# %%
if HAVE_GPU:
    div = spaces.divergence_compare(1 << 22, iters=256)
    display(div)
    if hasattr(gm, "profile"):
        xd = gm.to_device(np.zeros(1 << 20, np.float32))
        try:
            with gm.profile(metrics=["smsp__sass_average_branch_targets_threads_uniform.pct"]) as p:
                for v in ("warp", "odd_even"):
                    gm.divergence(xd, variant=v)
            for rec in p.records:
                print(rec.variant, rec.metrics)
        except Exception as e:
            print("branch counters not readable here:", e)
else:
    print("(needs a GPU) Instructions issued per warp, model: warp-aligned = iters loop "
          "iterations, odd/even = 2 x iters (both paths).")

# %% [markdown]
# ## Block-size sweep: exposing more parallelism
#
# `gm.block_size_sweep` times any kernel across block sizes with the occupancy of the kernel that
# ran beside it. Small blocks hit the limit on blocks per SM before the one on threads.

# %%
if HAVE_GPU:
    x = gm.to_device(np.random.default_rng().standard_normal(1 << 24).astype(np.float32))
    sweep = gm.block_size_sweep(gm.stencil_1d, x, blocks=(32, 64, 128, 256, 512, 1024), items=1)
    display(sweep)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(sweep["block"], sweep["GB/s"], "o-"); ax.set_xscale("log", base=2)
    ax.set_xlabel("threads per block"); ax.set_ylabel("GB/s [measured]")
    ax2 = ax.twinx(); ax2.plot(sweep["block"], sweep["occupancy"], "s--", color="tab:red")
    ax2.set_ylabel("occupancy [occupancy API]", color="tab:red"); plt.show()
else:
    rows = []
    for block in (32, 64, 128, 256, 512, 1024):
        m = model.occupancy("9.0", block, 18, (block + 8) * 4 + 1024)
        rows.append({"block": block, "blocks_per_sm": m.blocks_per_sm, "occupancy": m.occupancy,
                     "limiter": m.limiter})
    display(gm.Table(rows, sources={"blocks_per_sm": "model", "occupancy": "model",
                                    "limiter": "model"},
                     title="stencil (items=1, 18 registers) on an H100: occupancy by block size (model)"))
    print("(timing the sweep needs a GPU)")

# %% [markdown]
# ## What to take away
#
# * A per-thread array indexed at run time lives in local memory; keep indices compile-time
#   (unrolled loops) and it stays in registers. `cuobjdump -res-usage` shows the stack frame.
# * `__launch_bounds__` trades registers for resident warps; past the point where the working
#   set fits, the spills cost more than the extra occupancy buys.
# * Branch on warp-uniform conditions where the work allows; `% 2` on the thread index makes
#   every warp run both paths.
# * Block size sets occupancy through the per-SM limits on blocks, threads, registers and shared
#   memory: 32-thread blocks cannot fill an SM.
