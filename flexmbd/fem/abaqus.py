"""Abaqus input decks -> `FEMesh` with named sets, and the deck's material.

`read_abaqus` reads what a modal / substructure model needs from an ``.inp``
file written by Abaqus/CAE or by hand:

- flat decks and part/instance/assembly decks (``*Part``, ``*Instance`` with
  its translation and rotation data lines, ``*Assembly``; nodes defined in the
  part or directly in the instance);
- ``*Node``, ``*Element`` of the solid types C3D4, C3D10 (M/H/...), C3D8
  (R/I/H/...), C3D20 (R/H), C3D6, C3D15 (see `flexmbd.fem.abaqus_elements`;
  scikit-fem assembles C3D4, C3D10 and C3D8; C3D20 with ``c3d20="hex27"``
  (completed to 27-node hexahedra of the same geometry), else `MeshError`;
  wedges raise `MeshError` when the mesh is built);
- ``*Nset``/``*Elset`` with ``generate``, set references, ``instance=`` and
  instance-qualified labels (``Part-1-1.17``); ``*Surface`` on element faces
  (``S1``..``S6``) or on nodes — each set and surface becomes a named node set
  usable as an interface (``fm.CraigBampton(8, interfaces={"left": "BCleft"})``);
- ``*Material`` with ``*Density`` and isotropic ``*Elastic``, and
  ``*Solid Section`` assigning them.

Set names: assembly-level and flat-deck sets keep their names; a set defined
in a part or an instance is available as ``"<instance>.<set>"`` and, when the
deck has a single instance, also under its own name (unless an assembly set
has that name).  Element sets and surfaces are node sets too (the nodes of
their elements or faces); Abaqus' ``internal`` sets are kept out of the node
sets (they remain in `AbaqusModel.element_sets`).

Node order: the mesh's node ``i`` is `AbaqusModel.labels` ``[i]`` =
(instance, label) — instances in deck order, nodes in label order within each,
which is also the order of Abaqus' global DOF numbering used by
``*MATRIX OUTPUT`` (see `flexmbd.fem.abaqus_mtx`).

meshio also reads ``.inp`` files, but loses the instance transforms, surfaces,
materials and line numbers; this reader hands meshio only the final points and
cells, to reuse the scikit-fem conversion of `flexmbd.fem.mesh`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError
from .abaqus_elements import face_nodes, hex20_to_hex27
from .abaqus_parse import DeckParser, _ci
from .material import Material, material_from_file
from .mesh import _from_meshio_mapped
from .units import unit_system

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._typing import StrPath

__all__ = ["AbaqusModel", "read_abaqus"]


@dataclass
class AbaqusModel:
    """What `read_abaqus` found in a deck (SI units).

    Attributes
    ----------
    mesh : FEMesh
        The solid mesh with every set and surface as a named node set.
    labels : list[tuple[str | None, int]]
        (instance, node label) of each mesh node (mesh order); instance None in flat decks.
    deck_labels : list[tuple[str | None, int]]
        Every node of the deck in Abaqus' internal order (instances in deck order, labels
        ascending; assembly-level nodes last), including nodes no solid element uses.
    materials : dict[str, Material]
        Every ``*Material`` with density and isotropic elasticity, SI.
    sections : list[tuple[str, str]]
        (element set, material name) of each ``*Solid Section``.
    element_sets : dict[str, ndarray]
        Element sets as mesh element numbers.
    surfaces : list[str]
        Names of the ``*Surface`` definitions (also node sets of the mesh).
    units : UnitSystem
        The unit system the deck was read in.
    source : str
        The file name.
    """

    mesh: object
    labels: list
    materials: dict
    sections: list
    element_sets: dict
    surfaces: list
    units: object
    source: str
    deck_labels: list = field(default_factory=list)

    @property
    def material(self) -> Material:
        """The material of the solid sections (one material per body), as an `fm.Material`."""
        used = list(dict.fromkeys(m for _, m in self.sections))
        if not used:
            used = list(self.materials)
        if len(used) != 1:
            raise MeshError(
                f"Abaqus deck {self.source!r}: "
                f"{'no material' if not used else 'several materials ' + str(used)} "
                "in the solid sections; flexmbd assembles one material per body — pass "
                "material=fm.Material(...) or split the body"
            )
        key = used[0]
        mat = self.materials.get(key) or self.materials.get(_ci(self.materials, key))
        if mat is None:
            raise MeshError(
                f"Abaqus deck {self.source!r}: material {key!r} of the solid section "
                "has no *Density and isotropic *Elastic data"
            )
        return mat

    @property
    def node_sets(self) -> dict[str, NDArray[np.int64]]:
        return self.mesh.node_sets

    def node_index(self) -> dict[int, int]:
        """dict (instance, label) -> mesh node number."""
        return {k: i for i, k in enumerate(self.labels)}

    def __repr__(self):
        return (
            f"AbaqusModel({self.source!r}: {self.mesh.n_nodes} nodes, "
            f"{self.mesh.n_elements} {self.mesh.cell_type} elements, "
            f"materials {sorted(self.materials)}, node sets {sorted(self.mesh.node_sets)}, "
            f"units {self.units.name})"
        )


def _rotate(x, a, b, angle_deg):
    """Rotate points x (n, 3) by angle about the axis through a and b (Rodrigues)."""
    k = b - a
    nk = np.linalg.norm(k)
    if nk == 0:
        return x
    k = k / nk
    th = math.radians(angle_deg)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    R = np.eye(3) + math.sin(th) * K + (1 - math.cos(th)) * K @ K
    return (x - a) @ R.T + a


class _Reader(DeckParser):
    """The parsed deck turned into an `AbaqusModel` (`build`)."""

    def _scopes(self):
        """[(instance name or None, container, transform)] in deck order."""
        if not self.instances:
            return [(None, self.top, None)]
        out = []
        for name, inst in self.instances.items():
            if inst.own.nodes:
                cont = inst.own
            else:
                key = _ci(self.parts, inst.part)
                if key is None:
                    raise MeshError(
                        f"{inst.where}: instance {name!r} refers to part "
                        f"{inst.part!r}, which is not defined"
                    )
                cont = self.parts[key]
            out.append((name, cont, inst))
        return out

    def build(self):
        scopes = self._scopes()
        labels, points, node_of = [], [], {}
        for iname, cont, inst in scopes:
            labs = sorted(cont.nodes)
            x = np.array([cont.nodes[k] for k in labs], float).reshape(-1, 3)
            if inst is not None:
                x = x + inst.translation
                if inst.rotation is not None:
                    x = _rotate(x, *inst.rotation)
            for k in labs:
                node_of[(iname, k)] = len(labels)
                labels.append((iname, k))
            points.append(x)
        for lab in sorted(self.assembly.nodes):  # reference points etc. (not in the mesh)
            node_of[(None, lab)] = len(labels)
            labels.append((None, lab))
            points.append(np.array([self.assembly.nodes[lab]], float))
        points = np.concatenate(points) if points else np.zeros((0, 3))
        deck_labels = list(labels)
        if not len(points):
            raise MeshError(f"{self.path}: no *Node data; not a mesh deck")
        # elements
        cells, conn, elem_of, ewhere = [], [], {}, []
        for iname, cont, _ in scopes:
            for lab, (cell, nodes, w) in cont.elements.items():
                try:
                    conn.append([node_of[(iname, n)] for n in nodes])
                except KeyError:
                    missing = [n for n in nodes if (iname, n) not in node_of]
                    raise MeshError(
                        f"{w}: element {lab} uses undefined node(s) {missing[:5]}"
                    ) from None
                elem_of[(iname, lab)] = len(cells)
                cells.append(cell)
                ewhere.append(w)
        if not cells:
            raise MeshError(f"{self.path}: no solid *Element data; flexmbd needs a volume mesh")
        kinds = list(dict.fromkeys(cells))
        if len(kinds) > 1:
            i = cells.index(kinds[1])
            raise MeshError(
                f"{ewhere[i]}: element cell type {kinds[1]!r} mixed with "
                f"{kinds[0]!r}; scikit-fem needs one element type per body"
            )
        conn = np.array(conn, dtype=np.int64)
        # sets -> global
        nsets, esets, internal = {}, {}, set()

        def glob(kind, members, scope, w, name):
            """Global (0-based) indices of a set's ``(instance, label)`` members."""
            table = node_of if kind == "node" else elem_of
            out = []
            for inst, lab in members:
                key = (inst if inst is not None else scope, lab)
                if key not in table:
                    what = (
                        f"node {lab} {'of instance ' + repr(key[0]) if key[0] else ''} "
                        "which is not defined"
                        if kind == "node"
                        else f"element {lab} which is not a solid element of the mesh"
                    )
                    raise MeshError(f"{w}: {kind} set {name!r} lists {what}")
                out.append(table[key])
            return out

        assembly_names = {
            k.upper()
            for k in list(self.assembly.nsets)
            + list(self.assembly.elsets)
            + list(self.assembly.surfaces)
        }
        single = len(scopes) == 1
        containers = [(iname, cont) for iname, cont, _ in scopes]
        if self.instances:
            containers.append((None, self.assembly))
        for iname, cont in containers:
            prefix = f"{iname}." if iname is not None and cont is not self.assembly else ""
            plain = cont is self.assembly or iname is None or single

            def put(table, name, value, cont=cont, prefix=prefix, plain=plain, iname=iname):
                if prefix:
                    table[prefix + name] = value
                if plain and (
                    cont is self.assembly or iname is None or name.upper() not in assembly_names
                ):
                    table[name] = value

            for name, members in cont.nsets.items():
                put(
                    nsets,
                    name,
                    glob(
                        "node", members, iname, cont.set_where.get(("node", name), self.path), name
                    ),
                )
                if name in cont.internal:
                    internal.update({prefix + name, name})
            for name, members in cont.elsets.items():
                put(
                    esets,
                    name,
                    glob(
                        "element",
                        members,
                        iname,
                        cont.set_where.get(("element", name), self.path),
                        name,
                    ),
                )
                if name in cont.internal:
                    internal.update({prefix + name, name})
            for name, (stype, items, _) in cont.surfaces.items():
                put(
                    nsets,
                    name,
                    self._surface_nodes(
                        name, stype, items, cont, iname, node_of, elem_of, cells, conn
                    ),
                )
        # element sets as node sets (nodes of their elements)
        node_sets = {
            k: np.unique(np.asarray(v, np.int64)) for k, v in nsets.items() if k not in internal
        }
        element_sets = {k: np.unique(np.asarray(v, np.int64)) for k, v in esets.items()}
        for k, v in element_sets.items():
            if k in internal:
                continue
            nodes = np.unique(conn[v].ravel()) if len(v) else np.zeros(0, np.int64)
            node_sets[k] = np.union1d(node_sets[k], nodes) if k in node_sets else nodes
        surfaces = [k for iname, cont in containers for k in cont.surfaces]
        # units
        us = self.units
        points = points * us.length
        materials = self._materials()
        sections = []
        for _, cont in containers:
            for elset, mat, w in cont.sections:
                if _ci(self.materials_raw, mat) is None:
                    raise MeshError(
                        f"{w}: *Solid Section refers to material {mat!r}, which "
                        f"is not defined; materials: {sorted(self.materials_raw)}"
                    )
                if _ci(cont.elsets, elset) is None and _ci(self.assembly.elsets, elset) is None:
                    raise MeshError(
                        f"{w}: *Solid Section refers to element set {elset!r}, which is not defined"
                    )
                sections.append((elset, _ci(self.materials_raw, mat)))
        # mesh through meshio -> scikit-fem (compacting nodes not used by elements)
        import meshio

        cell = kinds[0]
        if cell == "hexahedron20" and self.c3d20 == "hex27":
            n0 = len(points)
            points, conn = hex20_to_hex27(points, conn)
            labels = labels + [(None, -(k + 1)) for k in range(len(points) - n0)]
            cell = "hexahedron27"
        elif cell == "hexahedron20":
            raise MeshError(
                f"{ewhere[0]}: C3D20 (20-node hexahedra, meshio 'hexahedron20') are "
                "not supported by scikit-fem; pass c3d20='hex27' to complete them "
                "to 27-node hexahedra (same geometry; generated nodes get negative "
                "labels), or remesh with 27-node or 8-node hexahedra"
            )
        m = meshio.Mesh(points, [(cell, conn)])
        try:
            fe, file2sk = _from_meshio_mapped(m, self.path)
        except MeshError as exc:
            raise MeshError(f"{ewhere[0]}: {exc}") from exc
        sk_labels = [None] * fe.n_nodes
        for i, k in enumerate(labels):
            if file2sk[i] >= 0:
                sk_labels[file2sk[i]] = k
        sets = {}
        for k, v in node_sets.items():
            mapped = file2sk[v]
            sets[k] = np.unique(mapped[mapped >= 0])
        fe.node_sets.update({k: v for k, v in sets.items() if len(v)})
        # skfem keeps the element order of the cells it was given
        return AbaqusModel(
            mesh=fe,
            labels=sk_labels,
            materials=materials,
            sections=sections,
            element_sets=element_sets,
            surfaces=surfaces,
            units=us,
            source=self.path,
            deck_labels=deck_labels,
        )

    def _surface_nodes(self, name, stype, items, cont, iname, node_of, elem_of, cells, conn):
        out = []
        for ref, face, w in items:
            if stype == "NODE":
                key = _ci(cont.nsets, ref)
                if key is not None:
                    members = [(iname if i is None else i, lab) for i, lab in cont.nsets[key]]
                else:
                    members = [self._ref_label(ref, iname, w, "node")]
                for k in members:
                    if k not in node_of:
                        raise MeshError(f"{w}: surface {name!r}: node {k[1]} is not defined")
                    out.append(node_of[k])
                continue
            key = _ci(cont.elsets, ref)
            if key is not None:
                members = [(iname if i is None else i, lab) for i, lab in cont.elsets[key]]
            else:
                members = [self._ref_label(ref, iname, w, "element")]
            if not (face.startswith("S") and face[1:].isdigit()):
                raise MeshError(
                    f"{w}: surface {name!r}: face {face!r} is not supported; use "
                    "S1..S6 (element faces) or TYPE=NODE"
                )
            for k in members:
                e = elem_of.get(k)
                if e is None:
                    raise MeshError(f"{w}: surface {name!r}: element {k[1]} is not defined")
                loc = face_nodes(cells[e], int(face[1:]))
                if loc is None:
                    raise MeshError(
                        f"{w}: surface {name!r}: element {k[1]} ({cells[e]}) has no face {face}"
                    )
                out += conn[e, loc].tolist()
        return out

    def _ref_label(self, ref, iname, w, kind):
        head, dot, tail = ref.rpartition(".")
        if dot and tail.isdigit() and head in self.instances:
            return (head, int(tail))
        try:
            return (iname, int(ref))
        except ValueError:
            raise MeshError(
                f"{w}: {ref!r} is neither a {kind} label nor a {kind} set defined above"
            ) from None

    def _materials(self):
        us = self.units
        out = {}
        for name, d in self.materials_raw.items():
            if "aniso" in d:
                continue  # reported if a section uses it (AbaqusModel.material)
            if "rho" not in d or "E" not in d:
                continue
            try:
                out[name] = material_from_file(
                    f"{self.path}:{d['where'].rsplit(':', 1)[-1]}",
                    name,
                    d["E"][0],
                    d["nu"][0],
                    d["rho"][0],
                    us,
                )
            except MeshError as exc:
                raise MeshError(f"{d['E'][1]}: {exc}") from exc
        return out


def read_abaqus(path: StrPath, units: str = "SI", c3d20: str | None = None) -> AbaqusModel:
    """Read an Abaqus input deck into an `AbaqusModel` (mesh, sets, material).

    Parameters
    ----------
    path : str | Path
        The ``.inp`` file.
    units : str | UnitSystem
        The consistent unit system the deck is written in (``"SI"``,
        ``"mm-t-s"``, ``"mm-kg-ms"``, ``"mm-kg-s"``; see `flexmbd.fem.units`).
        Coordinates, densities and moduli are converted to SI; a material
        outside the range of engineering solids after conversion raises a
        `UnitsWarning` naming the file and line.
    c3d20 : None | "hex27"
        C3D20 elements: None raises `MeshError` (scikit-fem has no 20-node
        hexahedron); ``"hex27"`` completes them to 27-node hexahedra with the
        same geometry (`flexmbd.fem.abaqus_elements.hex20_to_hex27`; generated
        nodes get negative labels) — flexmbd's own assembly, not Abaqus' matrices.

    Returns
    -------
    AbaqusModel
        ``.mesh`` (FEMesh, SI, named node sets), ``.material`` (fm.Material,
        SI), ``.labels`` (Abaqus node of each mesh node).

    Raises
    ------
    MeshError
        Missing file, malformed line, unknown element type, undefined set member,
        section or material — the message starts with ``file:line``.

    Examples
    --------
    >>> deck = read_abaqus("rotorDiscTest.inp")              # doctest: +SKIP
    >>> body = fm.fem.reduce(deck.mesh, deck.material,        # doctest: +SKIP
    ...                      fm.CraigBampton(8, interfaces={"left": "BCleft"}))
    """
    us = unit_system(units, f"Abaqus deck {str(path)!r}")
    if c3d20 not in (None, "hex27"):
        raise MeshError(f"read_abaqus: c3d20={c3d20!r}; use None or 'hex27'")
    reader = _Reader(path, us)
    reader.c3d20 = c3d20
    return reader.run().build()
