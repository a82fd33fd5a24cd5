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

from numba import njit as _numba_njit
from numba.core import types
from numba.core.sigutils import normalize_signature

__all__ = ["njit", "njit_signature"]


def njit_signature(signature: str, **options: Any) -> Any:
    """Decorator: ``numba.njit(**options)`` compiled for ``signature`` on the first call.

    The first call compiles ``signature`` (or loads it from numba's cache with
    ``cache=True``), disables further compilation and dispatches; from then on the
    dispatcher behaves as ``njit(signature, **options)``: calls whose argument types do
    not match the signature raise ``TypeError``.
    """

    def decorate(func: Any) -> Any:
        dispatcher = _numba_njit(**options)(func)

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


def njit(func: Any = None, /, **options: Any) -> Any:
    """``numba.njit`` (as ``@njit`` or ``@njit(**options)``) that compiles one version per
    plain argument type: a constant argument at a call site in another kernel (typed
    ``Literal[int](-1)``, ``Literal[bool](True)``) uses the version for ``int64``/``bool``
    instead of compiling (and caching) a second copy of the kernel and its callees.
    An explicit signature string passes through to ``numba.njit`` unchanged.
    """
    if isinstance(func, (str, list, tuple)):
        return _numba_njit(func, **options)

    def decorate(f: Any) -> Any:
        dispatcher = _numba_njit(**options)(f)
        compile_ = dispatcher.compile

        def compile(sig: Any) -> Any:
            args, ret = normalize_signature(sig)
            plain = tuple(types.unliteral(a) for a in args)
            return compile_(plain if ret is None else ret(*plain))

        dispatcher.compile = compile
        return dispatcher

    return decorate if func is None else decorate(func)
