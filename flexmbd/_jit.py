"""The project's numba decorator for entry kernels with one fixed signature.

``numba.njit(signature)`` compiles (or loads from the cache) at import time, so
importing a kernel module would pay for every such kernel whether the model uses it or
not: 0.3-0.6 s CPU per process for a cached kernel, its whole compilation (tens of
seconds) on a fresh machine. `njit_signature` keeps the signature's contract (one
specialization; a call with other argument types raises ``TypeError`` instead of
compiling another) but does the compile or cache load on the first call.

Every cached kernel is stamped with its own file *and* the digest of the kernel modules its
file imports, directly or through other kernel modules, and of the package modules those
import (:func:`kernel_sources_digest`): numba stamps a cache entry with the defining file
only, while a compiled kernel holds the code of the kernels it calls from other
modules and the constants it reads from them, so an edit of a callee (or an upgrade that
changes it) would otherwise keep running the old callee's code.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path
from typing import Any

from numba import njit as _numba_njit
from numba.core import caching, types
from numba.core.runtime import rtsys
from numba.core.sigutils import normalize_signature

__all__ = ["kernel_sources_digest", "njit", "njit_signature"]

_PACKAGE = Path(__file__).resolve().parent


_FROM_IMPORT = re.compile(
    rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M
)


@cache
def _imported_modules(path: Path, root: Path) -> frozenset[Path]:
    """The package modules ``path`` imports with ``from ... import`` (relative or
    ``flexmbd.``); a regular expression, not the parser: this runs in every process."""
    found = set()
    for dots, module, names in _FROM_IMPORT.findall(path.read_bytes()):
        parts = module.decode().split(".") if module else []
        if dots:
            base = path.parent
            for _ in range(len(dots) - 1):
                base = base.parent
        elif parts and parts[0] == root.name:
            base, parts = root, parts[1:]
        else:
            continue
        target = base.joinpath(*parts)
        for name in names.strip(b"()").split(b","):
            name = name.split(b"#")[0].split()[:1]
            for candidate in (name and _module_files(target / name[0].decode())) or (
                _module_files(target)
            ):
                found.add(candidate.resolve())
    return frozenset(found)


def _module_files(name: Path) -> list[Path]:
    return [f for f in (name.with_suffix(".py"), name / "__init__.py") if f.is_file()]


def _is_kernel_module(path: Path) -> bool:
    return b"_jit import" in path.read_bytes()


@cache
def kernel_sources_digest(path: Path | None = None, root: Path = _PACKAGE) -> str:
    """SHA-256 (hex) of a kernel module ``path`` (one importing ``flexmbd._jit``), of the
    kernel modules it imports directly or through other kernel modules (its compiled
    callees) and of every package module those import (constants such as the joint
    codes), plus this module; with ``path=None`` of every kernel module of the package."""
    root = root.resolve()
    if path is None:
        todo = [p.resolve() for p in root.rglob("*.py") if _is_kernel_module(p)]
    else:
        todo = [Path(path).resolve()]
    kernels: set[Path] = set()
    files = {root / "_jit.py"}
    while todo:
        module = todo.pop()
        if module in kernels:
            continue
        kernels.add(module)
        for imported in _imported_modules(module, root):
            files.add(imported)
            if _is_kernel_module(imported):
                todo.append(imported)
    digest = hashlib.sha256()
    for module in sorted(files | kernels):
        digest.update(module.relative_to(root).as_posix().encode() + b"\0")
        digest.update(module.read_bytes())
    return digest.hexdigest()


class _PackageStamped:
    """Cache-locator mixin: a cache entry is fresh while its file and every package
    module it imports (transitively) are unchanged (see the module docstring)."""

    def get_source_stamp(self) -> Any:
        return (super().get_source_stamp(), kernel_sources_digest(Path(self._py_file)))


class _UserProvidedLocator(_PackageStamped, caching.UserProvidedCacheLocator):
    pass


class _InTreeLocator(_PackageStamped, caching.InTreeCacheLocator):
    pass


class _UserWideLocator(_PackageStamped, caching.UserWideCacheLocator):
    pass


class _KernelCacheImpl(caching.CompileResultCacheImpl):
    # numba's cache-locator hook: NUMBA_CACHE_DIR, next to the sources, the user cache
    _locator_classes = [_UserProvidedLocator, _InTreeLocator, _UserWideLocator]


class KernelCache(caching.FunctionCache):
    """numba's function cache with the package-wide source stamp, loading without
    numba's target-context refresh.

    numba refreshes its target context before every cache load; the first refresh in a
    process imports and registers all of numba's implementation modules (0.2-0.3 s CPU),
    which only typing and lowering use. Rebuilding a cached kernel needs the runtime
    (NRT) symbols and the C helpers, which the context installs when it is created, so
    the load here initialises the runtime only. A compilation in the same process still
    refreshes the context first (numba's compiler does so itself).
    """

    _impl_class = _KernelCacheImpl

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """The cached compile result for ``sig``, or None (numba then compiles)."""
        guard = getattr(self, "_guard_against_spurious_io_errors", None)
        load = getattr(self, "_load_overload", None)
        if guard is None or load is None:  # a numba without these: its own load
            return super().load_overload(sig, target_context)
        rtsys.initialize(target_context)
        with guard():
            return load(sig, target_context)


def _numba_dispatcher(func: Any, options: dict[str, Any]) -> Any:
    """``numba.njit(**options)(func)``; with ``cache=True`` the cache is a `KernelCache`."""
    dispatcher = _numba_njit(**options)(func)
    if options.get("cache"):
        dispatcher._cache = KernelCache(func)  # numba's enable_caching, our cache class
    return dispatcher


def njit_signature(signature: str, **options: Any) -> Any:
    """Decorator: ``numba.njit(**options)`` compiled for ``signature`` on the first call.

    The first call compiles ``signature`` (or loads it from numba's cache with
    ``cache=True``), disables further compilation and dispatches; from then on the
    dispatcher behaves as ``njit(signature, **options)``: calls whose argument types do
    not match the signature raise ``TypeError``.
    """

    def decorate(func: Any) -> Any:
        dispatcher = _numba_dispatcher(func, options)
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
        dispatcher = _numba_dispatcher(f, options)
        compile_ = dispatcher.compile

        def compile(sig: Any) -> Any:
            args, ret = normalize_signature(sig)
            plain = tuple(types.unliteral(a) for a in args)
            return compile_(plain if ret is None else ret(*plain))

        dispatcher.compile = compile
        return dispatcher

    return decorate if func is None else decorate(func)
