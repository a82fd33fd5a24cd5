"""Adaptive runs of closed loops and trees whose loads are Python functions of time.

A four-bar (``tests/models.py``) and Andrews' squeezer (``examples/andrews_squeezer.py``),
each with a crank drive ``JointForce.of_time`` (a sine), under RK45 and DOP853 with an
output sample at every accepted step. CPU time per accepted step, in one process, runs
interleaved, median [min-max] over the rounds, of

* ``of_time``: each attempt of each step by one compiled call
  (``_nbtimed.timed_block``), the drive evaluated in Python at the attempt's stage
  times and tabulated for it;
* ``of_time, scipy steps``: the path before (``_LoopStepper.timed_blocks = False``):
  scipy's steps on the compiled right-hand side, the drive evaluated in Python at each
  evaluation's time (``LoopSystem.set_time``); the same numbers bit for bit;
* Python law: the same drive as a law ``f(t, q, qd)``, the projector's Python path;
* compiled law: the same drive as a numba cfunc (``JointForce.compiled_law``), whose
  clock the compiled steps and blocks set per stage (the lower bound: no Python call
  per evaluation).

Also the space robot (``examples/space_robot.py``, a floating tree with twelve
``of_time`` drives) under RK45 and DOP853: the compiled attempts against scipy's steps on
the compiled single-state forward dynamics (``TreeStepper.timed_blocks = False``, the
path before; the same numbers bit for bit), and the flexible space robot
(``examples/space_robot_flexible.py``: the same twelve drives, two Craig-Bampton bars)
under RK45 and DOP853: the compiled attempts on the flexible right-hand side against
scipy's steps on the Python right-hand side (the path before; bit for bit, checked here
on the warm-up runs).

Usage: ``python benchmarks/bench_timedloops.py [--write] [--rounds N]`` (``--write``
replaces the ``timed-loops`` section of benchmarks/RESULTS.md).
"""

import argparse
import importlib.util
import math
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_cfa import load_space_robot  # noqa: E402
from results_file import machine_line, replace_section  # noqa: E402

import flexmbd as fm  # noqa: E402
from flexmbd.integrators.explicit import TreeStepper  # noqa: E402
from flexmbd.recursive.loops import _LoopStepper  # noqa: E402

START, END = "<!-- timed-loops:start -->", "<!-- timed-loops:end -->"


def _example(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _law(amp, w):
    from numba import cfunc

    @cfunc(fm.JointForce.LAW_SIGNATURE)
    def law(q, qd, t, which):
        return amp * (1.0 + 0.1 * np.sin(w * t)) if which == 0 else 0.0

    return law


def _with_drive(m, joint, amp, w, kind):
    """The model ``m`` with the drive ``amp (1 + 0.1 sin(w t))`` (N m) on ``joint``."""

    def f(t):
        return amp * (1.0 + 0.1 * math.sin(w * t))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the squeezer's own drive replaced)
        if kind.startswith("of_time"):
            m.drive = fm.JointForce.of_time(getattr(m, joint), f)
        elif kind == "python":
            m.drive = fm.JointForce(getattr(m, joint), lambda t, q, qd: [f(t)])
        else:
            m.drive = fm.JointForce.compiled_law(getattr(m, joint), _law(amp, w))
    return m.compile("recursive")


def models():
    """``{name: (build(kind), t_end, tolerances)}``."""
    import models as tm

    sq = _example("andrews_squeezer")
    return {
        "four-bar": (lambda k: _with_drive(tm.four_bar(), "a", 0.5, 3.0, k), 0.5, (1e-9, 1e-11)),
        "squeezer": (lambda k: _with_drive(sq.build(), "beta", sq.mom, 200.0, k), 0.003,
                     (1e-10, 1e-12)),
    }  # fmt: skip


#: the flexible space robot's run (s) and tolerances (rtol, atol)
T_FLEX, TOL_FLEX = 0.2, (1e-6, 1e-9)


def per_step(system, t_end, tol, integrator, kind, results=False):
    """CPU seconds per accepted step of ``simulate`` (a sample at every step) and the
    steps (with ``results`` also the results); ``kind`` ending in "scipy steps": the
    path before the compiled attempts."""
    old = kind.endswith("scipy steps")
    TreeStepper.timed_blocks = _LoopStepper.timed_blocks = not old
    try:
        tic = time.process_time()
        res = system.simulate(t_end, integrator=integrator, rtol=tol[0], atol=tol[1])
        dt = time.process_time() - tic
    finally:
        TreeStepper.timed_blocks = _LoopStepper.timed_blocks = True
    if results:
        return dt / (len(res.t) - 1), len(res.t) - 1, res
    return dt / (len(res.t) - 1), len(res.t) - 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)

    kinds = ("of_time", "of_time, scipy steps", "python", "compiled")
    cases = {}
    for name, (build, t_end, tol) in models().items():
        for integrator in ("rk45", "dop853"):
            for kind in kinds:
                cases[(name, integrator, kind)] = (build(kind), t_end, tol, integrator)
    robot = load_space_robot().compile("recursive")
    for integrator in ("rk45", "dop853"):
        for kind in ("of_time", "of_time, scipy steps"):
            cases[("space robot", integrator, kind)] = (robot, 1.0, (1e-8, 1e-10), integrator)
    flex = _example("space_robot_flexible").build().compile("recursive")
    for integrator in ("rk45", "dop853"):
        for kind in ("of_time", "of_time, scipy steps"):
            cases[("flexible space robot", integrator, kind)] = (flex, T_FLEX, TOL_FLEX, integrator)
    for k, (s, t_end, tol, integ) in cases.items():  # compile and warm
        per_step(s, t_end, tol, integ, k[2])
    for integrator in ("rk45", "dop853"):  # the flexible attempts: the path before's bits
        a, b = (per_step(flex, T_FLEX, TOL_FLEX, integrator, kind, True)[2]
                for kind in ("of_time", "of_time, scipy steps"))  # fmt: skip
        for key in ("t", "q", "qd", "qdd", "reactions"):
            assert np.array_equal(getattr(a, key), getattr(b, key)), (integrator, key)
    times = {k: [] for k in cases}
    steps = {}
    for _ in range(args.rounds):
        for k, (s, t_end, tol, integ) in cases.items():
            dt, steps[k] = per_step(s, t_end, tol, integ, k[2])
            times[k].append(dt)
    load = os.getloadavg()
    lines = [
        "## Adaptive closed loops and trees with loads that are Python functions of time",
        "",
        "A crank drive `JointForce.of_time` (N m: `a (1 + 0.1 sin(w t))`) on the four-bar "
        "of tests/models.py (0.5 s, rtol 1e-9) and on Andrews' squeezer (0.003 s, rtol "
        "1e-10), an output sample at every accepted step. CPU time per accepted step of "
        f"`simulate`, median [min-max] of {args.rounds} interleaved rounds. `of_time`: "
        "each attempt by one compiled call (`_nbtimed.timed_block`), the drive called in "
        "Python at the attempt's stage times and tabulated; `of_time, scipy steps`: the "
        "path before (scipy's steps on the compiled right-hand side, the drive called at "
        "each evaluation's time; the same numbers bit for bit); Python law: the same drive "
        "as `f(t, q, qd)` (the projector's Python path); compiled law: a numba cfunc "
        "(compiled steps and blocks, no Python call per evaluation). The space robot "
        "(twelve `of_time` drives, a floating tree, 1 s, rtol 1e-8): the compiled attempts "
        "against scipy's steps on the compiled forward dynamics (the path before). The "
        f"flexible space robot (the same drives, two Craig-Bampton bars, {T_FLEX:g} s, rtol "
        f"{TOL_FLEX[0]:g}, atol {TOL_FLEX[1]:g}): the compiled attempts on the flexible "
        "right-hand side against scipy's steps on the Python right-hand side (the path "
        "before; bit for bit, checked on the warm-up runs).",
        "",
        "- Command: `python benchmarks/bench_timedloops.py --write`",
        machine_line(load=load[0]),
        "",
        "| model | integrator | drive | steps | [us/step] |",
        "|---|---|---|---:|---:|",
    ]
    for k, v in times.items():
        a = np.array(v) * 1e6
        lines.append(
            f"| {k[0]} | {k[1]} | {k[2]} | {steps[k]} | "
            f"{np.median(a):.0f} [{a.min():.0f}-{a.max():.0f}] |"
        )
    text = "\n".join(lines)
    print(text)
    if args.write:
        path = replace_section(text, START, END, ROOT / "benchmarks" / "RESULTS.md")
        print(f"written: {path}")


if __name__ == "__main__":
    main()
