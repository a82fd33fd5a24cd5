"""One meaning of a mode count: the total number of modes of a reduced body.

Every strategy names its parts explicitly (``NormalModes(n_modes)``,
``StaticCorrection(n_normal, loads)``, ``CraigBampton(n_fixed, interfaces)``,
``RitzVectors(n_vectors, load)``) and states the total with ``describe()``, e.g.
"8 fixed-interface + 6 constraint = 14 modes".  The same text is stored in a
`ReducedBody` (``mode_count``) and printed by ``info()``, ``repr`` and the
`FlexibleBody` pprint line.  ``flexmbd reduce --modes N`` is that total.
"""

import numpy as np

from ..errors import MeshError

__all__ = ["whole_count", "count_text", "count_text_from_kinds"]

# the noun of one column of each kind (Ritz vectors are not modes of anything)
_NOUN = {"Ritz": "vector"}


def whole_count(value, what, minimum=1):
    """``value`` as a whole number >= ``minimum``; MeshError naming ``what`` otherwise.

    Accepts ints, numpy integers and integral floats (8.0); refuses bools, strings,
    NaN, fractions (2.5 would silently become 2) and counts below ``minimum``.
    """
    ok = isinstance(value, (int, np.integer, float, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )
    if ok:
        f = float(value)
        ok = np.isfinite(f) and f == int(f)
    if not ok:
        raise MeshError(f"{what}={value!r} must be a whole number (an int such as 8)")
    n = int(value)
    if n < minimum:
        raise MeshError(f"{what}={n} must be >= {minimum}")
    return n


def count_text(parts, n_loads=None):
    """Text of a mode count from its parts ``[(count, kind), ...]`` in basis order.

    >>> count_text([(8, "fixed-interface"), (6, "constraint")])
    '8 fixed-interface + 6 constraint = 14 modes'
    >>> count_text([(8, "normal")])
    '8 normal modes'
    >>> count_text([(8, "Ritz")], n_loads=4)
    '8 Ritz vectors (4 loads)'
    """
    parts = [(int(n), str(k)) for n, k in parts]
    total = sum(n for n, _ in parts)
    if len(parts) == 1:
        n, kind = parts[0]
        noun = _NOUN.get(kind, "mode") + ("" if n == 1 else "s")
        text = f"{n} {kind} {noun}"
    else:
        text = (
            " + ".join(f"{n} {k}" for n, k in parts) + f" = {total} mode{'' if total == 1 else 's'}"
        )
    if n_loads is not None:
        text += f" ({n_loads} load{'' if n_loads == 1 else 's'})"
    return text


def count_text_from_kinds(kinds):
    """`count_text` of a list of mode kinds (one per mode), kinds in order of appearance.

    A Craig-Bampton set always shows both parts ("0 fixed-interface + 6 constraint
    = 6 modes").  An empty list gives "0 modes".
    """
    kinds = [str(k) for k in kinds]
    if not kinds:
        return "0 modes"
    order = list(dict.fromkeys(kinds))
    if set(order) <= {"fixed-interface", "constraint"}:
        order = ["fixed-interface", "constraint"]
    return count_text([(kinds.count(k), k) for k in order])
