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

Loading a cached kernel costs (numbers of ``benchmarks/bench_first_call.py``) what
`KernelCache` and `_LazyLinkLibrary` leave of numba's own load: no target-context refresh
(numba's first refresh imports its implementation modules), no parse of the LLVM bitcode
kept beside the object code (a kernel's bitcode holds a copy of every callee, megabytes
for the engine's entry kernels; numba needs it only to link the kernel into a later
compilation, which parses it then), and no cache set-up for the kernels a process never
calls (`_DeferredCache`).
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path
from typing import Any

import llvmlite.binding as ll
from numba import njit as _numba_njit
from numba.core import caching, types
from numba.core.codegen import JITCodeLibrary
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


class _LazyLinkLibrary(JITCodeLibrary):
    """numba's code library of a kernel loaded from the cache, parsing the kernel's LLVM
    bitcode on first need instead of at the load.

    A cache entry holds the kernel's object code (what runs) and its bitcode with every
    callee's (numba parses it at each load, to link the kernel into later compilations
    and to record its symbol names): 0.1-0.15 s CPU per process for the engine's
    entry kernels. Here the object code is loaded as numba does; the bitcode is parsed
    when a later compilation links this kernel (``_get_module_for_linking``); the
    kernel's entry address is looked up in the loaded object code.
    """

    _shared_bitcode: bytes | None = None

    @classmethod
    def _unserialize(cls, codegen: Any, state: Any) -> Any:
        name, _, (object_code, bitcode) = state  # an object-code entry (`_lazy_payload`)
        self = cls(codegen, name)
        self.enable_object_caching()
        self._set_compiled_object(object_code)
        self._shared_bitcode = bitcode
        self._finalize_final_module()  # loads the object code (an empty IR module)
        return self

    def _get_module_for_linking(self) -> Any:
        self._ensure_finalized()
        if self._shared_module is None:  # numba parses it at the load
            self._shared_module = ll.parse_bitcode(self._shared_bitcode)
            self._shared_bitcode = None
        return self._shared_module

    def get_pointer_to_function(self, name: str) -> int:
        """The address of function ``name`` (0 if no loaded code defines it)."""
        self._ensure_finalized()
        return self._codegen._engine.get_function_address(name)


def _lazy_payload(payload: Any) -> bool:
    """Whether a cached compile result can load as a `_LazyLinkLibrary`: numba's
    object-code entry of a kernel without runtime-linker globals (recursive kernels:
    numba registers those with its engine at the load)."""
    lib = payload[0] if isinstance(payload, tuple) and payload else None
    return (
        isinstance(lib, tuple)
        and len(lib) == 3
        and lib[1] == "object"
        and b".numba.unresolved$" not in lib[2][1]
    )


class _KernelCacheImpl(caching.CompileResultCacheImpl):
    # numba's cache-locator hook: NUMBA_CACHE_DIR, next to the sources, the user cache
    _locator_classes = [_UserProvidedLocator, _InTreeLocator, _UserWideLocator]

    def rebuild(self, target_context: Any, payload: Any) -> Any:
        """numba's rebuild of a cached compile result, its code library a
        `_LazyLinkLibrary` (numba's own library for another code generator or entry)."""
        codegen = target_context.codegen()
        if (
            "_library_class" in vars(codegen)
            or getattr(codegen, "_library_class", None) is not JITCodeLibrary
            or not _lazy_payload(payload)
        ):
            return super().rebuild(target_context, payload)
        # the dispatcher holds numba's compiler lock during a cache load: no other
        # thread creates a library while the code generator's class is swapped
        codegen._library_class = _LazyLinkLibrary
        try:
            return super().rebuild(target_context, payload)
        except AttributeError:  # a numba whose code library lacks what the lazy load uses
            pass
        finally:
            del codegen._library_class
        return super().rebuild(target_context, payload)  # numba's own load


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


class _DeferredCache:
    """A dispatcher's `KernelCache`, made on numba's first use of it (a cache load before
    the first compile): making one probes the cache directory (writes a temporary file)
    and stamps the sources, which an import would otherwise pay for every kernel of a
    module, called or not."""

    def __init__(self, func: Any) -> None:
        self._func = func
        self._cache: KernelCache | None = None

    def __getattr__(self, name: str) -> Any:
        if self._cache is None:
            self._cache = KernelCache(self._func)
        return getattr(self._cache, name)


def _numba_dispatcher(func: Any, options: dict[str, Any]) -> Any:
    """``numba.njit(**options)(func)``; with ``cache=True`` the cache is a `KernelCache`
    (made on first use)."""
    options = dict(options)
    cache = options.pop("cache", False)  # numba would make its own cache here
    dispatcher = _numba_njit(**options)(func)
    if cache:
        dispatcher._cache = _DeferredCache(func)  # numba's enable_caching, our cache class
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
