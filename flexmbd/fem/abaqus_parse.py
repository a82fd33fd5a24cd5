"""Abaqus input decks, second layer: keywords -> parts, instances, sets, materials.

`DeckParser` walks the keyword blocks of `flexmbd.fem.abaqus_deck` and
records, per part / instance / assembly / flat deck, the nodes, elements,
node and element sets (labels, ``generate``, set references, instance-qualified
labels), surfaces, solid sections and materials — raw, in the file's units,
with the ``file:line`` of each item for error messages.  `flexmbd.fem.abaqus`
turns this into a mesh.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MeshError
from .abaqus_deck import read_blocks
from .abaqus_elements import element_info

if TYPE_CHECKING:
    from .._typing import StrPath
    from .abaqus_deck import Block

__all__ = ["DeckParser"]


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
    set_where: dict = field(default_factory=dict)  # set name -> 'file:line' of its keyword
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


class DeckParser:
    """Keyword handlers (``kw_<KEYWORD>``) filling containers; `run` parses a deck."""

    def __init__(self, path: StrPath, units: str) -> None:
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
    def run(self) -> DeckParser:
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

    def kw_PART(self, blk: Block) -> None:
        name = blk.param("NAME")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Part needs NAME=")
        self.cur = self.parts.setdefault(name, _Container(name))

    def kw_END_PART(self, blk: Block) -> None:
        self.cur = self.top

    def kw_ASSEMBLY(self, blk: Block) -> None:
        self.in_assembly = True
        self.cur = self.assembly

    def kw_END_ASSEMBLY(self, blk: Block) -> None:
        self.in_assembly = False
        self.cur = self.top

    def kw_INSTANCE(self, blk: Block) -> None:
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
                raise MeshError(
                    f"{blk.where(1)}: instance rotation needs 7 numbers "
                    "(point a, point b, angle in degrees)"
                )
            v = [_float(x, blk, 1, "rotation") for x in r[:7]]
            inst.rotation = (np.array(v[:3]), np.array(v[3:6]), v[6])
        self.instances[name] = inst
        self.cur_inst = inst
        self.cur = inst.own

    def kw_END_INSTANCE(self, blk: Block) -> None:
        self.cur_inst = None
        self.cur = self.assembly

    def kw_NODE(self, blk: Block) -> None:
        c = self.cur
        labels = []
        for i, r in enumerate(blk.rows):
            if len(r) < 3:
                raise MeshError(
                    f"{blk.where(i)}: a *Node line needs a label and 2-3 "
                    f"coordinates, got {','.join(r)!r}"
                )
            lab = _int(r[0], blk, i, "node label")
            x = [_float(v, blk, i, "coordinate") for v in r[1:4]]
            x += [0.0] * (3 - len(x))
            if lab in c.nodes:
                raise MeshError(
                    f"{blk.where(i)}: node {lab} defined twice (first at {c.node_where[lab]})"
                )
            c.nodes[lab] = x
            c.node_where[lab] = blk.where(i)
            labels.append(lab)
        nset = blk.param("NSET")
        if isinstance(nset, str):
            c.nsets.setdefault(nset, []).extend((None, lab) for lab in labels)

    def kw_ELEMENT(self, blk: Block) -> None:
        etype = blk.param("TYPE")
        if not isinstance(etype, str):
            raise MeshError(f"{blk.where()}: *Element needs TYPE=")
        info = element_info(etype)
        if info is None:
            raise MeshError(
                f"{blk.where()}: element type {etype!r} is not supported; flexmbd reads the "
                "solid continuum elements C3D4, C3D10, C3D8, C3D20 (and their H/R/I/M "
                "variants), C3D6, C3D15 — mesh the body with these"
            )
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
                raise MeshError(
                    f"{blk.where(start)}: element of type {etype} has "
                    f"{len(acc) - 1} nodes, expected {nn}"
                )
            lab = _int(acc[0], blk, start, "element label")
            conn = [_int(v, blk, start, "node label") for v in acc[1:]]
            if lab in c.elements:
                raise MeshError(f"{blk.where(start)}: element {lab} defined twice")
            c.elements[lab] = (cell, conn, blk.where(start))
            labels.append(lab)
            acc = []
        if acc:
            raise MeshError(
                f"{blk.where(start)}: element of type {etype} has {len(acc) - 1} "
                f"nodes, expected {nn} (truncated line?)"
            )
        elset = blk.param("ELSET")
        if isinstance(elset, str):
            c.elsets.setdefault(elset, []).extend((None, lab) for lab in labels)

    def _set_members(self, blk, kind):
        """Members of an *Nset / *Elset block as (instance or None, label) pairs."""
        inst = blk.param("INSTANCE")
        inst = inst if isinstance(inst, str) else None
        if inst is not None and inst not in self.instances:
            raise MeshError(
                f"{blk.where()}: instance {inst!r} is not defined before this set; "
                f"instances: {sorted(self.instances)}"
            )
        table = self.cur.nsets if kind == "node" else self.cur.elsets
        out = []
        if blk.flag("GENERATE"):
            for i, r in enumerate(blk.rows):
                vals = [_int(v, blk, i, "generate bound") for v in r if v != ""]
                if len(vals) not in (2, 3):
                    raise MeshError(f"{blk.where(i)}: generate needs first, last[, step]")
                a, b, s = vals[0], vals[1], vals[2] if len(vals) == 3 else 1
                if s <= 0 or b < a:
                    raise MeshError(
                        f"{blk.where(i)}: generate {a}, {b}, {s}: need first <= last and step > 0"
                    )
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
                    key = _ci(self.assembly.nsets if kind == "node" else self.assembly.elsets, tok)
                if key is None:
                    raise MeshError(
                        f"{blk.where(i)}: {kind} set member {tok!r} is neither a "
                        f"label nor a set defined above"
                    )
                out += [(inst if m[0] is None else m[0], m[1]) for m in table[key]]
        return out

    def kw_NSET(self, blk: Block) -> None:
        name = blk.param("NSET")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Nset needs NSET=")
        self.cur.nsets.setdefault(name, []).extend(self._set_members(blk, "node"))
        self.cur.set_where.setdefault(("node", name), blk.where())
        if blk.flag("INTERNAL"):
            self.cur.internal.add(name)

    def kw_ELSET(self, blk: Block) -> None:
        name = blk.param("ELSET")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Elset needs ELSET=")
        self.cur.elsets.setdefault(name, []).extend(self._set_members(blk, "element"))
        self.cur.set_where.setdefault(("element", name), blk.where())
        if blk.flag("INTERNAL"):
            self.cur.internal.add(name)

    def kw_SURFACE(self, blk: Block) -> None:
        name = blk.param("NAME")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Surface needs NAME=")
        stype = str(blk.param("TYPE", "ELEMENT")).upper()
        if stype not in ("ELEMENT", "NODE"):
            raise MeshError(
                f"{blk.where()}: *Surface TYPE={stype} is not supported (ELEMENT "
                "or NODE); define the interface with a node set"
            )
        items = []
        for i, r in enumerate(blk.rows):
            if not r or r[0] == "":
                continue
            items.append((r[0], r[1].upper() if len(r) > 1 and r[1] else "", blk.where(i)))
        self.cur.surfaces[name] = (stype, items, blk.where())

    def kw_SOLID_SECTION(self, blk: Block) -> None:
        elset, mat = blk.param("ELSET"), blk.param("MATERIAL")
        if not isinstance(elset, str) or not isinstance(mat, str):
            raise MeshError(f"{blk.where()}: *Solid Section needs ELSET= and MATERIAL=")
        self.cur.sections.append((elset, mat, blk.where()))

    def kw_MATERIAL(self, blk: Block) -> None:
        name = blk.param("NAME")
        if not isinstance(name, str):
            raise MeshError(f"{blk.where()}: *Material needs NAME=")
        self.cur_mat = self.materials_raw.setdefault(name, {"where": blk.where()})

    def _material_row(self, blk, n, what):
        if self.cur_mat is None:
            raise MeshError(f"{blk.where()}: *{blk.keyword.title()} outside a *Material")
        if not blk.rows or len([v for v in blk.rows[0] if v != ""]) < n:
            raise MeshError(f"{blk.where()}: *{blk.keyword.title()} needs {what} on the next line")
        return [_float(v, blk, 0, what) for v in blk.rows[0][:n]], blk.where(0)

    def kw_DENSITY(self, blk: Block) -> None:
        (rho,), w = self._material_row(blk, 1, "the density")
        self.cur_mat["rho"] = (rho, w)

    def kw_ELASTIC(self, blk: Block) -> None:
        etype = str(blk.param("TYPE", "ISOTROPIC")).upper()
        if etype != "ISOTROPIC":
            self.cur_mat["aniso"] = (etype, blk.where())
            return
        (E, nu), w = self._material_row(blk, 2, "E, nu")
        self.cur_mat["E"] = (E, w)
        self.cur_mat["nu"] = (nu, w)
