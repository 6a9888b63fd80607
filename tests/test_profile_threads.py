"""gpumem.profile() from several threads: one block at a time in a process (the counters
belong to the GPU context), a block opened in another thread waits its turn (at most
``timeout`` seconds), a block nested in one thread is an error."""
import threading

import pytest

import gpumem
from test_profile import clean_state, f32

#: It reads counters, runs child processes that do, or times whole commands: under
#: pytest-xdist it runs in gpu-check's one-process-per-GPU phase (conftest.py).
pytestmark = pytest.mark.alone


# ---- several threads: one block at a time, the others wait (issue 29) --------------------------
@pytest.mark.parametrize("bad,exc", [(-1, ValueError), (float("nan"), ValueError),
                                     (float("inf"), ValueError), ("1", TypeError),
                                     (True, TypeError)])
def test_profile_timeout_is_checked_before_anything_runs(bad, exc):
    with pytest.raises(exc, match="profile: timeout"):
        gpumem.profile(["gld_requests"], timeout=bad)


def test_a_block_that_fails_to_open_leaves_the_next_free():
    from gpumem.runtime import counters

    for _ in range(2):                    # without a GPU: CudaUnavailableError, lock released
        try:
            with gpumem.profile(["gld_requests"], timeout=1):
                pass
        except (gpumem.CudaUnavailableError, gpumem.ProfilerError):
            pass
    assert counters._BLOCK.acquire(timeout=0)
    counters._BLOCK.release()
    assert counters._BLOCK_OWNER[0] is None


#: Blocks per thread: 6 x 4 threads keep the four threads' turns contested (a block costs
#: about 0.2 s of CUPTI setup on an H100; 50 per thread took 41 s of the suite).
ROUNDS = 6


@pytest.mark.gpu
def test_blocks_from_four_threads_wait_their_turn(counters, rng, no_leak):
    n = 4099
    a = gpumem.to_device(f32(rng, n))
    errors, got = [], {}

    def worker(t):
        try:
            for i in range(ROUNDS):
                off = (t * ROUNDS + i) % 33
                with gpumem.profile(["gld_requests", "gld_transactions"]) as p:
                    gpumem.read_offset(a, a, offset=off, block=128)
                assert [r.params["offset"] for r in p.records] == [off], p.records
                got[t, i] = (off, p.records[0].metrics)
        except Exception as e:               # reported below with the thread
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not errors, errors
    assert len(got) == 4 * ROUNDS
    from gpumem import model
    for off, m in got.values():      # each block saw its own launch: the model's sectors
        want = model.predict("read_offset", "unroll1", n=n, offset=off, block=128)
        assert m["gld_requests"] == want["gld_requests"]
        assert m["gld_transactions"] == want["gld_transactions"]
    assert clean_state()


@pytest.mark.gpu
def test_a_waiting_block_gives_up_after_its_timeout(counters):
    opened, release, seen = threading.Event(), threading.Event(), []

    def holder():
        with gpumem.profile(["gld_requests"]):
            opened.set()
            release.wait(30)

    th = threading.Thread(target=holder)
    th.start()
    assert opened.wait(30)
    try:
        with pytest.raises(gpumem.ProfilerError, match=r"another thread's profile block was "
                                                      r"still open after timeout=0.2 s"):
            with gpumem.profile(["gld_requests"], timeout=0.2):
                seen.append("entered")
    finally:
        release.set()
        th.join(30)
    assert seen == []
    with gpumem.profile(["gld_requests"], timeout=5):     # free again
        pass
    assert clean_state()
