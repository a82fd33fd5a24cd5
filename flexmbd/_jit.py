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
        compile_ = dispatcher.compile
        expected, _ = normalize_signature(signature)

        def compile(sig: Any) -> Any:
            # numba calls this when no compiled version matches a call (or a calling
            # kernel is typed); compile the signature and stop compiling: from then on
            # numba's dispatcher rejects other argument types with TypeError itself
            entry = compile_(signature)
            dispatcher.disable_compile()
            args, _ = normalize_signature(sig)
            if tuple(types.unliteral(a) for a in args) != tuple(expected):
                raise TypeError(
                    f"No matching definition for argument type(s) {', '.join(map(str, args))}"
                    f" of {func.__name__} (signature {signature})"
                )
            return entry

        dispatcher.compile = compile
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
