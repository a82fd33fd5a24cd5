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
compilation, which parses it then), no cache set-up for the kernels a process never
calls (`_DeferredCache`), and no import of numba's implementation modules whose
environments a cache entry references (`_restore_environment`).

Compiling costs less with `_CallLinkLibrary`: a package kernel calls the large package
kernels it uses by their emitted code instead of numba's linking of a copy of their
optimised module, which LLVM then optimises and emits again at every caller level. A
cache entry of such a kernel records the callees' object code and loads it first.
A kernel that only other kernels call can skip numba's Python and C wrappers
(``njit(callee_only="<its Python entry>")``), which unbox and check every argument: a
large share of the compile time of kernels over the absolute engine's model, inputs and
workspace tuples (issue 13: the cold flagship's ``_system_terms`` and ``_newton``).
The Python wrapper that a kernel called from Python keeps is not optimised by LLVM
(`_CallLinkLibrary.add_ir_module`: the engine's ``_run`` takes 162 arrays), and a small
helper called with arrays of several layouts compiles once with ``njit(any_layout=True)``.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
import threading
from contextlib import contextmanager
from functools import cache, partial
from pathlib import Path
from typing import Any

import llvmlite.binding as ll
from numba import njit as _numba_njit
from numba.core import caching, types
from numba.core.codegen import JITCodeLibrary
from numba.core.environment import Environment, lookup_environment
from numba.core.runtime import rtsys
from numba.core.sigutils import normalize_signature

from .errors import FlexmbdError

__all__ = ["CalleeOnlyError", "kernel_sources_digest", "njit", "njit_signature"]

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


# A package kernel's mangled names start with this (numba's Itanium-style mangling).
_KERNEL_PREFIX = f"_ZN{len(_PACKAGE.name)}{_PACKAGE.name}"
# numba's Python (CPython) wrapper of a package kernel: the kernel's name in namespace cpython
_WRAPPER_PREFIX = "_ZN7cpython" + _KERNEL_PREFIX[3:]
# A compiled kernel whose object code is at least this large (bytes) is called by the
# package's other kernels instead of being linked into them (see `_CallLinkLibrary`):
# LLVM inlines nothing near that size, so the caller's code is the same call.
CALL_LINK_MIN_OBJECT = 16 * 1024
# Object code (by SHA-1) present in this process's JIT engine: compiled here or loaded.
_LOADED_OBJECTS: set[bytes] = set()
_LINKING = threading.local()  # .split: a package kernel is being linked (finalize)


@contextmanager
def _linking_split(split: bool) -> Any:
    before = getattr(_LINKING, "split", False)
    _LINKING.split = split
    try:
        yield
    finally:
        _LINKING.split = before


class _CallLinkLibrary(JITCodeLibrary):
    """numba's JIT code library, linking a package kernel to the large package kernels it
    calls by their emitted code instead of by a copy of their optimised LLVM module.

    numba finalizes a library by linking in the optimised module of every callee library
    (transitively: ``_run`` holds ``_newton`` holds ``_system_terms`` holds
    ``flex_block``) and then optimising and emitting the whole linked module again, so a
    callee's code is optimised and emitted once per caller level. Here a package kernel
    calling a package kernel whose object code is at least `CALL_LINK_MIN_OBJECT` bytes
    keeps its declaration: the JIT engine resolves the call to the callee's code, already
    emitted (too large for LLVM to inline, so the machine code is the same call). The
    object code of such callees (transitively, callees first) is `call_deps`; a cache
    entry records it (`_KernelCacheImpl`) and loads it before the caller's. Any other
    library (numba's own, a user's kernel) links everything, as numba does.
    """

    _call_deps: tuple = ()  # ((SHA-1, object code, env names), ...), callees first
    _separate: tuple = ()  # libraries called by their emitted code
    _kernel = False
    _call_object: bytes | None = None
    _env_names: tuple = ()
    _complete_module: Any = None

    def call_entry(self) -> Any:
        """``(SHA-1, object code, environment names)`` of this library when a package
        kernel may call its emitted code, else None."""
        if not self._kernel or self._call_object is None:
            return None
        if len(self._call_object) < CALL_LINK_MIN_OBJECT:
            return None
        key = hashlib.sha1(self._call_object).digest()
        return key, self._call_object, self._env_names

    def call_deps(self) -> tuple:
        """The emitted code this library's object code calls (`_CallLinkLibrary`)."""
        return self._call_deps

    def add_ir_module(self, ir_module: Any) -> None:
        """numba's ``add_ir_module``; the Python wrapper of a package kernel is marked
        ``optnone`` (with ``noinline``, which LLVM requires with it): LLVM neither
        optimises it nor runs its optimising code generator on it.

        The wrapper unboxes every argument, calls the kernel and boxes its result, once per
        Python call; its code is one straight sequence per array (an unbox call, an error
        branch, reference-count releases), which LLVM's optimisation gains nothing on
        but takes seconds over for a kernel with many array arguments (issue 13: the
        engine's ``_run``, 162 arrays: 3.8-4.6 s to compile a stand-in with an empty body,
        1.4-2.1 s with the wrapper unoptimised; the Python call time of a 4- and a
        40-array kernel was not measurably changed)."""
        for fn in ir_module.functions:
            if fn.name.startswith(_WRAPPER_PREFIX) and not fn.is_declaration:
                fn.attributes.add("noinline")
                fn.attributes.add("optnone")
        super().add_ir_module(ir_module)

    def reload_inits(self) -> set:
        """numba's reload-init functions of this library (inherited by its callers)."""
        return self._reload_init

    def linking_module(self) -> Any:
        """numba's module for linking this library into another."""
        return self._get_module_for_linking()

    def finalize(self) -> None:
        """numba's finalize; a package kernel calls large package kernels' code."""
        self._kernel = any(
            fn.name.startswith(_KERNEL_PREFIX) and not fn.is_declaration
            for fn in self._final_module.functions
        )
        if self._kernel:
            deps: dict = {}
            linked, separate = [], []
            for lib in self._linking_libraries:
                deps.update((d[0], d) for d in getattr(lib, "call_deps", tuple)())
                entry = getattr(lib, "call_entry", lambda: None)()
                if entry is None:
                    linked.append(lib)
                elif lib not in separate:
                    separate.append(lib)
                    deps[entry[0]] = entry
                    self._reload_init.update(lib.reload_inits())
            self._linking_libraries, self._separate = linked, tuple(separate)
            self._call_deps = tuple(deps.values())
        with _linking_split(self._kernel):
            super().finalize()
        self._env_names = tuple(
            gv.name
            for gv in self._final_module.global_variables
            if gv.name.startswith("_ZN08NumbaEnv")
        )
        if self._object_caching_enabled and self._compiled_object is not None:
            self._call_object = self._compiled_object
            _LOADED_OBJECTS.add(hashlib.sha1(self._call_object).digest())

    def _get_module_for_linking(self) -> Any:
        # a package kernel links the module calling its large callees (their code is
        # loaded); anything else gets them linked in, as from numba's own library
        split = JITCodeLibrary._get_module_for_linking(self)  # numba's, on self
        if getattr(_LINKING, "split", False) or not self._separate:
            return split
        if self._complete_module is None:
            module = split.clone()
            with _linking_split(False):
                for lib in self._separate:
                    module.link_in(lib.linking_module(), preserve=True)
            self._complete_module = module
        return self._complete_module


class _LazyLinkLibrary(_CallLinkLibrary):
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

    _loading_deps: tuple = ()  # set on the class during `_KernelCacheImpl.rebuild`

    @classmethod
    def load(cls, codegen: Any, state: Any) -> Any:
        """Load the object code of ``state`` (numba's object-code library state)."""
        return cls._unserialize(codegen, state)

    @classmethod
    def _unserialize(cls, codegen: Any, state: Any) -> Any:
        name, _, (object_code, bitcode) = state  # an object-code entry (`_lazy_payload`)
        self = cls(codegen, name)
        self.enable_object_caching()
        key = hashlib.sha1(object_code).digest()
        if key not in _LOADED_OBJECTS:  # else loaded already (as another kernel's callee)
            self._set_compiled_object(object_code)
        self._shared_bitcode = bitcode
        self._finalize_final_module()  # loads the object code (an empty IR module)
        _LOADED_OBJECTS.add(key)
        self._kernel, self._call_object = True, object_code
        self._call_deps = cls._loading_deps
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


class _EnvironmentSource:
    """What numba's ``Environment.from_fndesc`` reads of a function descriptor."""

    def __init__(self, env_name: str, globals_: dict) -> None:
        self.env_name, self._globals = env_name, globals_

    def lookup_globals(self) -> dict:
        """The globals the environment keeps."""
        return self._globals


def _restore_environment(module: str, consts: list, env_name: str) -> Any:
    """numba's environment ``env_name`` of a cached kernel or callee (what numba's
    unpickling of an environment makes), without importing numba's own modules.

    An environment keeps its function's module globals and constants. Compiled
    nopython code reads the constants only (the globals serve object mode, which numba's
    implementations never use), so the environment of a numba implementation module
    that this process has not imported (``numba.np.arrayobj``, ``numba.np.arraymath``:
    the array helpers linked into a kernel) keeps a dict naming the module instead of
    importing it: 0.04 s CPU of imports per process that only loads cached kernels.
    A compilation in the process imports those modules itself.
    """
    env = lookup_environment(env_name)
    if env is not None:
        return env
    mod = sys.modules.get(module)
    if mod is None and not module.startswith("numba."):
        mod = importlib.import_module(module)
    globals_ = vars(mod) if mod is not None else {"__name__": module}
    env = Environment.from_fndesc(_EnvironmentSource(env_name, globals_))
    env.consts[:] = consts
    return env


class _CachedEnvironment:
    """A numba environment in a cache entry, restored by `_restore_environment`."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def __reduce__(self) -> tuple:
        env = self.env
        return _restore_environment, (env.globals["__name__"], env.consts, env.env_name)


def _cached_environments(envs: tuple) -> tuple:
    """``envs`` (numba environments that can be cached) as written to a cache entry."""
    return tuple(_CachedEnvironment(env) for env in envs)


_CALL_DEPS = "flexmbd-call-deps"  # marks a cache payload that records `call_deps`
_DEP_LIBRARIES: list = []  # libraries loaded only as callees (kept with their code)


def _install(codegen: Any) -> bool:
    """Make `_CallLinkLibrary` the library class of numba's JIT code generator (once);
    False for another code generator (numba's own libraries then)."""
    if vars(codegen).get("_library_class") is _CallLinkLibrary:
        return True
    if "_library_class" in vars(codegen) or codegen._library_class is not JITCodeLibrary:
        return False
    codegen._library_class = _CallLinkLibrary
    return True


def _load_call_deps(codegen: Any, deps: tuple) -> None:
    """Load the object code of the callees a cached kernel calls (callees first) that
    this process has not loaded or compiled, and set their environments."""
    for key, object_code, envs in deps:
        if key in _LOADED_OBJECTS:
            continue
        state = ("callee", "object", (object_code, None))
        _DEP_LIBRARIES.append(_LazyLinkLibrary.load(codegen, state))
        for env in envs:
            codegen.set_env(env.env_name, env)


class _KernelCacheImpl(caching.CompileResultCacheImpl):
    # numba's cache-locator hook: NUMBA_CACHE_DIR, next to the sources, the user cache
    _locator_classes = [_UserProvidedLocator, _InTreeLocator, _UserWideLocator]

    def reduce(self, cres: Any) -> Any:
        """numba's payload; with the callees' object code the kernel calls (`call_deps`:
        SHA-1, object code and environments, callees first) when it calls any."""
        payload = super().reduce(cres)
        if isinstance(payload, tuple) and payload and isinstance(payload[-1], tuple):
            if all(isinstance(env, Environment) for env in payload[-1]):
                # numba's referenced environments (the last field), restored without
                # importing numba's implementation modules (`_restore_environment`)
                payload = (*payload[:-1], _cached_environments(payload[-1]))
        deps = getattr(cres.library, "call_deps", tuple)()
        if not deps:
            return payload
        recorded = []
        for key, object_code, env_names in deps:
            envs = (lookup_environment(name) for name in env_names)
            envs = tuple(e for e in envs if e is not None and e.can_cache())
            recorded.append((key, object_code, _cached_environments(envs)))
        return (_CALL_DEPS, tuple(recorded), payload)

    def rebuild(self, target_context: Any, payload: Any) -> Any:
        """numba's rebuild of a cached compile result, its code library a
        `_LazyLinkLibrary` (numba's own library for another code generator or entry),
        after loading the callees' code it calls; None (numba compiles) if it calls
        callees and the code generator is not numba's JIT one."""
        codegen = target_context.codegen()
        deps = ()
        if isinstance(payload, tuple) and payload and payload[0] == _CALL_DEPS:
            _, deps, payload = payload
        if not _install(codegen):
            return None if deps else super().rebuild(target_context, payload)
        _load_call_deps(codegen, deps)
        if not _lazy_payload(payload):
            return super().rebuild(target_context, payload)
        # the dispatcher holds numba's compiler lock during a cache load: no other
        # thread creates a library while the code generator's class is swapped
        codegen._library_class, _LazyLinkLibrary._loading_deps = _LazyLinkLibrary, deps
        try:
            return super().rebuild(target_context, payload)
        except AttributeError:  # a numba whose code library lacks what the lazy load uses
            pass
        finally:
            codegen._library_class, _LazyLinkLibrary._loading_deps = _CallLinkLibrary, ()
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
    (made on first use). Without numba's C wrapper (``no_cfunc_wrapper``), which serves
    only calls through a first-class function type: nothing takes a package kernel's
    address (users' compiled laws are their own ``numba.cfunc``), and the wrapper is
    compiled and optimised for every kernel (a few seconds of a cold flagship run,
    issue 13)."""
    options = {"no_cfunc_wrapper": True, **options}
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
            _install(dispatcher.targetctx.codegen())
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


class CalleeOnlyError(FlexmbdError, TypeError):
    """A kernel compiled without a Python entry (``njit(callee_only=True)``) was called
    from Python."""


def _add_callee_overload(dispatcher: Any, cres: Any) -> None:
    # numba's add_overload without the entry in the dispatcher's C call table: the
    # compiled function has no Python wrapper, so a Python call must not reach it (it
    # goes to _compile_for_args instead, which refuses it)
    dispatcher.overloads[tuple(cres.signature.args)] = cres


def _refuse_python_call(dispatcher: Any, entry: str, *args: Any, **kws: Any) -> Any:
    name = dispatcher.py_func.__qualname__
    raise CalleeOnlyError(
        f"{dispatcher.py_func.__module__}.{name} is compiled for calls from compiled "
        f"kernels only (no Python entry); from Python call {entry}"
    )


def _any_layout(typ: Any) -> Any:
    # an array type with numba's any-layout 'A' (C- and F-contiguous arrays convert to it)
    if isinstance(typ, types.Array) and typ.layout != "A":
        return typ.copy(layout="A")
    return typ


def njit(
    func: Any = None,
    /,
    *,
    callee_only: str | None = None,
    any_layout: bool = False,
    **options: Any,
) -> Any:
    """``numba.njit`` (as ``@njit`` or ``@njit(**options)``) that compiles one version per
    plain argument type: a constant argument at a call site in another kernel (typed
    ``Literal[int](-1)``, ``Literal[bool](True)``) uses the version for ``int64``/``bool``
    instead of compiling (and caching) a second copy of the kernel and its callees.
    An explicit signature string passes through to ``numba.njit`` unchanged.

    ``any_layout``: array arguments are typed with numba's layout ``'A'`` whatever the
    caller's array (C- or F-contiguous, a strided view), so that a small helper called
    with contiguous arrays at some call sites and views at others compiles once instead
    of once per combination of layouts (issue 13: ``_out_into`` compiled 5 times by the
    flagship). The same operations in every case; indexing goes through the strides.
    Meant for helpers that kernels call: a call from Python never matches the version
    exactly, so numba's dispatcher takes its compile path (which finds the version) on
    every such call: ~60 us instead of ~1 us.

    ``callee_only``: the name of the kernel's Python entry (a kernel calling this one,
    for Python callers). The kernel then compiles without numba's Python and C wrappers,
    which unbox and check every argument (for the engine's kernels over the model,
    inputs and workspace tuples, ~150 arrays, a large share of their compile time,
    issue 13) and which nothing uses when only compiled code calls it; a call from
    Python raises :class:`CalleeOnlyError` naming the entry.
    """
    if isinstance(func, (str, list, tuple)):
        return _numba_njit(func, **options)
    if callee_only is not None:
        options = {**options, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}

    def decorate(f: Any) -> Any:
        dispatcher = _numba_dispatcher(f, options)
        if callee_only is not None:
            dispatcher.add_overload = partial(_add_callee_overload, dispatcher)
            dispatcher._compile_for_args = partial(_refuse_python_call, dispatcher, callee_only)
        compile_ = dispatcher.compile

        def compile(sig: Any) -> Any:
            _install(dispatcher.targetctx.codegen())
            args, ret = normalize_signature(sig)
            plain = tuple(types.unliteral(a) for a in args)
            if any_layout:
                plain = tuple(_any_layout(a) for a in plain)
            return compile_(plain if ret is None else ret(*plain))

        dispatcher.compile = compile
        return dispatcher

    return decorate if func is None else decorate(func)
