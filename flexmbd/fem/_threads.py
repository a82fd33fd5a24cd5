"""Thread counts of the OpenBLAS libraries loaded in this process.

A typical process holds up to three OpenBLAS copies: numpy's and scipy's
wheels each bundle one, and CHOLMOD (scikit-sparse) links the system's.  Each
keeps its own thread pool whose idle threads spin for a while after every
call.  Loops that alternate between them — ARPACK's reverse communication
(scipy's BLAS) around CHOLMOD solves (the system's BLAS), numpy products in
between — then fight over the cores; on a 2-core machine shared with other
processes the eigen step ran 10x slower than with one thread per pool.

`blas_threads(n)` sets every loaded OpenBLAS pool to ``n`` threads for a
``with`` block and restores the previous counts.  Only Linux is handled (the
libraries are found in ``/proc/self/maps``); elsewhere it does nothing.
"""

import ctypes
import functools
import os
import sys
from contextlib import contextmanager

from .backends import available_backends

__all__ = ["blas_threads", "openblas_pools", "fem_threads", "with_fem_threads", "FEM_THREADS"]

_SETTERS = (
    "openblas_set_num_threads",
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
)
_GETTERS = (
    "openblas_get_num_threads",
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
)
_POOLS = {}


def _loaded_openblas_paths():
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower()}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/") and ".so" in os.path.basename(p))


_SCAN = {"modules": -1}


def openblas_pools():
    """{path: (get, set)} ctypes functions of every loaded OpenBLAS.

    ``/proc/self/maps`` is rescanned only when modules were imported since the
    last scan (new shared libraries arrive with imports).
    """
    if len(sys.modules) == _SCAN["modules"]:
        return {p: f for p, f in _POOLS.items() if f is not None}
    _SCAN["modules"] = len(sys.modules)
    for path in _loaded_openblas_paths():
        if path in _POOLS:
            continue
        pool = None
        try:
            # RTLD_NOLOAD: only a handle on the already loaded copy.  Never RTLD_GLOBAL: that
            # would expose its BLAS symbols to libraries loaded later (CHOLMOD then binds to
            # the wrong BLAS and crashes).
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
            get = next((getattr(lib, g) for g in _GETTERS if hasattr(lib, g)), None)
            put = next((getattr(lib, s) for s in _SETTERS if hasattr(lib, s)), None)
            if get is not None and put is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                pool = (get, put)
        except OSError:
            pool = None
        _POOLS[path] = pool
    return {p: f for p, f in _POOLS.items() if f is not None}


@contextmanager
def blas_threads(n=1):
    """Limit every loaded OpenBLAS to ``n`` threads inside the block (None: no change)."""
    if n is None:
        yield
        return
    pools = openblas_pools()
    old = {}
    for path, (get, put) in pools.items():
        try:
            old[path] = get()
            put(int(n))
        except Exception:  # pragma: no cover - a foreign library; never fail the caller
            pass
    try:
        yield
    finally:
        for path, k in old.items():
            try:
                pools[path][1](k)
            except Exception:  # pragma: no cover
                pass


def _default_threads():
    v = os.environ.get("FLEXMBD_BLAS_THREADS", "").strip()
    if v.lower() in ("", "1"):
        return 1
    if v.lower() in ("none", "default", "0"):
        return None
    return int(v)


FEM_THREADS = _default_threads()
_depth = [0]


def _hugepage_switch():
    """numpy's (private) get/set of ``madvise(MADV_HUGEPAGE)`` for new arrays, or None."""
    import numpy as np

    mod = getattr(getattr(np, "_core", None), "multiarray", None)
    if mod is None:
        mod = getattr(getattr(np, "core", None), "multiarray", None)
    get = getattr(mod, "_get_madvise_hugepage", None)
    put = getattr(mod, "_set_madvise_hugepage", None)
    return (get, put) if get is not None and put is not None else None


# numpy asks for transparent huge pages on large arrays.  On the project's VMs
# (firecracker, THP "madvise") a first touch then costs ~7 ms per 2 MiB page: 1.4 s
# CPU for 400 MB against 0.16 s with 4 KiB pages; the FEM pipeline allocates ~1 GB at
# 100k DOF.  Inside `fem_threads` new arrays therefore use normal pages (restored on
# exit); FLEXMBD_NUMPY_HUGEPAGE=1 keeps numpy's setting (e.g. on bare metal).
NO_HUGEPAGE = os.environ.get("FLEXMBD_NUMPY_HUGEPAGE", "0").strip() in ("", "0", "off", "no")


@contextmanager
def fem_threads():
    """`blas_threads` with the FEM pipeline's setting (env ``FLEXMBD_BLAS_THREADS``: default 1;
    ``none`` leaves the libraries alone), and numpy arrays on normal pages (`NO_HUGEPAGE`).
    Nested uses only act at the outermost level.

    One thread per pool was the fastest setting measured on a 2-core machine shared
    with other processes, for the factorization as well as the solve loops.
    """
    if _depth[0]:
        _depth[0] += 1
        try:
            yield
        finally:
            _depth[0] -= 1
        return
    if FEM_THREADS is not None:
        available_backends()  # load CHOLMOD's BLAS first so that its pool is limited too
    hp = _hugepage_switch() if NO_HUGEPAGE else None
    old_hp = hp[0]() if hp else None
    _depth[0] += 1
    try:
        if hp:
            hp[1](False)
        with blas_threads(FEM_THREADS):
            yield
    finally:
        _depth[0] -= 1
        if hp:
            hp[1](old_hp)


def with_fem_threads(func):
    """Decorator: run ``func`` inside `fem_threads`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with fem_threads():
            return func(*args, **kwargs)

    return wrapper
