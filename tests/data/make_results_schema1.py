"""Write tiny schema-1 results files (tests/data/results_schema1.npz/.h5) with the code of
flexmbd before schema 2 (run with that checkout on PYTHONPATH: `python make_results_schema1.py
tests/data/results_schema1`); the fixture of tests/test_results.py::test_schema1_files_*."""

import sys

import numpy as np

from flexmbd.results import SCHEMA, Results

assert SCHEMA == 1
out = sys.argv[1]
t = np.linspace(0.0, 0.4, 5)
th = 0.3 * np.sin(t)
R = np.zeros((5, 4))
R[:, 0] = np.cos(th / 2)
R[:, 3] = np.sin(th / 2)
res = Results(
    t,
    th[:, None],
    np.cos(t)[:, None] * 0.3,
    -th[:, None],
    coordinates=[("hinge", "angle")],
    speeds=[("hinge", "rate")],
    joint_names=["hinge", "cut"],
    reactions=np.arange(5 * 2 * 6, dtype=float).reshape(5, 2, 6),
    energy={"kinetic": t**2, "potential": -t, "total": t**2 - t},
    stats={"rhs_evaluations": np.arange(5) * 4},
    extra={
        "position:beam": np.column_stack([t, 2 * t, 0 * t]),
        "orientation:beam": R,
        "modal:beam": np.column_stack([t, t**2]),
        "interface:beam.A": np.column_stack([t, t, t, R]),
        "joint:cut:q": -th[:, None],
        "joint:cut:qd": -0.3 * np.cos(t)[:, None],
        "joint:cut:qdd": th[:, None],
        "lambda": np.ones((5, 2)),
        "driver:d": t,
    },
    meta={"model": "schema1", "formulation": "recursive", "integrator": "rk4", "dt": 0.1},
)
res.save(out + ".npz")
res.save(out + ".h5")
