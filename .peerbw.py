import time, numpy as np, gpumem as gm
n = 64 << 20
x = gm.to_device(np.ones(n, np.float32), device=0)
def bw(label):
    gm.synchronize(); y = gm.to_device(x, device=1); gm.synchronize()
    ts = []
    for _ in range(10):
        gm.synchronize(); t = time.perf_counter(); y = gm.to_device(x, device=1)
        with gm.Device(1): gm.synchronize()
        ts.append(time.perf_counter() - t)
    assert float(np.asarray(y.get() if hasattr(y, 'get') else np.asarray(y))[:5].sum()) == 5.0
    print(f"{label}: {n*4/np.median(ts)/1e9:.1f} GB/s", flush=True)
print(gm.peer_attributes(0, 1))
bw("access off")
gm.enable_peer_access(0, 1); gm.enable_peer_access(1, 0)
bw("access on")
gm.disable_peer_access(0, 1); gm.disable_peer_access(1, 0)
bw("access off again")
