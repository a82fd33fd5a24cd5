"""The project's numba decorator for entry kernels with one fixed signature.

``numba.njit(signature)`` compiles (or loads from the cache) at import time, so
importing a kernel module would pay for every such kernel whether the model uses it or
not: 0.3-0.6 s CPU per process for a cached kernel, its whole compilation (tens of
seconds) on a fresh machine. `njit_signature` keeps the signature's contract (one
specialization; a call with other argument types raises ``TypeError`` instead of
compiling another) but does the compile or cache load on the first call.
"""

from __future__ import annotations

from typing import Any

from numba import njit

__all__ = ["njit_signature"]


def njit_signature(signature: str, **options: Any) -> Any:
    """Decorator: ``numba.njit(**options)`` compiled for ``signature`` on the first call.

    The first call compiles ``signature`` (or loads it from numba's cache with
    ``cache=True``), disables further compilation and dispatches; from then on the
    dispatcher behaves as ``njit(signature, **options)``: calls whose argument types do
    not match the signature raise ``TypeError``.
    """

    def decorate(func: Any) -> Any:
        dispatcher = njit(**options)(func)

        def first_call(*args: Any, **kwargs: Any) -> Any:
            # numba's dispatcher calls this when no compiled version matches the call and
            # then calls what it returns with the arguments: compile the signature, stop
            # compiling, and hand back the dispatcher (it matches or raises TypeError)
            del dispatcher._compile_for_args  # numba's own from now on
            dispatcher.compile(signature)
            dispatcher.disable_compile()
            return dispatcher

        dispatcher._compile_for_args = first_call
        return dispatcher

    return decorate
