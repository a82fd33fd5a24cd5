"""Abaqus solid element types: meshio cell names, node counts and face tables.

Abaqus and VTK/meshio share the node order of C3D4, C3D10, C3D8 and C3D20
(corners, then edge mid-nodes in the same edge order), so connectivity is
taken as is.  Face numbers ``S1 .. S6`` follow the Abaqus element library
(corner nodes, 1-based); the mid-side nodes of quadratic elements belong to a
face when both ends of their edge do.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._typing import Array

__all__ = ["ELEMENTS", "element_info", "face_nodes", "hex20_to_hex27"]

# family -> (meshio cell type, number of nodes, allowed suffixes)
ELEMENTS = {
    "C3D4": ("tetra", 4, ("", "H")),
    "C3D10": ("tetra10", 10, ("", "H", "M", "MH", "HS", "I", "T")),
    "C3D8": ("hexahedron", 8, ("", "R", "I", "H", "RH", "IH", "HT", "T", "RT", "S")),
    "C3D20": ("hexahedron20", 20, ("", "R", "H", "RH", "T", "RT", "HT")),
    "C3D6": ("wedge", 6, ("", "H", "T")),
    "C3D15": ("wedge15", 15, ("", "H", "V")),
}

_FACES = {  # corner nodes of each face, 1-based
    "tetra": ((1, 2, 3), (1, 4, 2), (2, 4, 3), (3, 4, 1)),
    "hexahedron": (
        (1, 2, 3, 4),
        (5, 8, 7, 6),
        (1, 5, 6, 2),
        (2, 6, 7, 3),
        (3, 7, 8, 4),
        (4, 8, 5, 1),
    ),
    "wedge": ((1, 2, 3), (4, 6, 5), (1, 4, 5, 2), (2, 5, 6, 3), (3, 6, 4, 1)),
}
_EDGES = {  # mid-node -> edge ends, 1-based
    "tetra10": {5: (1, 2), 6: (2, 3), 7: (3, 1), 8: (1, 4), 9: (2, 4), 10: (3, 4)},
    "hexahedron20": {
        9: (1, 2),
        10: (2, 3),
        11: (3, 4),
        12: (4, 1),
        13: (5, 6),
        14: (6, 7),
        15: (7, 8),
        16: (8, 5),
        17: (1, 5),
        18: (2, 6),
        19: (3, 7),
        20: (4, 8),
    },
    "wedge15": {
        7: (1, 2),
        8: (2, 3),
        9: (3, 1),
        10: (4, 5),
        11: (5, 6),
        12: (6, 4),
        13: (1, 4),
        14: (2, 5),
        15: (3, 6),
    },
}
_LINEAR = {"tetra10": "tetra", "hexahedron20": "hexahedron", "wedge15": "wedge"}
_PATTERN = re.compile(r"^(C3D(?:4|6|8|10|15|20))([A-Z]*)$")


def element_info(etype: str) -> tuple[str, int] | None:
    """(meshio cell type, node count) of an Abaqus element type, or None if unsupported."""
    m = _PATTERN.match(etype.upper())
    if not m or m.group(1) not in ELEMENTS:
        return None
    cell, n, suffixes = ELEMENTS[m.group(1)]
    return (cell, n) if m.group(2) in suffixes else None


def face_nodes(cell: str, face: int) -> list[int] | None:
    """0-based local node indices of face ``face`` (1-based, 'S<face>') of a meshio cell type;
    None if the element has no such face."""
    lin = _LINEAR.get(cell, cell)
    faces = _FACES[lin]
    if not 1 <= face <= len(faces):
        return None
    corners = faces[face - 1]
    mids = [k for k, (a, b) in _EDGES.get(cell, {}).items() if a in corners and b in corners]
    return [c - 1 for c in corners] + [k - 1 for k in sorted(mids)]


# VTK / meshio hexahedron27 face-centre nodes 20..25: faces x-, x+, y-, y+, z-, z+ (corners)
_HEX27_FACES = ((0, 3, 7, 4), (1, 2, 6, 5), (0, 1, 5, 4), (3, 2, 6, 7), (0, 1, 2, 3), (4, 5, 6, 7))
_HEX20_EDGES = (
    (0, 1),
    (1, 2),
    (2, 3),
    (3, 0),
    (4, 5),
    (5, 6),
    (6, 7),
    (7, 4),
    (0, 4),
    (1, 5),
    (2, 6),
    (3, 7),
)  # mid-nodes 8..19


def hex20_to_hex27(points: Array, conn: NDArray[np.int64]) -> tuple[Array, NDArray[np.int64]]:
    """Complete 20-node serendipity hexahedra (C3D20) to 27-node Lagrange hexahedra.

    The face-centre and centre nodes are placed where the serendipity geometry puts
    those points (face centre: ``-1/4 sum corners + 1/2 sum mid-edges`` of the face;
    centre: ``-1/4 sum corners + 1/4 sum mid-edges``), so the geometry is unchanged;
    face nodes are shared between neighbours.  The 27-node element interpolates
    displacements with the full triquadratic space (a superset of the serendipity
    one): flexmbd assembles it, not Abaqus' C3D20 itself.

    Returns ``(points (n + k, 3), conn27 (e, 27))``; old nodes keep their numbers.
    """
    points = np.asarray(points, float)
    conn = np.asarray(conn, np.int64)
    new, key_of = [], {}
    conn27 = np.empty((len(conn), 27), np.int64)
    conn27[:, :20] = conn
    edge_of = {frozenset(e): 8 + k for k, e in enumerate(_HEX20_EDGES)}
    for e, c in enumerate(conn):
        for f, face in enumerate(_HEX27_FACES):
            key = tuple(sorted(c[list(face)]))
            j = key_of.get(key)
            if j is None:
                mids = [edge_of[frozenset((face[i], face[(i + 1) % 4]))] for i in range(4)]
                x = -0.25 * points[c[list(face)]].sum(axis=0) + 0.5 * points[c[mids]].sum(axis=0)
                j = key_of[key] = len(points) + len(new)
                new.append(x)
            conn27[e, 20 + f] = j
        conn27[e, 26] = len(points) + len(new)
        new.append(-0.25 * points[c[:8]].sum(axis=0) + 0.25 * points[c[8:20]].sum(axis=0))
    return np.vstack([points] + ([np.array(new)] if new else [])), conn27
