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
# # 07 · Host memory and transfers: pageable, pinned, mapped and managed
#
# **The idea.** Data starts on the host, and every byte a kernel reads got to the GPU over
# the link (PCIe or NVLink-C2C) through a **copy engine**, a DMA unit that reads and writes
# host memory on its own, by physical address, while the CPU does something else. What kind
# of host memory the bytes sit in decides how fast that goes:
#
# * **pageable** — what `malloc` and NumPy give you. The OS may move or swap a page at any
#   time, so the copy engine cannot be pointed at it. The driver *stages* the copy: one CPU
#   thread `memcpy`s a piece into a small page-locked buffer of the driver's, the copy engine
#   moves that piece, and so on, in turn. The copy runs at the speed of that pipeline, not
#   of the link.
# * **pinned** (page-locked, `cudaHostAlloc`) — the OS promises to keep every page where it
#   is, so the copy engine DMAs straight from it: the link's speed. Pinned memory is taken
#   from the OS for good while it lives; pin what you transfer, not everything.
# * **write-combined** pinned — not cached by the CPU: the CPU's writes are gathered into
#   whole lines and sent out together (fast to fill, and the GPU's reads need not snoop the
#   CPU's caches), but a CPU *read* of it is very slow. For buffers the CPU only writes.
# * **first touch** — a fresh allocation is only reserved address space: the OS maps each
#   page when it is first touched, one page fault at a time. A copy *into* memory nobody has
#   touched yet pays those faults on top of the copy (the sweep's `fresh` kind).
#
# Two more ways to get host data to a kernel, without an explicit copy: **mapped**
# (zero-copy) pinned memory, which a kernel reads over the link as it goes, and **managed**
# memory (`cudaMallocManaged`), whose pages migrate to the GPU when it touches them — or
# ahead of time, with a prefetch. And one way to hide transfers altogether: **overlap** them
# with compute, on streams.
#
# `gpumem.experiments` measures each of these (`transfer_sweep`, `zero_copy_compare`,
# `managed_compare`, `overlap_timeline`); `gpumem.transfer` holds the kernels and
# `plot_timeline`. gpumem's own `to_device` and `get` use what the lesson teaches.

# %%
import os
import statistics
import time

import matplotlib.pyplot as plt
import numpy as np

import gpumem as gm
from gpumem import experiments as ex
from gpumem.lessons import transfer

try:
    display                    # Jupyter's
except NameError:              # run as a plain script: the tables as text
    display = print

HAVE_GPU = gm.is_available()
print(gm.device().summary() if HAVE_GPU else
      "No GPU here: this notebook shows the copy kinds and the API; every transfer needs a GPU.")
KiB, MiB = 1 << 10, 1 << 20

for kind, what in transfer.KINDS.items():
    print(f"{kind:15s} {what}")


def size(b):
    """Bytes as people say them."""
    b = float(b)
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b:.0f} B"


def save_for_docs(fig, name):
    """tools/run-notebooks sets GPUMEM_DOCS_DIR: the headline figure goes to docs/."""
    folder = os.environ.get("GPUMEM_DOCS_DIR")
    if folder and HAVE_GPU:
        fig.savefig(os.path.join(folder, name), dpi=120, bbox_inches="tight")


# %% [markdown]
# **Sizes.** The copies go from 4 KiB to 256 MiB, each point the median of up to 50 copies
# for the small sizes and of 3 from 64 MiB on; the zero-copy and managed comparisons stop at
# 256 MiB too, and the overlap moves 64 MiB. The notebook runs in well under 20 s on an H100.
#
# ## 1. Copy bandwidth by kind and size
#
# `ex.transfer_sweep` times one synchronous `cudaMemcpy` per point with CUDA events, for
# each kind of host memory and both directions (`h2d`: host to device, `d2h`: device to
# host). Every kind is compared with the pinned copy, the fastest the link gives a plain
# `cudaMemcpy`.

# %%
SIZES = [s for s in transfer.SIZES if s <= 256 * MiB]
KIND_STYLE = {"pinned": dict(color="black", lw=2.5), "write_combined": dict(color="C2", ls="--"),
              "pageable": dict(color="C3"), "fresh": dict(color="C1"),
              "staged": dict(color="C0")}
if HAVE_GPU:
    sweep = ex.transfer_sweep(sizes=SIZES, progress=False)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, direction in zip(axes, transfer.DIRECTIONS):
        for kind, style in KIND_STYLE.items():
            rows = [r for r in sweep if r["kind"] == kind and r["direction"] == direction]
            if rows:
                ax.plot([r["bytes"] for r in rows], [r["GB/s"] for r in rows], marker="o",
                        ms=3, label=kind + (" (the reference)" if kind == "pinned" else ""),
                        **style)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes per copy")
        ax.set_title(f"{direction}: " + ("host to device" if direction == "h2d"
                                         else "device to host"))
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("GB/s [measured]")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.suptitle(f"host<->device copies on {gm.device().name}")
    fig.tight_layout()
    save_for_docs(fig, "transfer_bandwidth.png")
    plt.show()
else:
    print(f"sizes: {size(SIZES[0])} .. {size(SIZES[-1])} ({len(SIZES)} sizes, by 4x)")
    for direction in transfer.DIRECTIONS:
        kinds = [k for k in transfer.KINDS if not (k == "fresh" and direction == "h2d")]
        print(f"  {direction}: {', '.join(kinds)}")
    print("(measuring needs a GPU: per point ms, us per copy, GB/s and the ratio to pinned)")

# %% [markdown]
# **How to read it.** On the left of each panel the copies are tiny and the time is almost
# all fixed cost — the driver call, the DMA setup, the completion — so GB/s rises in
# proportion to the size, whatever the kind: for small copies, latency is the number that
# matters (the table's `us` column), and batching many small copies into one pays. On the
# right the fixed cost is amortised and each line flattens at its own ceiling:
#
# * `pinned` and `write_combined` flatten at the link's speed; the copy engine cannot tell
#   them apart.
# * `pageable` flattens lower: the driver's one-thread staging pipeline is the limit, and
#   how far below pinned it lands depends on the CPU and its memory.
# * `fresh` (device to host into untouched memory) is lower still: the page faults of the
#   first touch are paid inside the copy.
# * `staged` (gpumem's `get`/`to_device`) takes the driver's path below 2 MiB and its own
#   pipeline above: several threads, each with two pinned buffers, so the `memcpy`s of the
#   host side run on several cores and overlap the DMA. Look for how much of the gap between
#   `pageable` and `pinned` it closes.

# %%
if HAVE_GPU:
    big = [r for r in sweep if r["bytes"] in (64 * MiB, 256 * MiB)]
    display(gm.Table(big, columns=["direction", "kind", "bytes", "ms", "GB/s", "x pinned"],
                     sources=sweep.sources, title="the large copies, beside pinned"))
    small = [r for r in sweep if r["bytes"] == SIZES[0]]
    display(gm.Table(small, columns=["direction", "kind", "bytes", "us", "GB/s"],
                     sources=sweep.sources, title=f"the smallest copy ({size(SIZES[0])}): latency"))
else:
    print("(needs a GPU)")

# %% [markdown]
# ## 2. Zero-copy: a kernel reading host memory
#
# Pinned memory can also be **mapped** into the GPU's address space: a kernel dereferences a
# pointer to host memory, and every load crosses the link. No copy, no device buffer — but
# no cache of it either: read the data twice and it crosses the link twice.
#
# `ex.zero_copy_compare` runs a kernel that reads every byte once (`transfer.read_sum`), once
# or 8 times over the same data, three ways: **mapped** (every launch reads host memory),
# **copy** (one `cudaMemcpy` from the pinned buffer to the device, then the launches read
# device memory; timed together) and **device** (the launches alone, data already resident).

# %%
ZC_SIZES = (64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB)
if HAVE_GPU:
    zc = ex.zero_copy_compare(sizes=ZC_SIZES, reads=(1, 8), repeat=5, progress=False)
    display(zc)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for nreads, color in ((1, "C0"), (8, "C3")):
        rows = [r for r in zc if r["reads"] == nreads]
        ax.plot([r["bytes"] for r in rows], [r["copy ms"] / r["mapped ms"] for r in rows],
                marker="o", color=color, label=f"read {nreads}x")
    ax.axhline(1, color="black", lw=1, ls="--")
    ax.text(ZC_SIZES[0], 1, " above: mapped wins; below: copy first wins", va="bottom",
            fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes")
    ax.set_ylabel("copy ms / mapped ms [measured]")
    ax.set_title("zero-copy against copy, then read")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
else:
    print(f"sizes {', '.join(size(s) for s in ZC_SIZES)}; each read 1x and 8x: mapped, "
          "copy then read, and device-resident reads (needs a GPU)")

# %% [markdown]
# **What to look for.** Read **once**, mapped memory skips a step: the copy version moves the
# bytes over the link *and then* reads them again from device memory, with a launch and a
# copy's fixed cost in between, while the mapped kernel streams them over the link once.
# That wins clearly for small data, where the copy's fixed cost dominates, and stays close
# for large data, where both are limited by the link. Read **8 times**, the mapped kernel
# pays the link 8 times and the copy version pays it once and then reads at device-memory
# speed: copy first wins by a wide margin. Compare `mapped GB/s` with the pinned copy's
# ceiling in section 1 to see how close SMs reading over the link come to the copy engine.
# Zero-copy suits data that is read once, in order, by a kernel — a stream of input, a
# flag the host polls — not data a kernel revisits.

# %% [markdown]
# ## 3. Managed memory: page faults or a prefetch
#
# `cudaMallocManaged` gives one pointer valid on host and device; the driver moves pages to
# whichever side touches them. The data here is written on the host, so its pages live in
# host memory. The kernel's first touch of each page then **faults on the GPU**: the SM
# waits while the driver migrates the page (or a group of them), and the next page not yet
# there faults again. `cudaMemPrefetchAsync` moves the pages in bulk before the kernel runs, much like a
# copy. `ex.managed_compare` times, per size: the kernel with faults (`fault`), the prefetch
# alone, the kernel after it, the two together, and a second launch on resident pages.

# %%
MG_SIZES = (1 * MiB, 16 * MiB, 256 * MiB)
HOWS = ("fault", "prefetch + kernel", "prefetch", "kernel after prefetch", "resident")
if HAVE_GPU:
    mg = ex.managed_compare(sizes=MG_SIZES, repeat=3, progress=False)
    display(mg)
    fig, ax = plt.subplots(figsize=(9, 3.8))
    width = 0.8 / len(HOWS)
    for i, how in enumerate(HOWS):
        rows = [r for r in mg if r["how"] == how]
        ax.bar([j + (i - 2) * width for j in range(len(rows))], [r["ms"] for r in rows],
               width, label=how)
    ax.set_xticks(range(len(MG_SIZES)), [size(s) for s in MG_SIZES])
    ax.set_yscale("log")
    ax.set_ylabel("ms [measured]")
    ax.set_title("managed memory written on the host, then read by a kernel")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    plt.show()
else:
    print(f"sizes {', '.join(size(s) for s in MG_SIZES)}; per size: "
          f"{', '.join(HOWS)} (needs a GPU)")

# %% [markdown]
# **What to look for.** `fault` against `prefetch + kernel`: the same bytes arrive either
# way, but on demand they come a fault at a time, with the SMs stalled while each one is
# served, and the `GB/s` column shows how far below the copy speeds of section 1 that lands.
# The `prefetch` row alone behaves like a bulk copy; `kernel after prefetch` and `resident`
# are reads of device memory. Managed memory is convenient — one pointer, no explicit
# copies — but only fast when you tell the driver where the data is going before a kernel
# needs it.

# %% [markdown]
# ## 4. Overlapping copies with compute
#
# The GPU has separate engines: copy engines for each direction and the SMs. One stream
# runs its operations in order, so copy in → kernel → copy out uses one engine at a time.
# Cut the data into chunks and alternate the chunks between two streams, and chunk `i`'s
# kernel runs while chunk `i+1` is copied in and chunk `i-1` copied out. This only works
# from **pinned** memory: a pageable copy is synchronous with the host and cannot overlap
# anything.
#
# `ex.overlap_timeline` runs 64 MiB through `transfer.scale` (whose compute per element is
# chosen so the kernel takes about as long as the copy in) both ways and records every
# operation's start and end with CUDA events; `transfer.plot_timeline` draws them.

# %%
if HAVE_GPU:
    ov = ex.overlap_timeline(64 * MiB, chunks=8)
    fig, ax = plt.subplots(figsize=(11, 3.6))
    transfer.plot_timeline(ov, ax=ax)
    bottom, top = ax.get_ylim()
    ax.set_ylim(bottom, top - 0.8)              # room above the lanes for the legend
    ax.set_title("copy in, compute, copy out: one stream, then 8 chunks on two streams")
    fig.tight_layout()
    plt.show()
    print(ov.title)
    serial = [r for r in ov if r["mode"] == "serial"]
    busiest = max(sum(r["ms"] for r in serial if r["op"] == op) for op in ("h2d", "kernel", "d2h"))
    print(f"serial {ov.totals['serial']:.2f} ms, overlapped {ov.totals['overlapped']:.2f} ms; "
          f"the busiest engine alone needs {busiest:.2f} ms (the floor for any overlap)")
else:
    print("64 MiB in 8 chunks on 2 streams, against one stream: copy in, scale, copy out "
          "(needs a GPU)")

# %% [markdown]
# **What to look for.** In the serial lanes the three colours follow one another; in the
# overlapped lanes they stack up in time, the two streams taking turns. The overlapped total
# cannot go below the busiest engine's own time (printed above): with copy in, kernel and
# copy out about equal, the best case is near a third of the serial time, plus one chunk's
# worth of filling and draining the pipeline at the start and the end. More chunks shorten
# that fill but add per-operation overhead.

# %% [markdown]
# ## 5. gpumem's own transfers
#
# `gm.to_device(a)` and `d.get()` are the transfers of every other lesson. A pinned array
# (`gm.pinned_empty(shape, dtype)` or `gm.pinned_like(a)`) is copied with one `cudaMemcpy`;
# a pageable one of 2 MiB or more goes through gpumem's staging (the sweep's `staged` kind).
# `d.get(out=a)` copies into an array you already have instead of allocating a new one — a
# new array is untouched memory, and pays the first touch. Timed here with the host's clock,
# as a program sees it (`to_device` includes allocating the device array).

# %%
def median_ms(fn, n=5):
    """Median wall time of fn() in ms, after one untimed call."""
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


if HAVE_GPU:
    n = 256 * MiB // 4
    pageable = np.arange(n, dtype=np.float32)           # ordinary NumPy memory, touched
    pinned = gm.pinned_empty((n,), np.float32)          # page-locked, uninitialised
    pinned[:] = pageable
    print("pinned bytes gpumem holds:", size(gm.memory_info()["pinned_bytes"]))
    d = gm.to_device(pageable)
    cases = [("to_device(pageable)", lambda: gm.to_device(pageable)),
             ("to_device(pinned)", lambda: gm.to_device(pinned)),
             ("get()  (a new array)", lambda: d.get()),
             ("get(out=pageable)", lambda: d.get(out=pageable)),
             ("get(out=pinned)", lambda: d.get(out=pinned))]
    rows = []
    for name, fn in cases:
        ms = median_ms(fn)
        rows.append({"call": name, "bytes": d.nbytes, "ms": ms, "GB/s": d.nbytes / ms / 1e6})
    display(gm.Table(rows, sources={"ms": "measured", "GB/s": "measured"},
                     title=f"gpumem's transfers of {size(d.nbytes)} (median of 5, wall clock)"))
    print("round trip exact:", np.array_equal(d.get(out=pinned), pageable))
    print("pinned bytes now (the staging buffers count too):",
          size(gm.memory_info()["pinned_bytes"]))
    del pinned
    print("after del pinned:", size(gm.memory_info()["pinned_bytes"]))
else:
    try:
        gm.pinned_empty((1024,), np.float32)
    except gm.CudaUnavailableError as e:
        print("gm.pinned_empty:", type(e).__name__, "-", e)
    print("(the timings need a GPU)")

# %% [markdown]
# **What to look for.** `to_device(pinned)` and `get(out=pinned)` should sit near the pinned
# ceiling of section 1; the pageable rows show what the staging recovers; `get()` into a new
# array pays the first touch of 256 MiB on top. The pinned-bytes account shows that pinned
# memory is a resource: it is freed with the array that owns it.
#
# **Sharing, not copying.** A device array from another library comes in through DLPack or
# `__cuda_array_interface__` with `gm.from_dlpack(x)` (or `gm.to_device(x)`): the same device
# memory, no copy. And NumPy cannot read device memory: `np.asarray(d)` refuses and says to
# call `.get()`, instead of silently making an object array.

# %%
try:
    import cupy
except ImportError:
    cupy = None

if HAVE_GPU and cupy is not None:
    c = cupy.arange(8, dtype=cupy.float32)
    shared = gm.from_dlpack(c)
    print(shared, "same memory:", shared.ptr == c.data.ptr)
    c[0] = 42                                   # written through CuPy ...
    print("seen through gpumem:", shared.get()[:3])
    back = cupy.asarray(shared)                 # ... and CuPy reads gpumem's array in place
    print("back in CuPy, same memory:", back.data.ptr == shared.ptr)
elif HAVE_GPU:
    print("CuPy is not installed: gm.from_dlpack takes any array with __dlpack__ or "
          "__cuda_array_interface__ (CuPy, PyTorch, JAX) on device 0")
else:
    print(f"gm.from_dlpack: {gm.from_dlpack.__doc__}")

if HAVE_GPU:
    try:
        np.asarray(gm.to_device(np.ones(4, np.float32)))
    except TypeError as e:
        print("np.asarray(device array):", e)
else:
    print("np.asarray(device array) raises TypeError:", gm.DeviceArray.__array__.__doc__)

# %% [markdown]
# ## What to take away
#
# * A copy from pageable memory is two copies: the driver stages it through pinned memory on
#   one CPU thread. Pinned memory is DMA'd directly, at the link's speed; pin the buffers you
#   transfer through, and reuse them.
# * Small copies are all latency: batch them. Memory nobody touched yet costs a page fault
#   per page, in the copy or wherever it is first written.
# * Zero-copy (mapped) memory saves the copy when a kernel reads the data once; read it
#   again and it crosses the link again.
# * Managed memory migrates on demand, a fault at a time; prefetch it where it is going.
# * Copies and kernels run on separate engines: chunk the work over streams, from pinned
#   memory, and the transfer hides behind the compute, down to the busiest engine's time.
