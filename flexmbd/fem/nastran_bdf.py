"""Nastran bulk data (BDF) meshes: solid elements, grids, coordinate systems, sets, material.

Read: ``GRID`` (positions in ``CORD2R``/``CORD2C``/``CORD2S`` systems, chained),
``CTETRA`` (4/10), ``CHEXA`` (8/20), ``CPENTA`` (6/15), ``PSOLID`` + ``MAT1``
(one material), node sets from ``SET1`` (``SET1_<id>``), ``ASET``/``ASET1``
(``ASET``), ``BSET``/``BSET1`` (``BSET``), ``SPC1`` (``SPC1_<id>``) and
case-control ``SET n = ...`` (``SET_<n>``); a comment ``$ SET1 <id>: <name>``
(as `write_bdf` writes) also names a SET1. Units are those of the deck (flexmbd
expects SI; convert mm-t-s decks).  The mesh must be one cell type scikit-fem
supports (tetra, tetra10, hexahedron); ``CHEXA`` with 20 nodes and ``CPENTA``
are read but refused with the line of the first such element.  Other element
cards (shells, beams, rigid elements ``RBE2``/``RBE3``, ``CONM2``) raise
`MeshError` naming file and line unless listed in ``ignore``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError
from .material import Material, material_from_file
from .mesh import _UNSUPPORTED_HINT, _from_meshio, check_elements
from .nastran_cards import nastran_int, read_cards

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from numpy.typing import NDArray

    from .._typing import ArrayLike, StrPath
    from .mesh import FEMesh

__all__ = ["read_bdf", "write_bdf", "BDFModel"]

# Nastran element -> (meshio type by node count); Nastran node order equals VTK's except CHEXA20
_SOLIDS = {
    "CTETRA": {4: "tetra", 10: "tetra10"},
    "CHEXA": {8: "hexahedron", 20: "hexahedron20"},
    "CPENTA": {6: "wedge", 15: "wedge15"},
}
_HEX20_TO_VTK = list(range(12)) + [16, 17, 18, 19, 12, 13, 14, 15]
_SKIPPED = {
    "PARAM",
    "EIGRL",
    "EIGR",
    "SPC",
    "SPCADD",
    "LOAD",
    "FORCE",
    "MOMENT",
    "GRAV",
    "PLOAD4",
    "TEMP",
    "TEMPD",
    "MAT4",
    "EIGB",
    "INCLUDE",
    "SUPORT",
    "QSET1",
    "QSET",
    "SPOINT",
    "CSET1",
    "CSET",
    "DMIG",
    "DTI",
    "NLPARM",
    "TSTEP",
    "DAREA",
    "TABLED1",
    "RLOAD1",
    "RLOAD2",
    "FREQ1",
    "FREQ",
    "ECHOON",
    "ECHOOFF",
    "SESET",
    "SEELT",
}
_SET_NAME = re.compile(r"^\$\s*SET1\s+(\d+)\s*:\s*(\S+)\s*$")
_OTHER_ELEMENTS = {"RBE1", "RBE2", "RBE3", "RBAR", "RROD", "CONM1", "CONM2", "MPC"}


class BDFModel:
    """What `read_bdf` found.

    Attributes
    ----------
    mesh : FEMesh
        The solid mesh, with the deck's sets as named node sets (scikit-fem numbers).
    material : Material or None
        From the ``MAT1`` that the ``PSOLID`` cards reference (None without them).
    grid_ids : ndarray (n_nodes,)
        Nastran GRID id of each mesh node (scikit-fem order).
    """

    def __init__(
        self, mesh: FEMesh, material: Material | None, grid_ids: NDArray[np.int64]
    ) -> None:
        self.mesh, self.material, self.grid_ids = mesh, material, grid_ids

    def nodes_of(self, grids: ArrayLike) -> NDArray[np.int64]:
        """Mesh node numbers of Nastran GRID ids (MeshError for ids not in the mesh)."""
        grids = np.asarray(grids, dtype=np.int64)
        order = np.argsort(self.grid_ids)
        pos = np.searchsorted(self.grid_ids, grids, sorter=order)
        pos = np.minimum(pos, len(order) - 1)
        idx = order[pos]
        bad = self.grid_ids[idx] != grids
        if bad.any():
            raise MeshError(
                f"mesh {self.mesh.source!r}: GRID ids {grids[bad][:5].tolist()} are "
                "not nodes of the solid mesh"
            )
        return idx

    def __repr__(self):
        return f"BDFModel({self.mesh!r}, material={self.material})"


def _thru(card, values):
    """Expand a list of field strings with ``THRU`` ranges to integers."""
    out, vals, i = [], [v.strip().upper() for v in values if v.strip()], 0
    while i < len(vals):
        if vals[i] == "THRU" and out and i + 1 < len(vals):
            out.extend(range(out[-1] + 1, nastran_int(vals[i + 1], card) + 1))
            i += 2
            continue
        out.append(nastran_int(vals[i], card))
        i += 1
    return out


def _coord_systems(cards):
    """cid -> (kind, origin, R (3x3, columns = local axes in basic))."""
    raw = {c.int(2): c for c in cards if c.name in ("CORD2R", "CORD2C", "CORD2S")}
    done = {0: ("R", np.zeros(3), np.eye(3))}

    def get(cid, stack=()):
        if cid in done:
            return done[cid]
        if cid not in raw:
            where = stack[-1].where() if stack else "deck"
            raise MeshError(
                f"{where}: coordinate system {cid} is not defined (CORD2R/C/S); "
                "CORD1x systems are not supported"
            )
        c = raw[cid]
        if c in stack:
            raise MeshError(f"{c.where()}: coordinate systems reference each other in a cycle")
        rid = c.int(3, 0)
        p = np.array([[c.float(k, 0.0) for k in range(4 + 3 * j, 7 + 3 * j)] for j in range(3)])
        pts = np.array([_to_basic(get(rid, stack + (c,)), x) for x in p])
        a, b, cc = pts
        z = b - a
        x = (cc - a) - ((cc - a) @ z) / (z @ z) * z
        if np.linalg.norm(z) == 0 or np.linalg.norm(x) == 0:
            raise MeshError(
                f"{c.where()}: points A, B, C do not define axes (coincident or collinear)"
            )
        z, x = z / np.linalg.norm(z), x / np.linalg.norm(x)
        done[cid] = (c.name[-1], a, np.column_stack([x, np.cross(z, x), z]))
        return done[cid]

    return get


def _to_basic(cs, x):
    kind, o, R = cs
    x = np.asarray(x, float)
    if kind == "C":
        r, th, z = x[0], np.radians(x[1]), x[2]
        x = np.array([r * np.cos(th), r * np.sin(th), z])
    elif kind == "S":
        r, th, ph = x[0], np.radians(x[1]), np.radians(x[2])
        x = np.array([r * np.sin(th) * np.cos(ph), r * np.sin(th) * np.sin(ph), r * np.cos(th)])
    return o + R @ x


def _case_sets(path):
    """Case-control ``SET n = 1, 2, 5 THRU 9`` (continued with trailing commas)."""
    sets, cur, buf = {}, None, ""
    for _, line in read_cards(path, section="case"):
        s = line.split("$", 1)[0].strip()
        if cur is None:
            if not s.upper().startswith("SET") or "=" not in s:
                continue
            head, buf = s.split("=", 1)
            try:
                cur = int(head[3:].strip())
            except ValueError:
                continue
        else:
            buf += " " + s
        if not buf.rstrip().endswith(","):
            toks = buf.replace(",", " ").upper().split()
            ids, i = [], 0
            while i < len(toks):
                if toks[i] == "THRU" and ids and i + 1 < len(toks):
                    ids.extend(range(ids[-1] + 1, int(toks[i + 1]) + 1))
                    i += 2
                    continue
                if toks[i].lstrip("-").isdigit():
                    ids.append(int(toks[i]))
                i += 1
            sets[f"SET_{cur}"] = ids
            cur, buf = None, ""
    return sets


def read_bdf(path: StrPath, ignore: Sequence[str] = ()) -> BDFModel:
    """Read the solid mesh, node sets and material of a Nastran bulk-data file.

    Parameters
    ----------
    path : str or Path
        ``.bdf`` / ``.nas`` / ``.dat`` input file (bulk data, with or without
        executive and case control).
    ignore : iterable of str
        Card names to skip (e.g. ``("RBE2", "CONM2")``) instead of refusing them.

    Returns
    -------
    BDFModel
        ``.mesh`` (FEMesh with the sets), ``.material``, ``.grid_ids``.

    Raises
    ------
    MeshError
        Naming file and line: malformed fields, unknown elements, elements that
        reference undefined grids or properties, unsupported cell types, mixed
        cell types, more than one material.
    """
    cards = read_cards(path)
    ignore = {s.upper() for s in ignore}
    csys = _coord_systems(cards)
    grids, elems, props, mats, sets = {}, {}, {}, {}, {}
    for c in cards:
        if c.name in ignore or c.name in _SKIPPED or c.name.startswith("CORD2"):
            continue
        if c.name == "GRID":
            gid = c.int(2)
            if gid in grids:
                raise MeshError(f"{c.where()}: GRID {gid} defined twice")
            grids[gid] = (c.int(3, 0), [c.float(k, 0.0) for k in (4, 5, 6)], c)
        elif c.name in _SOLIDS:
            ids = [f.strip() for f in c.fields[2:]]
            while ids and not ids[-1]:
                ids.pop()
            if "" in ids:
                raise MeshError(
                    f"{c.where()}: blank grid field inside the connectivity; "
                    "midside nodes must be all present or all absent"
                )
            nodes = [c.int(4 + k) for k in range(len(ids))]
            ctype = _SOLIDS[c.name].get(len(nodes))
            if ctype is None:
                raise MeshError(
                    f"{c.where()}: {c.name} with {len(nodes)} grids; expected "
                    f"{sorted(_SOLIDS[c.name])}"
                )
            elems.setdefault(ctype, []).append((c.int(2), c.int(3), nodes, c))
        elif c.name == "PSOLID":
            props[c.int(2)] = (c.int(3), c)
        elif c.name == "MAT1":
            E, G, nu = c.float(3, 0.0), c.float(4, 0.0), c.float(5, 0.0)
            if not E and G and nu:
                E = 2 * (1 + nu) * G
            elif E and G and not c.field(5):
                nu = E / (2 * G) - 1
            mats[c.int(2)] = (E, nu, c.float(6, 0.0), c)
        elif c.name == "SET1":
            sets[f"SET1_{c.int(2)}"] = _thru(c, c.fields[1:])
        elif c.name in ("ASET1", "BSET1"):
            sets.setdefault(c.name[:4], []).extend(_thru(c, c.fields[1:]))
        elif c.name in ("ASET", "BSET"):
            sets.setdefault(c.name, []).extend(
                c.int(k) for k in range(2, 2 + len(c.fields), 2) if c.field(k)
            )
        elif c.name == "SPC1":
            sets.setdefault(f"SPC1_{c.int(2)}", []).extend(_thru(c, c.fields[2:]))
        elif c.name.startswith("CORD"):
            raise MeshError(
                f"{c.where()}: coordinate system card {c.name} is not supported; "
                "define it with CORD2R, CORD2C or CORD2S"
            )
        elif c.name.startswith("C") or c.name in _OTHER_ELEMENTS:
            raise MeshError(
                f"{c.where()}: element card {c.name} is not supported (solid CTETRA, "
                f"CHEXA, CPENTA only); remove it or pass ignore=({c.name!r},)"
            )
    if not elems:
        raise MeshError(f"Nastran file {str(path)!r}: no solid elements (CTETRA, CHEXA, CPENTA)")
    for ctype, lst in elems.items():
        if ctype not in ("tetra", "tetra10", "hexahedron"):
            c = lst[0][3]
            raise MeshError(f"{c.where()}: {_UNSUPPORTED_HINT[ctype]}")
    if len(elems) > 1:
        c = list(elems.values())[1][0][3]
        raise MeshError(
            f"{c.where()}: the deck mixes element types {sorted(elems)}; flexmbd "
            "needs one solid element type per body"
        )
    ctype, lst = next(iter(elems.items()))
    # positions in the basic system
    gid_sorted = np.array(sorted(grids), dtype=np.int64)
    X = np.array(
        [_to_basic(csys(grids[g][0], (grids[g][2],)), grids[g][1]) for g in gid_sorted]
    ).reshape(-1, 3)
    row = {int(g): i for i, g in enumerate(gid_sorted)}
    conn = np.empty((len(lst), len(lst[0][2])), dtype=np.int64)
    pids = set()
    for e, (_, pid, nodes, c) in enumerate(lst):
        try:
            conn[e] = [row[g] for g in nodes]
        except KeyError as exc:
            raise MeshError(f"{c.where()}: GRID {exc.args[0]} is not defined") from None
        if pid not in props:
            raise MeshError(f"{c.where()}: property {pid} is not defined (PSOLID)")
        pids.add(pid)
    material = None
    if props:
        mids = sorted({props[p][0] for p in pids})
        for p in pids:
            if props[p][0] not in mats:
                raise MeshError(f"{props[p][1].where()}: material {props[p][0]} is not a MAT1")
        vals = {mats[m][:3] for m in mids}
        if len(vals) > 1:
            raise MeshError(
                f"{mats[mids[1]][3].where()}: the elements use {len(vals)} different "
                "materials; flexmbd bodies have one material"
            )
        E, nu, rho, mc = mats[mids[0]]
        if not (E > 0 and -1 < nu < 0.5 and rho > 0):
            raise MeshError(
                f"{mc.where()}: MAT1 needs E > 0, -1 < nu < 0.5 and RHO > 0 (got E={E}"
                f", nu={nu}, rho={rho}); a dynamic model needs the density"
            )
        material = material_from_file(mc.where(), f"MAT1 {mids[0]}", E, nu, rho)
    import meshio

    used = np.unique(conn)
    sets.update(_case_sets(path))
    for line in open(path, errors="replace"):  # names that write_bdf leaves in comments
        mt = _SET_NAME.match(line)
        if mt and f"SET1_{mt.group(1)}" in sets:
            sets[mt.group(2)] = sets[f"SET1_{mt.group(1)}"]
    point_sets = {}
    for name, ids in sets.items():
        idx = [row[g] for g in ids if g in row]
        if idx:
            point_sets[name] = np.array(idx, dtype=np.int64)
    m = meshio.Mesh(X, [(ctype, conn)], point_sets=point_sets)
    fe = _from_meshio(m, str(path))
    check_elements(fe)
    # Nastran id of each scikit-fem node (match by position, as _from_meshio does)
    from scipy.spatial import cKDTree

    _, near = cKDTree(X[used]).query(fe.nodes)
    return BDFModel(fe, material, gid_sorted[used][near])


def write_bdf(
    path: StrPath | None,
    mesh: FEMesh,
    material: Material | None = None,
    node_sets: Mapping[str, ArrayLike] | None = None,
    title: str = "flexmbd",
) -> str:
    """Write an `FEMesh` (tetra, tetra10 or hexahedron) as Nastran bulk data (large field).

    GRID ids are node number + 1, element ids element number + 1, one ``PSOLID 1``
    and ``MAT1 1`` (when ``material`` is given), and every node set as a
    ``SET1`` (ids from 1 in the order of ``node_sets``, default the mesh's sets);
    a comment line before each SET1 names it. Coordinates in the basic system.
    """
    fe = mesh
    name = {"tetra": "CTETRA", "tetra10": "CTETRA", "hexahedron": "CHEXA"}.get(fe.cell_type)
    if name is None:
        raise MeshError(
            f"write_bdf: cell type {fe.cell_type!r} cannot be written as a Nastran "
            "solid (tetra, tetra10, hexahedron)"
        )
    cells = fe.meshio_cells()

    def large(card, vals):
        v = [
            f"{x:>16s}"
            if isinstance(x, str)
            else f"{x:16d}"
            if isinstance(x, (int, np.integer))
            else f"{x:16.9E}"
            for x in vals
        ]
        lines = []
        for k in range(0, max(len(v), 1), 4):
            lines.append(f"{(card + '*') if k == 0 else '*':8s}" + "".join(v[k : k + 4]))
        return "\n".join(lines)

    out = [f"$ {title}", "BEGIN BULK"]
    for i, x in enumerate(fe.nodes):
        out.append(large("GRID", [i + 1, 0, float(x[0]), float(x[1]), float(x[2])]))
    for e, c in enumerate(cells):
        out.append(large(name, [e + 1, 1] + [int(k) + 1 for k in c]))
    out.append(large("PSOLID", [1, 1]))
    if material is not None:
        out.append(
            large("MAT1", [1, float(material.E), "", float(material.nu), float(material.rho)])
        )
    for k, (nm, ids) in enumerate((fe.node_sets if node_sets is None else node_sets).items()):
        out.append(f"$ SET1 {k + 1}: {nm}")
        out.append(large("SET1", [k + 1] + [int(i) + 1 for i in ids]))
    out.append("ENDDATA")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
