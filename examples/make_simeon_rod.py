"""Write the connecting-rod mesh of Simeon's flexible slider-crank: ``meshes/rod_simeon_hex27.vtu``.

The rod of the Test Set for IVP solvers problem ``crank`` (B. Simeon): a steel bar
0.30 m long between the joint centres with a square 8 mm x 8 mm cross-section.
Meshed as 30 x 1 x 1 quadratic hexahedra (27 nodes; 549 nodes, 1647 DOF), the bar
axis along x from x = 0 (crank-pin end, face ``A``) to x = 0.30 m (slider end,
face ``B``), the cross-section centred on the axis (y, z in [-4, 4] mm). Quadratic
hexahedra do not lock in bending: the free-free bending frequencies of this mesh
are within 0.3 % of Euler-Bernoulli beam theory (459.5 Hz vs 460.6 Hz for the first
pair).

Built with scikit-fem (tensor mesh, then ``MeshHex2``) and written with meshio
through scikit-fem's converter (VTK node order for the 27-node hexahedron). VTU
files carry no node sets: the examples pick the end faces with
``fm.fem.Plane``. Run from anywhere: ``python examples/make_simeon_rod.py``.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MESH = HERE.parent / "meshes" / "rod_simeon_hex27.vtu"
LENGTH, WIDTH, HEIGHT = 0.30, 0.008, 0.008  # m: x (axis), z (out of plane), y (in plane)


def rod_mesh(nx=30, ny=1, nz=1):
    """The rod as a scikit-fem ``MeshHex2`` (quadratic hexahedra)."""
    import skfem

    m1 = skfem.MeshHex1.init_tensor(
        np.linspace(0.0, LENGTH, nx + 1),
        np.linspace(-HEIGHT / 2, HEIGHT / 2, ny + 1),
        np.linspace(-WIDTH / 2, WIDTH / 2, nz + 1),
    )
    return skfem.MeshHex2.from_mesh(m1)


def write(path=MESH, nx=30, ny=1, nz=1):
    """Write the mesh file (VTU, binary) and return its path."""
    from flexmbd.fem.mesh import FEMesh

    mm = FEMesh(rod_mesh(nx, ny, nz)).to_meshio()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mm.write(str(path))
    return path


def main(path=MESH):
    """Write the mesh to ``path`` (default: the shipped file) and read it back."""
    path = write(path)
    from flexmbd.fem import read_mesh

    fe = read_mesh(path)
    print(f"wrote {path} ({path.stat().st_size / 1024:.1f} KiB): {fe}")
    return path


if __name__ == "__main__":
    main()
