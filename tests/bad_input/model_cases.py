"""Shared pieces of the table-driven bad-input test of meshes, materials, reductions,
models and views (``test_model_mesh.py``): tiny inputs built fresh for every case, the
case record and a wall-clock guard so no case can hang."""

import contextlib
import functools
import signal
from dataclasses import dataclass, field

import numpy as np

import flexmbd as fm

E, NU, RHO = 2.1e11, 0.3, 7850.0
BUDGET_S = 60.0  # per case; every case takes well under a second on a quiet machine


@dataclass
class Case:
    """One hostile input.

    ``call`` raises ``error`` (a flexmbd error class, or a warning class: then it must
    warn) with a message containing every string of ``names`` (case-insensitive): the
    input it is about. With ``error=None`` the call is documented correct behaviour and
    ``check`` (if given) asserts its result.
    """

    id: str
    call: object
    error: type = None
    names: tuple = ()
    check: object = None
    marks: tuple = field(default_factory=tuple)


@contextlib.contextmanager
def time_budget(seconds=BUDGET_S):
    """Fail (TimeoutError) if the block runs longer than ``seconds`` (main thread, Unix)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def _alarm(signum, frame):
        raise TimeoutError(f"bad-input case ran over its {seconds:.0f} s budget (a hang?)")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# -- meshes (built fresh: scikit-fem and meshio share arrays between converted meshes) ----
def beam(nx=6, ny=1, length=1.0, h=0.05):
    """Hexahedral beam along x, ``length`` x ``h`` x ``h`` (m): 28 nodes for 6 x 1 x 1."""
    import skfem

    return skfem.MeshHex1.init_tensor(
        np.linspace(0, length, nx + 1), np.linspace(0, h, ny + 1), np.linspace(0, h, ny + 1)
    )


def tet_beam():
    import skfem

    return skfem.MeshTet1.init_tensor(
        np.linspace(0, 1, 4), np.linspace(0, 0.1, 2), np.linspace(0, 0.1, 2)
    )


def with_points(mesh, edit):
    """A copy of scikit-fem ``mesh`` whose vertex array went through ``edit(p)``."""
    p = np.array(mesh.p, dtype=float, copy=True)
    edit(p)
    return type(mesh)(p, np.array(mesh.t, copy=True))


def meshio_of(mesh):
    """A meshio copy of a scikit-fem mesh (own arrays)."""
    import meshio
    from skfem.io.meshio import to_meshio

    m = to_meshio(mesh)
    return meshio.Mesh(
        np.array(m.points, dtype=float, copy=True),
        [(c.type, np.array(c.data, copy=True)) for c in m.cells],
    )


def meshio_cells(points, cells):
    import meshio

    return meshio.Mesh(np.asarray(points, dtype=float), cells)


def two_parts(n=2, gap=3.0):
    """``n`` copies of the beam along x, ``gap`` m apart, sharing no node."""
    import skfem

    parts = [beam() for _ in range(n)]
    p = np.hstack([b.p + np.array([[gap * k], [0.0], [0.0]]) for k, b in enumerate(parts)])
    offs = np.cumsum([0] + [b.p.shape[1] for b in parts[:-1]])
    t = np.hstack([b.t + o for b, o in zip(parts, offs)])
    return skfem.MeshHex1(p, t)


def with_orphan():
    import skfem

    b = beam()
    return skfem.MeshHex1(np.hstack([b.p, [[5.0], [5.0], [5.0]]]), b.t)


def steel():
    return fm.Material(E=E, nu=NU, rho=RHO, name="steel")


def reduce(mesh=None, strategy=None, **kw):
    from flexmbd.fem import NormalModes
    from flexmbd.fem import reduce as _reduce

    return _reduce(
        beam() if mesh is None else mesh,
        steel(),
        NormalModes(3) if strategy is None else strategy,
        **kw,
    )


def end(x=0.0):
    return fm.fem.Plane((x, 0, 0), (1, 0, 0))


@functools.cache
def reduced_beam(stress_modes=True):
    """Clamped-free Craig-Bampton beam (1 m, 28 nodes), interface 'A' at x = 0."""
    return reduce(
        strategy=fm.CraigBampton(3, interfaces={"A": end(0.0)}),
        stress_modes=stress_modes,
        geometric=False,
        name="beam",
    )


def flexible(stress_modes=True, **kw):
    m = fm.Model("flex")
    m.beam = fm.FlexibleBody(reduced_beam(stress_modes), **kw)
    return m


# -- rigid models ---------------------------------------------------------------------------
def pendulum(**joint):
    m = fm.Model("pendulum")
    m.link = fm.RigidBody(1.0, (0.01, 0.01, 0.01))
    m.hinge = fm.Revolute(m.ground, m.link, **joint)
    return m


def add(model, **components):
    """Assign ``components`` to ``model`` (in order) and return the model."""
    for k, v in components.items():
        setattr(model, k, v(model) if callable(v) and not isinstance(v, type) else v)
    return model


def indexed(index, rule):
    m = fm.Model("indexed")
    m.arm = fm.RigidBody(index, rule=rule)
    return m


def urdf(tmp_text):
    return fm.Model.from_urdf(tmp_text)


def link(name, mass="1", extra=""):
    return (
        f"<link name='{name}'><inertial><mass value='{mass}'/><inertia ixx='1' iyy='1' "
        f"izz='1' ixy='0' ixz='0' iyz='0'/></inertial>{extra}</link>"
    )


def robot(*parts):
    return "<robot name='r'>" + "".join(parts) + "</robot>"


def revolute(parent="a", child="b", axis="0 0 1"):
    return (
        f"<joint name='j' type='revolute'><parent link='{parent}'/><child link='{child}'/>"
        f"<axis xyz='{axis}'/></joint>"
    )


# -- views --------------------------------------------------------------------------------
def results_without_stress():
    """The synthetic swinging-beam results with the beam's stress modes removed."""
    from flexmbd.viz.demo import swinging_beam_results

    res = swinging_beam_results(nt=4)
    res.geometry["beam"].pop("stress_modes", None)
    return res
