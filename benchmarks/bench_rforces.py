"""Force elements in the recursive formulation: the compiled force table vs the Python path.

Measures, in one run, per call (CPU time, best of interleaved rounds):

* ``system.forward_dynamics(q, qd, tau)`` (the documented call) and
  ``system.qdd_and_reactions(q, qd, tau)`` (the fastest internal entry point) with the
  force elements in the compiled table (:mod:`flexmbd.recursive._nbforces`);
* the same ``forward_dynamics`` on the Python path that every loaded tree took before
  (the table switched off on the instance: each element applied from Python);
* for the joint spring-damper laws, Pinocchio ``aba`` + ``rnea`` with the law's joint
  torques computed in numpy from Python (the peer's way to apply a joint law);

and a 0.2 s RK4 run (h = 1 ms) of each model, compiled vs the Python path, on a 20-link
revolute chain under gravity (``tests/recursive/models.py``) with, per row, one kind
of element: constant loads (an SDA, a point force, a point torque in body axes, a
constant torque on every joint), a ``JointForce.spring_damper`` on every joint, and the
constant loads' values plus spring-damper actuators as functions of time only, and a
user's compiled cubic law (``JointForce.compiled_law``, a numba ``cfunc``) on every joint
(its Python path: the same cfunc called through ``ctypes``).

Usage: ``python benchmarks/bench_rforces.py [--write]`` (``--write`` replaces the
``rforces`` section of benchmarks/RESULTS.md).
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_cfa import best_time  # noqa: E402
from results_file import machine_line, replace_section  # noqa: E402

from tests.recursive.models import chain  # noqa: E402
from tests.recursive.pin_models import q_to_pin, to_pinocchio, v_to_pin  # noqa: E402

START, END = "<!-- rforces:start -->", "<!-- rforces:end -->"
N = 20
K, C = 5.0, 0.2


K3 = 5.0  # N m / rad^3 of the compiled cubic law


def cubic_law():
    """The compiled law ``tau = -K3 q^3 - C qd`` (a numba cfunc of the law signature)."""
    from numba import cfunc

    import flexmbd as fm

    @cfunc(fm.JointForce.LAW_SIGNATURE)
    def law(q, qd, t, which):
        if which == 0:
            return -K3 * q * q * q - C * qd
        return -3.0 * K3 * q * q if which == 1 else -C

    return law


def model(kind):
    """The 20-link chain with the loads of one row (``"constant"``, ``"spring_damper"``,
    ``"time functions"``, ``"compiled law"``)."""
    import flexmbd as fm

    m = chain(N)
    timed = kind == "time functions"

    def f(v):
        return (lambda t: np.asarray(v) * np.cos(t)) if timed else v

    if kind in ("constant", "time functions"):
        m.sda = fm.SpringDamperActuator(
            m.l2, (0.3, 0.0, 0.0), m.l8, (0.0, 0.0, 0.0), k=20.0, c=0.5, l0=1.0,
            fa=(lambda t: 2.0 * np.cos(t)) if timed else 2.0,
        )  # fmt: skip
        m.push = fm.PointForce(getattr(m, f"l{N - 1}"), (0.3, 0.0, 0.0), f([0.0, 1.0, 0.5]))
        m.twist = fm.PointTorque(m.l5, f([0.0, 0.2, 0.1]), frame="body")
    law = cubic_law() if kind == "compiled law" else None
    for i in range(N):
        j = getattr(m, f"j{i}")
        if law is not None:
            setattr(m, f"m{i}", fm.JointForce.compiled_law(j, law))
        elif kind == "constant":
            setattr(m, f"m{i}", fm.JointForce(j, [0.1]))
        else:
            fa = (lambda t: 0.1 * np.sin(t)) if timed else 0.0
            setattr(m, f"m{i}", fm.JointForce.spring_damper(j, K, C, 0.0, fa))
    return m


def python_path(s):
    """``s`` on the Python path of the loads (the force table switched off)."""
    s._table_entry = lambda ignore: None
    s._ftab = None
    return s


def rk4_time(s, rounds=3):
    best = np.inf
    for _ in range(rounds):
        t0 = time.process_time()
        s.simulate(0.2, dt=1e-3, integrator="rk4")
        best = min(best, time.process_time() - t0)
    return best


def row(kind, rng):
    import pinocchio as pin

    m = model(kind)
    s, p = m.compile("recursive"), python_path(model(kind).compile("recursive"))
    q, qd = rng.normal(scale=0.5, size=s.nq), rng.normal(size=s.nv)
    tau = rng.normal(scale=0.1, size=s.nv)
    t = 0.3
    out = {"kind": kind}
    fd, ref = s.forward_dynamics(q, qd, tau, t), p.forward_dynamics(q, qd, tau, t)
    out["diff"] = max(
        np.abs(fd.qdd - ref.qdd).max() / np.abs(ref.qdd).max(),
        np.abs(fd.reactions - ref.reactions).max() / np.abs(ref.reactions).max(),
    )
    out["fd"] = best_time(lambda: s.forward_dynamics(q, qd, tau, t))
    out["lean"] = best_time(lambda: s.qdd_and_reactions(q, qd, tau, t))
    out["py"] = best_time(lambda: p.forward_dynamics(q, qd, tau, t))
    if kind in ("spring_damper", "compiled law"):
        pm, maps = to_pinocchio(chain(N))
        pd = pm.createData()
        qp, vp = q_to_pin(maps, q), v_to_pin(maps, qd)
        kq = K if kind == "spring_damper" else K3 * q * q

        def pinf():
            tp = v_to_pin(maps, tau - kq * q - C * qd)
            a = pin.aba(pm, pd, qp, vp, tp)
            pin.rnea(pm, pd, qp, vp, a)

        out["pin"] = best_time(pinf)
    out["rk4"], out["rk4_py"] = rk4_time(s), rk4_time(p)
    a = s.simulate(0.2, dt=1e-3, integrator="rk4")
    b = p.simulate(0.2, dt=1e-3, integrator="rk4")
    out["rk4_diff"] = np.abs(a.q - b.q).max()
    return out


def render(rows, meta):
    lines = [
        "## Force elements in the recursive formulation (issue 13 items 1 and 5)",
        "",
        f"A {N}-link revolute chain under gravity (`tests/recursive/models.py` `chain`), one "
        "row per kind of element: *constant*: an SDA between links 2 and 8 (constant "
        "actuator force), a point force on the tip, a point torque in body axes, a constant "
        "torque on every joint; *spring_damper*: `JointForce.spring_damper` on every joint; "
        "*time functions*: the constant row's loads times cos(t) and spring-damper laws "
        "with actuators sin(t) on every joint; *compiled law*: a user's numba cfunc "
        "`-5 q^3 - 0.2 qd` (`JointForce.compiled_law`) on every joint, called by address "
        "in the kernels (its Python path: the cfunc through `ctypes`). Per call, CPU "
        "time, best of 7 batches: "
        "`forward_dynamics` (documented) and `qdd_and_reactions` (internal) with the "
        "compiled force table; `forward_dynamics` on the Python path every loaded tree "
        "took before (the table switched off on the instance: the elements applied from "
        "Python, the tree solve compiled); Pinocchio `aba` + `rnea` with the joint law's "
        "torques computed in numpy (joint laws only: Pinocchio has no force elements; for "
        "the cubic law the numpy `K3 q^2` is computed once, outside the timed call). "
        "RK4: 0.2 s at h = 1 ms (200 steps), best of 3 runs, CPU time.",
        "",
        "- Command: `python benchmarks/bench_rforces.py --write`",
        meta,
        "",
        "| elements | `forward_dynamics` [us] | `qdd_and_reactions` [us] | fd / lean "
        "| Python path fd [us] | speed-up | pin aba+rnea [us] | fd / pin | max rel. diff "
        "| RK4 run [ms] | Python path RK4 [ms] | max diff q |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        pin = f"{r['pin'] * 1e6:.1f}" if "pin" in r else "-"
        fp = f"{r['fd'] / r['pin']:.2f}" if "pin" in r else "-"
        lines.append(
            f"| {r['kind']} | {r['fd'] * 1e6:.1f} | {r['lean'] * 1e6:.1f} | "
            f"{r['fd'] / r['lean']:.2f} | {r['py'] * 1e6:.1f} | {r['py'] / r['fd']:.0f}x | "
            f"{pin} | {fp} | {r['diff']:.1e} | {r['rk4'] * 1e3:.1f} | "
            f"{r['rk4_py'] * 1e3:.1f} | {r['rk4_diff']:.1e} |"
        )
    lines += [
        "",
        "Every row runs RK4 in compiled blocks (`_nbloops.tree_rk4_block`); the "
        "time-function row's functions are tabulated in Python on the block's stage "
        "times before the call (`RecursiveSystem.tabulated_forces`: start, middle and end "
        "of each step, one call per function and time) and read in the kernel. Single "
        "calls evaluate each time function once per call in Python "
        "(`RecursiveSystem.timed_forces`) before the compiled call. RK4 times include "
        "the run's energies (for the spring_damper row: the joint laws' power over the "
        "history in numpy; for the compiled law: one compiled call over the history). "
        "Max rel. diff: `forward_dynamics` against the Python path "
        "(qdd and reactions, round-off of the summation order); max diff q: the RK4 run "
        "against the Python path's run.",
    ]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    import pinocchio as pin

    rng = np.random.default_rng(3)
    kinds = ("constant", "spring_damper", "time functions", "compiled law")
    rows = [row(kind, rng) for kind in kinds]
    meta = machine_line(f"pin {pin.__version__}")
    text = render(rows, meta)
    print(text)
    if args.write:
        path = ROOT / "benchmarks" / "RESULTS.md"
        replace_section(text, START, END, path)


if __name__ == "__main__":
    main()
