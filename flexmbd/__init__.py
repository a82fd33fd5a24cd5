"""flexmbd: flexible multibody dynamics.

Meshes -> reduced flexible bodies (scikit-fem), a Pyomo-style model of rigid and
flexible bodies, joints and force elements, the Constraint Force Algorithm tree
solver, an absolute-coordinate DAE formulation, implicit and explicit integrators,
and PyVista views. See README.md for a tour.
"""

from . import errors, spatial, topology
from ._lazy import lazy_names as _lazy_names
from .errors import (
    ConvergenceError,
    FileError,
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
    Screw,
    Spherical,
    Universal,
)
from .model.forces import __all__ as _FORCES
from .model.joints import __all__ as _JOINTS

# fm.sweep is the function; imported here so that importing the module flexmbd.sweep later
# (e.g. ``from flexmbd.sweep import cases``) does not replace the attribute with the module
from .sweep import sweep  # noqa: E402

__version__ = "0.1.0"

# Names whose modules are imported on first use (scikit-fem, PyVista and the solvers
# are heavy; ``import flexmbd`` stays fast).
_LAZY = {
    "fem": ("flexmbd.fem", None),
    "viz": ("flexmbd.viz", None),
    "recursive": ("flexmbd.recursive", None),
    "absolute": ("flexmbd.absolute", None),
    "integrators": ("flexmbd.integrators", None),
    "constraints": ("flexmbd.constraints", None),
    "kinematics": ("flexmbd.kinematics", None),
    "urdf": ("flexmbd.model.urdf", None),
    "data": ("flexmbd.data", None),
    "Results": ("flexmbd.results", "Results"),
    "Material": ("flexmbd.fem", "Material"),
    "NormalModes": ("flexmbd.fem", "NormalModes"),
    "StaticCorrection": ("flexmbd.fem", "StaticCorrection"),
    "CraigBampton": ("flexmbd.fem", "CraigBampton"),
    "RitzVectors": ("flexmbd.fem", "RitzVectors"),
    "compare_modes": ("flexmbd.fem", "compare_modes"),
    "SpringDamperActuator": ("flexmbd.model.sda", "SpringDamperActuator"),
    "FlexibleBody": ("flexmbd.model.flexible", "FlexibleBody"),
    "JointDriver": ("flexmbd.constraints", "JointDriver"),
    "GearCoupling": ("flexmbd.constraints", "GearCoupling"),
    "resume": ("flexmbd.checkpoint", "resume"),
}


__getattr__, __dir__ = _lazy_names(__name__, _LAZY)

__all__ = [
    "errors",
    "spatial",
    "topology",
    "FlexmbdError",
    "ModelError",
    "TopologyError",
    "MeshError",
    "SolverError",
    "ConvergenceError",
    "FileError",
    "Model",
    "Block",
    "Body",
    "RigidBody",
    "Frame",
    *_JOINTS,
    *_FORCES,
    "sweep",
    *_LAZY,
]
