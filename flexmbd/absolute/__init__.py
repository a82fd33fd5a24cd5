"""Absolute-coordinate formulation: bodies in (position, Euler parameters), joints as constraints.

Flexible bodies add their modal coordinates (:mod:`.flexible`); small and mid-size
models run in a compiled Newton engine (:mod:`.engine`).

``model.compile("absolute")`` returns an :class:`AbsoluteSystem`: the index-3 DAE
``M(q) qdd + Phi_q^T lam = Q`` with every joint a set of algebraic equations
(:mod:`.constraints`), exact sparse Jacobians for Newton-type implicit integrators
(:mod:`flexmbd.integrators.implicit`), static equilibrium and consistent initial
conditions (:mod:`.statics`), and energy bookkeeping (:mod:`.energy`).
"""

from .statics import (
    StaticResult,
    consistent_initial_conditions,
    static_equilibrium,
    static_residual,
)
from .system import AbsoluteSystem, ForwardDynamics, compile_system

__all__ = [
    "compile_system",
    "AbsoluteSystem",
    "ForwardDynamics",
    "StaticResult",
    "static_equilibrium",
    "consistent_initial_conditions",
    "static_residual",
]
