"""The Model: one container for a mechanism, compiled into Systems.

>>> import flexmbd as fm
>>> m = fm.Model("pendulum")
>>> m.link = fm.RigidBody.rod(1.0, 1.0, origin="end")
>>> m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
>>> m.g = fm.Gravity((0, -9.81, 0))
>>> [b.name for b in m.bodies()]
['link']
"""

from __future__ import annotations

import io
from collections import deque
from os import PathLike
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
from numpy.typing import NDArray

from .. import topology as topo
from ..errors import ModelError, SolverError
from .block import Block
from .bodies import Body, Frame, Ground
from .forces import ForceElement
from .joints import Joint

if TYPE_CHECKING:
    from ..results import Results
    from ..topology import Topology

__all__ = ["Model"]

_CHANGE_LOG = 256  # changes the model remembers for Model.changes_since


class Model(Block):
    """A mechanism: bodies, joints, force elements and sub-blocks, with ``m.ground``.

    Components are registered by attribute assignment; ``compile`` turns the
    model into a :class:`System` of one formulation, ``simulate`` compiles and
    integrates in one call.
    """

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, name: str = "model", *, doc: str | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ModelError(f"Model: name must be a non-empty string, got {name!r}")
        super().__init__(name=name, doc=doc)
        object.__setattr__(self, "_revision", 0)
        # (component, attribute) of the last changes, one per revision (None: structural)
        object.__setattr__(self, "_changes", deque(maxlen=_CHANGE_LOG))
        object.__setattr__(self, "_topology_cache", None)
        g = Ground()
        g.register_in(self, "ground")
        self._components["ground"] = g
        object.__setattr__(self, "ground", g)

    @property
    def name(self) -> str:
        return self._name

    def __setattr__(self, key, value):
        if key == "ground" and "ground" in self.__dict__.get("_components", {}):
            raise ModelError(
                f"model {self._name!r}: 'ground' is the model's inertial body and "
                "cannot be replaced; give the new component another name"
            )
        super().__setattr__(key, value)

    def model(self) -> Model:
        return self

    @property
    def revision(self) -> int:
        """Counter bumped by every structural or parameter change."""
        return self._revision

    def mark_changed(self, component: Any = None, attribute: str | None = None) -> None:
        """Bump :attr:`revision` (components call this on every change).

        ``component``, ``attribute``: the attribute written, when the change is one
        attribute of one component (:meth:`changes_since`); None: a structural change
        (a component added or removed), after which compiled systems rebuild.
        """
        object.__setattr__(self, "_revision", self._revision + 1)
        self._changes.append((component, attribute))

    def changes_since(self, revision: int | None) -> list[tuple[Any, str]] | None:
        """The ``(component, attribute)`` writes since ``revision``, oldest first.

        None when a structural change happened since then, or when ``revision`` is None
        or older than the change log (the last 256 changes): the caller rebuilds.
        """
        if revision is None:
            return None
        count = self._revision - revision
        if count < 0 or count > len(self._changes):
            return None
        out = list(self._changes)[len(self._changes) - count :] if count else []
        if any(c is None or a is None for c, a in out):
            return None
        return out

    # -- component lists (declaration order) ------------------------------------------
    def bodies(self) -> list[Body]:
        """Non-ground bodies in declaration order."""
        return [b for b in self.component_objects(Body) if not isinstance(b, Ground)]

    def joints(self) -> list[Joint]:
        """Joints in declaration order."""
        return self.component_objects(Joint)

    def forces(self) -> list[ForceElement]:
        """Force elements in declaration order."""
        return self.component_objects(ForceElement)

    def frames(self) -> list[Frame]:
        """Named frames in declaration order."""
        return self.component_objects(Frame)

    def joint(self, name: str) -> Joint:
        """The joint with full name ``name``."""
        for j in self.joints():
            if j.name == name:
                return j
        raise ModelError(
            f"model {self.name!r} has no joint {name!r}; joints: {[j.name for j in self.joints()]}"
        )

    def body(self, name: str) -> Body:
        """The body with full name ``name`` (``"ground"`` included)."""
        if name == "ground":
            return self.ground
        for b in self.bodies():
            if b.name == name:
                return b
        raise ModelError(
            f"model {self.name!r} has no body {name!r}; bodies: {[b.name for b in self.bodies()]}"
        )

    # -- validation and topology -------------------------------------------------------
    def validate(self) -> None:
        """Check names, references and connectivity; raise :class:`ModelError` naming it."""
        bodies = self.bodies()
        known = {id(b) for b in bodies} | {id(self.ground)}
        names = {}
        for c in bodies + self.joints() + self.forces():
            if c.name in names:
                raise ModelError(f"duplicate component name {c.name!r} in model {self.name!r}")
            names[c.name] = c
        for b in bodies:
            if hasattr(b, "validate"):
                b.validate()
        for j in self.joints():
            for role in ("parent", "child"):
                b = getattr(j, role)
                if id(b) not in known:
                    raise ModelError(
                        f"joint {j.name!r}: its {role} body {b.local_name!r} is not in model "
                        f"{self.name!r}; assign the body to the model first "
                        f"(m.x = fm.RigidBody(...))"
                    )
        for f in self.forces():
            for b in f.bodies():
                if id(b) not in known:
                    raise ModelError(
                        f"force element {f.name!r} acts on body {b.local_name!r} which is not in "
                        f"model {self.name!r}"
                    )
        if not bodies:
            raise ModelError(f"model {self.name!r} has no bodies")
        self._check_connected(bodies)

    def _check_connected(self, bodies):
        adj = {id(b): [] for b in bodies}
        adj[id(self.ground)] = []
        for j in self.joints():
            adj[id(j.parent)].append(j.child)
            adj[id(j.child)].append(j.parent)
        seen = {id(self.ground)}
        stack = [self.ground]
        while stack:
            for nb in adj[id(stack.pop())]:
                if id(nb) not in seen:
                    seen.add(id(nb))
                    stack.append(nb)
        lost = [b.name for b in bodies if id(b) not in seen]
        if lost:
            raise ModelError(
                f"model {self.name!r}: bodies {lost} have no path to ground (an isolated branch); "
                f"connect them with a joint (use fm.Free(m.ground, body) for a floating body)"
            )

    def incidence(self) -> NDArray[np.int_]:
        """2 x n_j joint-body incidence (1-based bodies in declaration order, 0 = ground)."""
        index = {id(self.ground): 0}
        index.update({id(b): i + 1 for i, b in enumerate(self.bodies())})
        joints = self.joints()
        J = np.zeros((2, len(joints)), dtype=int)
        for k, j in enumerate(joints):
            J[0, k] = index[id(j.parent)]
            J[1, k] = index[id(j.child)]
        return J

    def topology(self) -> Topology:
        """The resolved :class:`~flexmbd.topology.Topology` (cut joints, regular labels).

        Loops are cut preferably at joints adding the fewest constraint equations
        (a spherical before a revolute) and at joints marked ``cut=True``.
        """
        key = self._revision
        if self._topology_cache is not None and self._topology_cache[0] == key:
            return self._topology_cache[1]
        self.validate()
        joints = self.joints()
        weights = [j.n_constraints for j in joints]
        forced = [k + 1 for k, j in enumerate(joints) if j.cut]
        t = topo.analyze(self.incidence(), weights=weights, forced_cuts=forced)
        object.__setattr__(self, "_topology_cache", (key, t))
        return t

    def cut_joints(self) -> list[Joint]:
        """Joints the topology cut to open the loops."""
        joints = self.joints()
        return [joints[k - 1] for k in self.topology().cut_joints]

    # -- compile and simulate ---------------------------------------------------------
    def compile(self, formulation: str = "recursive", **options: Any) -> Any:
        """Build a System: ``"recursive"`` (joint coordinates, CFA) or ``"absolute"`` (DAE)."""
        self.validate()
        if formulation == "recursive":
            from ..recursive import compile_system
        elif formulation == "absolute":
            from ..absolute import compile_system
        else:
            raise ModelError(f"unknown formulation {formulation!r}; use 'recursive' or 'absolute'")
        return compile_system(self, **options)

    def simulate(
        self,
        t_end: float,
        dt: float | None = None,
        integrator: str | None = None,
        formulation: str | None = None,
        *,
        checkpoint: str | PathLike | None = None,
        every: int = 100,
        overwrite: bool = False,
        progress: bool | None = None,
        **options: Any,
    ) -> Results:
        """Compile and integrate from the joints' initial values to ``t_end`` (s).

        ``integrator``: ``"rk4"``, ``"rk45"``, ``"dop853"`` or ``"rk23"`` (explicit,
        recursive formulation), ``"newmark"``, ``"hht"`` or ``"generalized-alpha"``
        (implicit, absolute formulation); names are case-insensitive. Either of
        ``integrator`` and ``formulation`` follows from the other when omitted (default
        ``"rk4"`` with ``dt``, ``"rk45"`` without; ``"generalized-alpha"`` for
        ``formulation="absolute"``): :mod:`flexmbd.integrators.registry`. ``dt``: step or
        output interval (s). Unknown options raise :class:`~flexmbd.errors.ModelError`
        listing the valid ones.
        ``checkpoint``: an HDF5 file that receives the results and the integrator's
        complete state every ``every`` steps (output samples); ``fm.resume(path)``
        continues the run bit-identically (pass ``model=`` in a new process; see
        :mod:`flexmbd.checkpoint`); an existing checkpoint file is refused unless
        ``overwrite=True`` (checked, with the directory, before any work).
        ``progress``: progress bar (None: on a terminal,
        for runs longer than a second; ``FLEXMBD_PROGRESS=0`` silences it).
        A failed run raises :class:`~flexmbd.errors.SolverError` with the partial
        results (``err.partial``, also written to the checkpoint file). Returns
        :class:`~flexmbd.results.Results`.
        """
        from ..integrators.registry import check_times, resolve

        spec, formulation = resolve(integrator, formulation, dt)
        check_times(
            t_end,
            dt,
            spec,
            f"model {self.name!r}: simulate",
            t0=options.get("t0", 0.0),
            every=every,
        )
        integrator = spec.name
        if checkpoint is not None:
            from ..checkpoint import check_checkpoint

            check_checkpoint(checkpoint, overwrite)  # before any work
            options.update(checkpoint=checkpoint, every=every, overwrite=overwrite)
        system = self.compile(formulation)
        try:
            res = system.simulate(t_end, dt=dt, integrator=integrator, progress=progress, **options)
        except SolverError as err:
            if err.partial is not None:
                err.partial.system = system
            raise
        res.system = system  # lets res.body(name).position compute poses on request
        return res

    # -- display ----------------------------------------------------------------------
    def pprint(self, file: TextIO | None = None) -> None:
        """Print a readable summary: bodies, joints, forces and the resolved topology."""
        out = io.StringIO()
        bodies, joints, forces = self.bodies(), self.joints(), self.forces()
        out.write(
            f"Model {self.name!r}: {len(bodies)} bodies, {len(joints)} joints, "
            f"{len(forces)} force elements\n"
        )
        out.write("  Bodies:\n")
        for i, b in enumerate(bodies, 1):
            out.write(f"    {i:3d} {b.name}: {b.summary()}\n")
        out.write("  Joints:\n")
        for i, j in enumerate(joints, 1):
            out.write(f"    {i:3d} {j.name}: {j.summary()}, dof {j.nv}\n")
        if forces:
            out.write("  Force elements:\n")
            for f in forces:
                out.write(f"        {f.name}: {f.summary()}\n")
        try:
            t = self.topology()
        except ModelError as err:
            out.write(f"  Topology: not resolved ({err})\n")
        else:
            out.write(_topology_text(self, t))
        text = out.getvalue()
        if file is None:
            print(text, end="")
        else:
            file.write(text)
        return None

    def __str__(self):
        buf = io.StringIO()
        self.pprint(buf)
        return buf.getvalue()

    @classmethod
    def from_urdf(
        cls, path: str | PathLike, name: str | None = None, floating: bool = False
    ) -> Model:
        """Build a rigid tree from a URDF file (see :mod:`flexmbd.model.urdf`)."""
        from .urdf import model_from_urdf  # lazy: xml parsing only when asked for

        return model_from_urdf(cls, path, name=name, floating=floating)


def _topology_text(model, t):
    bodies, joints = model.bodies(), model.joints()
    lines = ["  Topology (regular labels: inboard < outboard, leaves highest, cut joints last):\n"]
    dof = sum(j.nv for k, j in enumerate(joints) if (k + 1) not in t.cut_joints)
    lines.append(f"    tree degrees of freedom: {dof}\n")
    cuts = [joints[k - 1].name for k in t.cut_joints]
    lines.append(f"    cut joints: {cuts if cuts else 'none (tree)'}\n")
    order = np.argsort(t.body_map)
    lines.append("    label  body                      parent\n")
    for idx in order:
        b = bodies[idx]
        lab = int(t.body_map[idx])
        p = int(t.parent[lab])
        pname = "ground" if p == 0 else bodies[int(t.original_body[p]) - 1].name
        lines.append(f"    {lab:5d}  {b.name:<25s} {pname}\n")
    lines.append(
        "    joint labels: "
        + ", ".join(f"{j.name}={int(t.joint_map[k])}" for k, j in enumerate(joints))
        + "\n"
    )
    return "".join(lines)
