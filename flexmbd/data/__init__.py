"""Example meshes shipped with flexmbd, found from any working directory.

>>> import flexmbd as fm
>>> fm.data.mesh("beam_hex").endswith("beam_hex.msh")
True
>>> "rod_simeon_hex27" in fm.data.meshes()
True

Meshes (SI units, metres; named node sets become interfaces):

* ``beam_hex``: 1.0 x 0.05 x 0.05 m beam along x, 40 x 4 x 4 hexahedra; faces
  ``A`` (x = 0) and ``B`` (x = 1);
* ``beam_tet10``: the same beam, quadratic tetrahedra (``A``, ``B``);
* ``rod_tet10``: connecting rod with bores ``big_bore`` (r = 25 mm at x = 0) and
  ``small_bore`` (r = 12 mm at x = 0.2 m), quadratic tetrahedra;
* ``plate_hex``: 0.4 x 0.3 x 0.01 m plate, Abaqus input with node sets
  ``EDGE_X0`` and ``CORNER``;
* ``rod_simeon_hex27``: Simeon's slider-crank rod, 0.3 m x 8 mm x 8 mm, 30
  quadratic hexahedra (the flagship's rod).

``meshes/generate.py`` in the repository regenerates the gmsh meshes.

:func:`abaqus_rotor` gives the files of a real Abaqus/CAE 2019 export (a steel rotor
disc of C3D8 hexahedra: input deck and ``*MATRIX GENERATE`` mass and stiffness
matrices; from Exudyn's test data, BSD licence in ``abaqus_rotor/LICENSE-EXUDYN.txt``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import MeshError

__all__ = ["mesh", "meshes", "abaqus_rotor"]

_DIR = Path(__file__).resolve().parent / "meshes"
_SUFFIXES = (".msh", ".vtu", ".inp", ".vtk", ".xdmf")


def meshes() -> list[str]:
    """Names of the shipped meshes (sorted), for :func:`mesh`."""
    return sorted(p.stem for p in _DIR.iterdir() if p.suffix in _SUFFIXES)


def mesh(name: str) -> str:
    """Path (str) of the shipped mesh ``name`` (with or without its file suffix).

    The path can be given wherever a mesh file is read (``fm.fem.reduce``,
    ``fm.FlexibleBody.from_mesh``, ``meshio.read``). Unknown names raise
    :class:`~flexmbd.errors.MeshError` listing the available ones.
    """
    stem = Path(str(name)).stem if Path(str(name)).suffix in _SUFFIXES else str(name)
    for p in sorted(_DIR.glob(f"{stem}.*")):
        if p.suffix in _SUFFIXES:
            return str(p)
    raise MeshError(
        f"no shipped mesh named {name!r}; available: {', '.join(meshes())} "
        f"(or give the path of your own mesh file)"
    )


def abaqus_rotor() -> dict[str, str]:
    """Paths (str) of the shipped Abaqus rotor export: ``{"inp", "mass", "stiffness"}``.

    The deck is in SI units (m, kg, s); the matrices use 3 DOFs per node (115 nodes),
    the mass matrix lumped. Read them with :func:`flexmbd.fem.read_abaqus` and
    :func:`flexmbd.fem.read_mtx`.
    """
    d = Path(__file__).resolve().parent / "abaqus_rotor"
    return {
        "inp": str(d / "rotorDiscTest.inp"),
        "mass": str(d / "rotorDiscTestMASS1.mtx"),
        "stiffness": str(d / "rotorDiscTestSTIF1.mtx"),
    }
