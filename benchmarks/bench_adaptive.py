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

``--output``: the runs with output times instead (``dt``: the end only, ~3 samples per
step, ~1 per 10 steps; the 10-link chain with DOP853 and RK45, the space robot with
RK45): the samples in the compiled blocks (``_nbloops.tree_rk_block_dense``) against
main's path before them (``TreeStepper.dense_blocks = False``), what sampling adds to
the end-only run, the samples' own floor and Pinocchio's peer with the same output
times (its section ``<!-- adaptive-output:start -->`` ... ``:end -->``).
"""

import argparse
import os
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
from results_file import machine_line, markers, replace_section  # noqa: E402

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
        machine_line(f"scipy {scipy.__version__}", f"pin {pv}", f"flexmbd {fm.__version__}"),
        "",
        "| N | method | output | steps | old [us/step] | new [us/step] | old/new | "
        "pin [us/step] | bitwise |",
        "|---:|---|---|---:|---:|---:|---:|---|---|",
    ]
    return head + [fmt_row(r) for r in rows] + ["", END]


# -- output times (--output) ------------------------------------------------------------
OUT_START, OUT_END = markers("adaptive-output")
OUT_CASES = ((10, "dop853"), (10, "rk45"), (SPACE, "rk45"))


def run_out(s, integrator, dt, dense, tau=None):
    """CPU seconds of one ``simulate`` with output every ``dt`` (s), its accepted steps
    and results: the samples in the compiled blocks (``dense``), or with
    ``TreeStepper.dense_blocks = False`` (blocks up to each output time, scipy's dense
    output in Python, the samples' evaluations after the run: main's path before)."""
    TreeStepper.dense_blocks = dense
    T = T_END[s.nv if tau is None else SPACE]
    tic = time.process_time()
    res = s.simulate(T, dt=dt, integrator=integrator, rtol=RTOL, atol=ATOL, tau=tau)
    cpu = time.process_time() - tic
    TreeStepper.dense_blocks = True
    return cpu, res.meta["steps"], res


def run_pin_out(pm, n, integrator, t_eval):
    """CPU seconds of scipy's ``solve_ivp`` with the output times ``t_eval``
    (its dense output per step that covers some) on Pinocchio's ``aba``."""
    import pinocchio as pin
    import scipy.integrate as si

    data, tau = pm.createData(), np.zeros(n)

    def f(t, y):
        return np.concatenate([y[n:], pin.aba(pm, data, y[:n], y[n:], tau)])

    T = T_END[n]
    tic = time.process_time()
    sol = si.solve_ivp(
        f, (0.0, T), np.zeros(2 * n), method=METHODS[integrator], t_eval=t_eval, rtol=RTOL,
        atol=ATOL,
    )  # fmt: skip
    assert sol.success and len(sol.t) == len(t_eval)
    return time.process_time() - tic


def _floor_kernels():
    """Compiled loops of :func:`flexmbd.recursive._nbloops._tree_rhs` (one right-hand
    side) and ``_tree_sample`` (one output sample: forward dynamics with every reaction
    and the energies) over given states (compiled on first use)."""
    from numba import njit

    from flexmbd.recursive import _nbloops as NL

    @njit
    def rhs(Ib, buf, forces, Y, tau, reac, out):
        for i in range(Y.shape[0]):
            NL._tree_rhs(Ib, buf, forces, Y[i], tau, reac, out)

    @njit
    def samples(Ib, buf, forces, Y, T, tau, nq, QDD, REAC, EN, done):
        for i in range(Y.shape[0]):
            NL._tree_sample(Ib, buf, forces, tau, Y[i], nq, T[i], QDD[i], REAC[i], EN[i], done, i)

    return rhs, samples


def output_floor(s, tau, res, end, evals_dense, repeats=15):
    """What a run's interpolated samples must add while each keeps its own forward
    dynamics (as ``bench_loops --output``'s ``squeezer_floor``): the dense output's extra
    stage evaluations (the runs' counted evaluations with the samples and with the end
    only) and, per extra sample, one forward dynamics with every reaction and the
    energies (``_nbloops._tree_sample``), in units of one right-hand side evaluation
    (``_nbloops._tree_rhs``), both timed at the run's sample states inside one compiled
    call (best of ``repeats``); relative to the end-only run's evaluations. A lower
    bound of the run's ``adds`` (no interpolation, no results assembly)."""
    from flexmbd.integrators.explicit import tree_stepper

    rhs, samples = _floor_kernels()
    c = tree_stepper(s, 1.0, integrator="rk45", tau=tau)._compiled_tree()
    Y = np.ascontiguousarray(np.hstack([res.q, res.qd]))
    n, nq, nv = Y.shape[0], s.nq, s.nv
    out, reac = np.empty(nq + nv), np.empty((len(s.joint_names), 6))
    rows = (np.empty((n, nv)), np.empty((n, len(s.joint_names), 6)), np.empty((n, 7)))
    done = np.zeros(n, dtype=bool)
    T = np.asarray(res.t, dtype=float)

    def best(f):
        f()
        t = np.inf
        for _ in range(repeats):
            tic = time.process_time()
            f()
            t = min(t, time.process_time() - tic)
        return t / n

    t_rhs = best(lambda: rhs(c[0], c[1], c[2], Y, c[3], reac, out))
    t_smp = best(lambda: samples(c[0], c[1], c[2], Y, T, c[3], nq, *rows, done))
    ev, en = evals_dense, int(np.asarray(end.stats["rhs_evaluations"])[-1])
    extra = len(res.t) - len(end.t)
    return dict(t_rhs=t_rhs, t_sample=t_smp, floor=(ev - en + extra * t_smp / t_rhs) / en)


def measure_output(rounds):
    """Rows ``(case, method, label, info, got, exact)``: about 3 samples per step and about
    1 per 10 steps, each with the samples in the blocks (``new``) and on main's path
    (``old``), and Pinocchio's peer with the same output times (``pin``); every round
    runs each of them next to its end-only run (``*_end``), so that what sampling adds
    compares runs of the same moment. ``got[k]`` per round: CPU seconds per accepted
    step (``pin``: CPU seconds of the run)."""
    try:
        from tests.recursive.pin_models import to_pinocchio
    except ImportError:  # pragma: no cover
        to_pinocchio = None
    rows = []
    for n, integrator in OUT_CASES:
        if n == SPACE:
            s, tau = space_robot()
            pm = None
        else:
            s, tau = chain(n).compile("recursive"), None
            try:
                pm = to_pinocchio(s.model)[0] if to_pinocchio else None
            except ImportError:
                pm = None
        T = T_END[n]
        _, steps, end = run_out(s, integrator, T, True, tau)  # (warm-up, the step count)
        run_out(s, integrator, T, False, tau)
        for label, dt in (("~3 per step", T / (3 * steps)), ("~1 per 10 steps", 10 * T / steps)):
            run_out(s, integrator, dt, True, tau)
            got = {k: [] for k in ("new", "old", "pin", "new_end", "old_end", "pin_end")}
            exact, info = True, {}
            for _ in range(rounds):
                for k, dense in (("new", True), ("old", False)):
                    ce, ke, _ = run_out(s, integrator, T, dense, tau)
                    c, kk, r = run_out(s, integrator, dt, dense, tau)
                    got[k + "_end"].append(ce / ke)
                    got[k].append(c / kk)
                    info[k] = r
                exact = exact and info["new"].meta["steps"] == info["old"].meta["steps"]
                exact = exact and same(info["new"], info["old"])
                exact = exact and np.array_equal(
                    info["new"].stats["rhs_evaluations"], info["old"].stats["rhs_evaluations"]
                )
                if pm is not None:
                    got["pin_end"].append(run_pin_out(pm, n, integrator, [T]))
                    got["pin"].append(run_pin_out(pm, n, integrator, info["new"].t[1:]))
            r = info["new"]
            info.update(steps=r.meta["steps"], samples=len(r.t) - 1)
            ev = int(np.asarray(r.stats["rhs_evaluations"])[-1])
            info["floor"] = output_floor(s, tau, r, end, ev)
            del info["new"], info["old"]
            rows.append([n, integrator, label, info, got, exact])
            print(fmt_out(rows[-1]), flush=True)
    return rows


def adds(v, e):
    """Median and range over the rounds of ``v / e - 1`` (%), round by round."""
    a = 100 * (np.asarray(v) / np.asarray(e) - 1)
    return f"{np.median(a):.0f} ({a.min():.0f}–{a.max():.0f})"


def pin_ms(v):
    return f"{1e3 * np.median(v):.1f} ({1e3 * min(v):.1f}–{1e3 * max(v):.1f})" if v else "–"


def fmt_out(row):
    n, integrator, label, info, got, exact = row
    name = f"{n}-link chain" if n != SPACE else SPACE
    pin = "–"
    if got["pin"]:
        pin = f"{pin_ms(got['pin'])} / {pin_ms(got['pin_end'])}; {adds(got['pin'], got['pin_end'])}"
    return (
        f"| {name} | {METHODS[integrator]} | {label} | {info['samples']} | {info['steps']} | "
        f"{stat(got['old'])} / {stat(got['old_end'])} | {stat(got['new'])} / "
        f"{stat(got['new_end'])} | {adds(got['old'], got['old_end'])} | "
        f"{adds(got['new'], got['new_end'])} | {100 * info['floor']['floor']:.0f} | {pin} | "
        f"{'yes' if exact else 'NO'} |"
    )


def output_report(rows, rounds):
    import scipy

    head = [
        OUT_START,
        "### Adaptive tree runs with output times: samples in the compiled blocks",
        "",
        f"rtol {RTOL:g}, atol {ATOL:g}; the pendulum chain released from rest over "
        f"{T_END[10]:g} s and the space robot over {T_END[SPACE]:g} s (as above), with "
        "output every `dt` giving the end only, about 3 samples per accepted step and "
        "about 1 per 10 steps, each next to its end-only run in every round. CPU time "
        "of the whole `simulate` per accepted step (us): "
        "`old` = blocks up to each output time, scipy's dense output in Python and the "
        "samples' accelerations, reactions and energies in a batch after the run "
        "(`TreeStepper.dense_blocks = False`, main's path before this round); `new` = the "
        "samples inside the blocks (`_nbloops.tree_rk_block_dense`). `adds`: what the "
        "samples add to the same code's end-only run of the same round (%). `floor`: the "
        "samples' own work as `bench_loops --output` measures the squeezer's "
        "(`output_floor`: the dense outputs' counted extra stages plus one forward "
        "dynamics with every reaction and the energies per extra sample, in units of one "
        "compiled right-hand side timed at the run's sample states, relative to the "
        "end-only run's evaluations; %). `pin`: scipy's `solve_ivp` with the same output "
        "times on Pinocchio's `aba` (its own steps; the whole run, ms; its end-only run: "
        "`t_eval` = the end). Median (range) of "
        f"{rounds} interleaved rounds. `bitwise`: new and old give the same times, "
        "states, accelerations, reactions, energies and evaluations bit for bit.",
        "",
        "- Command: `python benchmarks/bench_adaptive.py --output --write`",
        machine_line(f"scipy {scipy.__version__}", f"flexmbd {fm.__version__}"),
        "",
        "| case | method | output | samples | steps | old [us/step]: sampled / end only | "
        "new [us/step]: sampled / end only | old adds | new adds | floor | pin [ms]: "
        "sampled / end only; adds | bitwise |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    return head + [fmt_out(r) for r in rows] + ["", OUT_END]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument("--output", action="store_true", help="the runs with output times")
    args = ap.parse_args()
    if args.output:
        text = "\n".join(output_report(measure_output(args.rounds), args.rounds))
        print(text)
        if args.write:
            replace_section(text, OUT_START, OUT_END)
        return
    rows = measure(args.rounds)
    text = "\n".join(report(rows, args.rounds))
    print(text)
    if args.write:
        replace_section(text, START, END)


if __name__ == "__main__":
    main()
