"""Trees with many joints on the ground: the CFA's node system, per call, vs Pinocchio.

A tree whose ground carries many joints -- N pendulums side by side, N two-link arms on
one fixed base, the cranks of the IFToMM N-four-bar (examples/n_four_bar.py) -- leaves
one surviving joint per subtree of the ground after the chain elimination. Those
joints share no moving body, so the CFA's dense node system is block diagonal, one
block per subtree (:class:`flexmbd.recursive.Schedule` ``blocks``): factored block by
block the cost is linear in N; as one dense matrix it was cubic (and its storage
quadratic).

Measures, in one run, the per-call CPU time of ``system.qdd_and_reactions(q, qd, tau)``
(accelerations and every reaction, compiled) and of Pinocchio ``aba`` + ``rnea`` from
Python on the same models (built from the flexmbd model by
``tests/recursive/pin_models.py``; agreement printed), for N = 10 ... 320, and the
fitted growth exponents; the loop's ``forward_dynamics`` of the N-four-bar (N loops,
5 N cut equations, 2 N independent) at its corrected initial state, N = 5 ... 40.

Usage: ``python benchmarks/bench_ground_star.py [--quick] [--write]`` (``--write``
replaces the ``ground-star`` section of benchmarks/RESULTS.md).
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))

from bench_cfa import best_time, case, fit_exponent  # noqa: E402
from results_file import machine_line, markers, replace_section  # noqa: E402

import flexmbd as fm  # noqa: E402

START, END = markers("ground-star")


def ground_star(n, links=1):
    """``n`` arms of ``links`` revolute links each (1 kg, 0.5 m, axes alternating z, y)
    hinged to the ground side by side (0.3 m apart); gravity -z."""
    M = fm.Model(f"star_{n}x{links}")
    inertia = (1e-3, 0.02, 0.02)
    M.link = fm.RigidBody(
        range(n * links),
        rule=lambda b, i: fm.RigidBody(mass=1.0, inertia=inertia, com=(0.25, 0.0, 0.0)),
    )

    def joint(b, i):
        first = i % links == 0
        parent = b.ground if first else b.link[i - 1]
        frame = (0.3 * (i // links), 0.0, 0.0) if first else (0.5, 0.0, 0.0)
        axis = (0.0, 0.0, 1.0) if i % 2 == 0 else (0.0, 1.0, 0.0)
        return fm.Revolute(parent, b.link[i], parent_frame=frame, axis=axis)

    M.hinge = fm.Revolute(range(n * links), rule=joint)
    M.g = fm.Gravity((0.0, 0.0, -9.81))
    return M


def tree_rows(sizes, rng):
    rows = []
    for links in (1, 2):
        for n in sizes:
            _, r = case(ground_star(n, links), rng)
            rows.append((links, n, r))
            print(
                f"  {n} x {links}: ours {r['ours'] * 1e6:.1f} us, pin {r['pin'] * 1e6:.1f} us",
                file=sys.stderr,
            )
    return rows


def loop_rows(sizes):
    import n_four_bar as nf

    rows = []
    for n in sizes:
        s = nf.build(n).compile("recursive", rtol=3e-2)
        q, qd = s.project(*s.initial_state())
        fd = best_time(lambda s=s, q=q, qd=qd: s.forward_dynamics(q, qd))
        tree = best_time(lambda s=s, q=q, qd=qd: s.tree.qdd_and_reactions(q, qd))
        rows.append((n, s.nv, s.constraints.m, fd, tree))
        print(f"  N-four-bar {n}: fd {fd * 1e6:.1f} us, tree {tree * 1e6:.1f} us", file=sys.stderr)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes")
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    import pinocchio as pin

    rng = np.random.default_rng(0)
    load0 = os.getloadavg()[0]
    sizes = [10, 20, 40, 80] if args.quick else [10, 20, 40, 80, 160, 320]
    trees = tree_rows(sizes, rng)
    loops = loop_rows([5, 10, 20] if args.quick else [5, 10, 20, 40])
    out = [
        "## Trees with many joints on the ground: the CFA's block-diagonal node system",
        "",
        __doc__.split("\n\n")[1].replace("\n", " ")
        + " CPU time per call, best of 7 repeats (`bench_cfa.best_time`); "
        "`err`: largest relative difference of qdd and of the joint forces to Pinocchio.",
        "",
        "- Command: `python benchmarks/bench_ground_star.py"
        + (" --quick" if args.quick else "")
        + " --write`",
        machine_line(f"pin {pin.__version__}", load=(load0, os.getloadavg()[0])),
        "",
        "| arms x links | nv | flexmbd [us] | pin aba+rnea [us] | flexmbd / pin | err qdd "
        "| err f |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for links, n, r in trees:
        out.append(
            f"| {n} x {links} | {r['nv']} | {r['ours'] * 1e6:.1f} | {r['pin'] * 1e6:.1f} | "
            f"{r['ours'] / r['pin']:.2f} | {r['err_qdd']:.1e} | {r['err_f']:.1e} |"
        )
    out.append("")
    for links in (1, 2):
        ns = [n for lk, n, _ in trees if lk == links]
        ours = [r["ours"] for lk, _, r in trees if lk == links]
        pins = [r["pin"] for lk, _, r in trees if lk == links]
        out.append(
            f"Growth exponent ({links} link{'s' if links > 1 else ''} per arm, N = {ns[0]} ... "
            f"{ns[-1]}): flexmbd {fit_exponent(ns, ours):.2f}, "
            f"Pinocchio {fit_exponent(ns, pins):.2f}."
        )
    out += [
        "",
        "The N-four-bar's loop (`LoopSystem.forward_dynamics`, every reaction) and its "
        "spanning tree (`qdd_and_reactions`) at the corrected initial state:",
        "",
        "| N | nv | cut equations | loop fd [us] | tree [us] | loop / tree |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n, nv, m, fd, tree in loops:
        out.append(f"| {n} | {nv} | {m} | {fd * 1e6:.1f} | {tree * 1e6:.1f} | {fd / tree:.1f} |")
    ns = [r[0] for r in loops]
    out += [
        "",
        f"Growth exponents (N = {ns[0]} ... {ns[-1]}): loop fd "
        f"{fit_exponent(ns, [r[3] for r in loops]):.2f}, tree "
        f"{fit_exponent(ns, [r[4] for r in loops]):.2f} (the loop's projected solve takes "
        "one tree solve per independent cut equation, 2 N of them: quadratic in N).",
    ]
    text = "\n".join(out)
    print(text)
    if args.write:
        replace_section(text, START, END)
    return text


if __name__ == "__main__":
    main()
