"""gpumem.model: the memory hierarchy on paper -- no GPU needed.

Predicts, for one launch of any gpumem kernel, the global-memory requests,
32-byte sectors (or 128-byte lines) and efficiencies that Nsight Compute
would count on the GPU; the wavefronts and bank conflicts of a warp's
shared-memory access; and the occupancy of a kernel on any compute
capability from 1.0 (G80) to 12.1.  Pure Python and NumPy; a prediction
costs the launch's distinct warp patterns, not its size.

>>> from gpumem import model
>>> model.predict("read_offset", "unroll1", n=2**24, offset=11, block=512)["gld_transactions"]
5242876
>>> model.coalesce([4 * t + 44 for t in range(32)]).efficiency
80.0
>>> model.occupancy("1.0", 256, 11, 0).active_threads      # G80: 11 registers cost a block
512
"""
from .banks import BankResult, bank_conflicts, bank_conflicts_warps
from .coalescing import CoalesceResult, WarpCoalescing, coalesce, coalesce_warps
from .matmul import matmul_traffic, matmul_waves
from .occupancy import ARCHS, Arch, OccupancyResult, occupancy
from .registry import DECIMALS, METRICS, families, launch_config, predict, predict_record

__all__ = [
    "ARCHS", "Arch", "BankResult", "CoalesceResult", "DECIMALS", "METRICS", "OccupancyResult",
    "WarpCoalescing", "bank_conflicts", "bank_conflicts_warps", "coalesce", "coalesce_warps",
    "families",
    "launch_config", "matmul_traffic", "matmul_waves", "occupancy", "predict", "predict_record",
]
