"""Users' compiled joint laws (:meth:`flexmbd.JointForce.compiled_law`) as the kernels of
both formulations see them: the numba type of the ``cfunc``, the check of an element's
law against it, its address (an integer in the absolute engine's joint-force table and
in the recursive force table's ``ULAW`` rows) and the compiled call through that address
(:func:`user_law`, :func:`law_value`). The address is data, not a type: a kernel compiles
one version for any number of laws."""

from typing import Any

from llvmlite import ir
from numba import typeof
from numba.core import types
from numba.extending import intrinsic

from ._jit import njit
from .errors import ModelError

__all__ = ["LAW_TYPE", "checked_law", "law_address", "law_value", "user_law"]

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


def law_address(el: Any) -> int:
    """The address (int, nonzero) of the compiled law of the
    :meth:`~flexmbd.JointForce.compiled_law` element ``el``, as the force tables store it.
    The element keeps the cfunc (and so its code) alive. Raises ``ModelError`` naming the
    element for a law that is not a numba cfunc of :attr:`~flexmbd.JointForce.LAW_SIGNATURE`
    (:func:`checked_law`)."""
    return int(checked_law(el).address)


@intrinsic
def _call_law(typingctx, address, q, qd, t, which):
    """``law(q, qd, t, which)`` of the C function ``double law(double, double, double,
    int64)`` at ``address`` (int64): a call through the pointer, no Python (the address is
    data, so the calling kernels stay cacheable and compile once for every law)."""
    sig = types.float64(types.int64, types.float64, types.float64, types.float64, types.int64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()] * 3 + [ir.IntType(64)])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, args[1:])

    return sig, codegen


@njit(cache=True, inline="always")
def law_value(address, qj, qdj, t, which):
    """``law(q, qd, t, which)`` of the user's compiled law at ``address``
    (:func:`law_address`): with ``which`` 0 its force (N m or N, along the joint speed),
    1 its derivative by the joint coordinate ``q`` (rad or m), 2 by the speed ``qd``
    (rad/s or m/s); ``t`` the time (s)."""
    return _call_law(address, qj, qdj, t, which)


@njit(cache=True, inline="always")
def user_law(address, qj, qdj, t):
    """Force (N m or N, along the joint speed) of a user's compiled law at ``address``
    (:func:`law_address`) at the joint coordinate ``q``, speed ``qd`` and time ``t`` (s):
    ``law(q, qd, t, 0)``, the call the Python path makes through ``ctypes``."""
    return _call_law(address, qj, qdj, t, 0)
