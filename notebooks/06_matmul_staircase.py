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

# %%
import os
import statistics

import matplotlib.pyplot as plt
import numpy as np

import gpumem as gm
from gpumem import model

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
        report = [r for r in report if r["arch"] == "sm_90"] or list(report)
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
            gm.matmul(A, B, variant=variant, tile=tile)
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
    save_for_docs(fig, "matmul_staircase.png")
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
# On an H100 `warptiled` kept the FMA pipe busy about 68% of the time with the schedulers
# issuing in about 79% of cycles (`register_tiled`: 49% and 61%). The waiting is mostly gone;
# about one issued instruction in seven is not an FMA, and those are the slots cuBLAS keeps
# for FMAs.

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
#   instruction issue: the FMA pipe is busy for about two thirds of the cycles, and what
#   fills the other issue slots (shared loads, address arithmetic, the copies, the barrier)
#   is what a hand-scheduled SGEMM squeezes out further.
