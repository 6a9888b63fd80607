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
# # 11 · DRAM: bytes in flight, bursts, channels
#
# **The idea.** A DRAM cell array is slow to access and fast to transfer from: a request waits
# out the array's latency, then its burst crosses the channel quickly. The textbook's rule: *if
# the ratio of the array access latency to the transfer time is R, at least R + 1 banks are
# needed to keep the channel busy* — requests must overlap. On a GPU the same rule is Little's
# law: to read at bandwidth B through a latency L, **B × L bytes must be on their way at every
# moment**, and the program decides how many: resident warps × 32 lanes × load width ×
# independent loads per thread. Three questions:
#
# 1. **How many bytes in flight per SM fill the DRAM?** Vary them three ways (warps, unroll,
#    width) and compare with Little's law: min(peak, bytes in flight × SMs / latency), and the
#    same law with the queue each DRAM bank keeps when the DRAM is busy and the streaming
#    loop's own time per round.
# 2. **What does DRAM move for one isolated piece?** Read lone 4 … 128-byte pieces at random
#    places: sectors (model: exact) and DRAM bytes per useful byte.
# 3. **Do addresses a power of two apart pile onto one channel?** Warps streaming chunks a
#    power of two apart against random places.

# %%
import numpy as np
import gpumem as gm
from gpumem.lessons import dram
from gpumem.model import dram as dm

HAVE_GPU = gm.is_available()
print(gm.device().summary() if HAVE_GPU else
      "No GPU here: this notebook shows the model's side; the measurements need a GPU.")
for fam in dram.LESSON.families:
    for v in gm.variants(fam):
        print(f"{fam:13s} {v.name:7s} {v.idea}")

# %% [markdown]
# ## Correctness first
#
# Every kernel writes one float per block: the sum of every float the block loaded (so no load
# can be dropped). Into NaN-poisoned outputs, against NumPy's sums of the same addresses.

# %%
rng = np.random.default_rng(11)
a = rng.standard_normal(300_007).astype(np.float32)
scale = np.abs(a).astype(np.float64).sum()
checks = [
    ("dram_stream float4 unroll 4", dram.dram_stream, (a,),
     dict(width="float4", unroll=4, grid=7, block=96), dram.stream_reference),
    ("dram_burst 8-byte pieces", dram.dram_burst, (a, 10_001), dict(piece=8, seed=3),
     dram.burst_reference),
    ("dram_channels random", dram.dram_channels, (a, 9),
     dict(placement="random", chunk=8192, seed=5), dram.channels_reference),
]
for label, fn, args, kw, ref_fn in checks:
    ref = ref_fn(*args, **kw)
    if HAVE_GPU:
        out = gm.to_device(np.full(ref.shape, np.nan, np.float32))
        fn(*(gm.to_device(x) if isinstance(x, np.ndarray) else x for x in args), **kw, out=out)
        err = np.max(np.abs(out.get() - ref)) / scale
        print(f"{label:28s}: {ref.size} block sums, largest error {err:.1e} of sum|a|")
    else:
        print(f"{label:28s}: {ref.size} block sums (reference only, no GPU)")

# %% [markdown]
# ## 1 · Little's law: bandwidth against bytes in flight per SM
#
# `grid` = SMs × blocks per SM (every block resident at once), block 256 = 8 warps. Bytes in
# flight per SM = resident warps × 32 × width × unroll. Each *way* changes one knob.
#
# The model's inputs: the SMs, the measured device copy as the peak, the DRAM latency of the
# latency ladder's pointer chase (measured here on a GPU; the H100's 351 ns otherwise), one
# datasheet figure: a DRAM bank is busy about 45 ns per access (the row cycle), and two
# figures fitted on the H100's bench_dram run of 2026-11-25 and checked on the H200's of
# 2026-11-26 (0.88–1.11× of its points): a streaming warp's round is 20 ns longer than the
# chase's single load (its loop's own instructions: address arithmetic, the adds, the
# branch), and the independent loads of a round, which even on an idle DRAM do not return
# together, trail each other by a spread that run puts at 0 ns. The plain law has a sharp
# knee at the latency × bandwidth product. A real DRAM gets there gradually: the busier it
# is (utilisation U), the more often a request finds its bank busy and waits,
# 45 ns × U / (1 − U) on average; a warp with `unroll` loads in a round waits for the last
# of them (H = 1 + 1/2 + … + 1/unroll mean waits). The round is
#
# T = latency + 20 ns + spread × (H − 1) + 45 ns × H × U / (1 − U),
#
# and Little's law, bytes in flight = bandwidth × round, gives the bandwidth.

# %%
N = 1 << 26 if HAVE_GPU else 1 << 28
if HAVE_GPU:   # the ladder's device-memory level: chases over rings far larger than L2
    LATENCY = float(np.median([gm.latency(s, variant="cg", steps=2048).ns_per_load
                               for s in (1 << 29, 1 << 30)]))
    x = gm.to_device(np.ones(N, np.float32))
    PEAK = gm.bench(gm.copy, x, out=gm.empty((N,)), repeat=5, l2="cold").gbps
    del x
else:
    LATENCY, PEAK = dm.H100_DRAM_LATENCY_NS, dm.H100_PEAK_GBPS
print(f"model inputs: DRAM latency {LATENCY:.0f} ns, peak {PEAK:,.0f} GB/s"
      + (" (measured: pointer chases over 512 MiB and 1 GiB rings; a copy kernel)" if HAVE_GPU
         else " (the H100's)"))
little = dram.little_sweep(n=N, repeat=5, latency_ns=LATENCY, peak_gbps=PEAK)
little

# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(7, 4))
for way in dram.LITTLE_WAYS:
    rows = [r for r in little if r["way"] == way]
    y = [r["GB/s"] if r["GB/s"] is not None else r["model_GB/s"] for r in rows]
    ax.plot([r["in_flight_per_sm"] / 1024 for r in rows], y, "o-", label=way)
xs = np.geomspace(1, 160, 100)
fig_ = dict(latency_ns=LATENCY, peak_gbps=PEAK, sms=gm.device().multiprocessors if HAVE_GPU
            else dm.H100_SMS)
ax.plot(xs, [dm.little_bandwidth(x * 1024, bank_ns=0, round_ns=0, spread_ns=0, **fig_)
             for x in xs], "k:", lw=1, label="plain Little's law")
ax.plot(xs, [dm.little_bandwidth(x * 1024, **fig_) for x in xs], "k--", lw=1,
        label="with the loop and the banks' queues (unroll 1)")
ax.set_xscale("log"); ax.set_xlabel("bytes in flight per SM (KiB)"); ax.set_ylabel("GB/s")
ax.legend(); ax.set_title("measured" if HAVE_GPU else "model only (no GPU)")
plt.show()

# %% [markdown]
# The textbook's R + 1 in today's terms: the bytes in flight per SM this GPU needs for 90% of
# its bandwidth, against the latency × bandwidth product per SM.

# %%
s = dram.little_summary(little, latency_ns=LATENCY, sms=fig_["sms"])
need = s["in_flight_per_sm_needed"]
print(f"{s['source']}: 90% of {s['peak_GB/s']:,.0f} GB/s needs "
      + ("more than the sweep offers" if need is None else f"{need / 1024:.1f} KiB")
      + f" in flight per SM; latency x bandwidth / SMs = "
        f"{s['latency_x_bandwidth_per_sm'] / 1024:.1f} KiB (the plain law's answer); "
        f"with the loop and the banks' queues: "
        f"{s['model_in_flight_per_sm_needed'] / 1024:.1f} KiB")
if HAVE_GPU:
    ratios = [r["measured/model"] for r in little]
    print(f"measured / model: {min(ratios):.2f} .. {max(ratios):.2f}")

# %% [markdown]
# ## 2 · The burst: what DRAM moves for an isolated piece
#
# `dram_burst` reads pieces at random aligned places (`ld.global.cg`, L2 only). The model counts
# the sectors exactly (a piece under 32 bytes: one sector; over: piece / 32); the DRAM bytes
# per sector say whether a lone sector is fetched alone (32) or with a neighbour (64).

# %%
burst = dram.burst_sweep(pieces=1 << 18 if HAVE_GPU else 1 << 20, n=N, repeat=5)
burst

# %% [markdown]
# ## 3 · Channels: strides a power of two apart
#
# Warps each stream a 64 KiB chunk; the chunks start a power of two apart (strided) or at
# random chunk-aligned places (random), with the same number of warps. Strides from 64 B to
# 64 MiB (every second power of two here): below the chunk the chunks cannot sit a stride
# apart without overlapping, so they interleave -- warp w reads stride-byte pieces at
# w × stride + q × streams × stride -- and neighbouring warps still start a stride apart. The
# buffer is at most 1 GiB, so the largest strides hold few warps: compare strided with random
# in the same row pair, not across strides. The counters tried for the balance across L2
# slices and DRAM channels (`.max` / `.avg` over the units) show as None where CUPTI does not
# take them.

# %%
chan = dram.channel_sweep([64 << 2 * k for k in range(11)], n=N, repeat=5, max_streams=2048)
chan
