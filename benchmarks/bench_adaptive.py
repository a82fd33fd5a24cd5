"""Adaptive integrators (RK45, DOP853) on a rigid tree: compiled blocks vs scipy's steps.

The pendulum chain of ``tests/recursive/models.py`` (N links, revolute axes alternating
z / y, gravity along -z, released from rest) integrated by ``system.simulate(T,
integrator=...)`` with rtol 1e-8, atol 1e-10, output at every accepted step (the
default) and at the end only (``dt=T``). Timed per accepted step, CPU time of the whole
``simulate`` call (the samples' accelerations, reactions and energies included):

* ``new``: the steps in compiled blocks (``_nbloops.tree_rk_block``, this tree);
* ``old``: scipy's ``step()`` with the Python right-hand side, one compiled forward
  dynamics per evaluation (``TreeStepper.step_blocks = False``: the code path of main
  before the blocks; both give the same numbers bit for bit, checked here);
* ``pin``: the peer, scipy's same solver class stepped from Python on Pinocchio's
  ``aba`` as the right-hand side (its own steps: the same tolerances and dynamics).

Rounds interleave the three (the machine is shared); the table gives the median and the
range over the rounds. Run ``python benchmarks/bench_adaptive.py`` (``--write`` updates
the section of benchmarks/RESULTS.md between ``<!-- adaptive:start -->`` and
``<!-- adaptive:end -->``; ``--rounds 3`` for a quick run).
"""

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # time this working tree

import flexmbd as fm  # noqa: E402
from flexmbd.integrators.explicit import TreeStepper  # noqa: E402
from tests.recursive.models import chain  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from results_file import markers, replace_section  # noqa: E402

START, END = markers("adaptive")
SIZES = (2, 10, 50)
METHODS = {"rk45": "RK45", "dop853": "DOP853"}
RTOL, ATOL = 1e-8, 1e-10
T_END = {2: 20.0, 10: 5.0, 50: 3.0}  # (about 250-1800 accepted steps each)


def space_robot():
    """``(system, tau)``: the space robot of ``examples/space_robot.py`` (13 bodies, a
    Free base with its quaternion: nq 19, nv 18) without its drives (functions of time),
    constant arm joint torques ``tau`` (N m) instead: the floating-base row."""
    from bench_cfa import load_space_robot, strip_drives

    s = strip_drives(load_space_robot()).compile("recursive")
    arm = np.array([2.0, 1.5, 0.25, 0.0002, 0.004, 0.00005])
    return s, np.concatenate([np.zeros(6), arm, -arm])


SPACE = "space robot"
T_END[SPACE] = 20.0


def run_flexmbd(s, integrator, blocks, end_only, tau=None):
    """CPU seconds of one ``simulate`` and its accepted steps (and the results)."""
    TreeStepper.step_blocks = blocks
    T = T_END[s.nv if tau is None else SPACE]
    kw = {"dt": T} if end_only else {}
    tic = time.process_time()
    res = s.simulate(T, integrator=integrator, rtol=RTOL, atol=ATOL, tau=tau, **kw)
    cpu = time.process_time() - tic
    TreeStepper.step_blocks = True
    return cpu, res.meta["steps"], res


def run_pin(pm, n, integrator):
    """CPU seconds and accepted steps of scipy's solver stepped on Pinocchio's ``aba``."""
    import pinocchio as pin
    import scipy.integrate as si

    data = pm.createData()
    tau = np.zeros(n)

    def f(t, y):
        return np.concatenate([y[n:], pin.aba(pm, data, y[:n], y[n:], tau)])

    T = T_END[n]
    tic = time.process_time()
    solver = getattr(si, METHODS[integrator])(f, 0.0, np.zeros(2 * n), T, rtol=RTOL, atol=ATOL)
    steps = 0
    while solver.status == "running":
        solver.step()
        steps += 1
    return time.process_time() - tic, steps


def same(a, b):
    keys = ("t", "q", "qd", "qdd", "reactions")
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in keys) and all(
        np.array_equal(a.energy[k], b.energy[k]) for k in a.energy
    )


def measure(rounds):
    try:
        from tests.recursive.pin_models import to_pinocchio
    except ImportError:  # pragma: no cover
        to_pinocchio = None
    rows = []
    for n in SIZES:
        s = chain(n).compile("recursive")
        pm = None
        if to_pinocchio is not None:
            try:
                pm = to_pinocchio(s.model)[0]
            except ImportError:
                pm = None
        for integrator in METHODS:
            for end_only in (False, True):
                run_flexmbd(s, integrator, True, end_only)  # warm-up (compiled kernels)
                got = {"new": [], "old": [], "pin": []}
                steps = {}
                exact = True
                for _ in range(rounds):
                    cn, kn, rn = run_flexmbd(s, integrator, True, end_only)
                    co, ko, ro = run_flexmbd(s, integrator, False, end_only)
                    exact = exact and kn == ko and same(rn, ro)
                    got["new"].append(cn / kn)
                    got["old"].append(co / ko)
                    steps["flexmbd"] = kn
                    if pm is not None and not end_only:
                        cp, kp = run_pin(pm, n, integrator)
                        got["pin"].append(cp / kp)
                        steps["pin"] = kp
                rows.append((n, integrator, end_only, got, steps, exact))
                print(fmt_row(rows[-1]), flush=True)
    s, tau = space_robot()  # a floating base (quaternion coordinates): RK45 only
    for end_only in (False, True):
        run_flexmbd(s, "rk45", True, end_only, tau)
        got, steps, exact = {"new": [], "old": [], "pin": []}, {}, True
        for _ in range(rounds):
            cn, kn, rn = run_flexmbd(s, "rk45", True, end_only, tau)
            co, ko, ro = run_flexmbd(s, "rk45", False, end_only, tau)
            exact = exact and kn == ko and same(rn, ro)
            got["new"].append(cn / kn)
            got["old"].append(co / ko)
            steps["flexmbd"] = kn
        rows.append((SPACE, "rk45", end_only, got, steps, exact))
        print(fmt_row(rows[-1]), flush=True)
    return rows


def stat(v):
    if not v:
        return "–"
    v = 1e6 * np.asarray(v)
    return f"{np.median(v):.1f} ({v.min():.1f}–{v.max():.1f})"


def fmt_row(row):
    n, integrator, end_only, got, steps, exact = row
    new, old = np.median(got["new"]), np.median(got["old"])
    pin = f"{stat(got['pin'])} [{steps.get('pin', '–')} steps]" if got["pin"] else "–"
    out = "end only" if end_only else "every step"
    return (
        f"| {n} | {METHODS[integrator]} | {out} | {steps['flexmbd']} | {stat(got['old'])} | "
        f"{stat(got['new'])} | {old / new:.1f} | {pin} | {'yes' if exact else 'NO'} |"
    )


def report(rows, rounds):
    import numba
    import scipy

    try:
        import pinocchio

        pv = pinocchio.__version__
    except ImportError:  # pragma: no cover
        pv = "not installed"
    head = [
        START,
        "## Adaptive integrators on a tree: compiled blocks vs scipy's steps (issue 13)",
        "",
        "Pendulum chain of N links (`tests/recursive/models.py`), released from rest, "
        f"rtol {RTOL:g}, atol {ATOL:g}. CPU time of the whole `simulate` call per accepted "
        "step in us (samples' accelerations, reactions and energies included): `old` = "
        "scipy's `step()` with the Python right-hand side (one compiled forward dynamics "
        "per evaluation; `TreeStepper.step_blocks = False`, main's path), `new` = the "
        "steps in compiled blocks (`_nbloops.tree_rk_block`), `pin` = the same scipy "
        "solver stepped from Python on Pinocchio's `aba` (its own steps). Row `space "
        "robot`: `examples/space_robot.py` (13 bodies, Free base: quaternion coordinates) "
        f"without its drives, constant arm torques instead, RK45 over {T_END[SPACE]:g} s. "
        "Median (range) "
        f"of {rounds} interleaved rounds. `bitwise`: new and old give the same times, "
        "states, accelerations, reactions and energies bit for bit.",
        "",
        "- Command: `python benchmarks/bench_adaptive.py --write`",
        f"- Machine: {platform.processor() or platform.machine()}, nproc {os.cpu_count()}, "
        f"{platform.platform()}; load average at the end {os.getloadavg()[0]:.2f} "
        "(shared machine)",
        f"- Python {platform.python_version()}, numpy {np.__version__}, scipy "
        f"{scipy.__version__}, numba {numba.__version__}, pin {pv}, flexmbd "
        f"{fm.__version__}; date {datetime.date.today()}",
        "",
        "| N | method | output | steps | old [us/step] | new [us/step] | old/new | "
        "pin [us/step] | bitwise |",
        "|---:|---|---|---:|---:|---:|---:|---|---|",
    ]
    return head + [fmt_row(r) for r in rows] + ["", END]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = ap.parse_args()
    rows = measure(args.rounds)
    text = "\n".join(report(rows, args.rounds))
    print(text)
    if args.write:
        replace_section(text, START, END)


if __name__ == "__main__":
    main()
