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
# # 03 · AoS vs SoA, and the stride cliff
#
# Two ways to lay out `n` records `{x, y}`:
#
# * **array of structs** (AoS) — `x0 y0 x1 y1 ...`, a NumPy array of shape `(n, 2)`;
# * **struct of arrays** (SoA) — `x0 x1 ... y0 y1 ...`, shape `(2, n)`.
#
# A kernel that touches `x` and `y` with one thread per record sees very different warps.
# And when a warp's threads read every `stride`-th float, the useful part of each sector
# shrinks until each 32-byte sector carries a single float.

# %% [markdown]
# **Sizes.** On a GPU the stride sweep reads an array of 2^24 floats (64 MiB, more than an
# H100's 50 MB L2, so the bandwidth is DRAM's) at twelve strides from 1 to 64, and the
# layouts hold 2^22 records; each row is timed over 5 launches, and each sweep reads its
# counters in one profile block. The notebook runs in a few seconds on an H100. Without a
# GPU the model alone runs on 2^20 floats (the efficiencies do not depend on n).

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem.lessons import layout

gpu = gm.is_available()
counters = gpu and gm.profiler_available()
n = 2**24 if gpu else 2**20
REPEAT = 5
print(gm.device().summary() if gpu else
      "No GPU here: times are not measured (they need a GPU), efficiencies come from gpumem.model.")
print("efficiency columns:", "measured (hardware counters)" if counters else "model")


# %% [markdown]
# ## The kernels, once
#
# `gm.struct_update(data, layout=...)` adds 10 to every `x` and 20 to every `y` (the book's
# `innerStruct` example); `gm.distance(points, layout=...)` computes `sqrt(x² + y² + z²)`.

# %%
rng = np.random.default_rng()
aos = rng.standard_normal((1000, 2), dtype=np.float32)
pts = rng.standard_normal((1000, 3), dtype=np.float32)
if gpu:
    assert np.array_equal(gm.struct_update(aos, layout="aos"), aos + np.float32([10, 20]))
    assert np.array_equal(gm.struct_update(aos.T.copy(), layout="soa"), (aos + np.float32([10, 20])).T)
    x, y, z = pts.T
    assert np.array_equal(gm.distance(pts, layout="aos"), np.sqrt((x * x + y * y) + z * z))
    assert np.array_equal(gm.strided_read(aos.ravel(), stride=2), aos[:, 0])
    print("kernels agree with NumPy")
else:
    print("skipped: needs a GPU (the lesson below runs on the model)")

# %% [markdown]
# ## AoS vs SoA
#
# In the AoS `struct_update` each thread loads `x` and then `y` with two 4-byte loads (the
# struct is only 4-byte aligned, so the compiler cannot use one 8-byte load). The warp's
# load of `x` spans 256 bytes and uses 128 of them: 50%. The load of `y` finds the same
# sectors in L1, but the counters still charge it. SoA loads are dense: 100%.

# %%
layouts = layout.aos_vs_soa(n=n // 4, repeat=REPEAT, progress=False)
layouts

# %%
labels = [f"{r['kernel']}\n{r['layout']}" for r in layouts.rows]
fig, axes = plt.subplots(1, 2, figsize=(12, 3.5))
axes[0].bar(labels, [r["gld_efficiency"] or 0 for r in layouts.rows])
axes[0].set_ylabel(f"gld_efficiency [{layouts.sources.get('gld_efficiency', 'n/a')}]")
if gpu:
    axes[1].bar(labels, layouts["GB/s"])
    axes[1].set_ylabel("GB/s of useful bytes [measured]")
else:
    axes[1].bar(labels, [r["gld_transactions"] or 0 for r in layouts.rows])
    axes[1].set_ylabel(f"gld_transactions [{layouts.sources.get('gld_transactions', 'n/a')}]")
plt.show()

# %% [markdown]
# The distance kernel reads 12-byte points: three loads 12 bytes apart per lane, each
# warp-wide load spanning 384 bytes for 128 useful — a third. On a modern GPU the second and
# third loads mostly hit in L1, so the time suffers less than the efficiency suggests; the
# SoA layout is still the one every load of which is a dense 128-byte run.
#
# ## The stride cliff
#
# `gm.strided_read(a, stride=s)` is `a[::s]` on the GPU: lane `t` reads `a[t * s]`.

# %%
strides = layout.stride_sweep((1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64), n=n, repeat=REPEAT,
                            progress=False)
strides.panels("stride", ["gld_efficiency", "gld_transactions", "GB/s"])
plt.show()

# %%
rows = [r for r in strides.rows if r["stride"] in (1, 2, 4, 8, 16, 32, 64)]
for r in rows:
    r["sectors_per_request"] = (r["gld_transactions"] / r["gld_requests"]
                                if r["gld_transactions"] and r["gld_requests"] else None)
gm.Table(rows, columns=["stride", "m", "ms", "GB/s", "gld_efficiency", "sectors_per_request"],
         sources=strides.sources, title="strided reads")

# %% [markdown]
# Stride 2 uses half of every sector (50%), stride 4 a quarter, and from stride 8 on
# each of the warp's 32 lanes gets a sector of its own: 32 sectors per request, 4 useful
# bytes in each (12.5%). Past that point the efficiency cannot fall further — but the
# **bandwidth** keeps falling until about stride 16–32, because until then neighbouring
# warps still share DRAM bursts and L2 lines; beyond it every useful float costs a
# whole sector of DRAM traffic.
#
# The moral of both halves: lay data out so that consecutive threads touch consecutive
# words — SoA rather than AoS, unit stride rather than strided.
