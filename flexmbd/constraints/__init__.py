"""Closed loops and constraint handling.

* :mod:`~flexmbd.constraints.projection` -- QR-based independent constraints,
  normal/tangent bases, position/velocity corrections, tangent-space accelerations,
  Baumgarte and Moore-Penrose alternatives (used by every formulation);
* :mod:`~flexmbd.constraints.cut` -- cut-joint constraint equations on tree joint
  coordinates and rheonomic joint drivers for the recursive formulation.
"""

from .projection import DEFAULT_RTOL, METHODS, Constraints, Projector, QRBasis, qr_basis

__all__ = ["DEFAULT_RTOL", "METHODS", "Constraints", "Projector", "QRBasis", "qr_basis"]
