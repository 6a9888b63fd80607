"""One rank of tests/test_peer.py's one-process-per-GPU all-reduce: run as
``python _nccl_rank.py DEVICE N`` with RANK, WORLD_SIZE and GPUMEM_NCCL_ID_FILE in the
environment (as torchrun would set the first two).  All-reduces ``arange(N) + rank``
(float32) on GPU DEVICE through :meth:`gpumem.runtime.nccl.Communicator.from_env`,
checks the sum against NumPy's and a misfit call's refusal, and prints one line of JSON:
its rank, device, the sum's first and last values and its float64 total, and whether it
equals NumPy's.  Exit 0 when it does."""
import json
import os
import sys

os.environ["NCCL_NVLS_ENABLE"] = "0"       # no NVLink multicast, here too (set before NCCL)

import numpy as np  # noqa: E402

import gpumem as gm  # noqa: E402
from gpumem.runtime import nccl  # noqa: E402


def main() -> int:
    device, n = int(sys.argv[1]), int(sys.argv[2])
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    want = sum(np.arange(n, dtype=np.float32) + np.float32(r) for r in range(size))
    with gm.Device(device):
        send = gm.to_device(np.arange(n, dtype=np.float32) + np.float32(rank))
        recv = gm.to_device(np.full(n, np.nan, np.float32))       # poisoned
        longer = gm.to_device(np.ones(n + 1, np.float32))
    with nccl.Communicator.from_env(device=device, timeout=45) as comm:
        refused = []
        for bad, kind in (((np.ones(n, np.float32), recv), TypeError),
                          ((send, longer), ValueError)):
            try:
                comm.run("all_reduce", *bad)
            except kind as e:
                refused.append(str(e))
        comm.run("all_reduce", send, recv)
        gm.synchronize(device=device)
        got = recv.get()
    print(json.dumps({"rank": comm.rank, "nranks": comm.nranks, "device": device,
                      "first": float(got[0]), "last": float(got[-1]),
                      "total": float(got.sum(dtype=np.float64)),
                      "equal": bool(np.array_equal(got, want)), "refused": refused}), flush=True)
    return 0 if np.array_equal(got, want) else 1


if __name__ == "__main__":
    sys.exit(main())
