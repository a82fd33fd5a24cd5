"""Abaqus input decks -> `FEMesh` with named sets, and the deck's material.

`read_abaqus` reads what a modal / substructure model needs from an ``.inp``
file written by Abaqus/CAE or by hand:

- flat decks and part/instance/assembly decks (``*Part``, ``*Instance`` with
  its translation and rotation data lines, ``*Assembly``; nodes defined in the
  part or directly in the instance);
- ``*Node``, ``*Element`` of the solid types C3D4, C3D10 (M/H/...), C3D8
  (R/I/H/...), C3D20 (R/H), C3D6, C3D15 (see `flexmbd.fem.abaqus_elements`;
  scikit-fem assembles C3D4, C3D10 and C3D8 — C3D20 and wedges raise
  `MeshError` when the mesh is built);
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

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import MeshError
from .abaqus_deck import read_blocks, where
from .abaqus_elements import element_info, face_nodes
from .material import Material
from .units import check_magnitudes, unit_system

__all__ = ["AbaqusModel", "read_abaqus"]


@dataclass
class _Container:
    """Nodes, elements and sets of a part, an instance's own mesh or a flat deck."""

    name: str
    nodes: dict = field(default_factory=dict)  # label -> (x, y, z)
    node_where: dict = field(default_factory=dict)
    elements: dict = field(default_factory=dict)  # label -> (cell, [node labels], where)
    nsets: dict = field(default_factory=dict)  # name -> list[(inst, label)]; inst None = local
    elsets: dict = field(default_factory=dict)
    internal: set = field(default_factory=set)
    surfaces: dict = field(default_factory=dict)  # name -> list[(inst, node label)]
    sections: list = field(default_factory=list)  # (elset refs, material, where)


@dataclass
class _Instance:
    name: str
    part: str
    where: str
    own: _Container
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: tuple = None  # (a, b, angle_deg)


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
    def material(self):
        """The material of the solid sections (one material per body), as an `fm.Material`."""
        used = list(dict.fromkeys(m for _, m in self.sections))
        if not used:
            used = list(self.materials)
        if len(used) != 1:
            raise MeshError(
                f"Abaqus deck {self.source!r}: {'no material' if not used else 'several materials ' + str(used)} "
                "in the solid sections; flexmbd assembles one material per body — pass "
                "material=fm.Material(...) or split the body")
        key = used[0]
        mat = self.materials.get(key) or self.materials.get(_ci(self.materials, key))
        if mat is None:
            raise MeshError(f"Abaqus deck {self.source!r}: material {key!r} of the solid section "
                            "has no *Density and isotropic *Elastic data")
        return mat

    @property
    def node_sets(self):
        return self.mesh.node_sets

    def node_index(self):
        """dict (instance, label) -> mesh node number."""
        return {k: i for i, k in enumerate(self.labels)}

    def __repr__(self):
        return (f"AbaqusModel({self.source!r}: {self.mesh.n_nodes} nodes, "
                f"{self.mesh.n_elements} {self.mesh.cell_type} elements, "
                f"materials {sorted(self.materials)}, node sets {sorted(self.mesh.node_sets)}, "
                f"units {self.units.name})")


def _ci(d, key):
    """Key of ``d`` equal to ``key`` ignoring case (Abaqus names are case-insensitive)."""
    up = key.upper()
    for k in d:
        if k.upper() == up:
            return k
    return None


def _int(text, blk, i, what):
    try:
        return int(text)
    except ValueError:
        try:
            v = float(text)
        except ValueError:
            v = None
        if v is not None and v == int(v):
            return int(v)
        raise MeshError(f"{blk.where(i)}: {what} {text!r} is not an integer") from None


def _float(text, blk, i, what):
    try:
        return float(text.replace("D", "E").replace("d", "e"))
    except ValueError:
        raise MeshError(f"{blk.where(i)}: {what} {text!r} is not a number") from None


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


class _Reader:
    def __init__(self, path, units):
        self.path = str(path)
        self.units = units
        self.top = _Container("")
        self.assembly = _Container("assembly")
        self.parts = {}
        self.instances = {}
        self.materials_raw = {}  # name -> {"rho": (v, where), "E": ..., "nu": ...}
        self.in_assembly = False
        self.in_step = False
        self.cur = self.top
        self.cur_inst = None
        self.cur_mat = None

    # ----------------------------------------------------------------- keyword dispatch
    def run(self):
        blocks = read_blocks(self.path)
        if not blocks:
            raise MeshError(f"{self.path}: no keywords; not an Abaqus input deck")
        for blk in blocks:
            kw = blk.keyword
            if kw == "STEP":
                self.in_step = True
            elif kw == "END STEP":
                self.in_step = False
            if self.in_step:
                continue
            handler = getattr(self, "kw_" + kw.replace(" ", "_"), None)
            if handler is not None:
                handler(blk)
        return self

    def kw_PART(self, blk):
        name = blk.param("NAME")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Part needs NAME=")
        self.cur = self.parts.setdefault(name, _Container(name))

    def kw_END_PART(self, blk):
        self.cur = self.top

    def kw_ASSEMBLY(self, blk):
        self.in_assembly = True
        self.cur = self.assembly

    def kw_END_ASSEMBLY(self, blk):
        self.in_assembly = False
        self.cur = self.top

    def kw_INSTANCE(self, blk):
        name, part = blk.param("NAME"), blk.param("PART")
        if not isinstance(name, str) or not isinstance(part, str):
            raise MeshError(f"{blk.where()}: *Instance needs NAME= and PART=")
        inst = _Instance(name, part, blk.where(), _Container(name))
        if blk.rows:
            r = blk.rows[0]
            if len(r) < 3:
                raise MeshError(f"{blk.where(0)}: instance translation needs 3 numbers")
            inst.translation = np.array([_float(v, blk, 0, "translation") for v in r[:3]])
        if len(blk.rows) > 1:
            r = blk.rows[1]
            if len(r) < 7:
                raise MeshError(f"{blk.where(1)}: instance rotation needs 7 numbers "
                                "(point a, point b, angle in degrees)")
            v = [_float(x, blk, 1, "rotation") for x in r[:7]]
            inst.rotation = (np.array(v[:3]), np.array(v[3:6]), v[6])
        self.instances[name] = inst
        self.cur_inst = inst
        self.cur = inst.own

    def kw_END_INSTANCE(self, blk):
        self.cur_inst = None
        self.cur = self.assembly

    def kw_NODE(self, blk):
        c = self.cur
        labels = []
        for i, r in enumerate(blk.rows):
            if len(r) < 3:
                raise MeshError(f"{blk.where(i)}: a *Node line needs a label and 2-3 "
                                f"coordinates, got {','.join(r)!r}")
            lab = _int(r[0], blk, i, "node label")
            x = [_float(v, blk, i, "coordinate") for v in r[1:4]]
            x += [0.0] * (3 - len(x))
            if lab in c.nodes:
                raise MeshError(f"{blk.where(i)}: node {lab} defined twice (first at "
                                f"{c.node_where[lab]})")
            c.nodes[lab] = x
            c.node_where[lab] = blk.where(i)
            labels.append(lab)
        nset = blk.param("NSET")
        if isinstance(nset, str):
            c.nsets.setdefault(nset, []).extend((None, lab) for lab in labels)

    def kw_ELEMENT(self, blk):
        etype = blk.param("TYPE")
        if not isinstance(etype, str):
            raise MeshError(f"{blk.where()}: *Element needs TYPE=")
        info = element_info(etype)
        if info is None:
            raise MeshError(
                f"{blk.where()}: element type {etype!r} is not supported; flexmbd reads the "
                "solid continuum elements C3D4, C3D10, C3D8, C3D20 (and their H/R/I/M "
                "variants), C3D6, C3D15 — mesh the body with these")
        cell, nn = info
        c = self.cur
        labels, acc, start = [], [], 0
        for i, r in enumerate(blk.rows):
            if not acc:
                start = i
            acc += [v for v in r if v != ""]
            if len(acc) < nn + 1:
                continue
            if len(acc) > nn + 1:
                raise MeshError(f"{blk.where(start)}: element of type {etype} has "
                                f"{len(acc) - 1} nodes, expected {nn}")
            lab = _int(acc[0], blk, start, "element label")
            conn = [_int(v, blk, start, "node label") for v in acc[1:]]
            if lab in c.elements:
                raise MeshError(f"{blk.where(start)}: element {lab} defined twice")
            c.elements[lab] = (cell, conn, blk.where(start))
            labels.append(lab)
            acc = []
        if acc:
            raise MeshError(f"{blk.where(start)}: element of type {etype} has {len(acc) - 1} "
                            f"nodes, expected {nn} (truncated line?)")
        elset = blk.param("ELSET")
        if isinstance(elset, str):
            c.elsets.setdefault(elset, []).extend((None, lab) for lab in labels)

    def _set_members(self, blk, kind):
        """Members of an *Nset / *Elset block as (instance or None, label) pairs."""
        inst = blk.param("INSTANCE")
        inst = inst if isinstance(inst, str) else None
        if inst is not None and inst not in self.instances:
            raise MeshError(f"{blk.where()}: instance {inst!r} is not defined before this set; "
                            f"instances: {sorted(self.instances)}")
        table = self.cur.nsets if kind == "node" else self.cur.elsets
        out = []
        if blk.flag("GENERATE"):
            for i, r in enumerate(blk.rows):
                vals = [_int(v, blk, i, "generate bound") for v in r if v != ""]
                if len(vals) not in (2, 3):
                    raise MeshError(f"{blk.where(i)}: generate needs first, last[, step]")
                a, b, s = vals[0], vals[1], vals[2] if len(vals) == 3 else 1
                if s <= 0 or b < a:
                    raise MeshError(f"{blk.where(i)}: generate {a}, {b}, {s}: need first <= "
                                    "last and step > 0")
                out += [(inst, k) for k in range(a, b + 1, s)]
            return out
        for i, r in enumerate(blk.rows):
            for tok in r:
                if tok == "":
                    continue
                try:
                    out.append((inst, int(tok)))
                    continue
                except ValueError:
                    pass
                head, dot, tail = tok.rpartition(".")
                if dot and tail.isdigit() and head in self.instances:
                    out.append((head, int(tail)))
                    continue
                key = _ci(table, tok)
                if key is None and inst is None and self.cur is self.assembly:
                    key = _ci(self.assembly.nsets if kind == "node" else self.assembly.elsets,
                              tok)
                if key is None:
                    raise MeshError(f"{blk.where(i)}: {kind} set member {tok!r} is neither a "
                                    f"label nor a set defined above")
                out += [(inst if m[0] is None else m[0], m[1]) for m in table[key]]
        return out

    def kw_NSET(self, blk):
        name = blk.param("NSET")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Nset needs NSET=")
        self.cur.nsets.setdefault(name, []).extend(self._set_members(blk, "node"))
        if blk.flag("INTERNAL"):
            self.cur.internal.add(name)

    def kw_ELSET(self, blk):
        name = blk.param("ELSET")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Elset needs ELSET=")
        self.cur.elsets.setdefault(name, []).extend(self._set_members(blk, "element"))
        if blk.flag("INTERNAL"):
            self.cur.internal.add(name)

    def kw_SURFACE(self, blk):
        name = blk.param("NAME")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Surface needs NAME=")
        stype = str(blk.param("TYPE", "ELEMENT")).upper()
        if stype not in ("ELEMENT", "NODE"):
            raise MeshError(f"{blk.where()}: *Surface TYPE={stype} is not supported (ELEMENT "
                            "or NODE); define the interface with a node set")
        items = []
        for i, r in enumerate(blk.rows):
            if not r or r[0] == "":
                continue
            items.append((r[0], r[1].upper() if len(r) > 1 and r[1] else "", blk.where(i)))
        self.cur.surfaces[name] = (stype, items, blk.where())

    def kw_SOLID_SECTION(self, blk):
        elset, mat = blk.param("ELSET"), blk.param("MATERIAL")
        if not isinstance(elset, str) or not isinstance(mat, str):
            raise MeshError(f"{blk.where()}: *Solid Section needs ELSET= and MATERIAL=")
        self.cur.sections.append((elset, mat, blk.where()))

    def kw_MATERIAL(self, blk):
        name = blk.param("NAME")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Material needs NAME=")
        self.cur_mat = self.materials_raw.setdefault(name, {"where": blk.where()})

    def _material_row(self, blk, n, what):
        if self.cur_mat is None:
            raise MeshError(f"{blk.where()}: *{blk.keyword.title()} outside a *Material")
        if not blk.rows or len([v for v in blk.rows[0] if v != ""]) < n:
            raise MeshError(f"{blk.where()}: *{blk.keyword.title()} needs {what} on the next "
                            "line")
        return [_float(v, blk, 0, what) for v in blk.rows[0][:n]], blk.where(0)

    def kw_DENSITY(self, blk):
        (rho,), w = self._material_row(blk, 1, "the density")
        self.cur_mat["rho"] = (rho, w)

    def kw_ELASTIC(self, blk):
        etype = str(blk.param("TYPE", "ISOTROPIC")).upper()
        if etype != "ISOTROPIC":
            self.cur_mat["aniso"] = (etype, blk.where())
            return
        (E, nu), w = self._material_row(blk, 2, "E, nu")
        self.cur_mat["E"] = (E, w)
        self.cur_mat["nu"] = (nu, w)

    # ----------------------------------------------------------------- assembling the mesh
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
                    raise MeshError(f"{inst.where}: instance {name!r} refers to part "
                                    f"{inst.part!r}, which is not defined")
                cont = self.parts[key]
            out.append((name, cont, inst))
        return out

    def build(self):
        from .mesh import _from_meshio_mapped

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
                    raise MeshError(f"{w}: element {lab} uses undefined node(s) "
                                    f"{missing[:5]}") from None
                elem_of[(iname, lab)] = len(cells)
                cells.append(cell)
                ewhere.append(w)
        if not cells:
            raise MeshError(f"{self.path}: no solid *Element data; flexmbd needs a volume mesh")
        kinds = list(dict.fromkeys(cells))
        if len(kinds) > 1:
            i = cells.index(kinds[1])
            raise MeshError(f"{ewhere[i]}: element cell type {kinds[1]!r} mixed with "
                            f"{kinds[0]!r}; scikit-fem needs one element type per body")
        conn = np.array(conn, dtype=np.int64)
        # sets -> global
        nsets, esets, internal = {}, {}, set()

        def glob_nodes(members, scope, w, name):
            out = []
            for inst, lab in members:
                key = (inst if inst is not None else scope, lab)
                if key not in node_of:
                    raise MeshError(f"{w}: node set {name!r} lists node {lab} "
                                    f"{'of instance ' + repr(key[0]) if key[0] else ''} "
                                    "which is not defined")
                out.append(node_of[key])
            return out

        def glob_elems(members, scope, w, name):
            out = []
            for inst, lab in members:
                key = (inst if inst is not None else scope, lab)
                if key not in elem_of:
                    raise MeshError(f"{w}: element set {name!r} lists element {lab} which "
                                    "is not a solid element of the mesh")
                out.append(elem_of[key])
            return out

        assembly_names = {k.upper() for k in list(self.assembly.nsets) + list(self.assembly.elsets)
                          + list(self.assembly.surfaces)}
        single = len(scopes) == 1
        containers = [(iname, cont) for iname, cont, _ in scopes]
        if self.instances:
            containers.append((None, self.assembly))
        for iname, cont in containers:
            prefix = f"{iname}." if iname is not None and cont is not self.assembly else ""
            plain = cont is self.assembly or iname is None or single

            def put(table, name, value, cont=cont, prefix=prefix, plain=plain):
                if prefix:
                    table[prefix + name] = value
                if plain and (cont is self.assembly or iname is None
                              or name.upper() not in assembly_names):
                    table[name] = value
            for name, members in cont.nsets.items():
                put(nsets, name, glob_nodes(members, iname, self.path, name))
                if name in cont.internal:
                    internal.update({prefix + name, name})
            for name, members in cont.elsets.items():
                put(esets, name, glob_elems(members, iname, self.path, name))
                if name in cont.internal:
                    internal.update({prefix + name, name})
            for name, (stype, items, w) in cont.surfaces.items():
                put(nsets, name, self._surface_nodes(name, stype, items, cont, iname, node_of,
                                                     elem_of, cells, conn))
        # element sets as node sets (nodes of their elements)
        node_sets = {k: np.unique(np.asarray(v, np.int64)) for k, v in nsets.items()
                     if k not in internal}
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
        for iname, cont in containers:
            for elset, mat, w in cont.sections:
                if _ci(self.materials_raw, mat) is None:
                    raise MeshError(f"{w}: *Solid Section refers to material {mat!r}, which "
                                    f"is not defined; materials: {sorted(self.materials_raw)}")
                if _ci(cont.elsets, elset) is None and _ci(self.assembly.elsets, elset) is None:
                    raise MeshError(f"{w}: *Solid Section refers to element set {elset!r}, "
                                    "which is not defined")
                sections.append((elset, _ci(self.materials_raw, mat)))
        # mesh through meshio -> scikit-fem (compacting nodes not used by elements)
        import meshio
        m = meshio.Mesh(points, [(kinds[0], conn)])
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
        return AbaqusModel(mesh=fe, labels=sk_labels, materials=materials, sections=sections,
                           element_sets=element_sets, surfaces=surfaces, units=us,
                           source=self.path, deck_labels=labels)

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
                raise MeshError(f"{w}: surface {name!r}: face {face!r} is not supported; use "
                                "S1..S6 (element faces) or TYPE=NODE")
            for k in members:
                e = elem_of.get(k)
                if e is None:
                    raise MeshError(f"{w}: surface {name!r}: element {k[1]} is not defined")
                loc = face_nodes(cells[e], int(face[1:]))
                if loc is None:
                    raise MeshError(f"{w}: surface {name!r}: element {k[1]} ({cells[e]}) has no "
                                    f"face {face}")
                out += conn[e, loc].tolist()
        return out

    def _ref_label(self, ref, iname, w, kind):
        head, dot, tail = ref.rpartition(".")
        if dot and tail.isdigit() and head in self.instances:
            return (head, int(tail))
        try:
            return (iname, int(ref))
        except ValueError:
            raise MeshError(f"{w}: {ref!r} is neither a {kind} label nor a {kind} set defined "
                            "above") from None

    def _materials(self):
        us = self.units
        out = {}
        for name, d in self.materials_raw.items():
            if "aniso" in d:
                continue  # reported if a section uses it (AbaqusModel.material)
            if "rho" not in d or "E" not in d:
                continue
            rho = d["rho"][0] * us.density
            E = d["E"][0] * us.stress
            check_magnitudes(f"{self.path}:{d['where'].rsplit(':', 1)[-1]}", name, rho, E, us)
            try:
                out[name] = Material(E=E, nu=d["nu"][0], rho=rho, name=name)
            except MeshError as exc:
                raise MeshError(f"{d['E'][1]}: {exc}") from exc
        return out


def read_abaqus(path, units="SI"):
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
    return _Reader(path, us).run().build()
