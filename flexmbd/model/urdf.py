"""URDF import: rigid trees from robotics tools.

``fm.Model.from_urdf(path)`` maps URDF links to :class:`RigidBody` (mass, centre of
mass and inertia from ``<inertial>``, rotated into the link frame), joints to
flexmbd joints, and keeps limits, dynamics and visual geometry as data:

=============== ==================================================================
URDF joint      flexmbd joint
=============== ==================================================================
revolute        :class:`Revolute` (``limits`` kept)
continuous      :class:`Revolute`
prismatic       :class:`Prismatic`
fixed           :class:`Fixed`
floating        :class:`Free`
planar          :class:`Planar` (normal = the joint axis)
=============== ==================================================================

The joint frame is ``<origin>`` in the parent link frame; the child link frame
coincides with the joint frame (URDF convention). The root link is fixed to
ground, or attached by a :class:`Free` joint with ``floating=True``. A link
without mass (no ``<inertial>``) must hang on a ``fixed`` joint: it becomes a
frame of the body it is welded to, and joints below it attach there.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._typing import Array, ArrayLike
from ..errors import ModelError
from ..spatial import rotation_matrix
from .bodies import Frame, RigidBody
from .joints import Fixed, Free, Planar, Prismatic, Revolute

if TYPE_CHECKING:
    from .model import Model

__all__ = ["model_from_urdf", "rpy_to_rot"]


def rpy_to_rot(rpy: ArrayLike) -> Array:
    """URDF roll-pitch-yaw (fixed axes x, y, z) to a rotation matrix: ``Rz(y) Ry(p) Rx(r)``."""
    r, p, y = rpy
    return (
        rotation_matrix((0, 0, 1), y)
        @ rotation_matrix((0, 1, 0), p)
        @ rotation_matrix((1, 0, 0), r)
    )


def _floats(text, n, where):
    try:
        v = np.array([float(x) for x in (text or "").split()])
    except ValueError:
        raise ModelError(f"URDF {where}: expected {n} numbers, got {text!r}") from None
    if v.shape != (n,):
        raise ModelError(f"URDF {where}: expected {n} numbers, got {text!r}")
    return v


def _float(text, where, default=None):
    """One number from an attribute value; ModelError naming ``where`` otherwise."""
    if text is None and default is not None:
        return float(default)
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise ModelError(f"URDF {where}: expected a number, got {text!r}") from None
    if not np.isfinite(v):
        raise ModelError(f"URDF {where}: expected a finite number, got {text!r}")
    return v


def _origin(el, where):
    o = None if el is None else el.find("origin")
    if o is None:
        return np.zeros(3), np.eye(3)
    xyz = _floats(o.get("xyz", "0 0 0"), 3, f"{where} origin xyz")
    rpy = _floats(o.get("rpy", "0 0 0"), 3, f"{where} origin rpy")
    return xyz, rpy_to_rot(rpy)


def _inertial(link):
    name = link.get("name")
    inert = link.find("inertial")
    if inert is None:
        return None
    mass_el = inert.find("mass")
    if mass_el is None:
        raise ModelError(f"URDF link {name!r}: <inertial> without <mass>")
    mass = _float(mass_el.get("value"), f"link {name!r} mass")
    if mass < 0:
        raise ModelError(
            f"URDF link {name!r}: mass {mass} kg is negative; give a mass >= 0 "
            "(0 for a massless link)"
        )
    c, R = _origin(inert, f"link {name!r} inertial")
    i = inert.find("inertia")
    if i is None:
        J = np.zeros((3, 3))
    else:
        g = lambda k: _float(i.get(k), f"link {name!r} inertia {k}", default=0.0)
        J = np.array(
            [
                [g("ixx"), g("ixy"), g("ixz")],
                [g("ixy"), g("iyy"), g("iyz")],
                [g("ixz"), g("iyz"), g("izz")],
            ]
        )
    return mass, c, R @ J @ R.T


def _visuals(link, base_dir):
    out = []
    for v in link.findall("visual"):
        xyz, R = _origin(v, f"link {link.get('name')!r} visual")
        geom = v.find("geometry")
        if geom is None or len(geom) == 0:
            continue
        g = geom[0]
        item = {"type": g.tag, "position": xyz, "rotation": R}
        if g.tag == "mesh":
            fn = g.get("filename", "")
            item["filename"] = (
                str(base_dir / fn) if base_dir and not fn.startswith("package://") else fn
            )
            item["scale"] = _floats(g.get("scale", "1 1 1"), 3, "mesh scale")
        elif g.tag == "box":
            item["size"] = _floats(g.get("size"), 3, "box size")
        elif g.tag == "cylinder":
            item["radius"] = _float(g.get("radius"), "cylinder radius")
            item["length"] = _float(g.get("length"), "cylinder length")
        elif g.tag == "sphere":
            item["radius"] = _float(g.get("radius"), "sphere radius")
        out.append(item)
    return out


_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


def model_from_urdf(
    model_class: type[Model], path: str | PathLike, name: str | None = None, floating: bool = False
) -> Model:
    """Build a ``model_class`` (:class:`~flexmbd.Model`) from a URDF file path or XML string
    (see the module docstring); called by :meth:`flexmbd.Model.from_urdf`."""
    text = str(path)
    base_dir = None
    if text.lstrip().startswith("<"):
        try:
            root = ET.fromstring(text)
        except ET.ParseError as err:
            raise ModelError(f"URDF text is not valid XML: {err}") from None
    else:
        p = Path(path)
        if not p.exists():
            raise ModelError(f"URDF file {str(p)!r} does not exist")
        try:
            root = ET.parse(p).getroot()
        except ET.ParseError as err:
            raise ModelError(f"URDF file {str(p)!r} is not valid XML: {err}") from None
        base_dir = p.parent
    if root.tag != "robot":
        raise ModelError(f"URDF: root element must be <robot>, got <{root.tag}>")

    links = {}
    for lk in root.findall("link"):
        ln = lk.get("name")
        if not ln:
            raise ModelError("URDF: a <link> has no name attribute")
        if ln in links:
            raise ModelError(f"URDF: link name {ln!r} is defined twice; link names must be unique")
        links[ln] = lk
    if not links:
        raise ModelError("URDF: the robot has no <link>")
    joints = root.findall("joint")
    parent_of = {}
    for j in joints:
        jn = j.get("name")
        jt = j.get("type")
        if jt not in _JOINT_TYPES:
            raise ModelError(
                f"URDF joint {jn!r}: unknown type {jt!r}; supported: {', '.join(_JOINT_TYPES)}"
            )
        pe, ce = j.find("parent"), j.find("child")
        if pe is None or ce is None:
            raise ModelError(f"URDF joint {jn!r}: needs <parent link=...> and <child link=...>")
        pl, cl = pe.get("link"), ce.get("link")
        for role, ln in (("parent", pl), ("child", cl)):
            if ln not in links:
                raise ModelError(f"URDF joint {jn!r}: {role} link {ln!r} is not defined")
        if cl in parent_of:
            raise ModelError(
                f"URDF link {cl!r} is the child of two joints ({parent_of[cl][0]!r} and {jn!r}): "
                f"URDF describes trees; a closed loop must be added with flexmbd joints"
            )
        parent_of[cl] = (jn, pl)
    roots = [ln for ln in links if ln not in parent_of]
    if len(roots) != 1:
        raise ModelError(
            f"URDF must have exactly one root link; found {roots if roots else 'none (a cycle)'}"
        )
    # cycle check: every link must reach the root
    for ln in links:
        seen, cur = set(), ln
        while cur in parent_of:
            if cur in seen:
                raise ModelError(f"URDF joints form a cycle through link {cur!r}")
            seen.add(cur)
            cur = parent_of[cur][1]

    m = model_class(name or root.get("name", "urdf"))
    bodies = {}
    lumped = {}  # massless link -> (host body, pose of the link in the host frame)
    children = {ln: [] for ln in links}
    for j in joints:
        children[j.find("parent").get("link")].append(j)

    def add_link(ln):
        data = _inertial(links[ln])
        if data is None or data[0] <= 0.0:
            return None
        mass, c, J = data
        try:
            b = RigidBody(mass, J, c, visual=_visuals(links[ln], base_dir) or None)
        except ModelError as err:
            raise ModelError(f"URDF link {ln!r}: {err}") from None
        setattr(m, ln, b)
        bodies[ln] = b
        return b

    root_name = roots[0]
    if add_link(root_name) is None:
        if floating:
            raise ModelError(f"URDF root link {root_name!r} has no mass: it cannot float")
        lumped[root_name] = (m.ground, np.eye(3), np.zeros(3))
    else:
        jt = Free if floating else Fixed
        setattr(m, f"{root_name}_root", jt(m.ground, bodies[root_name]))

    stack = [root_name]
    while stack:
        pl = stack.pop(0)
        for j in children[pl]:
            jn, jt = j.get("name"), j.get("type")
            cl = j.find("child").get("link")
            xyz, R = _origin(j, f"joint {jn!r}")
            if pl in bodies:
                host, Rh, ph = bodies[pl], np.eye(3), np.zeros(3)
            else:
                host, Rh, ph = lumped[pl]
            Rp, pp = Rh @ R, ph + Rh @ xyz  # joint frame in the host body frame
            child = add_link(cl)
            if child is None:
                if jt != "fixed":
                    raise ModelError(
                        f"URDF link {cl!r} has no <inertial> mass but moves through {jt} joint "
                        f"{jn!r}: give it a mass or make the joint fixed"
                    )
                lumped[cl] = (host, Rp, pp)
                stack.append(cl)
                continue
            axis_el = j.find("axis")
            axis = (
                _floats(axis_el.get("xyz"), 3, f"joint {jn!r} axis")
                if axis_el is not None
                else np.array([1.0, 0.0, 0.0])
            )
            pf = Frame(host, pp, Rp)
            kw = {"parent_frame": pf}
            if jt in ("revolute", "continuous"):
                joint = Revolute(host, child, axis=axis, **kw)
            elif jt == "prismatic":
                joint = Prismatic(host, child, axis=axis, **kw)
            elif jt == "fixed":
                joint = Fixed(host, child, **kw)
            elif jt == "floating":
                joint = Free(host, child, **kw)
            else:
                joint = Planar(host, child, normal=axis, **kw)
            lim = j.find("limit")
            joint.limits = None if lim is None else {k: float(v) for k, v in lim.attrib.items()}
            dyn = j.find("dynamics")
            joint.dynamics = None if dyn is None else {k: float(v) for k, v in dyn.attrib.items()}
            attr = jn if jn not in bodies and not hasattr(m, jn) else f"{jn}_joint"
            setattr(m, attr, joint)
            stack.append(cl)
    return m
