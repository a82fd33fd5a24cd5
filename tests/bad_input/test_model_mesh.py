"""Bad and hostile inputs to meshes, materials, reductions, models and views: one table.

Every case gives a flexmbd error (or a flexmbd warning) whose message names the input,
or the documented correct behaviour; never a raw numpy / scipy / scikit-fem traceback,
a hang (each case runs under a wall-clock budget) or a silently changed value. The
messages are checked for the input they concern, not for their wording.
"""

import warnings

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.errors import FlexmbdError, MeshError, ModelError, UnitsWarning

try:  # run as a rootdir-relative module (no package) or inside a tests package
    import model_cases as mc
except ImportError:  # pragma: no cover - layout with tests/bad_input/__init__.py
    from . import model_cases as mc

from model_cases import Case, time_budget  # noqa: E402  (same module as mc)

F = fm.fem
nan, inf = float("nan"), float("inf")
RHO = mc.RHO


def _nan_vertex(p):
    p[0, 3] = nan


def _inf_vertex(p):
    p[1, 5] = inf


def _flatten(p):
    p[2, :] = 0.0


def _collapse_one_hex(p):
    p[:, 1] = p[:, 0]  # two corners of the first element coincide


def _meshio_edit(mesh, edit):
    m = mc.meshio_of(mesh)
    edit(m)
    return m


def _nan_point(m):
    m.points[3, 0] = nan


def _invert_first(m):
    c = m.cells[0].data
    c[0] = c[0][[4, 5, 6, 7, 0, 1, 2, 3]]


def _negative_index(m):
    m.cells[0].data[0, 0] = -1


def _points_2d(m):
    m.points = m.points[:, :2]


def _garbage_file(tmp):
    p = tmp / "garbage.msh"
    p.write_text("this is not a mesh\n")
    return str(p)


def _urdf_file(tmp, text):
    p = tmp / "robot.urdf"
    p.write_text(text)
    return mc.urdf(str(p))


WEDGE = ("wedge", np.array([[0, 1, 2, 3, 4, 5]]))
PRISM_POINTS = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1]]
PYRAMID_POINTS = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 1]]
TET_POINTS = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]

MESH = [
    Case(
        "nan-vertex-skfem",
        lambda t: mc.reduce(mc.with_points(mc.beam(), _nan_vertex)),
        MeshError,
        ("nan", "node"),
    ),
    Case(
        "inf-vertex-skfem",
        lambda t: mc.reduce(mc.with_points(mc.beam(), _inf_vertex)),
        MeshError,
        ("inf", "node"),
    ),
    Case(
        "nan-point-meshio-hex",
        lambda t: F.read_mesh(_meshio_edit(mc.beam(), _nan_point)),
        MeshError,
        ("nan", "node"),
    ),
    Case(
        "nan-point-meshio-tet",
        lambda t: F.read_mesh(_meshio_edit(mc.tet_beam(), _nan_point)),
        MeshError,
        ("nan", "node"),
    ),
    Case(
        "nan-point-fe-model",
        lambda t: F.FEModel(_meshio_edit(mc.beam(), _nan_point), mc.steel()),
        MeshError,
        ("nan",),
    ),
    Case(
        "zero-volume-hex",
        lambda t: mc.reduce(mc.with_points(mc.beam(), _flatten)),
        MeshError,
        ("zero volume",),
    ),
    Case(
        "zero-volume-tet",
        lambda t: mc.reduce(mc.with_points(mc.tet_beam(), _flatten)),
        MeshError,
        ("degenerate",),
    ),
    Case(
        "zero-volume-tet10",
        lambda t: mc.reduce(
            __import__("skfem").MeshTet2.from_mesh(mc.with_points(mc.tet_beam(), _flatten))
        ),
        MeshError,
        ("zero volume",),
    ),
    Case(
        "collapsed-hex",
        lambda t: mc.reduce(mc.with_points(mc.beam(), _collapse_one_hex)),
        MeshError,
        ("degenerate",),
    ),
    Case(
        "inverted-element-meshio",
        lambda t: F.read_mesh(_meshio_edit(mc.beam(), _invert_first)),
        MeshError,
        ("inverted", "element"),
    ),
    Case(
        "no-cells",
        lambda t: F.read_mesh(mc.meshio_cells(np.zeros((0, 3)), [])),
        MeshError,
        ("no volume cells",),
    ),
    Case(
        "empty-hex-block",
        lambda t: F.read_mesh(
            mc.meshio_cells(np.zeros((0, 3)), [("hexahedron", np.zeros((0, 8), dtype=int))])
        ),
        MeshError,
        ("hexahedron",),
    ),
    Case(
        "surface-only",
        lambda t: F.read_mesh(mc.meshio_cells(np.eye(3), [("triangle", np.array([[0, 1, 2]]))])),
        MeshError,
        ("triangle",),
    ),
    Case(
        "wedge-cells",
        lambda t: F.read_mesh(mc.meshio_cells(PRISM_POINTS, [WEDGE])),
        MeshError,
        ("wedge",),
    ),
    Case(
        "pyramid-cells",
        lambda t: F.read_mesh(
            mc.meshio_cells(PYRAMID_POINTS, [("pyramid", np.array([[0, 1, 2, 3, 4]]))])
        ),
        MeshError,
        ("pyramid",),
    ),
    Case(
        "hexahedron20-cells",
        lambda t: F.read_mesh(
            mc.meshio_cells(
                np.random.default_rng(0).random((20, 3)), [("hexahedron20", np.arange(20)[None])]
            )
        ),
        MeshError,
        ("hexahedron20",),
    ),
    Case(
        "mixed-volume-cells",
        lambda t: F.read_mesh(
            mc.meshio_cells(
                np.vstack([TET_POINTS, np.random.default_rng(1).random((8, 3)) + 2]),
                [("tetra", np.array([[0, 1, 2, 3]])), ("hexahedron", np.arange(4, 12)[None])],
            )
        ),
        MeshError,
        ("tetra", "hexahedron"),
    ),
    Case(
        "connectivity-out-of-range",
        lambda t: F.read_mesh(mc.meshio_cells(TET_POINTS, [("tetra", np.array([[0, 1, 2, 30]]))])),
        MeshError,
        ("30", "4 points"),
    ),
    Case(
        "connectivity-negative",
        lambda t: F.read_mesh(_meshio_edit(mc.beam(), _negative_index)),
        MeshError,
        ("-1",),
    ),
    Case(
        "two-dimensional-points",
        lambda t: F.read_mesh(_meshio_edit(mc.beam(), _points_2d)),
        MeshError,
        ("two-dimensional",),
    ),
    Case(
        "two-dimensional-skfem",
        lambda t: F.read_mesh(__import__("skfem").MeshTri()),
        MeshError,
        ("MeshTri",),
    ),
    Case("mesh-is-a-list", lambda t: F.read_mesh([1, 2, 3]), MeshError, ("list",)),
    Case("mesh-is-none", lambda t: F.read_mesh(None), MeshError, ("NoneType",)),
    Case(
        "missing-file",
        lambda t: F.read_mesh(str(t / "missing.msh")),
        MeshError,
        ("missing.msh", "does not exist"),
    ),
    Case("garbage-file", lambda t: F.read_mesh(_garbage_file(t)), MeshError, ("garbage.msh",)),
    Case(
        "disconnected-two-parts",
        lambda t: mc.reduce(mc.two_parts(2)),
        MeshError,
        ("not connected", "2 separate parts"),
    ),
    Case(
        "disconnected-three-parts",
        lambda t: mc.reduce(mc.two_parts(3)),
        MeshError,
        ("3 separate parts",),
    ),
    Case(
        "disconnected-clamped",
        lambda t: mc.reduce(mc.two_parts(2), F.NormalModes(3, fixed=mc.end(0.0))),
        MeshError,
        ("not connected",),
    ),
    Case(
        "orphan-node", lambda t: mc.reduce(mc.with_orphan()), MeshError, ("belong to no element",)
    ),
    Case(
        "node-set-out-of-range",
        lambda t: F.read_mesh(mc.beam(), node_sets={"A": [99999]}),
        MeshError,
        ("'A'", "99999"),
    ),
    Case(
        "node-set-not-integers",
        lambda t: F.read_mesh(mc.beam(), node_sets={"A": ["x"]}),
        MeshError,
        ("'A'",),
    ),
    Case(
        "node-set-unknown-name",
        lambda t: mc.reduce(strategy=F.CraigBampton(2, interfaces={"A": "clamp"})),
        MeshError,
        ("clamp",),
    ),
]

MATERIAL = [
    Case("E-zero", lambda t: F.Material(E=0, nu=0.3, rho=RHO), MeshError, ("E=0",)),
    Case("E-negative", lambda t: F.Material(E=-2e11, nu=0.3, rho=RHO), MeshError, ("E=",)),
    Case("E-nan", lambda t: F.Material(E=nan, nu=0.3, rho=RHO), MeshError, ("E=nan",)),
    Case("E-inf", lambda t: F.Material(E=inf, nu=0.3, rho=RHO), MeshError, ("E=inf",)),
    Case("E-string", lambda t: F.Material(E="steel", nu=0.3, rho=RHO), MeshError, ("steel",)),
    Case("E-bool", lambda t: F.Material(E=True, nu=0.3, rho=RHO), MeshError, ("E=True",)),
    Case("nu-half", lambda t: F.Material(E=2e11, nu=0.5, rho=RHO), MeshError, ("nu=0.5",)),
    Case("nu-minus-one", lambda t: F.Material(E=2e11, nu=-1.0, rho=RHO), MeshError, ("nu=-1",)),
    Case("nu-too-large", lambda t: F.Material(E=2e11, nu=0.7, rho=RHO), MeshError, ("nu=0.7",)),
    Case("rho-zero", lambda t: F.Material(E=2e11, nu=0.3, rho=0), MeshError, ("rho=0",)),
    Case("rho-negative", lambda t: F.Material(E=2e11, nu=0.3, rho=-RHO), MeshError, ("rho=",)),
    Case("rho-none", lambda t: F.Material(E=2e11, nu=0.3, rho=None), MeshError, ("rho=None",)),
    Case(
        "material-missing",
        lambda t: F.reduce(mc.beam(), None, F.NormalModes(3)),
        MeshError,
        ("material",),
    ),
    Case(
        "material-dict",
        lambda t: F.reduce(mc.beam(), {"E": 2e11}, F.NormalModes(3)),
        MeshError,
        ("dict",),
    ),
    Case(
        "material-in-mm-t-mpa",
        lambda t: F.Material(E=2.1e5, nu=0.3, rho=7.85e-9),
        UnitsWarning,
        ("wave speed", "SI"),
    ),
    Case(
        "mesh-in-millimetres",
        lambda t: mc.reduce(mc.beam(length=1000.0, h=50.0)),
        UnitsWarning,
        ("1000", "millimetres"),
    ),
    Case(
        "steel-si-is-quiet",
        lambda t: mc.reduce(),
        None,
        # free-free first bending: Euler-Bernoulli 266.7 Hz; six trilinear hexahedra lock
        # in bending and sit above it (630 Hz), never 1000x below
        check=lambda rb: 266.7 < rb.frequencies[0] < 800,
    ),
]


def _n(rb):
    return rb.modes.shape[1]


REDUCTION = [
    Case("normal-fraction", lambda t: F.NormalModes(2.5), MeshError, ("NormalModes", "2.5")),
    Case("normal-bool", lambda t: F.NormalModes(True), MeshError, ("NormalModes", "True")),
    Case("normal-string", lambda t: F.NormalModes("3"), MeshError, ("NormalModes", "'3'")),
    Case("normal-nan", lambda t: F.NormalModes(nan), MeshError, ("NormalModes", "nan")),
    Case("normal-negative", lambda t: F.NormalModes(-1), MeshError, ("NormalModes", "-1")),
    Case("normal-zero", lambda t: F.NormalModes(0), MeshError, ("NormalModes", "0")),
    Case("normal-none", lambda t: F.NormalModes(None), MeshError, ("NormalModes", "None")),
    Case(
        "normal-integral-float",
        lambda t: F.NormalModes(8.0),
        None,
        check=lambda s: s.n == 8 and type(s.n) is int,
    ),
    Case("normal-numpy-int", lambda t: F.NormalModes(np.int64(3)), None, check=lambda s: s.n == 3),
    Case(
        "static-fraction",
        lambda t: F.StaticCorrection(2.5, loads="A"),
        MeshError,
        ("StaticCorrection", "2.5"),
    ),
    Case(
        "static-negative",
        lambda t: F.StaticCorrection(-1, loads="A"),
        MeshError,
        ("StaticCorrection", "-1"),
    ),
    Case(
        "static-zero-normal-modes",
        lambda t: mc.reduce(strategy=F.StaticCorrection(0, loads=np.ones(84)), geometric=False),
        None,
        check=lambda rb: _n(rb) == 1 and rb.mode_kind == ("static-correction",),
    ),
    Case("ritz-zero", lambda t: F.RitzVectors(0, load="A"), MeshError, ("RitzVectors", "0")),
    Case(
        "ritz-fraction", lambda t: F.RitzVectors(1.5, load="A"), MeshError, ("RitzVectors", "1.5")
    ),
    Case(
        "craig-bampton-negative",
        lambda t: F.CraigBampton(-1, interfaces={"A": "A"}),
        MeshError,
        ("CraigBampton", "-1"),
    ),
    Case(
        "craig-bampton-fraction",
        lambda t: F.CraigBampton(2.5, interfaces={"A": "A"}),
        MeshError,
        ("CraigBampton", "2.5"),
    ),
    Case(
        "craig-bampton-bool",
        lambda t: F.CraigBampton(False, interfaces={"A": "A"}),
        MeshError,
        ("CraigBampton", "False"),
    ),
    Case(
        "craig-bampton-zero-is-constraint-modes",
        lambda t: mc.reduce(
            strategy=F.CraigBampton(0, interfaces={"A": mc.end(0.0), "B": mc.end(1.0)})
        ),
        None,
        check=lambda rb: _n(rb) == 6,
    ),  # the 6 frame modes of B (A is the body frame)
    Case(
        "normal-5000-on-84-dofs",
        lambda t: mc.reduce(strategy=F.NormalModes(5000)),
        MeshError,
        ("5000", "84 DOFs", "78"),
    ),
    Case(
        "normal-one-too-many",
        lambda t: mc.reduce(strategy=F.NormalModes(79)),
        MeshError,
        ("79", "78"),
    ),
    Case(
        "normal-all-available",
        lambda t: mc.reduce(strategy=F.NormalModes(78), stress_modes=False, geometric=False),
        None,
        check=lambda rb: _n(rb) == 78,
    ),
    Case(
        "normal-clamped-too-many",
        lambda t: mc.reduce(strategy=F.NormalModes(80, fixed=mc.end(0.0))),
        MeshError,
        ("80", "72"),
    ),
    Case(
        "craig-bampton-too-many",
        lambda t: mc.reduce(strategy=F.CraigBampton(500, interfaces={"A": mc.end(0.0)})),
        MeshError,
        ("500", "72"),
    ),
    Case(
        "ritz-too-many",
        lambda t: mc.reduce(strategy=F.RitzVectors(500, load=np.ones(84))),
        MeshError,
        ("500", "78"),
    ),
    Case(
        "every-node-fixed",
        lambda t: mc.reduce(strategy=F.NormalModes(3, fixed=F.Box((-1, -1, -1), (2, 2, 2)))),
        MeshError,
        ("every", "fixed"),
    ),
    Case(
        "every-node-in-interfaces",
        lambda t: mc.reduce(
            strategy=F.CraigBampton(3, interfaces={"A": F.Box((-1, -1, -1), (2, 2, 2))})
        ),
        MeshError,
        ("['A']", "every"),
    ),
    Case(
        "static-every-node-fixed",
        lambda t: mc.reduce(
            strategy=F.StaticCorrection(3, loads=np.ones(84), fixed=F.Box((-1, -1, -1), (2, 2, 2)))
        ),
        MeshError,
        ("fixed",),
    ),
    Case(
        "interfaces-a-list",
        lambda t: F.CraigBampton(3, interfaces=["A"]),
        MeshError,
        ("interfaces", "list"),
    ),
    Case("interfaces-empty", lambda t: F.CraigBampton(3, interfaces={}), MeshError, ("interface",)),
    Case(
        "frame-unknown",
        lambda t: F.CraigBampton(3, interfaces={"A": "A"}, frame="body"),
        MeshError,
        ("frame", "body"),
    ),
    Case(
        "reference-unknown",
        lambda t: mc.reduce(
            strategy=F.CraigBampton(3, interfaces={"A": mc.end(0.0)}, reference="Z")
        ),
        MeshError,
        ("'Z'",),
    ),
    Case(
        "interface-selects-nothing",
        lambda t: mc.reduce(strategy=F.CraigBampton(3, interfaces={"A": mc.end(5.0)})),
        MeshError,
        ("'A'", "selects no nodes"),
    ),
    Case(
        "interface-a-float",
        lambda t: mc.reduce(strategy=F.CraigBampton(3, interfaces={"A": 3.5})),
        MeshError,
        ("3.5",),
    ),
    Case(
        "interface-kind-unknown",
        lambda t: mc.reduce(
            strategy=F.CraigBampton(3, interfaces={"A": mc.end(0.0)}, interface_kind="glue")
        ),
        MeshError,
        ("glue",),
    ),
    Case(
        "interface-two-nodes",
        lambda t: mc.reduce(strategy=F.CraigBampton(3, interfaces={"A": F.Nodes([0, 1])})),
        MeshError,
        ("'A'", "collinear"),
    ),
    Case(
        "extra-interface-kind-unknown",
        lambda t: mc.reduce(interfaces={"B": mc.end(1.0)}, interface_kind="weld"),
        MeshError,
        ("weld",),
    ),
    Case(
        "plane-zero-normal", lambda t: F.Plane((0, 0, 0), (0, 0, 0)), MeshError, ("Plane", "normal")
    ),
    Case(
        "plane-nan-point", lambda t: F.Plane((nan, 0, 0), (1, 0, 0)), MeshError, ("Plane", "point")
    ),
    Case(
        "plane-negative-tol",
        lambda t: F.Plane((0, 0, 0), (1, 0, 0), tol=-1),
        MeshError,
        ("Plane", "tol"),
    ),
    Case("box-inverted", lambda t: F.Box((1, 1, 1), (0, 0, 0)), MeshError, ("Box", "lo")),
    Case("box-wrong-shape", lambda t: F.Box((0, 0), (1, 1)), MeshError, ("Box", "lo")),
    Case(
        "sphere-negative-radius", lambda t: F.Sphere((0, 0, 0), -1), MeshError, ("Sphere", "radius")
    ),
    Case(
        "sphere-string-centre", lambda t: F.Sphere("origin", 1.0), MeshError, ("Sphere", "origin")
    ),
    Case(
        "cylinder-zero-axis",
        lambda t: F.Cylinder((0, 0, 0), (0, 0, 0), 0.1),
        MeshError,
        ("Cylinder", "axis"),
    ),
    Case(
        "cylinder-nan-radius",
        lambda t: F.Cylinder((0, 0, 0), (1, 0, 0), nan),
        MeshError,
        ("Cylinder", "radius"),
    ),
    Case("nearest-zero", lambda t: F.Nearest((0, 0, 0), n=0), MeshError, ("Nearest", "n=0")),
    Case(
        "nodes-out-of-range",
        lambda t: mc.reduce(strategy=F.CraigBampton(3, interfaces={"A": F.Nodes([10000])})),
        MeshError,
        ("10000",),
    ),
    Case(
        "nodes-negative",
        lambda t: mc.reduce(strategy=F.CraigBampton(3, interfaces={"A": F.Nodes([-1, 0, 1])})),
        MeshError,
        ("-1",),
    ),
    Case("nodes-fractional", lambda t: F.Nodes([1.5, 2]), MeshError, ("Nodes", "1.5")),
    Case("strategy-missing", lambda t: F.reduce(mc.beam(), mc.steel()), MeshError, ("strategy",)),
    Case(
        "strategy-a-string",
        lambda t: F.reduce(mc.beam(), mc.steel(), "normal"),
        MeshError,
        ("strategy", "str"),
    ),
    Case("zeta-wrong-length", lambda t: mc.reduce(zeta=[0.1, 0.2]), MeshError, ("zeta", "2")),
    Case("zeta-nan", lambda t: mc.reduce(zeta=nan), MeshError, ("zeta",)),
    Case("zeta-negative", lambda t: mc.reduce(zeta=-0.1), MeshError, ("zeta", "-0.1")),
    Case(
        "zeta-per-mode",
        lambda t: mc.reduce(zeta=[0.01, 0.02, 0.03], geometric=False),
        None,
        check=lambda rb: np.allclose(rb.zeta, [0.01, 0.02, 0.03]),
    ),
    Case("rayleigh-one-value", lambda t: mc.reduce(rayleigh=(1.0,)), MeshError, ("rayleigh",)),
    Case("rayleigh-nan", lambda t: mc.reduce(rayleigh=(nan, 0.0)), MeshError, ("rayleigh",)),
    Case("rayleigh-negative", lambda t: mc.reduce(rayleigh=(0.0, -1e-4)), MeshError, ("rayleigh",)),
    Case("backend-unknown", lambda t: mc.reduce(backend="magic"), MeshError, ("magic",)),
    Case(
        "fe-model-backend-unknown",
        lambda t: F.FEModel(mc.beam(), mc.steel(), backend=3),
        MeshError,
        ("backend=3",),
    ),
    Case(
        "load-array-wrong-rows",
        lambda t: mc.reduce(strategy=F.StaticCorrection(3, loads=np.ones(5))),
        MeshError,
        ("StaticCorrection", "5 rows", "84"),
    ),
    Case(
        "load-array-nan",
        lambda t: mc.reduce(strategy=F.StaticCorrection(3, loads=np.full(84, nan))),
        MeshError,
        ("StaticCorrection", "non-finite"),
    ),
    Case(
        "load-unknown-interface",
        lambda t: mc.reduce(strategy=F.StaticCorrection(3, loads="B")),
        MeshError,
        ("'B'", "interface"),
    ),
    Case(
        "load-none",
        lambda t: mc.reduce(strategy=F.StaticCorrection(3, loads=None)),
        MeshError,
        ("StaticCorrection", "no loads"),
    ),
    Case(
        "load-a-dict-of-numbers",
        lambda t: mc.reduce(strategy=F.RitzVectors(3, load=[{"x": 1}])),
        MeshError,
        ("RitzVectors",),
    ),
]


def _sda(key, value):
    """A spring-damper-actuator case with ``key=value`` (k = 100 N/m otherwise)."""

    def call(t):
        return mc.add(
            mc.pendulum(),
            s=lambda m: fm.SpringDamperActuator(
                m.ground, (0, 1, 0), m.link, (0, 0, 0), **{"k": 100.0, key: value}
            ),
        )

    return call


def _point_far(t):
    return mc.flexible().beam.point((5.0, 5.0, 5.0))


MODEL = [
    Case(
        "flexible-point-off-the-body",
        _point_far,
        ModelError,
        ("'beam'", "[5.0, 5.0, 5.0]", "m from the nearest", "spans"),
    ),
    Case(
        "flexible-point-nan",
        lambda t: mc.flexible().beam.point((nan, 0, 0)),
        ModelError,
        ("'beam'", "point"),
    ),
    Case(
        "flexible-point-two-values",
        lambda t: mc.flexible().beam.point((1.0, 0.0)),
        ModelError,
        ("'beam'", "point"),
    ),
    Case(
        "flexible-point-inside-an-element",
        lambda t: mc.flexible().beam.point((0.52, 0.02, 0.03)),
        None,
        check=lambda fr: np.linalg.norm(fr.position - [0.5, 0.0, 0.05]) < 1e-12,
    ),  # nearest node, 0.0361 m away
    Case(
        "flexible-point-with-tol",
        lambda t: mc.flexible().beam.point((1.05, 0.0, 0.0), tol=0.01),
        ModelError,
        ("'beam'", "tol"),
    ),
    Case(
        "flexible-point-tol-nan",
        lambda t: mc.flexible().beam.point((5.0, 5.0, 5.0), tol=nan),
        ModelError,
        ("'beam'", "tol"),
    ),
    Case(
        "flexible-q0-nan",
        lambda t: mc.flexible(q0=[nan, 0.0, 0.0]).beam.q0,
        ModelError,
        ("'beam'", "q0"),
    ),
    Case(
        "flexible-node-fraction",
        lambda t: mc.flexible().beam.node(2.5),
        ModelError,
        ("'beam'", "2.5"),
    ),
    Case(
        "flexible-node-out-of-range",
        lambda t: mc.flexible().beam.node(10**6),
        ModelError,
        ("'beam'", "1000000"),
    ),
    Case(
        "flexible-interface-unknown",
        lambda t: mc.flexible().beam.interface("Z"),
        FlexmbdError,
        ("'Z'",),
    ),
    Case(
        "flexible-q0-wrong-length",
        lambda t: mc.flexible(q0=[1.0, 2.0]).beam.q0,
        ModelError,
        ("'beam'", "q0"),
    ),
    Case(
        "flexible-no-reduced-body",
        lambda t: fm.FlexibleBody(None),
        ModelError,
        ("FlexibleBody", "ReducedBody"),
    ),
    Case(
        "flexible-not-a-reduced-body",
        lambda t: fm.FlexibleBody(object()),
        ModelError,
        ("object", "ReducedBody"),
    ),
    Case(
        "flexible-from-mesh-no-material",
        lambda t: fm.FlexibleBody.from_mesh(mc.beam(), None, F.NormalModes(3)),
        ModelError,
        ("material",),
    ),
    Case(
        "flexible-stresses-without-stress-modes",
        lambda t: mc.flexible(False).beam.stresses(np.zeros(3)),
        ModelError,
        ("'beam'", "stress modes"),
    ),
    Case("rigid-mass-string", lambda t: fm.RigidBody("1"), ModelError, ("mass", "'1'")),
    Case("rigid-mass-bool", lambda t: fm.RigidBody(True), ModelError, ("mass", "True")),
    Case("rigid-mass-complex", lambda t: fm.RigidBody(1j), ModelError, ("mass", "1j")),
    Case("rigid-mass-nan", lambda t: fm.RigidBody(nan), ModelError, ("mass", "nan")),
    Case("rigid-mass-zero", lambda t: fm.RigidBody(0.0), ModelError, ("mass", "0")),
    Case("rigid-mass-negative", lambda t: fm.RigidBody(-1.0), ModelError, ("mass", "-1")),
    Case("rigid-inertia-string", lambda t: fm.RigidBody(1.0, "x"), ModelError, ("inertia",)),
    Case(
        "rigid-inertia-triangle", lambda t: fm.RigidBody(1.0, (1, 1, 5)), ModelError, ("triangle",)
    ),
    Case(
        "rigid-inertia-negative",
        lambda t: fm.RigidBody(1.0, (-1, 1, 1)),
        ModelError,
        ("positive semi-definite",),
    ),
    Case("rigid-inertia-nan", lambda t: fm.RigidBody(1.0, (nan, 1, 1)), ModelError, ("inertia",)),
    Case("rigid-com-string", lambda t: fm.RigidBody(1.0, com="abc"), ModelError, ("com", "abc")),
    Case(
        "rigid-com-two-values",
        lambda t: fm.RigidBody(1.0, com=(1, 2)),
        ModelError,
        ("com", "(1, 2)"),
    ),
    Case("revolute-axis-string", lambda t: mc.pendulum(axis="z"), ModelError, ("Revolute", "axis")),
    Case(
        "revolute-axis-zero",
        lambda t: mc.pendulum(axis=(0, 0, 0)),
        ModelError,
        ("Revolute", "axis"),
    ),
    Case(
        "revolute-axis-nan",
        lambda t: mc.pendulum(axis=(nan, 0, 1)),
        ModelError,
        ("Revolute", "axis"),
    ),
    Case(
        "revolute-axis-denormal",
        lambda t: mc.pendulum(axis=(1e-320, 0, 0)),
        ModelError,
        ("Revolute", "axis"),
    ),
    Case("revolute-q0-string", lambda t: mc.pendulum(q0="a"), ModelError, ("q0",)),
    Case("revolute-q0-nan", lambda t: mc.pendulum(q0=[nan]), ModelError, ("q0",)),
    Case("revolute-q0-two-values", lambda t: mc.pendulum(q0=[1.0, 2.0]), ModelError, ("q0",)),
    Case("revolute-qd0-inf", lambda t: mc.pendulum(qd0=[inf]), ModelError, ("qd0",)),
    Case(
        "revolute-parent-frame-string",
        lambda t: mc.pendulum(parent_frame="x"),
        ModelError,
        ("position",),
    ),
    Case(
        "revolute-parent-frame-nan",
        lambda t: mc.pendulum(parent_frame=(nan, 0, 0)),
        ModelError,
        ("position",),
    ),
    Case(
        "universal-parallel-axes",
        lambda t: fm.Universal(
            fm.Model().ground, fm.RigidBody(1.0, (1, 1, 1)), axis1=(1, 0, 0), axis2=(1, 0, 0)
        ),
        ModelError,
        ("Universal", "axis"),
    ),
    Case(
        "planar-zero-normal",
        lambda t: fm.Planar(fm.Model().ground, fm.RigidBody(1.0, (1, 1, 1)), normal=(0, 0, 0)),
        ModelError,
        ("Planar",),
    ),
    Case(
        "joint-to-itself",
        lambda t: mc.add(mc.pendulum(), j2=lambda m: fm.Revolute(m.link, m.link)),
        ModelError,
        ("same body",),
    ),
    Case(
        "joint-parent-a-string",
        lambda t: fm.Revolute("ground", fm.RigidBody(1.0)),
        ModelError,
        ("parent", "str"),
    ),
    Case(
        "joint-child-none",
        lambda t: fm.Revolute(fm.Model().ground, None),
        ModelError,
        ("child", "NoneType"),
    ),
    Case(
        "joint-to-unregistered-body",
        lambda t: mc.add(
            fm.Model(), j=lambda m: fm.Revolute(m.ground, fm.RigidBody(1.0, (1, 1, 1)))
        ).compile("recursive"),
        ModelError,
        ("'j'", "not in model"),
    ),
    Case(
        "body-without-joint",
        lambda t: mc.add(fm.Model(), b=fm.RigidBody(1.0, (1, 1, 1))).compile("recursive"),
        ModelError,
        ("'b'",),
    ),
    Case("formulation-unknown", lambda t: mc.pendulum().compile("magic"), ModelError, ("magic",)),
    Case("gravity-string", lambda t: fm.Gravity("down"), ModelError, ("Gravity",)),
    Case("gravity-nan", lambda t: fm.Gravity((nan, 0, 0)), ModelError, ("Gravity",)),
    Case("gravity-scalar", lambda t: fm.Gravity(9.81), ModelError, ("Gravity", "9.81")),
    Case(
        "point-force-nan-point",
        lambda t: mc.add(mc.pendulum(), f=lambda m: fm.PointForce(m.link, (nan, 0, 0), (1, 0, 0))),
        ModelError,
        ("PointForce", "point"),
    ),
    Case(
        "point-force-string",
        lambda t: mc.add(mc.pendulum(), f=lambda m: fm.PointForce(m.link, force="x")),
        ModelError,
        ("PointForce", "force"),
    ),
    Case(
        "point-force-frame-unknown",
        lambda t: mc.add(mc.pendulum(), f=lambda m: fm.PointForce(m.link, frame="moon")),
        ModelError,
        ("PointForce", "moon"),
    ),
    Case(
        "point-force-on-ground",
        lambda t: fm.PointForce(fm.Model().ground),
        ModelError,
        ("PointForce", "ground"),
    ),
    Case(
        "point-torque-nan",
        lambda t: mc.add(mc.pendulum(), f=lambda m: fm.PointTorque(m.link, (nan, 0, 0))),
        ModelError,
        ("PointTorque", "torque"),
    ),
    Case(
        "joint-force-string",
        lambda t: mc.add(mc.pendulum(), f=lambda m: fm.JointForce(m.hinge, "x")),
        ModelError,
        ("JointForce", "'hinge'"),
    ),
    Case(
        "joint-force-nan",
        lambda t: mc.add(mc.pendulum(), f=lambda m: fm.JointForce(m.hinge, nan)),
        ModelError,
        ("JointForce", "nan"),
    ),
    Case(
        "joint-force-two-values",
        lambda t: mc.add(mc.pendulum(), f=lambda m: fm.JointForce(m.hinge, [1.0, 2.0])),
        ModelError,
        ("JointForce", "1 values"),
    ),
    Case(
        "joint-force-not-a-joint",
        lambda t: fm.JointForce("hinge", 1.0),
        ModelError,
        ("JointForce", "hinge"),
    ),
    *[
        Case(f"sda-{key}-{value!r}", _sda(key, value), ModelError, ("SpringDamperActuator", key))
        for key, value in (
            ("k", "a"),
            ("k", nan),
            ("k", -1.0),
            ("c", -1.0),
            ("c", inf),
            ("l0", nan),
            ("l0", -0.5),
            ("fa", nan),
            ("fa", "push"),
        )
    ],
    Case(
        "sda-point-nan",
        lambda t: mc.add(
            mc.pendulum(),
            s=lambda m: fm.SpringDamperActuator(m.ground, (nan, 0, 0), m.link, (0, 0, 0), k=1.0),
        ),
        ModelError,
        ("SpringDamperActuator", "point_i"),
    ),
    Case(
        "frame-position-nan",
        lambda t: fm.RigidBody(1.0).frame((nan, 0, 0)),
        ModelError,
        ("position",),
    ),
    Case(
        "frame-rotation-nan",
        lambda t: fm.RigidBody(1.0).frame((0, 0, 0), (nan, 0, 0)),
        ModelError,
        ("rotation",),
    ),
    Case(
        "frame-rotation-string",
        lambda t: fm.RigidBody(1.0).frame((0, 0, 0), "xyz"),
        ModelError,
        ("rotation", "xyz"),
    ),
    Case(
        "frame-rotation-not-orthonormal",
        lambda t: fm.RigidBody(1.0).frame((0, 0, 0), np.ones((3, 3))),
        ModelError,
        ("rotation", "orthonormal"),
    ),
    Case(
        "frame-quaternion-not-unit",
        lambda t: fm.RigidBody(1.0).frame((0, 0, 0), (2, 0, 0, 0)),
        ModelError,
        ("Euler parameters",),
    ),
    Case("frame-on-a-string", lambda t: fm.Frame("link"), ModelError, ("Frame", "str")),
    Case(
        "indexed-not-iterable",
        lambda t: mc.indexed(5, lambda m, i: fm.RigidBody(1.0)),
        ModelError,
        ("RigidBody", "5"),
    ),
    Case(
        "indexed-duplicate-index",
        lambda t: mc.indexed([1, 1], lambda m, i: fm.RigidBody(1.0, (1, 1, 1))),
        ModelError,
        ("1", "twice"),
    ),
    Case(
        "indexed-unhashable-index",
        lambda t: mc.indexed([[1]], lambda m, i: fm.RigidBody(1.0, (1, 1, 1))),
        ModelError,
        ("[1]",),
    ),
    Case(
        "indexed-rule-raises",
        lambda t: mc.indexed(range(3), lambda m, i: 1 / 0),
        ModelError,
        ("'arm'", "index 0", "ZeroDivisionError"),
    ),
    Case(
        "indexed-rule-returns-int",
        lambda t: mc.indexed(range(3), lambda m, i: 5),
        ModelError,
        ("'arm'", "int"),
    ),
    Case(
        "indexed-rule-none",
        lambda t: fm.RigidBody(range(3), rule=None),
        ModelError,
        ("RigidBody", "rule"),
    ),
    Case(
        "indexed-rule-not-callable",
        lambda t: fm.RigidBody(range(3), rule=5),
        ModelError,
        ("RigidBody", "rule"),
    ),
    Case(
        "indexed-rule-bad-member",
        lambda t: mc.indexed(range(2), lambda m, i: fm.RigidBody(-1.0)),
        ModelError,
        ("mass",),
    ),
    Case(
        "indexed-rule-skips-every-index",
        lambda t: mc.indexed(range(3), lambda m, i: None),
        None,
        check=lambda m: len(m.arm) == 0,
    ),
    Case("block-rule-not-callable", lambda t: fm.Block(rule=5), ModelError, ("Block", "rule")),
    Case(
        "block-rule-raises",
        lambda t: mc.add(fm.Model(), left=fm.Block(rule=lambda b: b.missing_attribute)),
        ModelError,
        ("'left'", "AttributeError"),
    ),
    Case(
        "indexed-block-rule-raises",
        lambda t: mc.add(fm.Model(), arms=fm.Block(range(2), rule=lambda b, i: 1 / 0)),
        ModelError,
        ("'arms'", "ZeroDivisionError"),
    ),
    Case(
        "ground-replaced",
        lambda t: mc.add(fm.Model(), ground=fm.RigidBody(1.0)),
        ModelError,
        ("ground",),
    ),
    Case(
        "ground-overwritten-by-number",
        lambda t: mc.add(fm.Model(), ground=5),
        ModelError,
        ("ground",),
    ),
    Case(
        "component-owned-twice",
        lambda t: (lambda m, b: mc.add(m, a=b, c=b))(fm.Model(), fm.RigidBody(1.0)),
        ModelError,
        ("'a'", "'c'"),
    ),
    Case("model-name-nan", lambda t: fm.Model(nan), ModelError, ("Model", "nan")),
    Case("model-name-empty", lambda t: fm.Model("  "), ModelError, ("Model", "name")),
    Case("urdf-missing-file", lambda t: mc.urdf(str(t / "none.urdf")), ModelError, ("none.urdf",)),
    Case("urdf-bad-xml-text", lambda t: mc.urdf("<robot name='r'><link"), ModelError, ("XML",)),
    Case("urdf-no-link", lambda t: mc.urdf("<robot name='r'></robot>"), ModelError, ("no <link>",)),
    Case(
        "urdf-duplicate-link",
        lambda t: _urdf_file(t, mc.robot(mc.link("a"), mc.link("a"))),
        ModelError,
        ("'a'", "twice"),
    ),
    Case(
        "urdf-negative-mass",
        lambda t: _urdf_file(t, mc.robot(mc.link("a"), mc.link("b", "-2"), mc.revolute())),
        ModelError,
        ("'b'", "-2"),
    ),
    Case(
        "urdf-mass-not-a-number",
        lambda t: _urdf_file(t, mc.robot(mc.link("a"), mc.link("b", "heavy"), mc.revolute())),
        ModelError,
        ("'b'", "heavy"),
    ),
    Case(
        "urdf-mass-nan",
        lambda t: _urdf_file(t, mc.robot(mc.link("a"), mc.link("b", "nan"), mc.revolute())),
        ModelError,
        ("'b'", "nan"),
    ),
    Case(
        "urdf-zero-axis",
        lambda t: _urdf_file(t, mc.robot(mc.link("a"), mc.link("b"), mc.revolute(axis="0 0 0"))),
        ModelError,
        ("axis",),
    ),
    Case(
        "urdf-unknown-child",
        lambda t: _urdf_file(t, mc.robot(mc.link("a"), mc.link("b"), mc.revolute(child="c"))),
        ModelError,
        ("'c'",),
    ),
]


def _gif(t):
    return str(t / "out.gif")


VIZ = [
    Case(
        "show-von-mises-without-stress-modes",
        lambda t: fm.viz.show(mc.reduced_beam(False), field="von_mises", file=str(t / "a.png")),
        FlexmbdError,
        ("von_mises", "stress_modes=True"),
    ),
    Case(
        "plot-mode-von-mises-without-stress-modes",
        lambda t: fm.viz.plot_mode(mc.reduced_beam(False), 1, str(t / "a.png"), field="von_mises"),
        FlexmbdError,
        ("von_mises", "stress modes"),
    ),
    Case(
        "animate-mode-von-mises-without-stress-modes",
        lambda t: fm.viz.animate_mode(mc.reduced_beam(False), 1, _gif(t), field="von_mises"),
        FlexmbdError,
        ("von_mises", "stress modes"),
    ),
    Case(
        "animate-von-mises-without-stress-modes",
        lambda t: fm.viz.animate(mc.results_without_stress(), _gif(t), field="von_mises"),
        FlexmbdError,
        ("'beam'", "von_mises", "stress modes"),
    ),
    Case(
        "animate-field-unknown",
        lambda t: fm.viz.animate(mc.results_without_stress(), _gif(t), field="pressure"),
        FlexmbdError,
        ("pressure",),
    ),
    Case(
        "show-field-unknown",
        lambda t: fm.viz.show(mc.reduced_beam(), field="pressure"),
        FlexmbdError,
        ("pressure",),
    ),
    Case(
        "animate-not-results",
        lambda t: fm.viz.animate(mc.pendulum(), _gif(t)),
        FlexmbdError,
        ("Results",),
    ),
    Case(
        "animate-checks-the-field-before-rendering",
        lambda t: fm.viz.animate(
            mc.results_without_stress(), _gif(t), field="von_mises", view="sideways"
        ),
        FlexmbdError,
        ("von_mises",),
    ),
]

CASES = [*MESH, *MATERIAL, *REDUCTION, *MODEL, *VIZ]
GROUPS = {"mesh": MESH, "material": MATERIAL, "reduction": REDUCTION, "model": MODEL, "viz": VIZ}


def test_the_table_is_large_and_ids_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 110
    assert all(len(g) >= 8 for g in GROUPS.values())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path):
    with time_budget():
        if case.error is None:
            with warnings.catch_warnings():
                warnings.simplefilter("error", UnitsWarning)  # correct input: no units alarm
                out = case.call(tmp_path)
            if case.check is not None:
                assert case.check(out), f"{case.id}: wrong result {out!r}"
            return
        if issubclass(case.error, Warning):
            with pytest.warns(case.error) as record:
                case.call(tmp_path)
            text = " ".join(str(w.message) for w in record if issubclass(w.category, case.error))
        else:
            with pytest.raises(FlexmbdError) as info:
                case.call(tmp_path)
            assert isinstance(info.value, case.error), (
                f"{case.id}: {type(info.value).__name__} instead of {case.error.__name__}"
            )
            text = str(info.value)
    low = text.lower()
    missing = [n for n in case.names if n.lower() not in low]
    assert not missing, f"{case.id}: message does not name {missing}: {text}"
