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
# # 12 · Keeping a working set in L2
#
# **The idea.** Many kernels read a small array again and again while they stream a large
# one once: a lookup table beside a stream, a layer's weights beside its activations. L2
# keeps what was used last, so the stream pushes the small array out as soon as the bytes
# that flow past between two reads of one of its elements are about as many as L2 holds
# (50 MB on the H100).
#
# Since Ampere (compute capability 8.0) a program can tell L2 which lines matter: an
# **access-policy window** on a stream (`cudaStreamSetAttribute(stream,
# cudaStreamAttributeAccessPolicyWindow, ...)`) names a range (`base_ptr`, `num_bytes`) and
# marks a fraction `hitRatio` of its accesses *persisting* (`hitProp`) and the rest
# *streaming* (`missProp`). Persisting lines live in a part of L2 set aside for them
# (`cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, ...)`), where ordinary accesses cannot
# evict them.
#
# The kernel, `gm.hot_cold(hot, cold, reuse=2)`: thread `i` loads `cold[i]` and `reuse`
# elements of the hot set, `hot[(i + j·n_cold) mod n_hot]`, and writes their sum. The hot
# set is swept at the pace of the stream. We measure time and L2's hit rate by hot-set
# size and `hitRatio`, with and without the window — and the lesson puts everything it set
# back (the window emptied, `cudaCtxResetPersistingL2Cache()`, the set-aside limit restored).

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem.lessons import l2_persistence as l2p
from gpumem.model import l2_persistence as model

HAVE_GPU = gm.is_available()
print(gm.device().summary() if HAVE_GPU else
      "No GPU here: this notebook shows the model's side; the times and hit rates need a GPU.")
for v in gm.variants("hot_cold"):
    print(f"{v.name:15s} {v.idea}")
print(f"windows need compute capability {l2p.WINDOW_CC[0]}.{l2p.WINDOW_CC[1]} or newer")
if HAVE_GPU:
    STATE = l2p.l2_state()
    print(STATE)

# %% [markdown]
# ## Correctness first
#
# Against the NumPy reference (the same float32 additions in the same order), on awkward
# sizes, without and under a window.

# %%
rng = np.random.default_rng(12)
hot = rng.standard_normal(40_003, dtype=np.float32)
cold = rng.standard_normal(300_007, dtype=np.float32)
ref = l2p.hot_cold_reference(hot, cold, reuse=3)
print("reference:", ref[:4])
if HAVE_GPU:
    for variant in ("plain", "cold_streaming"):
        got = gm.hot_cold(hot, cold, reuse=3, variant=variant)
        print(f"{variant:15s} equal to the reference: {np.array_equal(got, ref)}")
    if tuple(STATE["compute_capability"]) >= l2p.WINDOW_CC:
        got = gm.hot_cold(hot, cold, reuse=3, window=True, hit_ratio=1.0)
        print(f"under a window  equal to the reference: {np.array_equal(got, ref)}")
        print("L2 as it was before:", l2p.l2_state() == STATE)

# %% [markdown]
# ## What a launch asks for (the model, no GPU needed)
#
# The threads' requests do not depend on the window: a 256 MiB stream with `reuse=2` asks for
# 256 MiB of cold, 512 MiB of hot and writes 256 MiB. What the window changes is where the
# hot half comes from. Between two reads of one hot element, the rest of the hot set and
# `2·hot/reuse` bytes of stream (cold read, out written) pass through L2: the **reuse
# distance**. Well below L2's size the hot set survives on its own; near it, it does not.

# %%
L2_MB = gm.device().l2_cache_size / 1e6 if HAVE_GPU else 50.0
c = model.hot_cold_counts(32 << 18, 256 << 18, 2)
print({k: c[k] for k in ("bytes", "hot_bytes", "gld_requests", "gld_transactions",
                          "gst_transactions")})
sizes = [4, 8, 16, 24, 32, 40, 48]
dist = [model.reuse_distance_bytes(s << 18, 2) / 1e6 for s in sizes]
for s, d in zip(sizes, dist):
    print(f"hot {s:2d} MiB: reuse distance {d:6.1f} MB  ({d / L2_MB:.2f}x L2)")

# %% [markdown]
# ## The sweep: time and L2 hit rate by hot-set size and hit ratio
#
# Per hot-set size: no window, the cold loads marked evict-first (`cold_streaming`,
# `ld.global.cs` — the software hint), and a window over the hot set with `hitRatio` 0, 0.5
# and 1 (the set-aside as large as the hot set, at most what the GPU allows). Without a GPU
# the table holds the model's columns only.

# %%
t = l2p.persistence_sweep([8, 24, 40] if HAVE_GPU else sizes, cold_mib=256, reuse=2,
                          repeat=5, progress=False)
t

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
cases = list(dict.fromkeys(r["case"] for r in t.rows))
if HAVE_GPU:
    for case in cases:
        rs = [r for r in t.rows if r["case"] == case and r["ms"] is not None]
        axes[0].plot([r["hot_MiB"] for r in rs], [r["ms"] for r in rs], "o-", label=case)
        axes[1].plot([r["hot_MiB"] for r in rs], [r["l2_hit_rate"] for r in rs], "o-",
                     label=case)
    axes[0].set_ylabel("kernel time, ms")
    axes[1].set_ylabel("L2 sector hit rate, %")
else:
    axes[0].plot(sizes, dist, "o-", label="reuse distance")
    axes[0].axhline(L2_MB, color="grey", ls="--", label="L2")
    axes[0].set_ylabel("MB through L2 between two reads")
    axes[1].axis("off")
    axes[1].text(0.05, 0.5, "time and hit rate: measured on a GPU", fontsize=12)
for ax in axes[:1 if not HAVE_GPU else 2]:
    ax.set_xlabel("hot set, MiB")
    ax.legend(fontsize="small")
plt.tight_layout()

# %% [markdown]
# **Reading it.** Without a window the hit rate falls once the reuse distance passes L2's
# size; the window holds the hot set's lines in the set-aside, so the hot reads keep hitting
# up to the set-aside's size (the H100 sets aside at most what `max_persisting` says), and
# `hitRatio` 0.5 keeps about half of them. Beyond the set-aside, persisting lines evict each
# other: a window larger than the set-aside with `hitRatio` 1 thrashes — the guide's advice is
# `hitRatio = set_aside / num_bytes`. The stream's own sectors (cold reads, out writes) miss
# whatever the window does, so the hit rate cannot reach 100%.
#
# ## Nothing left behind
#
# Every call put the window, the persisting lines and the set-aside limit back:

# %%
if HAVE_GPU:
    print("after the sweep:", l2p.l2_state())
    print("unchanged:", l2p.l2_state() == STATE)
else:
    print("no GPU: nothing was set")
