"""Every GPU and stream of the machine: :class:`Device` (the calling thread's current
GPU), :class:`Stream` (a CUDA stream of one GPU), :func:`current_stream`,
:func:`synchronize`, and the ``stream=`` keyword every kernel call takes
(:func:`on_stream`).

A call runs on the GPU of its operands (NumPy operands go to the current
device) and on that GPU's current stream in this thread: the innermost open
``with stream:`` block's, else the legacy default stream.  It waits for the
stream each operand was last used on (an event, no host wait), and its result
remembers the stream it was written on, which ``__cuda_array_interface__``
exports and ``__dlpack__(stream=)`` makes a consumer wait for.

Runtime layer: imports ``_core`` only.
"""
from __future__ import annotations

import functools
import inspect
import operator
from typing import Any, Callable

from .. import _core
from .._core import Stream, current_stream, synchronize

__all__ = ["Device", "Stream", "current_stream", "device_count", "synchronize", "as_stream",
           "on_stream"]


def device_count() -> int:
    """The number of CUDA GPUs gpumem can use (0 without a GPU or driver; never raises)."""
    return _core.device_count()


class Device:
    """GPU ``index`` as the calling thread's current device, in a ``with`` block.

    ``with gpumem.Device(1):`` makes NumPy operands go to GPU 1 and
    :func:`gpumem.empty`, :func:`gpumem.to_device` and every measurement run there;
    the device current before the block is current again after it (per thread,
    like ``cupy.cuda.Device``).  Blocks nest.

    Parameters
    ----------
    index : int
        0 .. ``device_count() - 1``.
    """

    def __init__(self, index: int = 0):
        try:
            self.index = operator.index(index)
        except TypeError:
            raise TypeError(f"Device: index must be an int, not {type(index).__name__}") from None
        if isinstance(index, bool):
            raise TypeError("Device: index must be an int, not bool")
        if self.index < 0:
            raise ValueError(f"Device: index={self.index} is not a device; devices are "
                             "numbered from 0")
        self._previous: list[int] = []

    def __enter__(self) -> "Device":
        previous = _core._get_device()
        _core._set_device(self.index)
        self._previous.append(previous)
        return self

    def __exit__(self, *exc: Any) -> None:
        _core._set_device(self._previous.pop())

    def __int__(self) -> int:
        return self.index

    __index__ = __int__

    def __repr__(self) -> str:
        return f"gpumem.Device({self.index})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.index == self.index

    def __hash__(self) -> int:
        return hash(("gpumem.Device", self.index))

    def synchronize(self) -> None:
        """Wait until everything queued on this GPU has finished."""
        synchronize(device=self.index)


def as_stream(stream: Any, fn: str = "stream") -> Stream:
    """``stream`` as a :class:`Stream`: a gpumem Stream itself; another library's stream
    (``torch.cuda.Stream``, ``cupy.cuda.Stream``, anything with ``__cuda_stream__``)
    wrapped, not copied; 0 or 1 (the legacy default stream) or 2 (the per-thread one).
    TypeError or ValueError naming ``fn`` otherwise."""
    if isinstance(stream, Stream):
        return stream
    handle = None
    if isinstance(stream, int) and not isinstance(stream, bool):
        # A bare address cannot be checked (CUDA would crash on a wrong one): only the
        # default streams go by number; another library's stream comes as its object.
        if stream not in (0, 1, 2):
            raise ValueError(f"{fn}: stream={stream} is not accepted as a number: 0 and 1 are "
                             "the legacy default stream, 2 the per-thread one; pass another "
                             "library's stream object, or gpumem.Stream(ptr=handle) for a raw "
                             "cudaStream_t you vouch for")
        handle = stream
    elif callable(getattr(stream, "__cuda_stream__", None)):
        handle = stream.__cuda_stream__()[1]
    else:
        # PyTorch's and CuPy's stream types by name (any other object's `ptr` may be a
        # device address, which CUDA would take for a stream and crash on)
        kind = type(stream).__module__ + "." + type(stream).__name__
        attr = ("cuda_stream" if kind.startswith("torch.cuda.")
                else "ptr" if kind.startswith("cupy.") and "Stream" in kind else None)
        value = getattr(stream, attr, None) if attr else None
        if isinstance(value, int) and not isinstance(value, bool):
            handle = value
    if handle is not None:
        if not 0 <= handle < 2**64:
            raise ValueError(f"{fn}: stream={handle} is not a stream handle (a cudaStream_t "
                             "is 0..2**64-1)")
        try:
            return Stream(ptr=handle)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{fn}: {e}") from e
    raise TypeError(f"{fn}: stream must be a gpumem.Stream, another library's CUDA stream "
                    f"(torch, CuPy, __cuda_stream__) or a cudaStream_t, not "
                    f"{type(stream).__name__}")


def on_stream(fn: Callable) -> Callable:
    """``fn`` with a keyword ``stream=None``: given, the call runs as inside ``with
    stream:`` (on that stream, its device current).  Every kernel call and sweep that
    ``import gpumem`` exports takes it."""
    if "stream" in inspect.signature(fn).parameters:
        return fn

    @functools.wraps(fn)
    def call(*args: Any, stream: Any = None, **kwargs: Any):
        if stream is None:
            return fn(*args, **kwargs)
        with as_stream(stream, fn.__name__):
            return fn(*args, **kwargs)

    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD),
              len(params))
    params.insert(at, inspect.Parameter("stream", inspect.Parameter.KEYWORD_ONLY, default=None))
    call.__signature__ = sig.replace(parameters=params)   # type: ignore[attr-defined]
    return call
