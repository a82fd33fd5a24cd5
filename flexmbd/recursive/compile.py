"""``model.compile("recursive")``: the tree solver, or the closed-loop formulation on top
of it.

A model without cut joints and drivers compiles to a
:class:`~flexmbd.recursive.system.RecursiveSystem`; one with closed loops (cut joints)
or joint drivers to a :class:`~flexmbd.recursive.loops.LoopSystem` (the spanning tree
plus the cut-joint constraints). The choice lives here, above both, so that neither
module imports the other's caller; the closed-loop module loads only for such models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .system import RecursiveSystem

if TYPE_CHECKING:
    from typing import Any

    from ..model import Model
    from .loops import LoopSystem

__all__ = ["compile_system"]


def compile_system(model: Model, **options: Any) -> RecursiveSystem | LoopSystem:
    """Compile ``model`` for the recursive formulation (options: see the class).

    Returns a :class:`RecursiveSystem` for a tree, a :class:`LoopSystem` when the model
    has cut joints or joint drivers.
    """
    from ..constraints.cut import needs_loops  # lazy: `import flexmbd.recursive` stays light

    if needs_loops(model):
        from .loops import LoopSystem  # lazy: the closed-loop machinery loads when needed

        return LoopSystem(model, **options)
    return RecursiveSystem(model, **options)
