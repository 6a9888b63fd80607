"""gpumem.model.l2_persistence against a brute-force count: every warp's lanes, their
addresses, the distinct 32-byte sectors of each load and store instruction."""
import numpy as np
import pytest

from gpumem.model import l2_persistence as model


def _brute(n_hot, n_cold, reuse):
    loads = stores = requests = 0
    for w0 in range(0, n_cold, 32):
        i = np.arange(w0, min(w0 + 32, n_cold))
        cold = len(set((4 * i) // 32))
        loads += cold
        stores += cold
        requests += 1 + reuse
        for j in range(reuse):
            loads += len(set((4 * ((i + j * n_cold) % n_hot)) // 32))
    return loads, stores, requests


@pytest.mark.parametrize("n_hot, n_cold, reuse", [
    (1, 1, 1), (5, 100, 3), (8, 64, 2), (9, 1000, 4), (31, 1001, 2), (33, 999, 5),
    (1000, 4097, 2), (4099, 5000, 7), (70_001, 3001, 3), (40, 4096, 64)])
def test_counts_equal_the_brute_force(n_hot, n_cold, reuse):
    c = model.hot_cold_counts(n_hot, n_cold, reuse)
    loads, stores, requests = _brute(n_hot, n_cold, reuse)
    assert c["gld_transactions"] == loads
    assert c["gst_transactions"] == stores
    assert c["gld_requests"] == requests
    assert c["gst_requests"] == -(-n_cold // 32)
    assert c["bytes"] == c["hot_bytes"] + c["cold_bytes"] + c["out_bytes"] == 4 * n_cold * (2 + reuse)
    assert c["hot_set_bytes"] == 4 * n_hot
    assert model.hot_cold_bytes(n_hot, n_cold, reuse) == {
        k: c[k] for k in ("hot_bytes", "cold_bytes", "out_bytes", "bytes", "hot_set_bytes")}


def test_a_long_stream_past_a_large_hot_set():
    # 256 MiB of cold, 32 MiB of hot (both multiples of the sector): every warp's run is
    # sector-aligned, 4 sectors per load, the wrap falls on a sector boundary
    n_cold, n_hot = 64 << 20, 8 << 20
    c = model.hot_cold_counts(n_hot, n_cold, 2)
    warps = n_cold // 32
    assert c["gld_transactions"] == 4 * warps * 3 and c["gst_transactions"] == 4 * warps
    assert c["blocks"] == n_cold // 256
    assert model.reuse_distance_bytes(n_hot, 2) == 4 * n_hot * 2
