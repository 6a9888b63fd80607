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
# # 15 · The peer GPU: the level below device memory
#
# **The idea.** With peer access on, another GPU's memory is mapped into this GPU's address
# space, so it becomes one more level of the memory hierarchy, below this GPU's own device
# memory. On two H200s joined by NVLink 4 (`nvidia-smi topo -m`: NV18, 18 links of 25 GB/s
# each way) that level is about **1,000 ns (~2,000 SM cycles) away** for a dependent load,
# roughly three times as far as device memory. The wire carries **450 GB/s each way**;
# each packet's 16-byte header leaves 424 GB/s of payload in the copy engine's 256-byte
# packets, and the copy engine moves about **395 GB/s** (CuPy's `cudaMemcpyPeer`, 256 MiB).
# That is about a tenth of device memory's bandwidth. This notebook asks three questions,
# each beside `gpumem.model.peer`:
#
# 1. **The copy engine** (`cudaMemcpyPeerAsync`): how does GB/s grow with the size of a
#    copy, and what changes with peer access off, both ways at once, or staged through the
#    host? And where do the link's bytes go: NVML's counters against the packets' headers.
# 2. **SM loads over the link:** how many bytes must each SM keep in flight to fill the
#    link? This is Little's law again, with the round a warp's loads take over the link
#    and the link's rate.
# 3. **The peer chase:** how long does one dependent load into the other GPU's memory take,
#    next to the same chase in this GPU's memory?
#
# Everything here needs two GPUs that can reach each other's memory. With fewer, the
# notebook shows the model's side.

# %%
import numpy as np
import matplotlib.pyplot as plt
import gpumem as gm
from gpumem.lessons import peer
from gpumem.model import dram as dm
from gpumem.model import peer as pm

try:
    display                    # Jupyter's
except NameError:              # run as a plain script: the tables as text
    display = print

HAVE_GPU = gm.is_available()
PAIRS = peer.peer_pairs() if HAVE_GPU else []
# Measure where two GPUs reach each other (the sweeps need a pair); else the model's side.
MEASURE = HAVE_GPU and bool(PAIRS)
SRC, DST = (PAIRS[0][1], PAIRS[0][0]) if PAIRS else (0, 1)   # GPU DST reads GPU SRC's memory
NGPU = gm.device_count() if HAVE_GPU else 0
print(f"{NGPU} GPU(s) here; pairs (device, peer) where device can reach peer's memory: {PAIRS}")
if NGPU >= 2:                  # the link as the driver describes it
    for d, p in ((0, 1), (1, 0)):
        print(f"link {d} -> {p}:", gm.peer_attributes(d, p))
if MEASURE:
    print(gm.device(DST).summary())
    print(f"measuring: GPU {DST} reads and writes GPU {SRC}'s memory")
else:
    print("No pair of GPUs that reach each other here: this notebook shows the model's side; "
          "the measurements need two.")
for fam in peer.LESSON.families:
    for v in gm.variants(fam):
        print(f"{fam:10s} {v.name:7s} {v.idea}")

# %% [markdown]
# ## Correctness first
#
# `peer_copy` run on GPU `DST`, copying an array that lives in GPU `SRC`'s memory, must
# equal the array bit for bit. `peer_chase` through a ring in the peer's memory must stop
# where NumPy's walk of the same ring stops.

# %%
rng = np.random.default_rng(15)
x = rng.standard_normal(300_007).astype(np.float32)
ring = peer.chase_ring(1 << 20, stride=256, seed=15)
end = peer.chase_reference(ring, steps=1000, warmup=10)
if MEASURE:
    for d, p in ((DST, SRC), (SRC, DST)):
        gm.enable_peer_access(d, p)
    with gm.Device(SRC):
        there, chain = gm.to_device(x), gm.to_device(ring)
    with gm.Device(DST):
        for width in peer.WIDTHS:
            assert np.array_equal(peer.peer_copy(there, width=width, grid=7, block=96).get(), x)
        r = peer.peer_chase(chain, steps=1000, warmup=10)
    assert r["end"] == end, (r, end)
    print(f"peer_copy equals NumPy for every width; the chase stopped at {end}, as NumPy's did")
else:
    print(f"(no pair of GPUs: the chase would stop at {end}; the kernels are checked by the "
          "test suite on two GPUs)")

# %% [markdown]
# ## 1 · The copy engine: a start-up, then the link's rate
#
# `copy_sweep` times `cudaMemcpyPeerAsync` from GPU `SRC` to GPU `DST`, from 4 bytes to
# 256 MiB, in four cases:
#
# * **access off**: peer access switched off;
# * **access on**: the same copy with peer access on;
# * **both ways**: a copy back at the same time, with GB/s counting both directions;
# * **host staged**: device to pinned host memory, then host to the other device.
#
# The model gives one copy a fixed start-up (`COPY_START_US`, 4.8 µs: what a 4-byte copy
# took on a non-blocking stream on the two H200s) and then the copy engine's payload rate
# each way, with both ways at twice that. That rate (`pm.payload_gbps()`) is the 450 GB/s
# line rate less a 16-byte header on each 256-byte packet the copy engine sends:
# 450 × 256 / 272 ≈ 424 GB/s. The model covers only the cases with peer access on.

# %%
SIZES = [1 << k for k in range(2, 29, 2)]          # 4 B .. 256 MiB
copy = peer.copy_sweep(SIZES, src=SRC, dst=DST, repeat=5, progress=False, measure=MEASURE)
# one row per size: each case's measured GB/s, and the model's one way and both ways
by = {(r["case"], r["bytes"]): r for r in copy}
rows = [{"bytes": s, **{c: by[c, s]["GB/s"] for c in peer.COPY_CASES},
         "model one way": by["access on", s]["model_GB/s"],
         "model both ways": by["both ways", s]["model_GB/s"]} for s in SIZES]
cols = ["bytes"] + [c for c in rows[0] if c != "bytes" and any(r[c] is not None for r in rows)]
gm.Table(rows, columns=cols,
         sources={**{c: "measured" for c in peer.COPY_CASES},
                  "model one way": "model", "model both ways": "model"},
         title="GB/s by size and case. " + copy.title)

# %%
fig, ax = plt.subplots(figsize=(7.5, 4.5))
colors = dict(zip(peer.COPY_CASES, ("tab:red", "tab:blue", "tab:green", "tab:grey")))
for case in peer.COPY_CASES:
    got = [(r["bytes"], r["GB/s"]) for r in copy if r["case"] == case and r["GB/s"] is not None]
    if got:
        ax.plot(*zip(*got), "o-", color=colors[case], label=case)
xs = np.unique(np.geomspace(4, 1 << 30, 200).astype(np.int64))
ax.plot(xs, [pm.copy_gbps(int(s)) for s in xs], "--", color=colors["access on"],
        label="model, one way")
ax.plot(xs, [2 * pm.copy_gbps(int(s)) for s in xs], "--", color=colors["both ways"],
        label="model, both ways")
ax.axhline(pm.link_gbps(), color="k", lw=0.8, ls=":")
ax.axhline(pm.payload_gbps(), color="k", lw=0.6, ls="-.")
ax.text(1 << 10, pm.link_gbps() * 1.3, f"line rate {pm.link_gbps():.0f} GB/s each way; "
        f"payload ceiling {pm.payload_gbps():.0f} (256-byte packets)", fontsize="small")
ax.set_xscale("log", base=2); ax.set_yscale("log")
ax.set_xlabel("bytes per copy"); ax.set_ylabel("GB/s")
ax.set_title(f"cudaMemcpyPeerAsync, GPU {SRC} -> GPU {DST}" if MEASURE else
             "cudaMemcpyPeerAsync: the model only (no pair of GPUs)", fontsize="medium")
ax.legend(fontsize="small", loc="lower right")
fig.tight_layout()
plt.show()

# %% [markdown]
# The x axis is logarithmic, and so is the y axis, so that both regimes show on one plot.
# **Small copies are latency-bound.** Each copy pays its start-up first (the copy engine's
# launch plus a round trip over the link), so below a few hundred KiB GB/s grows in
# proportion to the size: the curve's straight rising part, which is the start-up time
# read as a rate. **Large copies are bandwidth-bound.** Once size / rate is much longer
# than the start-up (424 GB/s × 4.8 µs ≈ 2 MB is where the two are equal), the curve
# flattens out just below the copy engine's payload ceiling. That ceiling is not the wire's
# 450 GB/s: each 256-byte packet carries a 16-byte header, so 256 of every 272 bytes on the
# wire are payload, 424 GB/s. On the two H200s a 256 MiB copy reached about 395 GB/s, 94%
# of the model's 420 GB/s for that size; the next section counts the headers. Both ways at
# once gets close to twice the one-way rate, because the links carry 450 GB/s in each
# direction at the same time. With **access off** neither GPU may touch the other's
# memory, so the driver stages the copy through the host itself. On the two H200s that ran
# at about 37 GB/s, a tenth of the link's rate; the host-staged case shows what an explicit
# copy through the host gets. So switch peer access on (`gm.enable_peer_access`, both
# ways) before copying between GPUs.

# %% [markdown]
# ## Where the link's bytes go
#
# The model's rates are the wire's 450 GB/s less a 16-byte header per packet: 272 bytes on
# the wire for each 256 the copy engine moves (1.0625), 144 for each 128-byte line an SM
# loads (1.125). `pm.link_bytes(nbytes, payload=...)` counts them. NVML counts the same two
# things on each GPU's NVLinks: **data**, the payload, and **raw**, the payload with the
# protocol's bytes around it, sent (tx) and received (rx). `nvml.LinkBytes` reads the
# counters before and after a block of work.
#
# Two transfers, both sent by GPU `SRC` and received by GPU `DST`: the copy engine copying
# 256 MiB (`memcpy_peer` with `repeat=3` runs two warm-ups first, so five copies, 1,280 MiB),
# and `peer_copy` on GPU `DST` reading 64 MiB from GPU `SRC`'s memory in 128-byte lines.
# NVML counts KiB, and anything else that crosses the link during a block counts too.

# %%
from gpumem.runtime import nvml

COPY_BYTES, COPY_REPEAT, READ_BYTES = 256 << 20, 3, 64 << 20
# the payload each transfer moved: memcpy_peer runs two warm-ups, then `repeat` timed copies
PAYLOAD = {"copy engine": (2 + COPY_REPEAT) * COPY_BYTES, "SM reads": READ_BYTES}
PACKET = {"copy engine": pm.COPY_PAYLOAD, "SM reads": pm.SM_PAYLOAD}   # payload bytes a packet
counted = {}                   # transfer -> nvml.LinkBytes
if MEASURE and nvml.available():
    with nvml.LinkBytes([SRC, DST]) as moved:
        peer.memcpy_peer(COPY_BYTES, src=SRC, dst=DST, repeat=COPY_REPEAT)
        gm.synchronize(device=SRC)
    counted["copy engine"] = moved
    x_on_src = gm.to_device(np.ones(READ_BYTES // 4, np.float32), device=SRC)
    y_on_dst = gm.empty((READ_BYTES // 4,), np.float32, device=DST)
    gm.synchronize(device=SRC)
    with nvml.LinkBytes([SRC, DST]) as moved:
        with gm.Device(DST):
            peer.peer_copy(x_on_src, out=y_on_dst)
            gm.synchronize()
    counted["SM reads"] = moved
    del x_on_src, y_on_dst


def mib(c, key):
    return None if c is None else c[key] / 2**20


rows = []
for what, nbytes in PAYLOAD.items():
    m = counted.get(what)
    sent, got = (m.bytes.get(SRC), m.bytes.get(DST)) if m else (None, None)
    rows.append({"transfer": what, "packet B": PACKET[what], "payload MiB": nbytes / 2**20,
                 f"data tx MiB (GPU {SRC})": mib(sent, "data_tx"),
                 f"raw tx MiB (GPU {SRC})": mib(sent, "raw_tx"),
                 f"data rx MiB (GPU {DST})": mib(got, "data_rx"),
                 f"raw rx MiB (GPU {DST})": mib(got, "raw_rx"),
                 "raw/data tx": m and m.overhead(SRC, "tx"),
                 "raw/data rx": m and m.overhead(DST, "rx"),
                 "model raw/data": pm.link_bytes(nbytes, payload=PACKET[what]) / nbytes})
if not MEASURE:
    print("(no pair of GPUs: the model's raw/data alone; the counters need two GPUs)")
elif not nvml.available():
    print("(NVML is not available here: the model's raw/data alone)")
elif any(m.bytes.get(d) is None for m in counted.values() for d in (SRC, DST)):
    print("(NVML gives no NVLink counters for these GPUs: the model's raw/data alone)")
measured = [c for c in rows[0] if " tx" in c or " rx" in c]
gm.Table(rows, sources={**{c: "measured" for c in measured}, "model raw/data": "model"},
         title=f"Where the link's bytes go: GPU {SRC} sends (tx), GPU {DST} receives (rx); "
               "NVML's NVLink counters, payload (data) and payload with the protocol's bytes "
               "(raw), against the model's 16-byte header per packet")

# %% [markdown]
# Read raw/data against the model's column. Where the two agree, a header per packet is all
# the link adds to the payload, and the rest of the gap between a copy's plateau and
# 424 GB/s is not bytes the counters see. Where raw/data is larger, the link carries bytes
# the model does not count: the counters say how many, not what they are. An SM's reads pay
# a header per 128 bytes, twice the copy engine's share, so their ceiling is 400 GB/s, not
# 424: one reason SM loads top out below the copy engine (section 2).

# %% [markdown]
# ## 2 · SM loads over the link: Little's law with a longer latency
#
# `loads_sweep` runs `peer_copy` on GPU `DST` with one block per SM. **read** copies an array
# in GPU `SRC`'s memory into GPU `DST`'s, so the SMs' loads cross the link. **write**
# copies `DST`'s array into `SRC`'s memory, so the stores cross instead. Between runs only
# the bytes in flight per SM change: warps per SM × 32 lanes × load width × loads per
# thread.
#
# The dram lesson's law holds over the link too: to move B bytes per second with loads
# that each take a round of T, **B × T bytes must be on their way at every moment**. The
# model's two figures:
#
# * **the rate**: an SM's loads cross the link as 128-byte lines, each with its 16-byte
#   header, so 450 × 128 / 144 = **400 GB/s** of payload (`pm.payload_gbps(pm.SM_PAYLOAD)`);
# * **the round**: `pm.LOADS_ROUND_NS`, **390 ns**, read off the measured sweep below its
#   knee, where bandwidth = bytes in flight × SMs / round. One warp of 4-byte loads per SM
#   (128 bytes in flight on each of 132 SMs) moved 43.5 GB/s on the two H200s:
#   128 × 132 / 43.5 GB/s ≈ 390 ns.
#
# That round is well short of the 986 ns one dependent load takes over the link (section
# 3's chase, `pm.PEER_LATENCY_NS`), and we do not know for sure why. What the measurement
# shows is the slope: with many loads in flight, bandwidth rises with the bytes in flight
# as if each round took 390 ns. The chase times one load with nothing else in flight, a
# different quantity, so the model takes its round from the sweep, not from the chase.
#
# Spread over the SMs, the knee sits at rate × round / SMs = 400 GB/s × 390 ns / 132 ≈
# **1.2 KB per SM**. That is far *less* than device memory needs (about 7.9 KB per SM on the
# H100: 2,990 GB/s × 351 ns / 132): the round is about as long as device memory's, but the
# rate is less than a seventh. Below the knee, bandwidth rises in proportion to the bytes in
# flight; above it, the link is full. A store is posted: the SM does not wait
# for it to cross, so the law does not bound writes, and the model has no curve for them.

# %%
loads = peer.loads_sweep(("read", "write"), n=1 << 24, src=SRC, dst=DST, repeat=5,
                         progress=False, measure=MEASURE)
SMS = gm.device(DST).multiprocessors if MEASURE else dm.H100_SMS
ROUND_NS = pm.LOADS_ROUND_NS                 # a warp's round over the link, under load
RATE = pm.payload_gbps(pm.SM_PAYLOAD)        # the link's payload rate in 128-byte lines
knee = RATE * ROUND_NS / SMS
fig, ax = plt.subplots(figsize=(7.5, 4.5))
for d, marker in (("read", "o"), ("write", "s")):
    got = [(r["in_flight_per_sm"], r["GB/s"]) for r in loads
           if r["direction"] == d and r["GB/s"] is not None]
    if got:
        ax.plot(*zip(*got), marker, ms=6, ls="none", label=f"{d}s (measured)",
                mfc="none" if d == "write" else None)
xs = np.geomspace(64, 64 << 10, 200)
ax.plot(xs, [pm.loads_gbps(x, sms=SMS) for x in xs], "k--", lw=1.2,
        label="model: Little's law over the link (reads)")
ax.axvline(knee, color="grey", lw=0.8, ls=":")
ax.text(knee * 1.1, pm.link_gbps() * 0.1, f"knee ≈ {knee:,.0f} B/SM", fontsize="small")
ax.set_xscale("log", base=2); ax.set_ylim(0, pm.link_gbps() * 1.15)
ax.set_xlabel("bytes in flight per SM"); ax.set_ylabel("GB/s")
ax.set_title(f"peer_copy on GPU {DST}, the other side on GPU {SRC}" if MEASURE else
             "SM loads over the link: the model only (no pair of GPUs)", fontsize="medium")
ax.legend(fontsize="small", loc="upper left")
fig.tight_layout()
plt.show()
reads = [r for r in loads if r["direction"] == "read" and r["GB/s"] is not None]
if reads:
    best = max(reads, key=lambda r: r["GB/s"])
    ratios = [r["measured/model"] for r in reads]
    print(f"best read: {best['GB/s']:,.0f} GB/s at {best['in_flight_per_sm']:,} B/SM in flight; "
          f"measured / model {min(ratios):.2f} .. {max(ratios):.2f}")
    low = min(reads, key=lambda r: r["in_flight_per_sm"])   # below the knee: GB/s = B/ns
    print(f"the round the sweep's lowest point shows: {low['in_flight_per_sm']:,} B x {SMS} SMs"
          f" / {low['GB/s']:.1f} GB/s = {low['in_flight_per_sm'] * SMS / low['GB/s']:,.0f} ns "
          f"(the model's {ROUND_NS:.0f} ns; the one-lane chase's {pm.PEER_LATENCY_NS:.0f} ns)")
print(f"Little's law knee: {RATE:.0f} GB/s x {ROUND_NS:,.0f} ns / {SMS} SMs = "
      f"{knee:,.0f} bytes in flight per SM; device memory's (the H100's): "
      f"{dm.latency_bandwidth_product():,.0f} bytes")

# %% [markdown]
# ## 3 · The peer chase: one dependent load at a time
#
# A single thread of GPU `DST` follows a ring of 64 MiB (larger than L2, with one node every
# 4 KiB, visited in random order), first in its own device memory and then in GPU `SRC`'s
# memory over the link. Each load waits for the one before it, so the time per step is the
# latency and nothing else.

# %%
lat = peer.latency_sweep(src=SRC, dst=DST, nbytes=64 << 20, steps=512, measure=MEASURE)
display(lat)
if MEASURE:
    ns = dict(zip(lat["memory"], lat["ns"]))
    labels = [f"device memory (GPU {DST})", f"peer GPU (GPU {SRC})"]
    vals, how = [ns["device memory"], ns["peer GPU"]], "measured"
else:   # the model's figures: the H100's device-memory chase, the H200 pair's peer chase
    labels = ["device memory (H100, ladder)", "peer GPU (2x H200, NV18)"]
    vals, how = [dm.H100_DRAM_LATENCY_NS, pm.PEER_LATENCY_NS], "model"
fig, ax = plt.subplots(figsize=(7, 2))
ax.barh(labels, vals, color=("tab:blue", "tab:red"))
for i, v in enumerate(vals):
    ax.text(v, i, f" {v:,.0f} ns", va="center")
ax.invert_yaxis()
ax.set_xlim(0, max(vals) * 1.25); ax.set_xlabel(f"ns per dependent load [{how}]")
fig.tight_layout()
plt.show()
print(f"the peer GPU is {vals[1] / vals[0]:.1f}x as far as device memory [{how}]")

# %% [markdown]
# ## What to take away
#
# * **The peer GPU is the level below device memory.** On two H200s over NV18 a dependent
#   load takes about 1 µs (~2,000 cycles), roughly 3x device memory. The link carries
#   450 GB/s each way, about a tenth of what device memory delivers.
# * **Every packet pays a 16-byte header.** That leaves 424 GB/s of payload in the copy
#   engine's 256-byte packets and 400 GB/s in an SM's 128-byte lines; NVML's data and raw
#   counters (`nvml.LinkBytes`) show what the link carried.
# * **The copy engine: switch peer access on, and copy in large pieces.** With access off the
#   driver stages the copy through the host at a tenth of the link's rate. With access on, a
#   copy costs about 5 µs before its first byte moves, so copies well above 2 MB are
#   needed to get near the ~395 GB/s the copy engine delivers (its ceiling: 424 GB/s). Each
#   direction has its own bandwidth, so copying both ways at once nearly doubles the total.
# * **SM loads follow Little's law over the link.** About 1.2 KB in flight per SM (400 GB/s
#   × a 390 ns round / 132 SMs) fills the link. That is far less than device memory needs,
#   so a kernel that streams device memory well also streams a peer's. The round under load
#   is the slope of a sweep below its knee, not a pointer chase's latency (986 ns). Stores
#   are posted and do not wait for the round trip.
