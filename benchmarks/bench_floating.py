"""RK4 of a floating tree: the space robot of ``examples/space_robot.py`` per step.

Measures, in one run, the CPU time per RK4 step (0.002 s, 0.2 s of simulated time) of

* the compiled blocks (``_nbloops.tree_rk4_block``: quaternion rates and
  renormalization inside, the twelve ``JointForce.of_time`` drives tabulated on the
  stage times), with and without the drives;
* the Python RK4 path of the same run (reached by giving zero joint forces as a
  function ``tau(t, q, qd)``): four compiled evaluations per step called from Python;
* Pinocchio ``aba`` from Python, four calls per step (the evaluations of one RK4 step,
  joint forces given): the peer's cost of the evaluations alone, no integration, no
  drive functions, reactions or output samples.

The integration is the stepper's steps alone; ``simulate`` adds the output (energies,
momenta, result arrays). CPU time of this process; runs interleaved; medians (and
ranges) over the rounds.

Usage: ``python benchmarks/bench_floating.py [--write] [--rounds N]`` (``--write``
replaces the ``floating-rk4`` section of benchmarks/RESULTS.md).
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

from bench_cfa import best_time, load_space_robot, strip_drives  # noqa: E402
from results_file import machine_line, replace_section  # noqa: E402

START, END = "<!-- floating-rk4:start -->", "<!-- floating-rk4:end -->"
T_END, DT = 0.2, 0.002


def run_case(system, python):
    """``(integration, simulate)`` CPU seconds per step: the stepper's steps alone
    (:func:`flexmbd.integrators.explicit.tree_stepper`, ``advance``) and a whole
    ``simulate`` (the steps and the output: energies, momenta, result arrays)."""
    from flexmbd.integrators.explicit import tree_stepper

    tau = (lambda t, q, qd: 0.0 * qd) if python else None
    st = tree_stepper(system, T_END, dt=DT, integrator="rk4", tau=tau)
    tic = time.process_time()
    while not st.done:
        st.advance()
    steps = time.process_time() - tic
    tic = time.process_time()
    res = system.simulate(T_END, dt=DT, integrator="rk4", tau=tau, progress=False)
    total = time.process_time() - tic
    n = len(res.t) - 1
    return steps / n, total / n


def pin_step(model, rounds):
    """CPU seconds of four Pinocchio ``aba`` calls (one RK4 step's evaluations; joint
    forces given, the drives' Python calls not included)."""
    import pinocchio as pin

    from tests.recursive.pin_models import q_to_pin, to_pinocchio, v_to_pin

    s = model.compile("recursive")
    rng = np.random.default_rng(0)
    q = s.normalize(rng.normal(size=s.nq))
    qd = rng.normal(size=s.nv)
    pm, maps = to_pinocchio(strip_drives(load_space_robot()))
    pd = pm.createData()
    qp, vp = q_to_pin(maps, q), v_to_pin(maps, qd)
    tau = v_to_pin(maps, rng.normal(size=s.nv))

    def step():
        for _ in range(4):
            pin.aba(pm, pd, qp, vp, tau)

    return min(best_time(step, budget=0.2, repeats=5) for _ in range(rounds))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    import pinocchio as pin

    driven = load_space_robot().compile("recursive")
    free = strip_drives(load_space_robot()).compile("recursive")
    cases = {
        "compiled blocks, drives (`of_time`)": (driven, False),
        "compiled blocks, no drives": (free, False),
        "Python RK4 path, drives": (driven, True),
    }
    for system, python in cases.values():  # compile and warm
        run_case(system, python)
    times = {k: [] for k in cases}
    for _ in range(args.rounds):
        for k, (system, python) in cases.items():
            times[k].append(run_case(system, python))
    pin4 = pin_step(load_space_robot(), args.rounds)
    load = os.getloadavg()
    lines = [
        "## RK4 of a floating tree: the space robot per step (issue 13)",
        "",
        f"`examples/space_robot.py` (13 bodies, Free base: nq = {driven.nq}, nv = "
        f"{driven.nv}; twelve joint drives `JointForce.of_time`), RK4 at dt = {DT} s over "
        f"{T_END} s. CPU time per step, median [min-max] of {args.rounds} interleaved "
        "rounds: the integration (the stepper's steps) and the whole `simulate` (with "
        "the output samples' energies and momenta). Pinocchio: four `aba` calls from "
        "Python (one RK4 step's evaluations, joint forces given), no integration, drive "
        "functions, reactions or samples.",
        "",
        "- Command: `python benchmarks/bench_floating.py --write`",
        machine_line(f"pin {pin.__version__}", load=load[0]),
        "",
        "| run | integration [us/step] | `simulate` [us/step] |",
        "|---|---:|---:|",
    ]
    for k, v in times.items():
        a = np.array(v) * 1e6
        lines.append(
            f"| {k} | {np.median(a[:, 0]):.0f} [{a[:, 0].min():.0f}-{a[:, 0].max():.0f}] | "
            f"{np.median(a[:, 1]):.0f} [{a[:, 1].min():.0f}-{a[:, 1].max():.0f}] |"
        )
    lines.append(f"| Pinocchio, 4 x `aba` (evaluations only) | {pin4 * 1e6:.0f} | |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        path = ROOT / "benchmarks" / "RESULTS.md"
        replace_section(text, START, END, path)
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
