"""Matrix multiply, the staircase from a naive kernel toward cuBLAS:

* ``naive``: every thread reads a row of A and a column of B from global memory;
* ``tiled``: blocks stage ``tile x tile`` tiles of A and B in shared memory, so
  each loaded float is used ``tile`` times;
* ``prefetch``: tiled with double buffering -- the next tiles are loaded into
  registers while this tile's inner product runs, one barrier per tile;
* ``coarsened``: thread coarsening -- 32 x 8 threads compute a 32 x 32 tile, four
  outputs of a column each, so a B value read from shared memory serves four FMAs;
* ``register_tiled``: 2-D register blocking -- 16 x 16 threads compute a 64 x 64
  tile, a 4 x 4 block of C each, an outer product of 4 A and 4 B values per k
  (float4 loads from shared memory, A stored transposed; float4 global loads and
  stores where rows are 16-byte aligned);
* ``warptiled``: block, warp and thread tiles -- 8 warps compute a 128 x 128 tile,
  each warp 64 x 32 of it, each lane 8 x 8 (``tile=64``: 4 warps, 64 x 64); shared
  memory is double buffered, the next tile of B copied by ``cp.async`` (global to
  shared memory without registers, sm_80 and newer) and the next tile of A held in
  registers while the block multiplies the current one.

Takes float32 NumPy arrays (and returns NumPy arrays) or
:class:`gpumem.DeviceArray` (and returns DeviceArray, with no host copies).
"""
from __future__ import annotations

from typing import Literal, Union

import numpy as np

from . import _core
from ._core import DeviceArray
from ._names import _given, _host, _index, _indices

__all__ = ["matmul", "matmul_reference", "matmul_model_points"]

Array = Union[np.ndarray, DeviceArray]


def matmul(a: Array, b: Array, *, tile: Literal[8, 16, 32, 64, 128] | None = None,
           variant: Literal["tiled", "naive", "prefetch", "coarsened",
                            "register_tiled", "warptiled"] = "tiled",
           out: DeviceArray | None = None):
    """``a @ b`` for float32 matrices of any shape M x K @ K x N.

    Parameters
    ----------
    a, b : numpy.ndarray or DeviceArray, float32, 2-D
        Other dtypes raise TypeError (convert with ``.astype(np.float32)``);
        non-contiguous ndarrays are copied to a contiguous buffer first.
    tile : {8, 16, 32, 64, 128}, optional
        The edge of the block of C a thread block computes (default: 16, or the
        variant's own tile for coarsened, register_tiled and warptiled): blocks
        of ``tile x tile`` threads; for ``"tiled"`` and ``"prefetch"`` (16 or 32)
        also the shared-memory tile.  ``"coarsened"`` takes 32 only (its blocks
        are 32 x 8 threads), ``"register_tiled"`` 64 only (16 x 16 threads),
        ``"warptiled"`` 128 (256 threads, the default) or 64 (128 threads); a tile a
        variant does not take is a ValueError.
    variant : {"tiled", "naive", "prefetch", "coarsened", "register_tiled", "warptiled"}
        ``gpumem.variants("matmul")`` lists what each shows.
    out : DeviceArray, optional
        Where to write the M x N result; must not be an input.

    Returns
    -------
    numpy.ndarray when every input is an ndarray, else DeviceArray (``out`` if given).
    Empty operands give NumPy's result shape (K == 0 gives zeros).
    """
    _given("matmul", a=a, b=b)
    tiles = {} if tile is None else _indices("matmul", tile=tile)
    return _core.matmul(a, b, **tiles, variant=variant, out=out)


def matmul_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy reference of :func:`matmul`: ``a @ b`` in float64.

    Parameters
    ----------
    a, b : array_like, 2-D, M x K and K x N

    Returns
    -------
    numpy.ndarray, float64, M x N.  The kernels sum in float32, so compare with a
    relative tolerance that grows with ``sqrt(K)``.
    """
    fn = "matmul_reference"
    a, b = (_host(fn, name, v, np.float64, ndim=2) for name, v in (("a", a), ("b", b)))
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{fn}: a is {a.shape[0]} x {a.shape[1]} and b is {b.shape[0]} x "
                         f"{b.shape[1]}: a's columns must equal b's rows")
    return a @ b


def matmul_model_points(m: int, n: int, k: int,
                        variants: tuple = (("naive", 16), ("tiled", 8), ("tiled", 16),
                                           ("tiled", 32), ("prefetch", 32), ("coarsened", 32),
                                           ("register_tiled", 64), ("warptiled", 128))):
    """The model's roofline points of the matmul variants (no GPU needed): a Table of
    label, flops (``2mnk``), bytes and source ``"model"`` for :func:`gpumem.roofline`.

    The bytes are the global loads and stores the kernels *request*
    (:func:`gpumem.model.matmul_traffic`), so the intensity is the lesson's
    compute-to-global-memory-access ratio in FLOP per byte: 0.25 for naive (two 4-byte
    loads per FMA: 2 FLOPs per 8 bytes), about ``tile / 4`` for tiled.  Measured DRAM bytes are fewer (L1 and L2
    serve the reuse): profile ``dram_read_bytes`` and ``dram_write_bytes`` for those.
    """
    from . import model
    from ._table import Table

    fn = "matmul_model_points"
    sizes = {name: _index(fn, name, v) for name, v in (("m", m), ("n", n), ("k", k))}
    if isinstance(variants, (str, bytes)) or not hasattr(variants, "__iter__"):
        raise TypeError(f"{fn}: variants must be a sequence of (variant, tile) pairs, not "
                        f"{type(variants).__name__}")
    pairs = []
    for pair in variants:
        if (not isinstance(pair, (tuple, list)) or len(pair) != 2
                or not isinstance(pair[0], str)):
            raise TypeError(f"{fn}: variants must hold (variant, tile) pairs such as "
                            f"('tiled', 16), not {pair!r}")
        pairs.append((pair[0], _index(fn, "tile", pair[1])))
    rows = []
    for variant, tile in pairs:
        try:
            t = model.matmul_traffic(sizes["m"], sizes["n"], sizes["k"], variant, tile)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{fn}: {e}") from None
        rows.append({"label": f"matmul/{variant} (tile={tile})", "flops": t["flops"],
                     "bytes": t["load_bytes"] + t["store_bytes"], "source": "model"})
    return Table(rows, ["label", "flops", "bytes", "source"],
                 title=f"matmul {sizes['m']} x {sizes['k']} @ {sizes['k']} x {sizes['n']}: "
                       "global bytes requested (model)")
