"""flexmbd: flexible multibody dynamics.

Meshes -> reduced flexible bodies (scikit-fem), a Pyomo-style model of rigid and
flexible bodies, joints and force elements, the Constraint Force Algorithm tree
solver, an absolute-coordinate DAE formulation, implicit and explicit integrators,
and PyVista views. See README.md for a tour.
"""

from . import errors, spatial, topology
from .errors import (
    ConvergenceError,
    FlexmbdError,
    MeshError,
    ModelError,
    SolverError,
    TopologyError,
)
from .model import (
    Block,
    Body,
    Cylindrical,
    Fixed,
    ForceElement,
    Frame,
    Free,
    Gravity,
    Joint,
    JointForce,
    Model,
    Planar,
    PointForce,
    PointTorque,
    Prismatic,
    Revolute,
    RigidBody,
    Spherical,
    Universal,
)

__version__ = "0.1.0"

__all__ = [
    "errors", "spatial", "topology",
    "FlexmbdError", "ModelError", "TopologyError", "MeshError", "SolverError", "ConvergenceError",
    "Model", "Block", "Body", "RigidBody", "Frame", "Joint", "Revolute", "Prismatic",
    "Cylindrical", "Universal", "Spherical", "Planar", "Fixed", "Free", "ForceElement",
    "Gravity", "PointForce", "PointTorque", "JointForce",
]
