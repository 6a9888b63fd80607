"""The GPU gpumem runs on: its properties and limits (:func:`device`), from the CUDA
runtime.  Runtime layer: imports ``_core`` only."""
from __future__ import annotations

from dataclasses import dataclass

from .. import _core

__all__ = ["DeviceInfo", "device", "FP32_LANES"]

#: FP32 units per SM by compute capability (the CUDA programming guide's
#: arithmetic-instruction throughput table: FP32 FMAs per clock per SM).
FP32_LANES: dict[tuple[int, int], int] = {
    (5, 0): 128, (5, 2): 128, (5, 3): 128, (6, 0): 64, (6, 1): 128, (6, 2): 128,
    (7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
    (9, 0): 128, (10, 0): 128, (10, 3): 128, (11, 0): 128, (12, 0): 128, (12, 1): 128,
}


@dataclass(frozen=True)
class DeviceInfo:
    """Properties and limits of the GPU gpumem runs on (from the CUDA runtime)."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    warp_size: int
    max_threads_per_multiprocessor: int
    max_threads_per_block: int
    max_blocks_per_multiprocessor: int
    registers_per_multiprocessor: int
    registers_per_block: int
    shared_memory_per_multiprocessor: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    constant_memory: int
    l2_cache_size: int
    memory_clock_khz: int
    memory_bus_width: int
    theoretical_bandwidth_gbps: float
    total_memory: int
    driver_version: tuple[int, int]
    runtime_version: tuple[int, int]
    clock_khz: int = 0  #: the SMs' peak clock (cudaDevAttrClockRate)
    pci_bus_id: str = ""  #: the GPU's PCI address (cudaDeviceGetPCIBusId), as NVML names it

    @property
    def fp32_lanes_per_multiprocessor(self) -> int | None:
        """FP32 units per SM for this compute capability (None where unknown)."""
        return FP32_LANES.get(tuple(self.compute_capability))

    @property
    def peak_fp32_gflops(self) -> float | None:
        """SMs x FP32 lanes x 2 (an FMA) x the peak clock, in GFLOP/s."""
        lanes = self.fp32_lanes_per_multiprocessor
        if not lanes or not self.clock_khz:
            return None
        return self.multiprocessors * lanes * 2 * self.clock_khz / 1e6

    def summary(self) -> str:
        """A few lines for people."""
        cc = "%d.%d" % self.compute_capability
        return "\n".join([
            f"{self.name} (sm_{cc.replace('.', '')}, compute capability {cc})",
            f"  {self.multiprocessors} SMs, warp {self.warp_size}, "
            f"{self.max_threads_per_multiprocessor} threads/SM, {self.max_threads_per_block} threads/block",
            f"  registers: {self.registers_per_multiprocessor // 1024} Ki/SM, "
            f"{self.registers_per_block // 1024} Ki/block",
            f"  shared memory: {self.shared_memory_per_multiprocessor // 1024} KiB/SM, "
            f"{self.shared_memory_per_block // 1024} KiB/block "
            f"({self.shared_memory_per_block_optin // 1024} KiB opt-in)",
            f"  constant memory {self.constant_memory // 1024} KiB, L2 {self.l2_cache_size / 2**20:.0f} MiB",
            f"  device memory {self.total_memory / 2**30:.1f} GiB, {self.memory_bus_width}-bit at "
            f"{self.memory_clock_khz / 1000:.0f} MHz: {self.theoretical_bandwidth_gbps:.0f} GB/s theoretical",
            f"  FP32 peak {self.peak_fp32_gflops or 0:,.0f} GFLOP/s at {self.clock_khz / 1000:.0f} MHz",
            f"  driver {self.driver_version[0]}.{self.driver_version[1]}, "
            f"runtime {self.runtime_version[0]}.{self.runtime_version[1]}",
        ])


def device(index: int | None = None) -> DeviceInfo:
    """GPU ``index``'s properties and limits (None: the current GPU's).

    Raises
    ------
    CudaUnavailableError
        When no usable GPU or driver is present.
    ValueError
        When ``index`` is not a GPU of this machine.
    """
    return DeviceInfo(**_core.device(index))
