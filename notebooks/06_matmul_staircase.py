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
# # 06 · Matrix multiplication: the staircase toward cuBLAS
#
# **The idea.** Lesson 01 took `C = A @ B` from the naive kernel to shared-memory tiles. That
# cut the global loads by the tile width, and still left the tiled kernel far below cuBLAS.
# Each step below removes the next thing that holds the kernel back, and each step has a
# number that shows it did what it claims: a counter, or the compiler's and the occupancy
# API's report of what a block costs.
#
# * **naive** — every thread reads its row of `A` and its column of `B` from global memory:
#   two loads per multiply-add. L1 and L2 catch most of the re-reading, but every load still
#   goes through the load pipeline. *Counter:* `gld_transactions`, the 32-byte sectors the
#   loads move through L1.
# * **tiled** — a block stages `TILE × TILE` tiles of `A` and `B` in shared memory and every
#   thread reuses `TILE` values of each tile: the global loads fall by the tile width, and the
#   inner loop now reads shared memory instead. *Counter:* `gld_transactions` falls with the
#   tile width (by half of it against naive-16, whose two-row warps already share sectors);
#   `shared_load_transactions` appears in its place.
# * **prefetch** (double buffering) — two shared buffers per operand: the loads of the next
#   tiles are issued into registers before this tile's inner product, and stored to the other
#   buffer after it, so their latency hides behind the arithmetic, with one barrier per tile
#   instead of two. It moves exactly the bytes `tiled` moves: *the global counters do not
#   change* (the model counts it as tiled); the shared bytes per block double, and the clock
#   and the stall counters show the overlap (its own section below: the compiler can undo it).
# * **coarsened** (thread coarsening) — 32 × 8 threads compute a 32 × 32 tile, four outputs
#   of a column each: every `B` value read from shared memory is kept in a register and serves
#   four multiply-adds. Shared loads per multiply-add fall from 2 to 1.25 as the source is
#   written (the compiler may merge some of either kernel's into wider loads). *Counter:*
#   `shared_load_transactions` falls against `tiled`, with the same global traffic; the
#   registers per thread rise.
# * **register_tiled** (2-D register blocking) — 16 × 16 threads compute a 64 × 64 tile, a
#   4 × 4 block of `C` per thread, as an outer product of 4 values of `A` and 4 of `B` per `k`
#   (16-byte shared loads, `A` stored transposed): 8 shared floats per 16 multiply-adds.
#   Global loads and stores are 16 bytes wide where rows are aligned. *Counters:*
#   `gld_requests` falls 8× against the 32-wide tiles (16-byte loads need a quarter of the
#   instructions for the same bytes, and 64-wide tiles ask for half the bytes) and
#   `gld_transactions` halves; `shared_load_transactions` falls again. Registers per thread
#   rise.
# * **warptiled** (block, warp and thread tiles) — 8 warps compute a 128 × 128 tile, each warp
#   a 64 × 32 part of it, each lane an 8 × 8 block of `C` as four 4 × 4 pieces: 16 shared
#   floats per 64 multiply-adds, and each warp's shared reads touch only the 64 rows and 32
#   columns of its own warp tile. Shared memory is double buffered: while the block multiplies
#   one tile, the next tile of `B` travels from global to shared memory by `cp.async` (no
#   registers on the way) and the next tile of `A` waits in registers to be stored transposed;
#   one barrier per tile. *Counters:* the copies of `B` are not loads but `LDGSTS`
#   instructions, which `gldgsts_requests` counts apart (the H100's `gld_requests` counts
#   them too, with `A`'s loads); shared
#   wavefronts per multiply-add fall again; and the
#   remaining gap to cuBLAS shows in the issue counters (the last section): the warps wait
#   for nothing much, they are simply issuing other instructions than FMAs.
# `tools/sweep_warptiled.cu` records how the 128 × 128 × 16 tiles were chosen (eleven shapes
# timed on an H100).
#
# Past `warptiled` the road leaves the FP32 pipes for the tensor cores, in a section of its
# own near the end: **mma** (`mma.sync`, fed by `cp.async` like `warptiled`; compute
# capability 8.0 and newer) and **wgmma** (Hopper's warpgroup MMA, fed by the tensor copy
# engine; compute capability 9.0 only), both with TF32 inputs, set beside cuBLAS in FP32 and
# in TF32 and under the FP32 and the TF32 peak.

# %%
import os
import statistics
import subprocess
import sys
import tempfile

import matplotlib.pyplot as plt
import numpy as np

import gpumem as gm
from gpumem import model
from gpumem.runtime.published import published

try:
    display                    # Jupyter's
except NameError:              # run as a plain script: the tables as text
    display = print

HAVE_GPU = gm.is_available()
if HAVE_GPU:
    print(gm.device().summary())
else:
    print("No GPU here: this notebook shows the model's and the compiler's numbers; the "
          "correctness check, the timings, cuBLAS, the occupancy API and the counters need a GPU.")

# The cuBLAS anchor, through CuPy where it is installed (and sees the GPU).
cupy = None
if HAVE_GPU:
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except ImportError:
        cupy = None
        print("CuPy is not installed: no cuBLAS anchor in this run (pip install cupy-cuda12x "
              "or cupy-cuda13x, to match the driver).")
    except Exception as e:          # a CuPy that cannot reach the GPU (wrong CUDA build)
        cupy = None
        print(f"CuPy cannot use the GPU ({type(e).__name__}: {e}): no cuBLAS anchor.")

# The staircase: (variant, tile, threads per block).
STEPS = [("naive", 16, 16 * 16), ("tiled", 32, 32 * 32), ("prefetch", 32, 32 * 32),
         ("coarsened", 32, 32 * 8), ("register_tiled", 64, 16 * 16), ("warptiled", 128, 256)]


def step_name(variant, tile):
    return f"{variant}-{tile}"


def save_for_docs(fig, name):
    """tools/run-notebooks sets GPUMEM_DOCS_DIR: the measured headline figure goes to docs/."""
    folder = os.environ.get("GPUMEM_DOCS_DIR")
    if folder and HAVE_GPU:
        fig.savefig(os.path.join(folder, name), dpi=120, bbox_inches="tight")


for v in gm.variants("matmul"):
    print(f"{v.name:15s} {v.idea}")

# %% [markdown]
# ## Correct first
#
# Every step against NumPy in float64 (`gm.matmul_reference`), on two shapes that are
# multiples of no tile: one whose rows are 16-byte aligned (`register_tiled`'s 16-byte loads
# and stores, with partial tiles at the edges), one whose rows are not (its scalar path). The
# kernels sum in float32, so the error is relative, against a bound well above float32's
# rounding over these `K`.

# %%
rng = np.random.default_rng()
SHAPES = [(333, 260, 196), (300, 77, 129)]          # M, K, N
if HAVE_GPU:
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        ref = gm.matmul_reference(a, b)
        errs = []
        for variant, tile, _ in STEPS:
            c = gm.matmul(a, b, variant=variant, tile=tile)
            err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
            errs.append(f"{step_name(variant, tile)} {err:.1e}")
            assert err < 1e-5, (variant, tile, (m, k, n), err)
        print(f"{m} x {k} @ {k} x {n}: relative error " + ", ".join(errs))
else:
    print("(needs a GPU)")

# %% [markdown]
# ## The staircase
#
# One row per step, square matrices of 2048 and 4096. The columns:
#
# * `TFLOP/s` — `2·M·N·K` over the median kernel time (`gm.bench`: CUDA events around each
#   launch, 2 warm-ups, then 10 timed launches at 2048 and 5 at 4096: the whole notebook runs
#   in seconds on an H100);
# * `x cuBLAS` — the step's speed over cuBLAS SGEMM's on the same inputs (`cupy.matmul` on
#   float32, timed the same way with CUDA events; CuPy keeps FP32 arithmetic unless
#   `CUPY_TF32=1`, so both do the same float32 multiply-adds);
# * `regs/thread` and `shared B/block` — what the compiler gave the kernel
#   (`gm.kernel_attributes`); `blocks/SM` and `occupancy` — how many blocks of it fit on one
#   SM at once (`gm.kernel_occupancy`, the CUDA occupancy API), and `limiter`, which resource
#   runs out first (the model's breakdown).
#
# Without a GPU the same rows come from the model and the compiler: the global loads and
# stores each step asks for at 2048³ (`gm.model.predict`), the registers and shared bytes
# from `gm.compiler_report` (cuobjdump on the built extension), and blocks/SM from
# `gm.model.occupancy` for an H100 (compute capability 9.0).

# %%
SIZES = (2048, 4096)
REPEAT = {2048: 10, 4096: 5}


def cublas_ms(a, b, repeat, warmup=3):
    """Median ms of cupy.matmul(a, b) between CUDA events, after warm-up (the anchor)."""
    for _ in range(warmup):
        cupy.matmul(a, b)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(repeat):
        start.record()
        cupy.matmul(a, b)
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(samples)


if HAVE_GPU:
    speed, cublas, bench_big = {}, {}, []
    for size in SIZES:
        A = gm.to_device(rng.standard_normal((size, size), dtype=np.float32))
        B = gm.to_device(rng.standard_normal((size, size), dtype=np.float32))
        C = gm.empty((size, size), np.float32)
        for variant, tile, _ in STEPS:
            r = gm.bench(gm.matmul, A, B, variant=variant, tile=tile, out=C,
                         repeat=REPEAT[size], warmup=2)
            speed[variant, size] = r.gflops / 1e3
            if size == max(SIZES):
                bench_big.append(r)
        if cupy is not None:       # the same device memory, seen by CuPy
            ms = cublas_ms(cupy.asarray(A), cupy.asarray(B), REPEAT[size])
            cublas[size] = 2 * size ** 3 / (ms * 1e-3) / 1e12
        del A, B, C
    rows = []
    if cublas:
        rows.append({"step": "cuBLAS SGEMM (CuPy)",
                     **{f"TFLOP/s {s}": cublas[s] for s in SIZES},
                     **{f"x cuBLAS {s}": 1.0 for s in SIZES}})
    for variant, tile, threads in STEPS:
        attrs = gm.kernel_attributes("matmul", variant, tile=tile)
        occ = gm.kernel_occupancy("matmul", variant, threads, 0, tile=tile)
        row = {"step": step_name(variant, tile)}
        for s in SIZES:
            row[f"TFLOP/s {s}"] = speed[variant, s]
            row[f"x cuBLAS {s}"] = speed[variant, s] / cublas[s] if s in cublas else None
        row.update({"threads/block": threads, "regs/thread": attrs.registers_per_thread,
                    "shared B/block": attrs.static_shared_bytes,
                    "blocks/SM": occ.blocks_per_sm, "occupancy": occ.occupancy,
                    "limiter": occ.limiter})
        rows.append(row)
    staircase = gm.Table(
        rows, columns=["step"] + [f"{c} {s}" for s in SIZES
                                  for c in (("TFLOP/s", "x cuBLAS") if cublas else ("TFLOP/s",))]
        + ["threads/block", "regs/thread", "shared B/block", "blocks/SM", "occupancy", "limiter"],
        sources={**{f"TFLOP/s {s}": "measured" for s in SIZES},
                 **{f"x cuBLAS {s}": "measured" for s in SIZES},
                 "regs/thread": "runtime", "shared B/block": "runtime",
                 "blocks/SM": "occupancy API", "occupancy": "occupancy API", "limiter": "model"},
        title=f"the matmul staircase, float32, on {gm.device().name}")
else:
    try:
        report = gm.compiler_report("matmul", sass=False)
        report = [r for r in report if r["arch"] in ("sm_90", "sm_90a")] or list(report)
    except (FileNotFoundError, OSError) as e:
        report = []
        print(f"gm.compiler_report: {e}")

    def compiled(variant, tile):
        """The compiler's row of a step's kernel (the tile is a template argument of
        tiled, prefetch and warptiled only), or None."""
        return next((r for r in report if r["variant"] == variant and (
            variant not in ("tiled", "prefetch", "warptiled")
            or r["template"].split(",")[0] == str(tile))), None)

    rows = []
    for variant, tile, threads in STEPS:
        pred = model.predict("matmul", variant, m=2048, n=2048, k=2048, tile=tile)
        c = compiled(variant, tile)
        row = {"step": step_name(variant, tile), "threads/block": threads,
               "regs/thread": c and c["registers"], "shared B/block": c and c["shared bytes"],
               "blocks/SM": None, "limiter": None,
               "gld_requests": pred["gld_requests"],
               "gld_transactions": pred["gld_transactions"],
               "gst_transactions": pred["gst_transactions"],
               "FLOP/gld sector": 2 * 2048 ** 3 / pred["gld_transactions"],
               "shared_load_transactions": pred["shared_load_transactions"],
               "FMA/shared wavefront": (2048 ** 3 / pred["shared_load_transactions"]
                                        if pred["shared_load_transactions"] else None)}
        if c:
            # cuobjdump's shared bytes hold 1 KiB more than the kernel's arrays wherever it
            # has any (the per-block reserve of sm_80 on); the model adds that reserve itself
            o = model.occupancy("9.0", threads, c["registers"],
                                max(0, c["shared bytes"] - 1024))
            row["blocks/SM"], row["limiter"] = o.blocks_per_sm, o.limiter
        rows.append(row)
    staircase = gm.Table(
        rows, sources={"regs/thread": "compiler", "shared B/block": "compiler",
                       "blocks/SM": "model", "limiter": "model", "gld_requests": "model",
                       "gld_transactions": "model", "gst_transactions": "model",
                       "FLOP/gld sector": "model", "shared_load_transactions": "model",
                       "FMA/shared wavefront": "model"},
        title="the matmul staircase at 2048^3 on paper (model; compiler for sm_90; "
              "occupancy for an H100)")
    if report:
        print("shared B/block: cuobjdump's count, 1 KiB above the kernel's arrays wherever it "
              "has any (the per-block reserve of sm_80 on).")
    print("(the speeds, x cuBLAS and the occupancy API's blocks/SM need a GPU)")
staircase

# %% [markdown]
# **What to look for.** Each step should be faster than the one before at both sizes; a step
# that is not has traded something away, and the resource columns usually say what:
#
# * `prefetch` holds twice `tiled`'s shared memory per block; where that costs it resident
#   blocks (`blocks/SM`), what it gains by hiding its loads it may lose in fewer warps to
#   switch between. Here both run 2 blocks of 1,024 threads per SM, and the gain is small:
#   with 64 warps resident, another warp usually has work while one waits for memory.
# * `coarsened` and `register_tiled` buy their reuse with registers: more registers per
#   thread means fewer threads per SM (`limiter` says when registers are what caps the
#   blocks). Fewer resident warps is fine when each has more independent work.
# * `x cuBLAS` is the distance still to go. Compare it across the two sizes: gpumem runs the
#   same kernel at both, while cuBLAS picks one for each shape, so a ratio that changes with
#   the size is mostly cuBLAS changing.

# %% [markdown]
# ## What the counters say
#
# One profiled launch of each step at 1024³ (`gm.profile`: each launch runs once for its
# time; gpumem records it and, at the end of the block, replays the launches together once per
# counter pass, with L2 flushed before each), and the model's
# prediction beside each global counter. `DRAM MB` is what reached device memory
# (`dram_read_bytes + dram_write_bytes`); the operands are 12.6 MB together, so a kernel whose
# DRAM bytes stay near that fetched each byte from device memory about once, whatever its
# loads asked L1 for.

# %%
PROFILE_SIZE = 1024
METRICS = ["gld_requests", "gld_transactions", "gldgsts_requests", "gst_transactions",
           "shared_load_transactions", "shared_load_bank_conflict", "dram_read_bytes",
           "dram_write_bytes"]
p = None
if HAVE_GPU and gm.profiler_available():
    A = gm.to_device(rng.standard_normal((PROFILE_SIZE, PROFILE_SIZE), dtype=np.float32))
    B = gm.to_device(rng.standard_normal((PROFILE_SIZE, PROFILE_SIZE), dtype=np.float32))
    with gm.profile(METRICS) as p:
        for variant, tile, _ in STEPS:
            # splits=1: the staircase's kernel alone, every tile whole (at 1024^3 the
            # default would slice the one, quarter-full wave along K; see below)
            kw = {"splits": 1} if variant == "warptiled" else {}
            gm.matmul(A, B, variant=variant, tile=tile, **kw)
    rows = []
    for (variant, tile, _), rec in zip(STEPS, p.records):
        m = rec.metrics
        pred = model.predict("matmul", variant, m=PROFILE_SIZE, n=PROFILE_SIZE, k=PROFILE_SIZE,
                             tile=tile)
        rows.append({"step": step_name(variant, tile),
                     "gld_requests": m["gld_requests"], "gld_requests_model": pred["gld_requests"],
                     "gld_transactions": m["gld_transactions"],
                     "gld_transactions_model": pred["gld_transactions"],
                     "gldgsts_requests": m["gldgsts_requests"],
                     "gldgsts_requests_model": pred.get("gldgsts_requests", 0),
                     "gst_transactions": m["gst_transactions"],
                     "gst_transactions_model": pred["gst_transactions"],
                     "shared_load_transactions": m["shared_load_transactions"],
                     "shared_load_transactions_model": pred["shared_load_transactions"],
                     "shared_load_bank_conflict": m["shared_load_bank_conflict"],
                     "shared_load_bank_conflict_model": pred["shared_load_bank_conflict"],
                     "DRAM MB": (m["dram_read_bytes"] + m["dram_write_bytes"]) / 1e6})
    measured_cols = ["gld_requests", "gld_transactions", "gldgsts_requests",
                     "gst_transactions",
                     "shared_load_transactions", "shared_load_bank_conflict", "DRAM MB"]
    counters = gm.Table(rows, sources={**{c: "measured" for c in measured_cols},
                                       **{c: "model" for c in rows[0] if c.endswith("_model")}},
                        title=f"one launch of each step at {PROFILE_SIZE}^3: counters and model")
    display(counters)
    del A, B
elif HAVE_GPU:
    print("The hardware counters cannot be read here (gm.profile raises ProfilerError and "
          "says why): the model's global counters are in the table above at 2048^3, and the "
          "roofline below uses the bytes each launch declares.")
else:
    print("(the counters need a GPU: the model's global counters at 2048^3 are in the table "
          "above, the shared wavefronts too; the DRAM bytes only the hardware counts)")

# %% [markdown]
# **Reading the counters.**
#
# * `gld_transactions`, naive against tiled: the drop the tiles promise. The measured column
#   should equal the model's: the model counts the sectors the addresses require, and these
#   kernels ask for nothing else.
# * `prefetch` against `tiled`: the same global counts to the sector — double buffering moves
#   no fewer bytes, it moves them earlier.
# * `coarsened` against `tiled`: the same global counts, fewer `shared_load_transactions`:
#   the `B` value kept in a register is the reuse.
# * `register_tiled`: fewer `gld_requests` per sector (16-byte loads) and fewer sectors (64-wide
#   tiles), and fewer shared wavefronts per multiply-add.
# * `shared_load_bank_conflict` counts every wavefront beyond the first of an instruction,
#   and none of these kernels has a conflict its addresses cause: the compiler reads four
#   `A` values of a row as one 16-byte load, which every lane of a warp shares (a broadcast),
#   and a 16-byte shared load takes two wavefronts even then (a half warp each); 16-byte
#   loads of 8 different `float4`s per quarter warp (`register_tiled`'s `B`, `warptiled`'s
#   `A`) take four. The model's columns come from those rules (`gm.model.bank_conflicts`)
#   and the kernels' index arithmetic: its instruction counts are the hardware's exactly,
#   its wavefronts a floor the H100 exceeds by a little that changes from run to run (up to
#   0.2% for loads).
# * `warptiled`: `B` arrives by `cp.async`, one `gldgsts_requests` per warp and 16-byte copy
#   (zero for every other step); on the H100 `gld_requests` and `gld_transactions` count
#   those copies too, beside `A`'s loads, and the two together are what the 128-wide tiles
#   ask for: half of `register_tiled`'s sectors again. (The separate sector count of the
#   16-byte copies, `gldgsts_transactions`, is a few percent off and changes from run to
#   run, so the table shows the copies' requests, which are exact.) Its shared wavefronts per
#   multiply-add are the fewest of all.
# * `DRAM MB` against the 12.6 MB the operands hold: at this size they fit in L2 (50 MB on
#   an H100), so look for every step, naive included, near those compulsory bytes — then the
#   difference between the steps is not in device memory but on chip.

# %% [markdown]
# ## The staircase in one picture
#
# TFLOP/s of each step at 4096³, with cuBLAS's and the FP32 peak (SMs × FP32 lanes × 2 ×
# clock) as lines.

# %%
if HAVE_GPU:
    big = max(SIZES)
    names = [step_name(v, t) for v, t, _ in STEPS]
    tflops = [speed[v, big] for v, _, _ in STEPS]
    fig, ax = plt.subplots(figsize=(8, 3.4))
    ax.barh(names, tflops, color=["#c44", "#c84", "#cc4", "#8b4", "#4a4", "#286"])
    peak = gm.device().peak_fp32_gflops / 1e3
    ax.axvline(peak, color="grey", lw=1, ls=":", label=f"FP32 peak {peak:.0f} TFLOP/s")
    if big in cublas:
        ax.axvline(cublas[big], color="black", lw=1.2, ls="--",
                   label=f"cuBLAS SGEMM (CuPy) {cublas[big]:.1f} TFLOP/s")
    for y, t in enumerate(tflops):
        ax.text(t, y, f" {t:.1f}" + (f"  ({t / cublas[big]:.2f}x cuBLAS)" if big in cublas
                                     else ""), va="center", fontsize="small")
    ax.invert_yaxis()
    ax.legend(loc="upper right", fontsize="small")
    ax.set_xlabel(f"TFLOP/s, float32, {big}^3 [measured]")
    ax.set_title(f"the matmul staircase, {gm.device().name}", fontsize="medium")
    fig.tight_layout()
    plt.show()
else:
    print("(the bar chart of measured TFLOP/s needs a GPU)")

# %% [markdown]
# ## The roofline
#
# `gm.roofline` places each launch under the device's two roofs: the FP32 peak, and memory
# bandwidth × arithmetic intensity (FLOPs per byte). Which bytes decides what it says:
#
# * **the model's bytes** (above, or alone without a GPU): what the kernels' global load and
#   store instructions *request*, `gm.matmul_model_points`. By these naive sits at 0.25 FLOP
#   per byte, deep under the slanted roof, and each tile width moves a step to the right.
#   Model points have no time: they are drawn on their roof, as the best they could do if
#   every requested byte came from DRAM.
# * **the measured DRAM bytes** (below, with a GPU): the profiled launches of the section
#   above, at the time of their own run. Where L1 and L2 serve most of the requested bytes,
#   a step moves far to the right of the ridge point — compute-bound by this measure. Look
#   at how far below the flat roof each one stays.
#
# That distance is the lesson of the staircase: once the operands come from device memory
# about once, device memory is not what limits a matmul; what does is on chip — the
# shared-memory and load instructions per multiply-add, the barriers, and how well the warps
# hide each other's waiting.

# %%
pairs = [(v, t) for v, t, _ in STEPS]
if HAVE_GPU:
    points = gm.matmul_model_points(PROFILE_SIZE, PROFILE_SIZE, PROFILE_SIZE, variants=pairs)
    measured = gm.roofline(p) if p is not None else gm.roofline(bench_big)
    fig, axes = plt.subplots(2, 1, figsize=(8, 9))
    gm.plot_roofline(gm.roofline(points), ax=axes[0])
    gm.plot_roofline(measured, ax=axes[1])
    axes[0].set_title(f"bytes requested (model), {PROFILE_SIZE}^3", fontsize="medium")
    axes[1].set_title("DRAM bytes (measured)" if p is not None else
                      "declared bytes (no counters here)", fontsize="medium")
    fig.suptitle(measured.title, fontsize="medium")
    fig.tight_layout()
    plt.show()
    display(gm.Table(measured.rows, columns=["label", "source", "FLOP/byte", "GFLOP/s",
                                             "roof GFLOP/s", "x roof", "bound"],
                     sources=measured.sources, title=measured.title))
else:
    roof = gm.roofline(gm.matmul_model_points(4096, 4096, 4096, variants=pairs))
    ax = gm.plot_roofline(roof)
    ax.set_title("bytes requested (model), 4096^3\n" + roof.roof["device"], fontsize="medium")
    plt.show()
    display(gm.Table(roof.rows, columns=["label", "FLOP/byte", "roof GFLOP/s", "bound"],
                     sources=roof.sources, title=roof.title))
    print("(the measured points -- each launch's DRAM bytes and time -- need a GPU)")

# %% [markdown]
# ## Double buffering, and what the compiler did with it
#
# `prefetch` only helps if its loads of the next tiles really leave before the inner product.
# In an earlier version of the kernel they sat in an `if (more tiles)` branch and the stores in
# a second one after the product; the compiler merged the two and sank the loads into the
# second, right before their stores (`cuobjdump -sass` showed the `LDG`s after the last
# `FFMA`): no prefetch at all, and `prefetch-32` ran at 8.4 TFLOP/s against `tiled-32`'s 9.1.
# Loading unconditionally (past the last tile the loads are predicated off) keeps them in
# front. The counters of one launch each at 4096³ show what double buffering changes: the
# stalls waiting on global memory (`long_scoreboard`) and on barriers per issued instruction,
# against the price — more instructions (the loads and stores of the register round trip
# every tile, with their bounds checks) and, with waits gone, a queue at the shared-memory
# pipe (`mio_throttle`).

# %%
STALLS = {"instructions (G)": "smsp__inst_executed.sum",
          "issue active %": "smsp__issue_active.avg.pct_of_peak_sustained_active",
          "global wait": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
          "shared wait": "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
          "shared queue": "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
          "barrier": "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"}
if HAVE_GPU and gm.profiler_available():
    A = gm.to_device(rng.standard_normal((4096, 4096), dtype=np.float32))
    with gm.profile(list(STALLS.values())) as q:
        for variant, tile in (("tiled", 32), ("prefetch", 32)):
            gm.matmul(A, A, variant=variant, tile=tile)
    rows = []
    for r in q.records:
        row = {"step": step_name(r.variant, r.params["tile"]),
               "TFLOP/s": 2 * 4096 ** 3 / r.ms / 1e9}
        row.update({k: r.metrics[m] for k, m in STALLS.items()})
        row["instructions (G)"] /= 1e9
        rows.append(row)
    display(gm.Table(rows, sources={c: "measured" for c in rows[0] if c != "step"},
                     title="tiled against prefetch at 4096^3: warps stalled per issued "
                           "instruction, by reason"))
    del A
else:
    print("(these counters need a GPU and gm.profile)")

# %% [markdown]
# Read the stall columns as "warps waiting for this reason per instruction issued". On an H100
# (2026-11-23) `prefetch-32` cut the global waits from 7.7 to 4.5 and the barrier waits from
# 4.5 to 3.8 per issued instruction and issued 18% more instructions; the shared-memory pipe,
# which both kernels load with the same 40 instructions per 32 multiply-adds, became the
# queue. The clock says 2–3% faster: at 64 resident warps per SM there was little latency
# left for double buffering to hide. Where it matters is with few warps per SM — as in
# `warptiled`, whose 16 warps per SM keep their next tiles in flight the same way.

# %% [markdown]
# ## The last gap: issue slots, not memory
#
# Why is `warptiled` still short of cuBLAS? Two counters of one launch each at 4096³: how busy
# the FMA pipe is (`sm__pipe_fma_cycles_active`, % of its peak on the active SMs) and how
# often a warp scheduler issued an instruction at all (`smsp__issue_active`, % of cycles).
# An FMA-bound kernel has both near 100%; a kernel that waits (for memory, for a barrier)
# has both low; a kernel busy with other instructions issues often while the FMA pipe idles.

# %%
ISSUE = ["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
         "smsp__issue_active.avg.pct_of_peak_sustained_active"]
if HAVE_GPU and gm.profiler_available():
    A = gm.to_device(rng.standard_normal((4096, 4096), dtype=np.float32))
    with gm.profile(ISSUE) as q:
        for variant, tile in (("register_tiled", 64), ("warptiled", 128)):
            gm.matmul(A, A, variant=variant, tile=tile)
    display(gm.Table([{"step": step_name(r.variant, r.params["tile"]),
                       "FMA pipe busy %": r.metrics[ISSUE[0]],
                       "issue active %": r.metrics[ISSUE[1]]} for r in q.records],
                     sources={"FMA pipe busy %": "measured", "issue active %": "measured"},
                     title="at 4096^3: the FMA pipe and the schedulers"))
    del A
else:
    print("(these counters need a GPU and gm.profile)")

# %% [markdown]
# On an H100 `warptiled` kept the FMA pipe busy about 72% of the time with the schedulers
# issuing in about 83% of cycles (`register_tiled`: 49% and 61%). The waiting is mostly gone;
# about one issued instruction in seven is not an FMA, and those are the slots cuBLAS keeps
# for FMAs.

# %% [markdown]
# ## The split tail: wave quantization
#
# A launch does not run all its blocks at once. Each SM holds a few of them at a time —
# `warptiled`'s 128 × 128 tiles, 256 threads each, fit 2 per SM — so the blocks run in
# **waves** of SMs × resident blocks per SM: 264 slots on a GPU of 132 SMs. Every
# `warptiled` block computes one whole tile, all of K, so every wave lasts as long as one
# tile, however few of the slots it fills.
#
# * 4096³ has 32 × 32 = 1,024 tiles: three full waves and a fourth of 232 tiles, nearly full.
# * 4097³ has one more row and column of tiles, 33 × 33 = 1,089: four full waves and a
#   **fifth of 33 tiles, as long as a full one**, while 231 of its 264 slots wait. 4.125
#   waves of work take 5 waves of time.
# * 1024³ has 64 tiles, one wave a quarter full.
#
# The **split tail** (`gm.matmul(a, b, variant="warptiled", splits=...)`) cuts each tile of
# that last wave into `splits` slices of K: at 4097³, 33 tiles × 8 slices = 264 blocks, one
# full wave, each block an eighth of a tile's work. The blocks write their partial tiles to a
# buffer, and a second kernel adds the 8 slices of each tile in order into C (always the same
# order, so the same operands give the same bits). Left out, `splits` is as many slices as
# fill the wave's slots (at most 16, each at least 256 of K), or 1 — no split — when the
# last wave is more than half full, as at 4096³. `gm.last_record().params["splits"]` says
# what ran.
#
# `gm.model.matmul_waves` counts this on paper (no GPU needed): the launch's length in steps
# of 16 along K before and after the split, in waves (`steps_before / steps`,
# `steps_after / steps`), and its efficiency: every slot busy to the end over that length.
# The steps leave out what the split adds — the slices' stores and the sum kernel — so only
# the clock can say what those cost.

# %%
WAVE_SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
               (4097, 4097, 4097), (4000, 4001, 3999)]          # M, K, N
if HAVE_GPU:
    sms = gm.device().multiprocessors
    per_sm = gm.kernel_occupancy("matmul", "warptiled", 256, tile=128).blocks_per_sm
    on = f"{gm.device().name}: {sms} SMs x {per_sm} blocks per SM, occupancy API"
else:
    sms, per_sm = 132, 2
    on = f"{sms} SMs x {per_sm} blocks per SM, assumed: no GPU"


def waves(m, k, n, splits=None):
    """gm.model.matmul_waves of a warptiled-128 launch on this GPU's slots (or the assumed)."""
    return gm.model.matmul_waves(m, n, k, tile=128, splits=splits, sms=sms,
                                 blocks_per_sm=per_sm)


rows = []
for m, k, n in WAVE_SHAPES:
    w = waves(m, k, n)
    rows.append({"M x K x N": f"{m} x {k} x {n}", "tiles": w["tiles"], "tail": w["tail"],
                 "splits": w["splits"], "waves before": w["steps_before"] / w["steps"],
                 "waves after": w["steps_after"] / w["steps"],
                 "efficiency before": w["efficiency_before"],
                 "efficiency after": w["efficiency_after"]})
gm.Table(rows, sources={c: "model" for c in rows[0] if c != "M x K x N"},
         title=f"warptiled-128 in waves of {sms * per_sm} slots ({on})")

# %% [markdown]
# On a GPU the clock checks the model: `warptiled` with `splits=1` (every tile whole, the
# last wave as long as a full one) against the default (the split tail where the rule
# chooses one), at 1024³ and 4097³ (`gm.bench`, 5 timed calls after a warm-up). The
# measured gain is the ratio of the two speeds; the modelled gain, `steps_before /
# steps_after`, is what it would be if the split cost nothing.

# %%
SPLIT_SIZES = (1024, 4097)
if HAVE_GPU:
    rows = []
    for size in SPLIT_SIZES:
        A = gm.to_device(rng.standard_normal((size, size), dtype=np.float32))
        B = gm.to_device(rng.standard_normal((size, size), dtype=np.float32))
        C = gm.empty((size, size), np.float32)
        whole = gm.bench(gm.matmul, A, B, variant="warptiled", splits=1, out=C,
                         repeat=5, warmup=1)
        split = gm.bench(gm.matmul, A, B, variant="warptiled", out=C, repeat=5, warmup=1)
        w = waves(size, size, size)
        rows.append({"size": size, "splits": gm.last_record().params["splits"],
                     "GFLOP/s splits=1": whole.gflops, "GFLOP/s default": split.gflops,
                     "gain (measured)": split.gflops / whole.gflops,
                     "gain (model)": w["steps_before"] / w["steps_after"]})
        del A, B, C
    display(gm.Table(rows, sources={"splits": "runtime", "GFLOP/s splits=1": "measured",
                                    "GFLOP/s default": "measured",
                                    "gain (measured)": "measured", "gain (model)": "model"},
                     title=f"warptiled-128 without and with the split tail, "
                           f"{gm.device().name}"))
    for r in rows:
        print(f"{r['size']}^3 on {gm.device().name}: splits={r['splits']}, "
              f"{r['GFLOP/s splits=1']:,.0f} -> {r['GFLOP/s default']:,.0f} GFLOP/s: "
              f"x{r['gain (measured)']:.2f} measured, x{r['gain (model)']:.2f} modelled")
else:
    print("(the timings need a GPU: the model's waves above are what they would test)")

# %% [markdown]
# ### The wave the split leaves alone
#
# 4096³'s fourth wave is 232 tiles of 264: the rule does not split it (more than half full),
# and the model says what that costs, 3%: efficiency 0.970. Set beside shapes of 992, 1,024
# and 1,056 tiles (M = 3968, 4096, 4224; N = K = 4096), the last four whole waves, each
# shape's speed over the whole-wave shape's should be the model's efficiency if the wave is
# all that differs. cuBLAS SGEMM runs the same shapes, and `splits=9` runs 4096³ with that
# wave cut into 9 slices (the model's efficiency 0.993): what the split's stores and its sum
# kernel cost there.

# %%
WAVE_PROBE = [(3968, 4096, 4096), (4096, 4096, 4096), (4224, 4096, 4096)]   # M, K, N
if HAVE_GPU:
    rows, whole_wave = [], None
    for m, k, n in WAVE_PROBE[::-1]:                 # the whole-wave shape first
        A = gm.to_device(rng.standard_normal((m, k), dtype=np.float32))
        B = gm.to_device(rng.standard_normal((k, n), dtype=np.float32))
        C = gm.empty((m, n), np.float32)
        for splits in ((1, 9) if m == 4096 else (1,)):
            r = gm.bench(gm.matmul, A, B, variant="warptiled", tile=128, splits=splits,
                         out=C, repeat=5, warmup=1)
            whole_wave = whole_wave or r.gflops
            w = waves(m, k, n, splits=splits)
            row = {"M x K x N": f"{m} x {k} x {n}", "tiles": w["tiles"], "splits": splits,
                   "GFLOP/s": r.gflops, "x whole waves": r.gflops / whole_wave,
                   "efficiency (model)": w["efficiency_after"]}
            if cupy is not None:
                ms = cublas_ms(cupy.asarray(A), cupy.asarray(B), 5)
                row["x cuBLAS"] = r.gflops / (2 * m * k * n / (ms * 1e-3) / 1e9)
            rows.append(row)
        del A, B, C
    rows.sort(key=lambda r: (r["tiles"], r["splits"]))
    display(gm.Table(rows, sources={"tiles": "model", "splits": "runtime", "GFLOP/s": "measured",
                                    "x whole waves": "measured", "efficiency (model)": "model",
                                    "x cuBLAS": "measured"},
                     title=f"warptiled-128 near 4096^3: the last wave, {gm.device().name}"))
else:
    print("(the timings need a GPU) the model's efficiencies: " + ", ".join(
        f"{m} x {k} x {n} {waves(m, k, n)['efficiency_after']:.3f}" for m, k, n in WAVE_PROBE)
        + f"; 4096^3 with splits=9 {waves(4096, 4096, 4096, splits=9)['efficiency_after']:.3f}")

# %% [markdown]
# On an H100 (the outputs above) the ratios to the whole-wave shape are the model's
# efficiencies to three digits, 0.939 and 0.970 (`tools/probe_waves.py`, twice the same day:
# 0.937–0.939 and 0.968–0.969): the fourth wave is 4096³'s whole 3%. At 4,224 × 4,096 ×
# 4,096, all waves full, `warptiled` ran at 0.95x cuBLAS (0.94–0.96x in the probe's runs),
# where 4096³ ran at 0.90x (0.90–0.92x). Cutting that wave into 9 slices *lost* 3% instead
# (44,768 against 46,053 GFLOP/s): Nsight Compute timed the 2,088 slices at 965 µs where the
# model's 8 ninths of a wave were 830 (the slices' own prologues, and stores of 64 KiB each),
# and the sum kernel at 53 µs. Only the part of a wave the split saves pays for that, so the
# rule splits a last wave at most half full.

# %% [markdown]
# The split is not free in memory: each slice stores its 128 × 128 sums into a workspace, and
# a second kernel reads the slices back and stores their sum into C. The model counts that
# launch too (`gm.model.predict` with `splits` and `tail`, the tiles sliced;
# `gm.model.predict_record` reads both off a launch's record). At 1024³, where all 64 tiles are
# sliced, that is a quarter more bytes loaded and five times the bytes stored (the slices'
# sums) for four times the blocks at work (256 instead of 64, in 264 slots on an H100); at
# 4097³ next to nothing, as the 33 tiles it slices hold one row of C each. (There the bytes
# stored are three times C's 67 MB either way: rows of 4,097 floats are off the 16-byte
# grid, so the launcher first copies A and B into the workspace with rows of 4,100 floats,
# and the kernel's `float4` loads and 16-byte copies read those.) On a GPU the counters of
# the default launch at 1024³ stand beside the model.

# %%
rows = []
for size in SPLIT_SIZES:
    w = waves(size, size, size)
    shape = dict(m=size, n=size, k=size, tile=128)
    whole = gm.model.predict("matmul", "warptiled", **shape)
    split = (gm.model.predict("matmul", "warptiled", splits=w["splits"], tail=w["tail"], **shape)
             if w["splits"] > 1 else whole)
    rows.append({"size": size, "splits": w["splits"], "tiles sliced": w["tail"] * (w["splits"] > 1),
                 "MB loaded, splits=1": whole["gld_bytes_requested"] / 1e6,
                 "MB loaded, split": split["gld_bytes_requested"] / 1e6,
                 "MB stored, splits=1": whole["gst_bytes_requested"] / 1e6,
                 "MB stored, split": split["gst_bytes_requested"] / 1e6})
display(gm.Table(rows, sources={c: "model" for c in rows[0] if c != "size"},
                 title=f"warptiled-128: the bytes its loads and stores request, without and with "
                       f"the split tail ({on})"))
if HAVE_GPU and gm.profiler_available():
    size = SPLIT_SIZES[0]
    A = gm.to_device(rng.standard_normal((size, size), dtype=np.float32))
    B = gm.to_device(rng.standard_normal((size, size), dtype=np.float32))
    keys = ["gld_requests", "gld_transactions", "gst_requests", "gst_transactions"]
    with gm.profile(keys) as p:
        gm.matmul(A, B, variant="warptiled")                  # the default: split
    rec = p.records[0]
    pred = gm.model.predict_record(rec)
    display(gm.Table([{"counter": k, "measured": rec.metrics[k], "model": pred[k]} for k in keys],
                     sources={"measured": "measured", "model": "model"},
                     title=f"warptiled-128 at {size}^3, splits={rec.params['splits']} (the slices "
                           f"and the sum kernel, one record), {gm.device().name}"))
    del A, B

# %% [markdown]
# ## The tensor cores: `mma`, then `wgmma`
#
# Every step so far does its multiply-adds one float at a time on the FP32 pipes (`FFMA`, 32
# per warp instruction), and "The last gap" above found `warptiled` short of cuBLAS in issue
# slots, not in memory. The tensor cores do a small matrix product per instruction:
# `mma.sync.m16n8k8` multiplies a 16 × 8 piece of A by an 8 × 8 piece of B into a 16 × 8
# piece of C, 1,024 multiply-adds per warp instruction. `mma` (compute capability 8.0 and
# newer) keeps `warptiled`'s 128 × 128 block tile and changes what is inside it:
#
# * **4 warps of 64 × 64**, each warp's part of C in accumulator registers as 32 pieces.
#   Each warp computes its piece of Cᵀ = Bᵀ Aᵀ (as `wgmma` below does): then every register
#   pair `mma.sync` wants from either operand is two neighbouring floats of one row of A or
#   of B in shared memory, one 8-byte load with nothing to rearrange. A piece of Bᵀ loaded
#   from shared memory serves 8 mmas, one of Aᵀ 4. (Fed the other way round, A's four
#   registers come from two rows of A and the compiler spends ~160 moves per k slice
#   putting them together.)
# * **a 3-stage `cp.async` pipeline**: A and B both go from global to shared memory without
#   registers, in slices of 32 along K; while the warps multiply one slice, the next two are
#   in flight.
# * **swizzled shared memory**: the fragments come from shared memory by plain loads (8 bytes
#   a lane), each warp's from several rows at once, and rows 128 bytes apart
#   all start at bank 0: 4-way conflicts. Each row's 16-byte chunks are stored XOR-permuted
#   by the row (the idea of lesson 14's 128-byte swizzle), so every fragment load spreads
#   over all 32 banks and takes only the wavefronts its bytes need.
#
# **TF32.** These tensor cores do not multiply float32: each operand is rounded to TF32 —
# float32's 8 exponent bits with 10 mantissa bits instead of 23 — and the products are
# summed in float32. `mma` rounds each value to the nearest TF32 as it leaves shared memory
# (on compute capability 9.0 one `cvt.rn` instruction, ties to even; below, `cvt.rna`, a
# compare and an add); handed float32 bits, the tensor cores would truncate them instead: a
# little faster, two to three times the error. Each rounding is off by up to 2⁻¹¹ of the
# value, so an element of C differs from the float32 product by about 2⁻¹⁰ · Σₖ |aᵢₖ| |bₖⱼ|:
# a relative error some thousand times float32's. That makes it a different product, so its
# fair anchor is not cuBLAS SGEMM in FP32 but cuBLAS with TF32 allowed. CuPy decides that
# when it is imported (`CUPY_TF32=1`), so the TF32 cuBLAS runs in a child process of its
# own, on the same operands (the same seeded generator).

# %% [markdown]
# ### `wgmma`: Hopper's warpgroups, fed by the copy engine
#
# `mma` still feeds the tensor cores the way `warptiled` fed the FP32 pipes: every thread
# issues its share of the `cp.async` copies and waits for them at a barrier, and every warp
# loads its fragments of A and B from shared memory into registers before each `mma.sync`.
# `wgmma` (compute capability 9.0 only: the H100 and H200, built as `sm_90a`) takes a
# 256 × 128 tile of C per block of 2 warpgroups and changes the memory path on both sides of
# shared memory:
#
# * **The tensor copy (TMA) instead of `cp.async` by every thread.** One thread hands the
#   copy engine a *tensor map* (the matrix's address, shape and row pitch) and the corner of
#   a box (`cp.async.bulk.tensor`); the engine moves a whole slice — 256 rows × 32 of A in
#   one box, 32 × 128 of B in four — from global to shared memory in lesson 14's 128-byte
#   swizzle, and fills zeros past the matrix's edges. No warp computes an address or issues
#   a load for it.
# * **mbarriers instead of `__syncthreads`.** Each stage has a barrier word in shared memory:
#   the copy counts its bytes onto it as they land, the warps wait for its phase to flip, and
#   a second barrier per stage tells the copying thread when every warp is done with it. Four
#   stages of 48 KiB make a ring (193 KiB of dynamic shared memory: one block per SM); while
#   the warpgroups multiply one slice, the next three are in flight.
# * **A by descriptor.** `wgmma.mma_async.m64n256k8` is one instruction of a whole warpgroup
#   (4 warps), and the tensor cores read its shared-memory operand themselves through a
#   64-bit descriptor (address, stride, swizzle): a value of A never passes through a
#   register or the load pipe.
# * **Bᵀ from registers, and why the transpose.** With TF32 inputs, `wgmma` reads a
#   shared-memory operand only *K-major*, each of its rows contiguous along K. A (M × K, row
#   by row) is; B (K × N) is not, and would need a transposed copy. So the kernel computes
#   Cᵀ = Bᵀ Aᵀ: A is the descriptor operand (256 rows of C per instruction) and Bᵀ the
#   register operand (64 columns of C per warpgroup), which each thread loads from B's tile
#   in shared memory with plain 4-byte loads, rounding it to TF32 on the way (`cvt.rn`;
#   A's values the tensor cores truncate). The accumulators hold a piece of Cᵀ, so the tile
#   goes back through shared memory once, and C leaves row by row in 8-byte stores.
# * **The blocks' order, for the L2.** One block per SM makes a wave of 132 blocks, and the
#   blocks of a wave walk K together, so what the L2 must hold is the panels of A and B that
#   wave reads. Taking C's tiles row by row, a wave at 8192³ covers 2 rows of tiles and all 64
#   columns: 2 panels of A and all of B (256 MB, five times the L2), which DRAM then serves
#   again for every wave. `wgmma` takes its tiles in groups of 4 tile rows, down a group's
#   rows first: a wave covers 4 × 33 tiles, 4 panels of A and 33 of B. On an H200
#   (2026-11-29, in-process counters, `gm.bench(..., counters=True)`), DRAM bytes per launch at
#   8192³ fell from 6.4 GB to 3.2 GB and the rate rose from 317 to 342 TFLOP/s (0.80 → 0.86x
#   cuBLAS TF32 in the same process); groups of 2, 8 and 16 gave 307, 333 and 326; at 4096³ and
#   2048³ the order changes nothing measurable (within 1%): B is small enough for the L2 there.
#   Three more steps were tried and not kept: one product group left in flight while the next
#   fragments load (`wgmma.wait_group 1`, fragments double-buffered) ran 4% slower at 4096³;
#   two k slices' products issued before each wait (8 `wgmma` instead of 4) ran 30% slower;
#   and a producer warpgroup of its own (384 threads, `setmaxnreg`) left ptxas 168 registers
#   for 128 accumulators and 16 fragments, and it serialized the `wgmma` instructions.
#
# The table: TFLOP/s (`gm.bench`, and CUDA events around `a @ b` for cuBLAS) of `warptiled`,
# `mma` and, on compute capability 9.0, `wgmma`, each against both cuBLAS anchors, the
# TF32 rows against the published dense TF32 peak too, and the relative error
# `‖C − C_ref‖ / ‖C_ref‖` of every row's C (the TF32 child's too, handed back through a
# file) — against float64 from NumPy at 2048³; at 4096³, where float64 on the CPU would take
# too long, against cuBLAS FP32's result. On another GPU `wgmma` is skipped, and without one
# the next section shows the model's side.

# %%
MMA_SIZES = (2048, 4096)
TF32_CHILD = """
import statistics, sys
import numpy as np
import cupy
repeat, folder = int(sys.argv[1]), sys.argv[2]
for size in map(int, sys.argv[3:]):
    rng = np.random.default_rng(size)            # the notebook's operands, bit for bit
    a = cupy.asarray(rng.standard_normal((size, size), dtype=np.float32))
    b = cupy.asarray(rng.standard_normal((size, size), dtype=np.float32))
    for _ in range(3):
        c = a @ b
    start, stop, samples = cupy.cuda.Event(), cupy.cuda.Event(), []
    for _ in range(repeat):
        start.record()
        a @ b
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop))
    np.save(f"{folder}/c{size}.npy", cupy.asnumpy(c))
    print(size, statistics.median(samples))
"""


def cublas_tf32(sizes, repeat):
    """{size: (median ms, its C as a NumPy array)} of cuBLAS with TF32 allowed, from a child
    process (CuPy reads CUPY_TF32 when it is imported); {} where it fails."""
    with tempfile.TemporaryDirectory() as folder:
        try:
            out = subprocess.run([sys.executable, "-c", TF32_CHILD, str(repeat), folder,
                                  *map(str, sizes)], capture_output=True, text=True,
                                 timeout=120, env={**os.environ, "CUPY_TF32": "1"})
            got = {int(s): (float(ms), np.load(f"{folder}/c{s}.npy"))
                   for s, ms in (line.split() for line in out.stdout.splitlines())}
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            print(f"cuBLAS TF32: the child process failed ({type(e).__name__}: {e})")
            return {}
    if not got:
        print("cuBLAS TF32: the child process printed nothing:", out.stderr.strip()[-300:])
    return got


def tflops(size, ms):
    return 2 * size ** 3 / ms / 1e9


def rel_err(c, ref):
    ref = np.asarray(ref, np.float64)
    return float(np.linalg.norm(np.asarray(c, np.float64) - ref) / np.linalg.norm(ref))


CC = tuple(gm.device().compute_capability) if HAVE_GPU else None
TENSOR_CORES = HAVE_GPU and CC >= (8, 0)
WGMMA = HAVE_GPU and CC == (9, 0)               # wgmma and the tensor copy: sm_90a only
TENSOR_STEPS = ("warptiled", "mma", "wgmma")    # the FP32 step, then the tensor cores'
WGMMA_SKIPPED = (f"wgmma skipped: it runs on compute capability 9.0 only (the H100 and "
                 f"H200), and this GPU has {CC[0]}.{CC[1]}" if HAVE_GPU and not WGMMA
                 else None)
# The peaks: FP32 as the roofline computes it (SMs x FP32 lanes x 2 x clock), TF32 the
# published dense figure (gpumem/data/published.json; None for a GPU it has no figures for).
pub = published(gm.device().name) if HAVE_GPU else published("H100 SXM")
TF32_PEAK = pub and pub.get("tf32_dense_tflops")                 # TFLOP/s
FP32_PEAK = ((gm.device().peak_fp32_gflops or 0) / 1e3 or None) if HAVE_GPU else \
    pub.get("fp32_tflops")
TF32_ROWS = ("mma-128", "wgmma-128", "cuBLAS TF32 (CuPy, CUPY_TF32=1)")
mma_rows = []
if TENSOR_CORES:
    if WGMMA_SKIPPED:
        print(WGMMA_SKIPPED + ": its rows are left out here (the model's side of it is in the "
              "next section).")
    timed = [v for v in TENSOR_STEPS if v != "wgmma" or WGMMA]
    tf32 = cublas_tf32(MMA_SIZES, max(REPEAT.values())) if cupy is not None else {}
    for size in MMA_SIZES:
        g = np.random.default_rng(size)                  # the child's operands too
        a = g.standard_normal((size, size), dtype=np.float32)
        b = g.standard_normal((size, size), dtype=np.float32)
        A, B, C = gm.to_device(a), gm.to_device(b), gm.empty((size, size), np.float32)
        ref, against = None, None
        if size == min(MMA_SIZES):
            ref, against = gm.matmul_reference(a, b), "float64 (NumPy)"
        here = []                                        # (row, its C)
        if cupy is not None:
            ca, cb = cupy.asarray(A), cupy.asarray(B)
            c32 = cupy.asnumpy(ca @ cb)
            here.append(({"variant": "cuBLAS FP32 (CuPy)",
                          "TFLOP/s": tflops(size, cublas_ms(ca, cb, REPEAT[size]))}, c32))
            if ref is None:
                ref, against = c32, "cuBLAS FP32"
            del ca, cb
        if size in tf32:
            ms, c = tf32[size]
            here.append(({"variant": "cuBLAS TF32 (CuPy, CUPY_TF32=1)",
                          "TFLOP/s": tflops(size, ms)}, c))
        for variant in timed:
            c = gm.matmul(A, B, variant=variant, tile=128, out=C).get()
            r = gm.bench(gm.matmul, A, B, variant=variant, tile=128, out=C,
                         repeat=REPEAT[size], warmup=2)
            here.append(({"variant": step_name(variant, 128), "TFLOP/s": r.gflops / 1e3}, c))
        for row, c in here:
            if ref is not None and c is not ref:
                row.update({"rel err": rel_err(c, ref), "against": against})
            mma_rows.append({"size": size, **row})
        del A, B, C
    anchor = {(r["size"], r["variant"].split(" (")[0]): r["TFLOP/s"] for r in mma_rows
              if r["variant"].startswith("cuBLAS")}
    for r in mma_rows:
        for name in ("cuBLAS FP32", "cuBLAS TF32"):
            base = anchor.get((r["size"], name))
            r[f"x {name}"] = r["TFLOP/s"] / base if base else None
        r["x TF32 peak"] = (r["TFLOP/s"] / TF32_PEAK if TF32_PEAK and r["variant"] in TF32_ROWS
                            else None)
    display(gm.Table(mma_rows, columns=["size", "variant", "TFLOP/s", "x cuBLAS FP32",
                                        "x cuBLAS TF32", "x TF32 peak", "rel err", "against"],
                     sources={"TFLOP/s": "measured", "x cuBLAS FP32": "measured",
                              "x cuBLAS TF32": "measured", "x TF32 peak": "measured",
                              "rel err": "measured"},
                     title=f"warptiled (FP32), {' and '.join(timed[1:])} (TF32 tensor cores) "
                           f"beside cuBLAS, {gm.device().name}"))
    if TF32_PEAK:
        print(f"x TF32 peak: against the published dense TF32 peak of the {pub.key}, "
              f"{TF32_PEAK:g} TFLOP/s ({pub.source('tf32_dense_tflops')})")
    at = {(r["size"], r["variant"]): r for r in mma_rows}
    for size in MMA_SIZES:
        w = at[size, "warptiled-128"]
        for variant in timed[1:]:
            m = at[size, step_name(variant, 128)]
            tf = f", x{m['x cuBLAS TF32']:.2f} cuBLAS TF32" if m["x cuBLAS TF32"] else ""
            print(f"{size}^3 on {gm.device().name}: {variant} {m['TFLOP/s']:.1f} TFLOP/s, "
                  f"x{m['TFLOP/s'] / w['TFLOP/s']:.2f} warptiled{tf}; its error "
                  + (f"{m['rel err']:.1e} against {m['against']}"
                     if m.get("rel err") is not None
                     else "not checked (no reference at this size without CuPy)"))
    t32 = [r for r in mma_rows if r["variant"].startswith("cuBLAS TF32")]
    if cupy is None:
        print("(no cuBLAS rows: CuPy is not usable here, see the first cell)")
    elif not t32:
        print("(no cuBLAS TF32 rows: the child process gave no result)")
    elif any(r.get("rel err") is not None and r["rel err"] < 1e-5 for r in t32):
        print("cuBLAS TF32's error is float32's: this CuPy and cuBLAS did not use TF32 here.")
else:
    print("No tensor cores to time here (" + ("no GPU" if not HAVE_GPU else
          f"compute capability {CC[0]}.{CC[1]}, mma needs 8.0 and wgmma 9.0") + "): the "
          "model's side of warptiled, mma and wgmma is in the next section.")

# %% [markdown]
# ### What the model and the counters say about the tensor-core steps
#
# `wgmma` should show no global load instructions at all: `gld_requests`, `gld_transactions`
# and `gldgsts_requests` are 0, because the copy engine executes no load instruction — its
# bytes appear only in L2 and DRAM. `gm.model.matmul_traffic` counts them as what the engine
# reads: every block column reads A once, every block row B once, and with block rows of
# 256 B is read half as often as by `mma`, so the FLOPs per requested byte rise. The shared
# loads are the Bᵀ fragments — 4-byte loads whose addresses the swizzle spreads over all 32
# banks, so the model counts no conflict for them — and the read-back of the C tile (8-byte
# loads: two wavefronts each, which `shared_load_bank_conflict` counts though no two lanes
# meet in a bank). The fragment loads of A are gone, so the multiply-adds per shared
# wavefront climb far past `mma`'s. As for the other steps, the model's instruction counts
# are exact and its wavefronts a floor: the model counts what the addresses need, and where
# the hardware counts more, the difference is in the table, not in the addresses.
#
# The model's table (no GPU needed) at 2048³: the global requests; the bytes the loads (or
# the copy engine) and the stores request, and the FLOPs per byte; the roof that intensity
# gives (`gm.roofline`: bandwidth × FLOP/byte, capped by the FP32 peak for `warptiled` and by
# the published TF32 peak for `mma` and `wgmma`, which the FP32 one does not hold); and the
# shared-memory traffic. On a GPU, one profiled launch of each step (`wgmma` on compute
# capability 9.0 only) beside the model's counts, with the DRAM bytes. By the requested bytes
# alone the tensor-core steps sit under the slanted roof; the DRAM bytes show how much of
# that traffic L2 keeps off device memory.

# %%
TC_SIZE = 2048
tc_steps = [(v, 128) for v in TENSOR_STEPS]
tc_pred = {v: model.predict("matmul", v, m=TC_SIZE, n=TC_SIZE, k=TC_SIZE, tile=128)
           for v in TENSOR_STEPS}
points = gm.matmul_model_points(TC_SIZE, TC_SIZE, TC_SIZE, variants=tc_steps)
roof = {}
for v, row in zip(TENSOR_STEPS, gm.roofline(points).rows):          # FP32 peak
    roof[v] = (row, "FP32")
if TF32_PEAK:
    for v, row in zip(TENSOR_STEPS, gm.roofline(points, peak_gflops=TF32_PEAK * 1e3).rows):
        if v != "warptiled":
            roof[v] = (row, "TF32")
rows = []
for v in TENSOR_STEPS:            # the bytes: model.matmul_traffic's loads (or copies) + stores
    pred, (r, peak) = tc_pred[v], roof[v]
    rows.append({"step": step_name(v, 128),
                 "gld_requests": pred["gld_requests"],
                 "gldgsts_requests": pred.get("gldgsts_requests", 0),
                 "global MB": r["bytes"] / 1e6, "FLOP/byte": r["FLOP/byte"],
                 "roof": peak, "roof TFLOP/s": r["roof GFLOP/s"] / 1e3, "bound": r["bound"],
                 "shared_load_transactions": pred["shared_load_transactions"],
                 "shared_load_bank_conflict": pred["shared_load_bank_conflict"],
                 "FMA/shared wavefront": TC_SIZE ** 3 / pred["shared_load_transactions"]})
display(gm.Table(rows, sources={c: "model" for c in rows[0] if c not in ("step", "roof")},
                 title=f"warptiled, mma and wgmma at {TC_SIZE}^3 on paper (model; roofs of "
                       f"{gm.roofline(points).roof['device']})"))
if not TF32_PEAK:
    print("(no published TF32 peak for this GPU: mma and wgmma are set under the FP32 roof)")

tc_profiled = [v for v in TENSOR_STEPS if v == "warptiled" or v == "mma" and TENSOR_CORES
               or v == "wgmma" and WGMMA]
if TENSOR_CORES and gm.profiler_available():
    if WGMMA_SKIPPED:
        print(WGMMA_SKIPPED + ": its counters are the model's above only.")
    A = gm.to_device(rng.standard_normal((TC_SIZE, TC_SIZE), dtype=np.float32))
    B = gm.to_device(rng.standard_normal((TC_SIZE, TC_SIZE), dtype=np.float32))
    with gm.profile(["gld_requests", "gld_transactions", "gldgsts_requests",
                     "shared_load_transactions", "shared_load_bank_conflict",
                     "dram_read_bytes", "dram_write_bytes"]) as q:
        for v in tc_profiled:          # warptiled whole (no split tail: what the model counts)
            gm.matmul(A, B, variant=v, tile=128, **({"splits": 1} if v == "warptiled" else {}))
    rows = []
    for v, rec in zip(tc_profiled, q.records):
        m, pred = rec.metrics, tc_pred[v]
        dram = m["dram_read_bytes"] + m["dram_write_bytes"]
        rows.append({"step": step_name(v, 128),
                     "gld_requests": m["gld_requests"], "gld_requests_model": pred["gld_requests"],
                     "gld_transactions": m["gld_transactions"],
                     "gld_transactions_model": pred["gld_transactions"],
                     "gldgsts_requests": m["gldgsts_requests"],
                     "gldgsts_requests_model": pred.get("gldgsts_requests", 0),
                     "shared_load_transactions": m["shared_load_transactions"],
                     "shared_load_transactions_model": pred["shared_load_transactions"],
                     "shared_load_bank_conflict": m["shared_load_bank_conflict"],
                     "shared_load_bank_conflict_model": pred["shared_load_bank_conflict"],
                     "DRAM MB": dram / 1e6, "FLOP/DRAM byte": 2 * TC_SIZE ** 3 / dram})
    display(gm.Table(rows, sources={c: "model" if c.endswith("_model") else "measured"
                                    for c in rows[0] if c != "step"},
                     title=f"one launch of each at {TC_SIZE}^3: counters and model, "
                           f"{gm.device().name}"))
    del A, B
elif TENSOR_CORES:
    print("(the hardware counters cannot be read here: gm.profile raises ProfilerError and "
          "says why)")
else:
    print("(the counters need a GPU with tensor cores: " + (WGMMA_SKIPPED or "no GPU here")
          + ")")

# %% [markdown]
# The whole staircase at 4096³ on one logarithmic axis: every step above, `mma`, `wgmma`
# (compute capability 9.0 only) and the two cuBLAS anchors, with two peaks as lines: the
# FP32 peak, which only the tensor-core steps can pass, since their multiply-adds are not
# FP32 instructions, and the published dense TF32 peak of the tensor cores.

# %%
big = max(SIZES)
if TENSOR_CORES and big in MMA_SIZES:
    at_big = {r["variant"]: r["TFLOP/s"] for r in mma_rows if r["size"] == big}
    bars = [(step_name(v, t), speed[v, big], c) for (v, t, _), c in zip(
        STEPS, ["#c44", "#c84", "#cc4", "#8b4", "#4a4", "#286"])]
    for name, color in (("mma-128", "#26a"), ("wgmma-128", "#62a")):
        if name in at_big:
            bars.append((name, at_big[name], color))
    for variant, name in (("cuBLAS FP32 (CuPy)", "cuBLAS FP32"),
                          ("cuBLAS TF32 (CuPy, CUPY_TF32=1)", "cuBLAS TF32")):
        if variant in at_big:
            bars.append((name, at_big[variant], "#555"))
    names, values, colors = zip(*bars)
    fig, ax = plt.subplots(figsize=(9.5, 3.8))
    ax.bar(names, values, color=colors)
    for x, v in enumerate(values):
        ax.text(x, v, f"{v:.1f}", ha="center", va="bottom", fontsize="small")
    if FP32_PEAK:
        ax.axhline(FP32_PEAK, color="grey", lw=1, ls=":",
                   label=f"FP32 peak {FP32_PEAK:.0f} TFLOP/s")
    if TF32_PEAK:
        ax.axhline(TF32_PEAK, color="#62a", lw=1, ls="--",
                   label=f"TF32 tensor peak {TF32_PEAK:.0f} TFLOP/s (published, dense)")
    if FP32_PEAK or TF32_PEAK:
        ax.legend(loc="upper left", fontsize="small")
    ax.set_yscale("log")
    ax.set_ylabel(f"TFLOP/s at {big}^3 [measured]")
    ax.set_xlabel("step (mma, wgmma and cuBLAS TF32: TF32 inputs, float32 sums)")
    ax.set_title(f"the staircase and the tensor cores, {gm.device().name}", fontsize="medium")
    ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    save_for_docs(fig, "matmul_staircase.png")   # the README's figure: the whole road
    plt.show()
    if WGMMA_SKIPPED:
        print(WGMMA_SKIPPED + ": no bar for it.")
else:
    print("(the chart of measured TFLOP/s needs a GPU of compute capability 8.0 or newer; "
          "wgmma's bar 9.0)")

# %% [markdown]
# ## What to take away
#
# * Each step names what it saves — global loads (tiled), exposed latency (prefetch), shared
#   loads per multiply-add (coarsened, register_tiled) — and a counter or the clock confirms
#   it; a step that saves nothing the counters can see has to show it on the clock.
# * Reuse moves inward: DRAM → L2/L1 (the caches, for free) → shared memory (tiles) →
#   registers (coarsening, register blocking). Each level trades resources per thread for
#   fewer accesses to the level outside it; the occupancy columns show the price.
# * A step that is compute-bound by its DRAM bytes and still far under the flat roof is
#   limited on chip, by instructions and waiting, not by bandwidth. Warp tiling with
#   `cp.async` double buffering takes gpumem most of the way to cuBLAS; what is left is
#   instruction issue (the FMA pipe and the schedulers in "The last gap" above): the slots
#   that shared loads, address arithmetic, the copies and the barrier take are what a
#   hand-scheduled SGEMM squeezes out further.
# * The tensor cores change the arithmetic, and then the memory path has to keep up with
#   them: `mma` still moves every operand by thread instructions, `wgmma` hands the copies to
#   the copy engine (mbarriers instead of block barriers) and lets the tensor cores read A
#   from shared memory themselves, so the only loads left are the Bᵀ fragments and C's way
#   out. Set them beside cuBLAS in TF32, not in FP32: they compute a different product.
