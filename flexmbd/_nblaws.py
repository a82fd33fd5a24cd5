"""Users' compiled joint laws (:meth:`flexmbd.JointForce.compiled_law`) as the kernels of
both formulations see them: the numba type of the ``cfunc`` and the check of an element's
law against it (the absolute engine's joint-force table, the recursive force table's
``ULAW`` rows)."""

from typing import Any

from numba import typeof
from numba.core import types

from .errors import ModelError

__all__ = ["LAW_TYPE", "checked_law"]

#: the numba type of a compiled law ``law(q, qd, t, which)`` (N m or N; rad or m, rad/s
#: or m/s, s, 0 force / 1 d/dq / 2 d/dqd): a first-class function of
#: :attr:`flexmbd.JointForce.LAW_SIGNATURE`
LAW_TYPE = types.FunctionType(
    types.float64(types.float64, types.float64, types.float64, types.int64)
)


def checked_law(el: Any) -> Any:
    """The compiled law (``el.user_law``) of the :meth:`~flexmbd.JointForce.compiled_law`
    element ``el``: a numba cfunc of type :data:`LAW_TYPE` with an integer ``address``.
    Raises ``ModelError`` naming the element and the decorator to use otherwise."""
    law = el.user_law
    try:
        ok = typeof(law) == LAW_TYPE
    except ValueError:
        ok = False
    if not ok or not isinstance(getattr(law, "address", None), int):
        raise ModelError(
            f"JointForce {el.name!r}: its compiled law must be a numba cfunc with the "
            f"signature {el.LAW_SIGNATURE!r} (@numba.cfunc(fm.JointForce.LAW_SIGNATURE)), "
            f"got {law!r}"
        )
    return law
