"""Finite-element front end and model reduction for flexible bodies.

Pipeline: mesh (meshio / scikit-fem) -> `FEModel` (K, M) -> a mode-set strategy
-> `reduce` -> `ReducedBody` (modes, floating-frame invariants, stress modes,
unit geometric stiffness) <-> ``.npz``.  `compare_modes` ranks strategies
against the full finite-element model.
"""

import sys as _sys
import types as _types

from .._lazy import lazy_names as _lazy_names

# Names whose modules are imported on first use (PEP 562): a script that only builds a
# `ReducedBody` from matrices does not import the mesh readers, the Abaqus and Nastran
# front ends, the mode-set strategies and their scipy.linalg / scipy.sparse.linalg.
_LAZY = {
    "nastran": (".nastran", None),  # fm.fem.nastran.read_bdf, read_op4, read_dmig, ...
    "AbaqusModel": (".abaqus", "AbaqusModel"),
    "read_abaqus": (".abaqus", "read_abaqus"),
    "read_mtx": (".abaqus_mtx", "read_mtx"),
    "compare_modes": (".compare", "compare_modes"),
    "Interface": (".interfaces", "Interface"),
    "Material": (".material", "Material"),
    "FEMesh": (".mesh", "FEMesh"),
    "read_mesh": (".meshfile", "read_mesh"),
    "FEModel": (".model", "FEModel"),
    "reduce": (".reduce", "reduce"),
    "ReducedBody": (".reduced", "ReducedBody"),
    **{n: (".selectors", n) for n in ("Box", "Cylinder", "Nearest", "Nodes", "NodeSet")},
    **{n: (".selectors", n) for n in ("Plane", "Sphere")},
    **{
        n: (".strategies", n)
        for n in ("CraigBampton", "NormalModes", "PointLoad", "RitzVectors", "StaticCorrection")
    },
    "stress_history": (".stress_history", "stress_history"),
    "UnitsWarning": (".units", "UnitsWarning"),
}


__getattr__, __dir__ = _lazy_names(__name__, _LAZY)


class _Package(_types.ModuleType):
    """This package's module type: the import system binds an imported submodule as an
    attribute of its package, which must not replace the function of the same name
    (``reduce``, ``stress_history``) that the package exports."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _LAZY and _LAZY[name][1] == name and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


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
