"""gpumem.model.banks: wavefronts and bank conflicts of one warp's shared access,
4-, 8- and 16-byte words, and the arguments they refuse."""
import numpy as np
import pytest

from gpumem import model
from gpumem.model import bank_conflicts


# ---- shared-memory banks --------------------------------------------------------
def test_bank_conflicts():
    assert bank_conflicts([4 * t for t in range(32)]).wavefronts == 1
    s2 = bank_conflicts([8 * t for t in range(32)])
    assert (s2.wavefronts, s2.conflicts, s2.ways) == (2, 1, 2)
    col = bank_conflicts([4 * 32 * t for t in range(32)])       # column of float tile[32][32]
    assert (col.wavefronts, col.conflicts) == (32, 31)
    padded = bank_conflicts([4 * 33 * t for t in range(32)])    # tile[32][33]
    assert (padded.wavefronts, padded.conflicts) == (1, 0)
    bc = bank_conflicts([128] * 32)                             # broadcast
    assert (bc.wavefronts, bc.conflicts) == (1, 0)
    assert bank_conflicts([0, 128, 0, 128]).ways == 2           # two words of bank 0
    assert bank_conflicts([4 * 3 * t for t in range(32)]).conflicts == 0   # odd stride
    assert bank_conflicts([16 * t for t in range(32)], width=16).conflicts == 0
    assert bank_conflicts([8 * t for t in range(32)], width=8).wavefronts == 2
    with pytest.raises(ValueError, match="width"):
        bank_conflicts([0], width=2)


def test_bank_conflicts_warps_equals_one_warp_at_a_time():
    rng = np.random.default_rng(7)
    addr = 4 * rng.integers(0, 256, size=(300, 32))
    addr[1] = 4 * 32 * np.arange(32)
    act = rng.random((300, 32)) < 0.8
    act[2] = False
    wf, cf = model.bank_conflicts_warps(addr, act)
    for w in range(300):
        one = bank_conflicts(addr[w][act[w]])
        assert (wf[w], cf[w]) == (one.wavefronts, one.conflicts)
    assert wf[2] == 0
    assert model.bank_conflicts_warps(4 * 32 * np.arange(32))[0][0] == 32


def test_bank_conflicts_refuse_negative_unaligned_and_float_addresses():
    for fn in (model.bank_conflicts, model.bank_conflicts_warps):
        name = fn.__name__
        with pytest.raises(ValueError, match=f"{name}: addresses holds -4; .*non-negative"):
            fn([0, -4])
        with pytest.raises(ValueError, match=f"{name}: addresses holds 6; .*multiple of width=4"):
            fn([0, 6])
        with pytest.raises(TypeError, match=f"{name}: addresses must be integer"):
            fn([0.0, 4.0])
    with pytest.raises(TypeError, match="bank_conflicts: width must be an int"):
        bank_conflicts([0], width=4.0)
    with pytest.raises(ValueError, match="bank_conflicts: width=2"):
        bank_conflicts([0], width=np.int64(2))
    with pytest.raises(ValueError, match="bank_conflicts: addresses has 33 entries"):
        bank_conflicts(np.broadcast_to(np.int64(0), (33,)))
    # inactive lanes may hold anything; the active ones are checked
    wf, cf = model.bank_conflicts_warps([[0, -3, 128]], active=[[True, False, True]])
    assert (wf.tolist(), cf.tolist()) == ([2], [1])
    with pytest.raises(ValueError, match="bank_conflicts_warps: addresses holds -3"):
        model.bank_conflicts_warps([[0, -3, 128]], active=[[True, True, True]])
    assert bank_conflicts(np.array([0, 16], np.uint16), width=np.int32(16)).conflicts == 0


def test_matmul_tile_reads_are_conflict_free():
    t = 16  # As[ty][k]: a warp = 2 rows -> 2 words (broadcasts); Bs[k][tx]: 16 consecutive words
    lanes = np.arange(32)
    tx, ty = lanes % t, lanes // t
    k = 5
    assert bank_conflicts(4 * (ty * t + k)).conflicts == 0
    assert bank_conflicts(4 * (t * t + k * t + tx)).conflicts == 0


def test_float4_bank_groups_of_a_half_warp():
    """16-byte shared accesses: a quarter warp a group, but the two quarters of a half
    warp share one when together they need <= 128 bytes (each quarter's distinct words
    counted apart), as measured on the H100 (MATMUL_SHARED_64)."""
    lane = list(range(32))
    assert bank_conflicts([0] * 32, width=16).wavefronts == 2                 # broadcast
    assert bank_conflicts([16 * (i // 8) for i in lane], width=16).wavefronts == 2
    assert bank_conflicts([16 * (i % 8) for i in lane], width=16).wavefronts == 4
    assert bank_conflicts([16 * (i % 16) for i in lane], width=16).wavefronts == 4
    assert bank_conflicts([16 * (i // 16) for i in lane], width=16).wavefronts == 2
    # quarters with 4 and 4 words share a group; 5 and 4 do not
    assert bank_conflicts([16 * (i % 4) for i in lane], width=16).wavefronts == 2
    five = [16 * (i % 5) if i < 8 else 16 * (i % 4) for i in lane]
    assert bank_conflicts(five, width=16).wavefronts == 3
    # a shared group still sees its bank conflicts: rows 128 bytes apart, same banks
    assert bank_conflicts([128 * (i // 8) for i in lane], width=16).wavefronts == 4
    assert bank_conflicts([16 * t for t in lane], width=16).wavefronts == 4   # no groups shared


def test_wavefronts_of_8_byte_accesses_vectorized_equal_one_warp_at_a_time():
    """bank_conflicts_warps with width=8 (what the tally uses for 8-byte accesses) equals
    bank_conflicts warp by warp: random, clustered and strided addresses, any subset of
    lanes active (the active lanes group by 16 in lane order), no lane at all."""
    rng = np.random.default_rng(8)
    for trial in range(200):
        warps = int(rng.integers(1, 12))
        kind = trial % 3
        if kind == 0:
            a = 8 * rng.integers(0, 64, (warps, 32))              # crowded: broadcasts
        elif kind == 1:
            a = 8 * rng.integers(0, 1 << 14, (warps, 32))         # anywhere
        else:
            a = 8 * (37 * rng.integers(0, 8, (warps, 1)) + np.arange(32) * (trial % 5 + 1))
        act = rng.random((warps, 32)) < rng.random()
        if trial % 4 == 0:
            act[:] = True
        want = [bank_conflicts([int(x) for x in row[on]], 8) for row, on in zip(a, act)]
        wf, cf = model.bank_conflicts_warps(a, act, width=8)
        assert wf.tolist() == [r.wavefronts for r in want]
        assert cf.tolist() == [r.conflicts for r in want]
    wf, cf = model.bank_conflicts_warps(np.zeros((3, 32), np.int64), np.zeros((3, 32), bool), 8)
    assert wf.tolist() == cf.tolist() == [0] * 3
    with pytest.raises(ValueError, match="width=16 is not allowed"):
        model.bank_conflicts_warps(np.zeros((1, 32), np.int64), width=16)
