"""gpumem.model.coalescing: hand-worked warps, requests, sectors and requested
bytes, and the arguments coalesce refuses."""
import numpy as np
import pytest

from gpumem.model import coalesce, coalesce_warps


# ---- hand-worked warps -------------------------------------------------------
def floats(first, count=32, stride=1):
    """Byte addresses of `count` lanes reading floats first, first+stride, ..."""
    return [4 * (first + stride * t) for t in range(count)]


def test_fully_coalesced_warp_is_one_request_four_sectors_one_line():
    r = coalesce(floats(0))
    assert (r.requests, r.transactions, r.bytes_requested) == (1, 4, 128)
    assert r.sectors == 4 and r.efficiency == 100.0
    line = coalesce(floats(0), granularity=128)
    assert (line.transactions, line.efficiency) == (1, 100.0)


def test_offset_by_one_float_touches_one_more_sector_and_a_second_line():
    r = coalesce(floats(1))                 # bytes 4..131: sectors 0..4
    assert (r.transactions, r.efficiency) == (5, 80.0)
    line = coalesce(floats(1), granularity=128)
    assert (line.transactions, line.efficiency) == (2, 50.0)


def test_offset_11_as_in_the_book():
    # 44..171: sectors 1..5 (5 sectors, 80%), lines 0..1 (2 lines, 50%)
    assert coalesce(floats(11)).transactions == 5
    assert coalesce(floats(11), granularity=128).efficiency == 50.0


def test_all_lanes_on_one_word_is_a_broadcast_counted_once():
    r = coalesce([64] * 32)
    # the hardware counts a word read by many lanes once (measured on an H100:
    # the naive matmul's broadcasts, see test_matmul_naive_broadcasts_count_once)
    assert (r.requests, r.transactions, r.bytes_requested) == (1, 1, 4)
    assert r.efficiency == 12.5
    assert coalesce([64] * 32, granularity=128).efficiency == 3.125
    # the same word read by one lane only: 4 of 32 bytes (12.5%, the book's figure)
    assert coalesce([64]).efficiency == 12.5
    # half the lanes on one word, half on another, 4 bytes apart: 8 bytes, 1 sector
    assert coalesce([64] * 16 + [68] * 16).bytes_requested == 8
    w = coalesce_warps([[64] * 32, [4 * i for i in range(32)]],
                       active=[[True] * 31 + [False], [True] * 32])
    assert w.bytes_requested.tolist() == [4, 128]


def test_stride_two_doubles_the_sectors():
    r = coalesce(floats(0, stride=2))       # 256 bytes spanned, every other float
    assert (r.transactions, r.efficiency) == (8, 50.0)
    assert coalesce(floats(0, stride=2), granularity=128).transactions == 2


def test_scattered_lanes_cost_one_sector_each_and_inactive_lanes_cost_nothing():
    assert coalesce(floats(0, stride=8)).transactions == 32      # 12.5%
    assert coalesce(floats(0, stride=32), granularity=128).transactions == 32
    assert coalesce([]).requests == 0 and coalesce([]).transactions == 0
    half = coalesce(floats(0, count=16))
    assert (half.requests, half.transactions, half.efficiency) == (1, 2, 100.0)


def test_wide_accesses():
    r = coalesce([16 * t for t in range(32)], width=16)          # a warp of float4
    assert (r.requests, r.transactions, r.bytes_requested, r.efficiency) == (1, 16, 512, 100.0)
    r = coalesce([8 * t + 4 for t in range(32)], width=8)        # misaligned 8-byte accesses
    assert r.transactions == 9


def test_coalesce_warps_equals_coalesce_row_by_row():
    rng = np.random.default_rng(1)
    addr = rng.integers(0, 4096, size=(200, 32)) * 4
    act = rng.random((200, 32)) < 0.7
    act[5] = False
    many = coalesce_warps(addr, 4, 32, act)
    for w in range(200):
        one = coalesce(addr[w][act[w]])
        assert (many.requests[w], many.transactions[w], many.bytes_requested[w]) == \
            (one.requests, one.transactions, one.bytes_requested)
    tot = many.total()
    assert tot.requests == 199


def test_coalesce_rejects_bad_arguments():
    with pytest.raises(ValueError, match="granularity"):
        coalesce(floats(0), granularity=64)
    with pytest.raises(ValueError, match="width"):
        coalesce(floats(0), width=3)
    with pytest.raises(ValueError, match="32"):
        coalesce(list(range(33)))


def test_coalesce_refuses_what_is_not_a_byte_address():
    with pytest.raises(TypeError, match="coalesce: addresses must be integer"):
        coalesce([0.0, 4.5])
    with pytest.raises(TypeError, match="coalesce: addresses must be integer"):
        coalesce(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match="coalesce: addresses must be integer"):
        coalesce([True, False])
    for big in ([2 ** 64], [2 ** 63], np.array([2 ** 63], np.uint64), [2 ** 62]):
        with pytest.raises(ValueError, match=r"coalesce: addresses holds .*2\*\*62"):
            coalesce(big)
    with pytest.raises(ValueError, match="coalesce: addresses holds -4; .*non-negative"):
        coalesce([0, -4])
    # a zero-stride view of 2^31 lanes is refused by its size, not converted first
    huge = np.broadcast_to(np.int64(4), (2 ** 31,))
    with pytest.raises(ValueError, match="2147483648 entries.*at most 32"):
        coalesce(huge)
    with pytest.raises(TypeError, match="coalesce: width must be an int"):
        coalesce([0], width=4.0)
    with pytest.raises(TypeError, match="coalesce: granularity must be an int"):
        coalesce([0], granularity=True)
    # NumPy integers are integers
    r = coalesce(np.array([0, 4], np.uint32), width=np.int8(4), granularity=np.int64(128))
    assert (r.requests, r.transactions, r.bytes_requested, r.granularity) == (1, 1, 8, 128)
    assert coalesce([np.int64(2 ** 62 - 4)]).transactions == 1
    assert coalesce([]).requests == 0


def test_coalesce_warps_refuses_negative_and_float_addresses_of_active_lanes():
    with pytest.raises(ValueError, match="coalesce_warps: addresses holds -4"):
        coalesce_warps([[0, -4]])
    with pytest.raises(TypeError, match="coalesce_warps: addresses must be integer"):
        coalesce_warps([[0.0, 4.0]])
    with pytest.raises(TypeError, match="coalesce_warps: active must be booleans"):
        coalesce_warps([[0, 4]], active=[[1, 0]])
    with pytest.raises(ValueError, match="coalesce_warps: addresses must have shape"):
        coalesce_warps(np.zeros((2, 33), np.int64))
    with pytest.raises(ValueError, match="coalesce_warps: granularity=64"):
        coalesce_warps([[0]], granularity=64)
    # inactive lanes may hold anything, as documented
    w = coalesce_warps([[0, -4, 2 ** 63 - 1]], active=[[True, False, False]])
    assert (w.requests.tolist(), w.transactions.tolist(), w.bytes_requested.tolist()) == \
        ([1], [1], [4])
