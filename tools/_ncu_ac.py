import numpy as np, gpumem as gm
for n in (8192, 8190):
    a = gm.to_device(np.random.default_rng(0).standard_normal((n, n), dtype=np.float32))
    out = gm.empty((n, n))
    for tiles in (1, 2, 8):
        gm.tile_transpose(a, variant="tensor_swizzle128", tiles=tiles, out=out)
    gm.synchronize() if hasattr(gm, "synchronize") else None
