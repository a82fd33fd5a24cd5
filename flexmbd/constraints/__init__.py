"""Closed loops and constraint handling (the closed-loop recursive formulation built on
them is :class:`flexmbd.recursive.LoopSystem`).

* :mod:`~flexmbd.constraints.projection` -- QR-based independent constraints,
  normal/tangent bases, position/velocity corrections, tangent-space accelerations,
  Baumgarte and Moore-Penrose alternatives (used by every formulation);
* :mod:`~flexmbd.constraints.cut` -- cut-joint constraint equations on tree joint
  coordinates and rheonomic joint drivers (:class:`JointDriver`);
* :mod:`~flexmbd.constraints.redundancy` -- :class:`KKTSolver`, the same QR row
  selection for the saddle-point systems of the absolute formulation.
"""

from .cut import (
    CutJointConstraints,
    GearCoupling,
    JointDriver,
    constraint_rows,
    cut_coordinates,
)
from .projection import DEFAULT_RTOL, METHODS, Constraints, Projector, QRBasis, qr_basis
from .redundancy import KKTSolver

__all__ = [
    "DEFAULT_RTOL",
    "METHODS",
    "Constraints",
    "Projector",
    "QRBasis",
    "qr_basis",
    "JointDriver",
    "GearCoupling",
    "CutJointConstraints",
    "constraint_rows",
    "cut_coordinates",
    "KKTSolver",
]
