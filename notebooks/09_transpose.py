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
# # 09 · The matrix transpose and shared-memory bank conflicts
#
# **The idea.** A transpose reads a row and writes a column. Whatever a thread does, one of
# the two global sides is strided: `naive_row` reads 32 consecutive floats per warp (one
# 128-byte line) and writes them `4*M` bytes apart (32 sectors per store); `naive_col` does
# the opposite. Staging a 32 × 32 **tile in shared memory** makes both global sides
# coalesced — a warp reads a row of the tile and writes a row of the transposed tile — and
# moves the strided access into shared memory, where it meets the **banks**:
#
# * shared memory is 32 banks of 4 bytes; word `w` lives in bank `w % 32`;
# * a column of `float tile[32][32]` is 32 words 32 apart: **one bank**, so a warp reading a
#   column needs 32 wavefronts instead of 1 (a 32-way conflict);
# * `tile[32][33]` (one word of padding per row) moves each row one bank over: a column spans
#   all 32 banks; `tile[r][c ^ r]` (an XOR swizzle) does the same without the padding;
# * `coarsened` moves 64 × 64 tiles with 16-byte loads and stores (swizzled 16-byte groups),
#   so each thread has more bytes in flight, and takes its tiles down a column of tiles first,
#   so that the blocks in flight together write the same 64 rows of `out`, one 256-byte piece
#   after another (in launch order, along a row of tiles, the writes were spread over every
#   row of `out`: 0.92-0.93× the copy at 8192² on an H200 against 0.96×).
#
# The question for each step: what do the counters say, what does the model say, and what
# does the clock say, against a plain copy of the same bytes?

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import gpumem as gm
from gpumem import experiments, model
from gpumem.lessons.transpose import transpose_reference

gpu = gm.is_available()
print(gm.device().summary() if gpu else
      "No GPU here: this notebook shows the model's numbers; the timings and counters need a GPU.")
for v in gm.variants("transpose"):
    print(f"{v.name:10s} {v.idea}")


def save_for_docs(fig, name):
    """tools/run-notebooks sets GPUMEM_DOCS_DIR: the headline figure goes to docs/."""
    folder = os.environ.get("GPUMEM_DOCS_DIR")
    if folder and gpu:
        fig.savefig(os.path.join(folder, name), dpi=120, bbox_inches="tight")


# %% [markdown]
# ## Correct first
#
# Every variant against `a.T` on a shape that is a multiple of no tile (the suite does this on
# many more shapes, with the output poisoned first).

# %%
rng = np.random.default_rng()
a = rng.standard_normal((1000, 999)).astype(np.float32)
if gpu:
    for v in gm.variants("transpose"):
        same = np.array_equal(gm.transpose(a, variant=v.name), transpose_reference(a))
        print(f"{v.name:10s} equal to a.T: {same}")
else:
    print("(needs a GPU)")

# %% [markdown]
# ## The banks on paper
#
# `gm.model.bank_conflicts` takes the byte addresses of one warp's shared access and says how
# many wavefronts it takes. The column read of each tile layout:

# %%
lane = np.arange(32)
for name, words in [("tile[32][32]   column", 32 * lane), ("tile[32][33]   column", 33 * lane),
                    ("tile[r][c ^ r] column 5", 32 * lane + (5 ^ lane)),
                    ("tile[32][32]   row", lane)]:
    r = model.bank_conflicts(4 * words)
    print(f"{name:24s} {r.wavefronts:2d} wavefront(s), {r.ways}-way")

# %% [markdown]
# ## Every variant at 8192 × 8192, measured beside a copy
#
# `experiments.transpose_compare` times each variant (median of 20 launches after a warm-up),
# times the device copy (`cudaMemcpy`) of the same 8·M·N bytes in the same run (a transpose
# cannot beat a copy),
# reads the counters in one profile block, and puts the model's prediction beside each counter.

# %%
t = experiments.transpose_compare(8192, 8192, progress=False)
cols = ["variant", "ms", "GB/s", "x copy", "gld_efficiency", "gst_efficiency",
        "shared_load_transactions", "shared_load_transactions_model",
        "shared_load_bank_conflict", "shared_load_bank_conflict_model"]
gm.Table(t.rows, columns=[c for c in cols if c in t.columns], sources=t.sources, title=t.title)

# %%
if gpu:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    names = t["variant"]
    ax.barh(names, t["GB/s"], color=["#c44", "#c84", "#cc4", "#4a4", "#4a4", "#27c"])
    copy_gbps = t["GB/s"][0] / t["x copy"][0]
    ax.axvline(copy_gbps, color="black", lw=1, ls="--")
    ax.text(copy_gbps, -0.6, f" copy {copy_gbps:,.0f} GB/s", va="top", ha="right")
    for y, (g, x) in enumerate(zip(t["GB/s"], t["x copy"])):
        ax.text(g, y, f" {x:.2f}x", va="center")
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (8·M·N bytes)")
    ax.set_title(f"transpose 8192 x 8192, {gm.device().name}")
    fig.tight_layout()
    save_for_docs(fig, "transpose_variants.png")
    plt.show()

# %% [markdown]
# **Reading the table.**
#
# * `naive_row` stores one float per sector (gst efficiency 12.5%): it moves 8× the bytes it
#   needs on the store side and is the slowest by far. `naive_col` pays the same on its loads
#   but comes out several times faster: strided *loads* of 32 rows fill whole sectors that the
#   next 7 column steps read from L1/L2, while each strided *store* of 4 bytes is a partial
#   sector write.
# * `shared` has both global sides at 100%, and pays instead in shared memory: 32 wavefronts
#   per column read (the `shared_load_bank_conflict` counter is 31 per read, as the model says).
# * `padded` and `swizzled` remove the conflicts (one wavefront per read): 0.85× the copy on an
#   H200; `coarsened` adds 16-byte accesses, more bytes in flight per thread and its tiles taken
#   down a column of tiles: 0.97×.
#   Its `shared_store_bank_conflict` is not a conflict: a 16-byte store is served a quarter warp
#   per wavefront, and the counter counts every wavefront beyond the first.
# * The model and the counters agree exactly on small launches (the test suite checks them
#   launch by launch); at 8192 × 8192 the counters report up to 11% more shared wavefronts
#   than the model on the conflict-free variants (measured on the H100: 2,334,874 against
#   2,097,152 for `padded`). The extra wavefronts come with the size, not with the layout —
#   no address of the code conflicts — so read them as the hardware's overhead under load:
#   the model counts what the addresses require.

# %% [markdown]
# ## Bank conflicts by stride, measured
#
# `gm.shared_stride(stride, word=...)`: lane `l` reads element `l * stride` of a shared array
# of 4-, 8- or 16-byte words, over and over. `experiments.bank_conflict_sweep` times it for
# strides 1..32 and reads the wavefronts per warp read from the counters, the model beside it.

# %%
s = experiments.bank_conflict_sweep(progress=False)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
for word, color in zip(("float", "float2", "float4"), ("C0", "C1", "C2")):
    rows = [r for r in s.rows if r["word"] == word]
    stride = [r["stride"] for r in rows]
    model_col = "wavefronts/read_model" if "wavefronts/read_model" in s.columns else \
        "wavefronts/read"
    axes[0].plot(stride, [r[model_col] for r in rows], "-", color=color, lw=1,
                 label=f"{word} (model)")
    if gpu and "wavefronts/read_model" in s.columns:
        axes[0].plot(stride, [r["wavefronts/read"] for r in rows], "o", color=color, ms=4,
                     label=f"{word} (counters)")
    if gpu:
        axes[1].plot(stride, [r["ns/read"] for r in rows], "-o", color=color, ms=3, label=word)
axes[0].set_xlabel("stride (elements)")
axes[0].set_ylabel("wavefronts per warp read")
axes[0].legend(fontsize=8)
axes[1].set_xlabel("stride (elements)")
axes[1].set_ylabel("ns per warp read (whole GPU)")
if gpu:
    axes[1].legend(fontsize=8)
else:
    axes[1].text(0.5, 0.5, "timings need a GPU", ha="center", transform=axes[1].transAxes)
fig.suptitle(s.title)
fig.tight_layout()
plt.show()

# %% [markdown]
# * 4-byte words: the conflict is the largest power of two dividing the stride — odd strides
#   are free, stride 32 is 32-way — and the time follows the wavefronts almost linearly.
# * 8-byte words: a warp needs 2 wavefronts at best (half a warp each); 16-byte words 4.
#   The counters' "bank conflict" for them includes that width (it counts every wavefront
#   beyond one per instruction), so compare wavefronts, not the conflict counter, across
#   word sizes. Per *byte*, a conflict-free float4 read moves 4× the data of a float read in
#   4 wavefronts: the same bandwidth, fewer instructions.

# %% [markdown]
# ## When the rows are not multiples of 8 floats
#
# At 8190 × 8190 every row starts off the 32-byte sector grid. Each warp's 128-byte row of
# the output then touches 5 sectors, two of them partly — and a partial sector *write* costs a
# read of the rest from DRAM first.

# %%
if gpu:
    for shape in ((8192, 8192), (8190, 8190), (8192, 8160)):
        x = gm.to_device(rng.standard_normal(shape).astype(np.float32))
        o = gm.empty(shape[::-1])
        r = gm.bench(gm.transpose, x, variant="padded", out=o, repeat=20)
        p = model.predict("transpose", "padded", m=shape[0], n=shape[1])
        print(f"{shape[0]} x {shape[1]}: {r.gbps:7,.0f} GB/s   gst_efficiency "
              f"{p['gst_efficiency']:.1f}% (model)")
        del x, o
else:
    for shape in ((8192, 8192), (8190, 8190)):
        p = model.predict("transpose", "padded", m=shape[0], n=shape[1])
        print(f"{shape[0]} x {shape[1]}: gst_efficiency {p['gst_efficiency']:.1f}% (model)")

# %% [markdown]
# ## What to remember
#
# * A transpose always has a strided side; shared memory moves it on chip, where the bank
#   layout decides whether a column costs 1 wavefront or 32.
# * Padding (`[32][33]`) and swizzling (`c ^ r`) cost nothing and remove the conflict: the
#   conflict-free transpose runs within about 5% of a copy of the same bytes.
# * Counters and model agree on what the addresses require; the clock shows what it costs.
