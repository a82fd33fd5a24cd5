"""The documented call is the fast call: ``system.forward_dynamics(q, qd, tau)`` vs Pinocchio.

Measures, in one run, the per-call CPU time of

* ``system.forward_dynamics(q, qd, tau)`` -- the documented single-state call, returning
  the frozen :class:`flexmbd.dynamics.ForwardDynamics` (accelerations, every joint
  reaction, every body's acceleration);
* ``system.qdd_and_reactions(q, qd, tau)`` -- the fastest internal entry point
  (accelerations and reactions as two arrays);
* Pinocchio ``aba`` + ``rnea`` from Python (``rnea`` at the ``aba`` accelerations gives
  the joint forces ``data.f``);

on a 20-link chain read from a URDF file by both codes (``fm.Model.from_urdf`` and
``pinocchio.buildModelFromXML``, revolute joints about alternating axes with offsets)
and on the space robot of ``examples/space_robot.py`` (floating base; Pinocchio model
built by ``tests/recursive/pin_models.py``). The agreement with Pinocchio (qdd and the
joint forces) is printed with the times; on the URDF chain the absolute formulation's
``forward_dynamics`` (the same contract) is timed too and its reactions compared by
joint name. The documented call is also timed against the lean one on closed loops
and flexible trees (:func:`other_cases`).

Usage: ``python benchmarks/bench_contract.py [--write]`` (``--write`` replaces the
``contract`` section of benchmarks/RESULTS.md).
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

from bench_cfa import best_time, load_space_robot, strip_drives  # noqa: E402
from results_file import replace_section  # noqa: E402

START, END = "<!-- contract:start -->", "<!-- contract:end -->"


def chain_urdf(n):
    """URDF text of an n-link serial chain on a fixed base: revolute joints about x, y, z
    in turn, joint origins offset and tilted, centres of mass off the link axes."""
    axes = ["0 0 1", "0 1 0", "1 0 0"]
    out = [
        '<?xml version="1.0"?>',
        f'<robot name="chain{n}">',
        '  <link name="base"><inertial><mass value="2.0"/><origin xyz="0 0 0.05"/>'
        '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial>'
        "</link>",
    ]
    for i in range(1, n + 1):
        m = 1.0 + 0.05 * i
        out.append(
            f'  <link name="l{i}"><inertial><origin xyz="0.02 0.01 0.15" rpy="0.1 0 0.2"/>'
            f'<mass value="{m:.3f}"/><inertia ixx="{0.01 * m:.5f}" ixy="0.0002" ixz="0" '
            f'iyy="{0.012 * m:.5f}" iyz="0.0001" izz="{0.004 * m:.5f}"/></inertial></link>'
        )
        parent = "base" if i == 1 else f"l{i - 1}"
        z = 0.1 if i == 1 else 0.3
        out.append(
            f'  <joint name="j{i}" type="revolute"><parent link="{parent}"/>'
            f'<child link="l{i}"/><origin xyz="0.01 0 {z}" rpy="0.05 -0.03 0.1"/>'
            f'<axis xyz="{axes[i % 3]}"/>'
            '<limit lower="-3" upper="3" effort="100" velocity="10"/></joint>'
        )
    out.append("</robot>")
    return "\n".join(out)


def urdf_case(n, rng, rounds, absolute=True):
    import pinocchio as pin

    import flexmbd as fm

    xml = chain_urdf(n)
    m = fm.Model.from_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    m.gravity = fm.Gravity(tuple(pm.gravity.linear))  # Pinocchio's default gravity
    s = m.compile("recursive")
    pd = pm.createData()
    names = [j.name for j in m.joints() if j.nv]
    assert s.nv == pm.nv == n
    jid = [pm.getJointId(nm) for nm in names]
    qi = np.array([pm.joints[k].idx_q for k in jid])
    vi = np.array([pm.joints[k].idx_v for k in jid])
    q, qd, tau = rng.uniform(-1, 1, n), rng.normal(size=n), rng.normal(size=n)
    qp, vp, tp = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
    qp[qi], vp[vi], tp[vi] = q, qd, tau

    def pinf():
        a = pin.aba(pm, pd, qp, vp, tp)
        pin.rnea(pm, pd, qp, vp, a)

    fd = s.forward_dynamics(q, qd, tau)
    a = pin.aba(pm, pd, qp, vp, tp)
    pin.rnea(pm, pd, qp, vp, a)
    f = np.array([np.concatenate([pd.f[k].angular, pd.f[k].linear]) for k in jid])
    ours_f = np.array([fd.reaction(nm) for nm in names])
    err_qdd = np.abs(fd.qdd - a[vi]).max() / np.abs(a).max()
    err_f = np.abs(ours_f - f).max() / np.abs(f).max()
    calls = {
        "fd": lambda: s.forward_dynamics(q, qd, tau),
        "lean": lambda: s.qdd_and_reactions(q, qd, tau),
        "pin": pinf,
    }
    t = timed(calls, rounds)
    if not absolute:
        return dict(nv=n, err_qdd=err_qdd, err_f=err_f, **t)
    # the same contract in the absolute formulation, state mapped through the bodies
    ab = m.compile("absolute")
    Q, QD = ab.state_from_bodies(s.body_states(q, qd))
    fa = ab.forward_dynamics(Q, QD, tau)
    t["abs"] = best_time(lambda: ab.forward_dynamics(Q, QD, tau), budget=0.5, repeats=3)
    err_abs = max(np.abs(fa.reaction(nm) - fd.reaction(nm)).max() for nm in names) / np.abs(f).max()
    err_acc = (
        np.abs(fa.body_accelerations - fd.body_accelerations).max()
        / np.abs(fd.body_accelerations).max()
    )
    return dict(nv=n, err_qdd=err_qdd, err_f=err_f, err_abs=err_abs, err_acc=err_acc, **t)


def robot_case(rng, rounds):
    import pinocchio as pin

    from tests.recursive.pin_models import q_to_pin, to_pinocchio, v_from_pin, v_to_pin

    model = strip_drives(load_space_robot())
    s = model.compile("recursive")
    q = s.normalize(rng.normal(size=s.nq))
    qd, tau = rng.normal(size=s.nv), rng.normal(size=s.nv)
    pm, maps = to_pinocchio(model)
    pd = pm.createData()
    qp, vp, tp = q_to_pin(maps, q), v_to_pin(maps, qd), v_to_pin(maps, tau)

    def pinf():
        a = pin.aba(pm, pd, qp, vp, tp)
        pin.rnea(pm, pd, qp, vp, a)

    fd = s.forward_dynamics(q, qd, tau)
    a = pin.aba(pm, pd, qp, vp, tp)
    pin.rnea(pm, pd, qp, vp, a)
    f = np.array([np.concatenate([pd.f[i].angular, pd.f[i].linear]) for i in range(1, pm.njoints)])
    err_qdd = np.linalg.norm(fd.qdd - v_from_pin(maps, a)) / np.linalg.norm(fd.qdd)
    err_f = np.linalg.norm(fd.reactions - f) / np.linalg.norm(f)
    calls = {
        "fd": lambda: s.forward_dynamics(q, qd, tau),
        "lean": lambda: s.qdd_and_reactions(q, qd, tau),
        "pin": pinf,
    }
    return dict(nv=s.nv, err_qdd=err_qdd, err_f=err_f, **timed(calls, rounds))


def other_cases(rng, rounds):
    """The documented call against the lean one on closed loops (the four-bar of
    ``tests/models.py`` at an assembled state the projector has corrected, Andrews'
    squeezer of ``examples/andrews_squeezer.py`` and the spatial ring of 6 rods of
    ``tests/recursive/test_compiled_loops.py`` at their corrected initial states: the
    compiled loop; lean: ``accelerations(compiled=True)``, qdd and multipliers without
    the reactions) and flexible trees (the flexible pendulum of ``tests/models.py``, 2
    Craig-Bampton modes; the 5-beam chain of ``bench_cfa.flexible_chain``; the flexible
    space robot of ``examples/space_robot_flexible.py`` with its drives; lean:
    ``qdd_and_reactions``). Also timed: the compiled entry points of both calls from
    Python on kept arrays (:mod:`flexmbd.recursive._nbsingle`; loops: by the entry points
    that the calls keep, ``loops._call``), whose difference is the
    work the documented call adds in the kernel (loops: the reactions sweep and the
    reaction rows; flexible trees: the body accelerations)."""
    from bench_cfa import flexible_chain

    from flexmbd.recursive import _nbsingle as NS
    from flexmbd.recursive.loops import _call
    from tests.models import flexible_pendulum, four_bar
    from tests.recursive.test_compiled_loops import spatial_ring

    out = []
    loops = (
        ("closed loop: four-bar", four_bar, np.array([0.5, -0.3, 0.2])),
        ("closed loop: Andrews' squeezer", lambda: example("andrews_squeezer"), None),
        ("closed loop: ring of 6 rods", lambda: spatial_ring(6), None),
    )
    for name, build, qd0 in loops:
        loop = build().compile("recursive")
        q, qd = loop.project(*loop.initial_state(qd=qd0))
        tau = rng.normal(size=loop.nv)
        calls = {
            "fd": lambda loop=loop, q=q, qd=qd, tau=tau: loop.forward_dynamics(q, qd, tau),
            "lean": lambda loop=loop, q=q, qd=qd, tau=tau: loop.accelerations(
                q, qd, tau, compiled=True
            ),
        }
        loop.forward_dynamics(q, qd, tau)  # (the kept scratch)
        c, sel, qc, qdc, tv = loop._compiled_inputs(q, qd, tau, loop.projector, 0.0)
        sw, rows_t, rows_c, cutF, shapes = loop._fd_plan(len(sel))[:5]
        arrays = [np.empty(loop.nv), np.empty(shapes[0]), np.empty(shapes[1])]
        acc, reac = np.empty(shapes[2]), np.empty(shapes[3])
        head = (*c, qc, qdc, tv, sel, *arrays[:2], *loop._ws)
        tail = (arrays[2], acc, loop._body_row, cutF, sw, reac, rows_t, rows_c)
        fd_args = (*head[:4], loop._clab, *head[4:], *tail)
        lean_args = (*head, arrays[2], sw)
        entries = [None, None]  # the compiled entry points, as the calls keep them
        kfd, klean = NS.loop_forward_dynamics_rows, NS.loop_accelerations_kept
        calls["kernel fd"] = lambda a=fd_args, e=entries, k=kfd: _call(e, 0, k, a)
        calls["kernel lean"] = lambda a=lean_args, e=entries, k=klean: _call(e, 1, k, a)
        out.append((name, "`accelerations(compiled=True)`", loop.nv, calls))
    trees = (
        ("flexible tree: flexible pendulum", flexible_pendulum),
        ("flexible tree: 5-beam chain", lambda: flexible_chain(5)),
        ("flexible tree: space robot (drives)", lambda: example("space_robot_flexible")),
    )
    for name, build in trees:
        flex = build().compile("recursive")
        fq = flex.normalize(flex.q0() + 1e-3 * rng.normal(size=flex.nq))
        fqd, ftau = 0.1 * rng.normal(size=flex.nv), 0.1 * rng.normal(size=flex.nv)
        calls = {
            "fd": lambda f=flex, q=fq, qd=fqd, tau=ftau: f.forward_dynamics(q, qd, tau),
            "lean": lambda f=flex, q=fq, qd=fqd, tau=ftau: f.qdd_and_reactions(q, qd, tau),
        }
        flex.forward_dynamics(fq, fqd, ftau)  # (the plan read)
        _, MI, _, _, tol, max_iter = flex._flex_plan()
        fl = flex.flex
        reac, acc = np.zeros((len(flex.joint_names), 6)), np.zeros((flex.n_bodies + 1, 6))
        head = (fl.work, fq, fqd, ftau, MI, flex.arrays.gravity, flex.use_gravity, reac)
        head += (fl.any_stiff, tol, max_iter, fl.info, np.empty(flex.nv), acc)
        calls["kernel fd"] = lambda h=head: NS.flex_forward_dynamics(*h, True, True)
        calls["kernel lean"] = lambda h=head: NS.flex_forward_dynamics(*h, False, True)
        out.append((name, "`qdd_and_reactions`", flex.nv, calls))
    return [(name, lean, nv, timed(calls, rounds)) for name, lean, nv, calls in out]


def example(name):
    """``build()`` of ``examples/<name>.py``: the example's model."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build()


def timed(calls, rounds):
    """Best per-call CPU time of each call over ``rounds`` interleaved rounds (the three
    calls share the machine's load the same way)."""
    best = {k: np.inf for k in calls}
    for _ in range(rounds):
        for k, f in calls.items():
            best[k] = min(best[k], best_time(f, budget=0.2, repeats=5))
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    import numba
    import pinocchio as pin

    rng = np.random.default_rng(0)
    rows = [
        ("20-link URDF chain", urdf_case(20, rng, args.rounds)),
        ("space robot (13 bodies, floating)", robot_case(rng, args.rounds)),
    ]
    others = other_cases(np.random.default_rng(1), args.rounds)  # (rng: main's states)
    sizes = (5, 10, 20, 50, 100)
    scaling = [urdf_case(n, rng, args.rounds, absolute=False) for n in sizes]
    load = os.getloadavg()
    lines = [
        "## The documented call: `forward_dynamics` vs Pinocchio",
        "",
        "Per call, one state: `system.forward_dynamics(q, qd, tau)` (the documented call; a "
        "frozen `ForwardDynamics` with qdd, every joint reaction and every body's "
        "acceleration), `system.qdd_and_reactions(q, qd, tau)` (the fastest internal entry "
        "point: qdd and reactions only) and Pinocchio `aba` + `rnea` from Python. Best CPU "
        f"time of {args.rounds} interleaved rounds of 5 batches (process time; shared "
        "machine). The URDF chain is read by both codes from the same URDF text.",
        "",
        f"- Command: `python benchmarks/bench_contract.py --rounds {args.rounds} --write`",
        f"- Machine: nproc {os.cpu_count()}, {platform.platform()}; load average at the end "
        f"{load[0]:.2f}; Python {platform.python_version()}, numba {numba.__version__}, "
        f"pin {pin.__version__}; date {datetime.date.today().isoformat()}",
        "",
        "| case | nv | `forward_dynamics` [us] | `qdd_and_reactions` [us] | pin aba+rnea [us] "
        "| fd / lean | fd / pin | max rel. diff vs pin qdd / forces |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, r in rows:
        lines.append(
            f"| {name} | {r['nv']} | {r['fd'] * 1e6:.1f} | {r['lean'] * 1e6:.1f} | "
            f"{r['pin'] * 1e6:.1f} | {r['fd'] / r['lean']:.2f} | **{r['fd'] / r['pin']:.2f}** | "
            f"{r['err_qdd']:.1e} / {r['err_f']:.1e} |"
        )
    lines += [
        "",
        "The same call on closed loops and flexible trees (same timing, same run; the lean "
        "call of each). The lean calls return less: `accelerations(compiled=True)` no "
        "reactions, `qdd_and_reactions` no body accelerations. `extra`: what the documented "
        "call adds inside the compiled call (its entry point minus the lean call's, both "
        "called from Python on kept arrays: loops the reactions sweep and rows, flexible "
        "trees the body accelerations), so `fd / (lean + extra)` compares it with a lean "
        "call that would return the same quantities:",
        "",
        "| case | nv | `forward_dynamics` [us] | lean call | lean [us] | fd / lean | extra [us] "
        "| fd / (lean + extra) |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for name, lean, nv, r in others:
        extra = max(r["kernel fd"] - r["kernel lean"], 0.0)
        lines.append(
            f"| {name} | {nv} | {r['fd'] * 1e6:.1f} | {lean} | {r['lean'] * 1e6:.1f} | "
            f"{r['fd'] / r['lean']:.2f} | {extra * 1e6:.1f} | "
            f"{r['fd'] / (r['lean'] + extra):.2f} |"
        )
    u = rows[0][1]
    lines += [
        "",
        f"Same contract, absolute formulation, on the URDF chain: `forward_dynamics` "
        f"{u['abs'] * 1e3:.2f} ms per call (sparse KKT solve in Python); its reactions "
        f"by joint name agree with the recursive ones to {u['err_abs']:.1e} and its body "
        f"accelerations to {u['err_acc']:.1e} (relative). Many states: "
        "`forward_dynamics_batch(Q, QD, TAU)` (one compiled loop on a recursive tree).",
    ]
    lines += [
        "",
        "Growth with the chain's length (URDF chains of n links, the same calls and timing, "
        "same run):",
        "",
        "| n | `forward_dynamics` [us] | `qdd_and_reactions` [us] | pin aba+rnea [us] | "
        "fd / pin | max rel. diff vs pin qdd / forces |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for r in scaling:
        lines.append(
            f"| {r['nv']} | {r['fd'] * 1e6:.1f} | {r['lean'] * 1e6:.1f} | {r['pin'] * 1e6:.1f} | "
            f"{r['fd'] / r['pin']:.2f} | {r['err_qdd']:.1e} / {r['err_f']:.1e} |"
        )
    x = np.log([r["nv"] for r in scaling])
    p = {k: np.polyfit(x, np.log([r[k] for r in scaling]), 1)[0] for k in ("fd", "lean", "pin")}
    lines += [
        "",
        f"Time per call ~ n^p for n = {sizes[0]}..{sizes[-1]}: `forward_dynamics` p = "
        f"{p['fd']:.2f}, `qdd_and_reactions` {p['lean']:.2f}, Pinocchio aba+rnea "
        f"{p['pin']:.2f} (a fixed cost per call flattens the short chains).",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        path = ROOT / "benchmarks" / "RESULTS.md"
        replace_section(text, START, END, path)
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
