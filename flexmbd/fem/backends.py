"""Sparse factorization backends importable in this environment (CHOLMOD, cholespy, SuperLU).

Shared by :mod:`flexmbd.fem.eigen` (which picks one) and :mod:`flexmbd.fem._threads`
(which loads CHOLMOD's BLAS before limiting its thread pool).
"""

__all__ = ["available_backends"]

_ORDER = ("cholmod", "cholespy", "superlu")


def _have(module):
    try:
        if module == "cholmod":
            from sksparse.cholmod import cholesky  # noqa: F401
        elif module == "cholespy":
            import cholespy  # noqa: F401
        return True
    except ImportError:
        return False


_AVAILABLE = {}


def available_backends() -> list[str]:
    """Sparse backends importable here, best first (``"superlu"`` always)."""
    if not _AVAILABLE:
        for b in _ORDER:
            _AVAILABLE[b] = b == "superlu" or _have(b)
    return [b for b in _ORDER if _AVAILABLE[b]]
