"""Closed loops through flexible bodies, recursive formulation: compiled path vs Python path.

The four-bar of ``tests/recursive/test_flexible_loops.py`` (rigid crank and rocker, a
Craig-Bampton steel coupler with 4 fixed-interface modes closed at its deforming interface
B by a spherical joint, gravity), geometric stiffening off and on, from the model's
initial state (crank at 2 rad/s, undeformed). CPU time of this process, in one process, runs
interleaved, median [min-max] over the rounds, of

* ``compiled``: the cut rows, cut wrenches, projected solve (with stiffening its
  loop-aware iteration) and correction of ``flexmbd/recursive/_nbflexcut.py``, RK4 in
  compiled blocks and the output samples in compiled calls
  (``flexmbd/recursive/_nbflexblock.py``), the adaptive steps in compiled blocks (those of
  ``flexmbd/recursive/_nbloops.py`` with the row evaluator of
  ``flexmbd/recursive/_nbflexrk.py``) (the default, ``LoopSystem.flex_compiled``);
* ``Python``: the same model with ``flex_compiled = False`` (the path before: rows by
  tree-kinematics passes from Python, wrenches in numpy, the projector's QR);
* ``tree``: the same bodies and joints without the closing joint (the flexible tree's
  compiled blocks), the measure of "a loop costs a few times a tree";
* ``absolute``: the absolute formulation of the loop (the peer in this run; its default
  generalized-alpha integrator with the compiled engine, at the RK4 step).

A step's time is the difference of a 0.008 s and a 0.002 s run divided by the difference
of their steps (so the set-up and the first QR drop out), with an output sample at every
step (the results' reactions, energies and violations included); ``fd``:
``forward_dynamics`` at the run's last state after the system's own correction
(``system.project``: its projector then has the rows of that state, the call is compiled),
per call; ``fd (no rows)``: the same call before any correction by the system's projector
(a run corrects with a projector of its own): the Python path with the projector's QR.
``agree``:
largest difference of the compiled and Python paths' end states of the RK4 run (relative
to the state's largest entry).

Usage: ``python benchmarks/bench_flexloops.py [--write] [--rounds N]`` (``--write``
replaces the ``flex-loops`` section of benchmarks/RESULTS.md).
"""

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from results_file import markers, replace_section  # noqa: E402

from flexmbd.constraints.projection import Projector  # noqa: E402
from tests.recursive.test_flexible_loops import fourbar  # noqa: E402

START, END = markers("flex-loops")
DT = 1e-4  # s, the RK4 and absolute step
TOL = (1e-6, 1e-8)  # RK45 rtol, atol
T1, T2 = 0.002, 0.008  # s, the two runs whose difference is timed


def _run(system, t_end, method):
    kw = {}
    if method == "rk45":
        kw.update(integrator="RK45", rtol=TOL[0], atol=TOL[1])
    elif method == "rk4":
        kw.update(integrator="rk4", dt=DT)
    else:
        kw.update(dt=DT)  # the absolute formulation's default integrator
    tic = time.process_time()
    res = system.simulate(t_end, **kw)
    return time.process_time() - tic, res


def per_step(system, method):
    """CPU seconds per step (the difference of the T2 and T1 runs) and the T2 results."""
    a, ra = _run(system, T1, method)
    b, rb = _run(system, T2, method)
    return (b - a) / (len(rb.t) - len(ra.t)), rb


def per_fd(system, q, qd, P, n=40):
    """CPU seconds per ``forward_dynamics`` call at ``(q, qd)`` on the projector ``P``."""
    system.forward_dynamics(q, qd, projector=P)
    tic = time.process_time()
    for _ in range(n):
        system.forward_dynamics(q, qd, projector=P)
    return (time.process_time() - tic) / n


def per_fds(system, q, qd):
    """``(per_fd`` at ``(q, qd)`` after its correction by a new projector of the system,
    ``per_fd`` at ``(q, qd)`` on a new projector without rows): new projectors, so that
    every round measures the same paths."""
    fresh = [Projector(system.constraints, **system.compile_options) for _ in range(2)]
    after = per_fd(system, *system.project(q, qd, projector=fresh[0]), fresh[0])
    return after, per_fd(system, q, qd, fresh[1])


def cases(stiff):
    """``{kind: system}``: the loop (compiled, Python), its tree and the absolute
    formulation of the loop."""
    py = fourbar("cbA", stiffening=stiff, n_modes=4).compile("recursive")
    py.flex_compiled = False
    m = fourbar("cbA", stiffening=stiff, n_modes=4)
    delattr(m, "j4")
    return {
        "compiled": fourbar("cbA", stiffening=stiff, n_modes=4).compile("recursive"),
        "Python": py,
        "tree": m.compile("recursive"),
        "absolute": fourbar("cbA", stiffening=stiff, n_modes=4).compile("absolute"),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    import numba

    runs = {}
    for stiff in (False, True):
        for kind, s in cases(stiff).items():
            methods = ("step",) if kind == "absolute" else ("rk4", "rk45")
            for method in methods:
                runs[(stiff, kind, method)] = s
    times = {k: [] for k in runs}
    fds = {k: [] for k in runs if k[2] == "rk4" and k[1] not in ("tree", "absolute")}
    ends = {}
    for k, s in runs.items():  # compile and warm
        per_step(s, k[2])
    for _ in range(args.rounds):
        for k, s in runs.items():
            dt, res = per_step(s, k[2])
            times[k].append(dt)
            ends[k] = np.concatenate([res.q[-1], res.qd[-1]])
            if k in fds:
                fds[k].append(per_fds(s, res.q[-1], res.qd[-1]))
    load = os.getloadavg()
    lines = [
        "## Closed loops through flexible bodies (recursive formulation)",
        "",
        "The four-bar of tests/recursive/test_flexible_loops.py (rigid crank and rocker, a "
        "Craig-Bampton steel coupler with 4 fixed-interface modes closed at its deforming "
        "interface B by a spherical joint, gravity) from its initial state, geometric "
        "stiffening off and on. CPU time per step, the difference of a "
        f"{T2:g} s and a {T1:g} s run (set-up and first QR excluded), an output sample at "
        f"every step; median [min-max] of {args.rounds} interleaved rounds. `compiled`: "
        "the cut rows, cut wrenches, projected solve (with stiffening its loop-aware "
        "iteration) and correction of `flexmbd/recursive/_nbflexcut.py`, RK4 in compiled "
        "blocks and the output samples in compiled calls "
        "(`flexmbd/recursive/_nbflexblock.py`), the adaptive steps in compiled blocks (those "
        "of `flexmbd/recursive/_nbloops.py` with the row evaluator of "
        "`flexmbd/recursive/_nbflexrk.py`) (the default); `Python`: "
        "`LoopSystem.flex_compiled = False` (the path before); `tree`: the same bodies "
        "without the closing joint; `absolute`: the absolute formulation of the loop (the "
        f"peer; generalized-alpha, compiled engine, h = {DT:g} s). RK4 at h = {DT:g} s, "
        f"RK45 at rtol {TOL[0]:g}, atol {TOL[1]:g}. `fd`: `forward_dynamics` at the run's "
        "last state after the correction by the projector it is called with "
        "(`system.project`: the projector then has that state's rows, the call is "
        "compiled), per call; `fd (no rows)`: the same call on a projector that has not "
        "corrected a state yet (a run corrects with a projector of its own), the Python "
        "path with the projector's QR. `agree`: the compiled and Python paths' RK4 end "
        "states, largest difference relative to the largest entry.",
        "",
        "- Command: `python benchmarks/bench_flexloops.py --write`",
        f"- Machine: nproc {os.cpu_count()}, {platform.platform()}; load average at the end "
        f"{load[0]:.2f}; Python {platform.python_version()}, numba {numba.__version__}; "
        f"date {datetime.date.today().isoformat()}",
        "",
        "| stiffening | path | method | [us/step] | loop / tree | fd [us] | fd (no rows) [us] "
        "| agree |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for k, v in times.items():
        stiff, kind, method = k
        a = np.array(v) * 1e6
        tree = (stiff, "tree", method)
        ratio = (
            f"{np.median(a) / np.median(times[tree]) / 1e6:.1f}"
            if tree in times and kind != "tree"
            else ""
        )
        fd = fd0 = ""
        if k in fds:
            fd = f"{np.median([x[0] for x in fds[k]]) * 1e6:.0f}"
            fd0 = f"{np.median([x[1] for x in fds[k]]) * 1e6:.0f}"
        agree = ""
        if kind == "compiled" and method == "rk4":
            e, p = ends[k], ends[(stiff, "Python", method)]
            agree = f"{np.abs(e - p).max() / np.abs(p).max():.1e}"
        lines.append(
            f"| {'on' if stiff else 'off'} | {kind} | {method} | "
            f"{np.median(a):.0f} [{a.min():.0f}-{a.max():.0f}] | {ratio} | {fd} | {fd0} | "
            f"{agree} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        path = replace_section(text, START, END, ROOT / "benchmarks" / "RESULTS.md")
        print(f"written: {path}")


if __name__ == "__main__":
    main()
