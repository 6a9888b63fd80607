"""gpumem.model._tally: the representatives of a launch axis stand for every index once."""
import numpy as np

from gpumem.model import _tally


def test_representatives_stand_for_every_index_once():
    rep = _tally.representatives
    for length, period, cuts in ((1000, 128, (0, 517, 999)), (5, 128, ()), (300, 4, (150, 150)),
                                 (7, 1, (3,)), (0, 128, (0,)), (2 ** 31 - 1, 128, (12345,))):
        idx, w = rep(length, period, cuts)
        assert int(w.sum()) == length and (w >= 1).all()
        for c in cuts:
            if c < length:       # a cut index stands for itself alone
                assert w[idx == c].tolist() == [1]
        assert idx.size <= (2 * len(set(cuts)) + 1) * period
        if 0 < length <= 1000:   # every index falls to exactly one representative
            edges = sorted({0, length, *cuts, *(c + 1 for c in cuts)} & set(range(length + 1)))
            piece = np.searchsorted(edges, np.arange(length), side="right")
            key = piece * period + np.arange(length) % period
            rkey = np.searchsorted(edges, idx, side="right") * period + idx % period
            assert sorted(rkey.tolist()) == sorted(set(key.tolist()))
            assert np.bincount(key, minlength=rkey.max() + 1)[rkey].tolist() == w.tolist()
    assert _tally.every(5, 128, (2,))[1].tolist() == [1] * 5
