"""Finite-element front end and model reduction for flexible bodies.

Pipeline: mesh (meshio / scikit-fem) -> `FEModel` (K, M) -> a mode-set strategy
-> `reduce` -> `ReducedBody` (modes, floating-frame invariants, stress modes,
unit geometric stiffness) <-> ``.npz``.  `compare_modes` ranks strategies
against the full finite-element model.
"""

from . import nastran  # noqa: F401  (fm.fem.nastran.read_bdf, read_op4, read_dmig, ...)
from .abaqus import AbaqusModel, read_abaqus
from .abaqus_mtx import read_mtx
from .compare import compare_modes
from .interfaces import Interface
from .material import Material
from .mesh import FEMesh
from .meshfile import read_mesh
from .model import FEModel
from .reduce import reduce
from .reduced import ReducedBody
from .selectors import Box, Cylinder, Nearest, Nodes, NodeSet, Plane, Sphere
from .strategies import CraigBampton, NormalModes, PointLoad, RitzVectors, StaticCorrection
from .stress_history import stress_history
from .units import UnitsWarning

__all__ = [
    "Material",
    "NormalModes",
    "StaticCorrection",
    "CraigBampton",
    "RitzVectors",
    "PointLoad",
    "compare_modes",
    "reduce",
    "ReducedBody",
    "FEModel",
    "FEMesh",
    "read_mesh",
    "Interface",
    "Plane",
    "Box",
    "Cylinder",
    "Sphere",
    "Nearest",
    "NodeSet",
    "Nodes",
    "stress_history",
    "read_abaqus",
    "read_mtx",
    "AbaqusModel",
    "UnitsWarning",
]
