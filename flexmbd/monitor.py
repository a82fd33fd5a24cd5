"""Run-time check for physically meaningless growth of flexible bodies (a runaway).

A floating-frame body describes *small* elastic deformation about its frame. When
its elastic displacement grows beyond the size of the body itself, the model no
longer describes anything physical: typically a linear floating-frame model spun
above its first bending frequency without geometric stiffening (centrifugal
softening; the spin-up beam reaches 1e21 m of tip deflection in 20 s), a step
beyond the stability limit, or loads in the wrong units. Integrators kept running
on such states and returned them without a word.

**Policy.** The integrators fail such a run: :class:`~flexmbd.errors.SolverError`
naming the body, the time, the displacement and the body's size, with advice
(geometric stiffening, a smaller step, loads and units) and the results up to the
last sample within bounds in ``err.partial``. A failure rather than a warning,
because nothing computed after that point means anything, and a warning scrolled
past in a batch run would leave the wrong results in use. The bound (elastic
displacement > the diagonal of the body's bounding box) is far above any valid
floating-frame deformation (a few per cent of the size), so valid runs never meet
it. ``FLEXMBD_RUNAWAY=warn`` turns the failure into a
:class:`~flexmbd.errors.PhysicsWarning` and keeps the run going (``=off``: no check),
for studies that show the runaway on purpose.

**Cost.** The check runs on whole blocks of samples at block boundaries (vectorized,
never inside the compiled step loop): the elastic displacement is evaluated exactly
at the nodes where each mode peaks plus the interface nodes (a few nodes per mode),
which bounds the largest nodal displacement from below; a runaway exceeds the
bound by orders of magnitude, so the check cannot miss it.

Energy growth (total energy beyond the work done) is not checked here: the energy
balances of the integrators do not contain the work of joint drivers (prescribed
motions put energy in), so the balance of a driven run is not a test of physics.
"""

import os
import warnings

import numpy as np

from .errors import PhysicsWarning, SolverError

__all__ = ["GrowthMonitor", "BLOCK_STEPS"]

BLOCK_STEPS = 2000  # largest block of compiled steps between two checks


class GrowthMonitor:
    """Elastic-displacement bound of the flexible bodies of a compiled system.

    Build with :meth:`for_system`; :meth:`check` takes a block of samples.
    ``bodies``: list of ``(name, columns of q, modes at the watched nodes (k, 3, m),
    size in m, stiffened)``.
    """

    def __init__(self, bodies):
        self.bodies = bodies
        self.mode = os.environ.get("FLEXMBD_RUNAWAY", "error").strip().lower()
        self.warned = set()

    @classmethod
    def for_system(cls, system):
        """The monitor of an absolute, recursive or closed-loop system (None: nothing to
        watch, i.e. no flexible body with node data)."""
        entries = []
        layout = getattr(system, "layout", None)
        if layout is not None and layout.modal:
            by_name = {
                b.name: b for b in system.model.bodies() if getattr(b, "reduced", None) is not None
            }
            for name, sl in layout.modal.items():
                if name in by_name:
                    entries.append((by_name[name], np.arange(sl.q.start, sl.q.stop)))
        bodies = []
        for body, cols in entries:
            w = _watch(body.reduced)
            if w is not None:
                bodies.append(
                    (
                        body.name,
                        cols,
                        w[0],
                        w[1],
                        bool(getattr(body, "geometric_stiffening", False)),
                    )
                )
        if not bodies:
            return None
        return cls(bodies)

    def check(self, t, q):
        """First sample of the block ``(t (k,), q (k, n))`` beyond the bound: ``(index,
        SolverError)``, or ``(None, None)``. In ``warn`` mode a
        :class:`~flexmbd.errors.PhysicsWarning` is issued (once per body) instead."""
        if self.mode in ("off", "0", "no", "false") or len(t) == 0:
            return None, None
        q = np.atleast_2d(q)
        first, msg = None, None
        for name, cols, X, size, stiff in self.bodies:
            qm = q[:, cols]
            disp = np.sqrt((np.einsum("tm,kim->tki", qm, X) ** 2).sum(axis=2)).max(axis=1)
            bad = ~(disp <= size)  # NaN counts as beyond the bound
            if not bad.any():
                continue
            i = int(np.argmax(bad))
            if first is None or i < first:
                first = i
                msg = _message(name, float(t[i]), float(disp[i]), size, stiff)
        if first is None:
            return None, None
        if self.mode == "warn":
            key = msg.split("'")[1]
            if key not in self.warned:
                self.warned.add(key)
                warnings.warn(msg, PhysicsWarning, stacklevel=3)
            return None, None
        return first, SolverError(msg, time=float(t[first]))


def _watch(rb):
    """Modes at the watched nodes (k, 3, m) and the body's size (bounding-box diagonal)."""
    nodes = getattr(rb, "nodes", None)
    modes = getattr(rb, "modes", None)
    if nodes is None or modes is None or len(nodes) == 0 or modes.shape[0] != 3 * len(nodes):
        return None
    nodes = np.asarray(nodes, float)
    size = float(np.linalg.norm(nodes.max(axis=0) - nodes.min(axis=0)))
    if not size > 0:
        return None
    U = np.asarray(modes, float).reshape(len(nodes), 3, -1)
    peak = np.sqrt((U**2).sum(axis=1)).argmax(axis=0)  # node where each mode peaks
    extra = np.asarray(getattr(rb, "interface_nodes", []), dtype=int).ravel()
    extra = extra[(extra >= 0) & (extra < len(nodes))]
    watch = np.unique(np.concatenate([peak, extra]))
    return U[watch], size


def _message(name, t, disp, size, stiff):
    advice = (
        "switch geometric stiffening on (FlexibleBody(..., geometric_stiffening=True)): "
        "a linear floating-frame body spun or loaded axially beyond its first bending "
        "frequency or buckling load softens without bound; "
        if not stiff
        else ""
    )
    return (
        f"runaway: the elastic displacement of flexible body '{name}' reached {disp:.3g} m "
        f"at t = {t:.6g} s, more than the body's own size ({size:.3g} m); the floating-frame "
        f"model (small elastic deformation) no longer describes the motion. Remedies: "
        f"{advice}reduce the step (a step beyond the stability limit of the stiffest mode "
        f"grows without bound), check the loads and their units. The results up to the "
        f"last sample within bounds are in err.partial (FLEXMBD_RUNAWAY=warn: warn and "
        f"continue instead)"
    )
