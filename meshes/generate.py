"""Regenerate the shipped meshes with gmsh (``pip install gmsh``).

Run from the repository root: ``python meshes/generate.py``.  gmsh needs a
few GL/X libraries even headless (see docs/design/facts.rst: libglu1-mesa libgl1 libxcursor1
libxft2 libxinerama1 libgomp1 libopengl0); the meshes are shipped so users
never need it.

Files (SI units, metres):

- ``beam_hex.msh``    1.0 x 0.05 x 0.05 steel-beam block, 40 x 4 x 4 hexahedra (hex8);
- ``beam_tet10.msh``  the same beam, quadratic tetrahedra;
- ``rod_tet10.msh``   connecting rod: big-end bore r=25 mm at x=0, small-end bore
                      r=12 mm at x=0.20 m, 20 mm thick, web between (quadratic tets);
- ``plate_hex.inp``   0.4 x 0.3 x 0.01 plate, 20 x 15 x 1 hexahedra, Abaqus input
                      with node sets (written by meshio from the gmsh mesh).

Physical groups (node sets after import): beam: ``A`` (x=0 face), ``B`` (x=L
face); rod: ``big_bore``, ``small_bore``; plate: ``EDGE_X0``, ``CORNER``.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def _start(name):
    import gmsh

    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add(name)
    return gmsh


def beam(hex_=True, nx=40, ny=4, L=1.0, h=0.05):
    gmsh = _start("beam")
    occ = gmsh.model.occ
    box = occ.addBox(0, 0, 0, L, h, h)
    occ.synchronize()
    faces = gmsh.model.getBoundary([(3, box)], oriented=False)
    fa = fb = None
    for dim, tag in faces:
        x = occ.getCenterOfMass(dim, tag)[0]
        if abs(x) < 1e-9:
            fa = tag
        elif abs(x - L) < 1e-9:
            fb = tag
    if hex_:
        for dim, tag in gmsh.model.getEntities(1):
            lo = gmsh.model.getBoundingBox(dim, tag)
            n = nx if abs(lo[3] - lo[0]) > 0.5 * L else ny
            gmsh.model.mesh.setTransfiniteCurve(tag, n + 1)
        for dim, tag in gmsh.model.getEntities(2):
            gmsh.model.mesh.setTransfiniteSurface(tag)
            gmsh.model.mesh.setRecombine(dim, tag)
        gmsh.model.mesh.setTransfiniteVolume(box)
        gmsh.model.mesh.setRecombine(3, box)
    else:
        gmsh.option.setNumber("Mesh.MeshSizeMax", 0.025)
    gmsh.model.addPhysicalGroup(3, [box], name="body")
    gmsh.model.addPhysicalGroup(2, [fa], name="A")
    gmsh.model.addPhysicalGroup(2, [fb], name="B")
    gmsh.model.mesh.generate(3)
    if not hex_:
        gmsh.model.mesh.setOrder(2)
    out = HERE / ("beam_hex.msh" if hex_ else "beam_tet10.msh")
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    gmsh.write(str(out))
    gmsh.finalize()
    return out


def rod(R1=0.025, R2=0.012, L=0.20, t=0.02, size=0.006):
    gmsh = _start("rod")
    occ = gmsh.model.occ
    big = occ.addCylinder(0, 0, 0, 0, 0, t, 2.0 * R1)
    small = occ.addCylinder(L, 0, 0, 0, 0, t, 2.0 * R2)
    web = occ.addBox(0, -0.6 * R2 * 1.5, 0, L, 1.2 * R2 * 1.5, t)
    body, _ = occ.fuse([(3, big)], [(3, small), (3, web)])
    hole1 = occ.addCylinder(0, 0, -0.01, 0, 0, t + 0.02, R1)
    hole2 = occ.addCylinder(L, 0, -0.01, 0, 0, t + 0.02, R2)
    rodv, _ = occ.cut(body, [(3, hole1), (3, hole2)])
    occ.synchronize()
    vol = rodv[0][1]
    bores = {"big_bore": [], "small_bore": []}
    for dim, tag in gmsh.model.getBoundary(rodv, oriented=False):
        if gmsh.model.getType(dim, tag) != "Cylinder":
            continue
        xmin, ymin, _, xmax, ymax, _ = gmsh.model.getBoundingBox(dim, tag)
        cx, r = 0.5 * (xmin + xmax), 0.5 * (xmax - xmin)
        if abs(cx) < 1e-6 and abs(r - R1) < 1e-4:
            bores["big_bore"].append(tag)
        elif abs(cx - L) < 1e-6 and abs(r - R2) < 1e-4:
            bores["small_bore"].append(tag)
    gmsh.option.setNumber("Mesh.MeshSizeMax", size)
    gmsh.option.setNumber("Mesh.MeshSizeMin", size / 3)
    gmsh.model.addPhysicalGroup(3, [vol], name="rod")
    for name, tags in bores.items():
        gmsh.model.addPhysicalGroup(2, tags, name=name)
    gmsh.model.mesh.generate(3)
    gmsh.model.mesh.setOrder(2)
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    out = HERE / "rod_tet10.msh"
    gmsh.write(str(out))
    gmsh.finalize()
    return out


def plate(nx=20, ny=15, a=0.4, b=0.3, t=0.01):
    import meshio
    import numpy as np
    import skfem
    from skfem.io.meshio import to_meshio

    m = skfem.MeshHex1.init_tensor(
        np.linspace(0, a, nx + 1), np.linspace(0, b, ny + 1), np.linspace(0, t, 2)
    )
    mio = to_meshio(m, encode_cell_data=False)  # scikit-fem's converter keeps hex order right
    x = mio.points
    mio = meshio.Mesh(
        x,
        mio.cells,
        point_sets={
            "EDGE_X0": np.nonzero(np.abs(x[:, 0]) < 1e-9)[0],
            "CORNER": np.nonzero((np.abs(x[:, 0] - a) < 1e-9) & (np.abs(x[:, 1] - b) < 1e-9))[0],
        },
    )
    out = HERE / "plate_hex.inp"
    meshio.write(str(out), mio, file_format="abaqus")
    return out


def main():
    for f in (beam(True), beam(False), rod(), plate()):
        print(f"wrote {f.relative_to(HERE.parent)} ({f.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
