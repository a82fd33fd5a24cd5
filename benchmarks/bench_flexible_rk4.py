"""RK4 of trees with flexible bodies: the Python stage loop vs the compiled blocks.

Cases (recursive formulation, fixed-step RK4, the serialized CFA with flexible bodies):

* the flexible space robot of ``examples/space_robot_flexible.py`` (free-floating base,
  12 revolutes driven by ``JointForce.of_time`` torques, two Craig-Bampton bars of 4
  modes; RK4 step 5e-4 s as the example's dt / substeps);
* chains of N = 5, 10, 20 Craig-Bampton steel beams (8 modes each:
  ``bench_cfa.flexible_chain``) with gravity and a spring-damper law on every joint
  (``JointForce.spring_damper(j, 50, 0.5)``), geometric stiffening off and on; RK4
  step 2e-5 s (below the stability limit of the 5.5 kHz constraint modes).

Each run is ``simulate(t_end, dt, integrator="rk4")``; per RK4 step: the stepper's wall
time (``meta["wall_time"]``: the steps, their output rows) and the whole call (also the
results: energies, body series, momentum) over the steps. Old and new code run in
separate processes, interleaved round by round (``--old PATH``: the checkout of the old
code, put first on ``PYTHONPATH``; default /work/main); the table gives medians and
ranges over the rounds of each process's best of ``--reps`` runs. The peer in the same
run: the absolute formulation's own run of the N = 5 chain (its default integrator,
generalized-alpha with the compiled engine, the same model and step), per step.

Usage: ``python benchmarks/bench_flexible_rk4.py [--rounds 5] [--reps 3] [--quick]
[--write]`` (``--write`` replaces the ``flexible-rk4`` section of benchmarks/RESULTS.md).

``--points``: the point-load cases (:func:`points_model`, stiffening off and on)
instead of the others, written to the ``flexible-points`` section.

``--adaptive``: the adaptive integrators (RK45, DOP853; every-step output, and RK45 with
``dt`` output) of the N = 5 and 10 chains and the space robot without its drives (the
arms started with joint speeds): scipy's ``step()`` on the Python right-hand side
(``TreeStepper.step_blocks = False``, the old path) against the compiled blocks
(``_flexblock.flex_rk_block``), in one process, interleaved run by run, every pair
checked bit for bit; per accepted step the stepper's time, the whole call, and the
evaluations' share of the compiled kernel alone. ``--write`` then replaces the
``flexible-adaptive`` section.

``--output``: what output sampling adds to adaptive runs (RK45, DOP853) of the N = 5 chain
and the space robot without its drives: each case end only, ~1 sample per 10 steps and
~3 per step, CPU time of the whole ``simulate`` per accepted step; old (``--old``, a
checkout without the samples in the compiled blocks) and new (this checkout) in separate
processes, interleaved round by round; every sampled run's bits compared across the two
(momenta apart: their round-off is reported). ``--write`` replaces the
``flexible-adaptive-output`` section.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "examples"))
sys.path.append(str(ROOT))  # (tests.recursive's beams; after PYTHONPATH: its flexmbd first)

SECTION = "flexible-rk4"
CHAIN_NS = (5, 10, 20)
DT_CHAIN = 2e-5
DT_ROBOT = 5e-4


def chain_model(n, stiff):
    """``bench_cfa.flexible_chain`` with a spring-damper law on every joint."""
    from bench_cfa import flexible_chain

    import flexmbd as fm

    m = flexible_chain(n, stiff=stiff)
    for i in range(n):
        setattr(m, f"sd{i}", fm.JointForce.spring_damper(getattr(m, f"j{i}"), 50.0, 0.5))
    return m


def points_model(stiff):
    """:func:`chain_model` (N = 5) with a rigid tip on a revolute at the last beam's tip
    interface and point loads: an SDA between the deforming tip interfaces of beams 1 and
    3 (an actuator of time), a point force at beam 2's deforming tip interface and an SDA
    from the ground to the rigid tip (free length from the first evaluation)."""
    import flexmbd as fm

    m = chain_model(5, stiff)
    b1, b2, b3 = m.b1, m.b2, m.b3
    m.tip = fm.RigidBody(2.0, (0.01, 0.02, 0.03), com=(0.2, 0.0, 0.0))
    m.jt = fm.Revolute(m.b4, m.tip, axis=(1, 0, 0), parent_frame=m.b4.interface("B"))
    m.sda = fm.SpringDamperActuator(
        b1, b1.interface("B"), b3, b3.interface("B"), 2000.0, 5.0,
        fa=lambda t: 10.0 * np.sin(50.0 * t),
    )  # fmt: skip
    m.push = fm.PointForce(b2, b2.interface("B"), (0.0, 0.0, 5.0))
    m.sdg = fm.SpringDamperActuator(m.ground, (2.0, 1.0, 0.5), m.tip, (0.2, 0.0, 0.0), 500.0, 2.0)
    return m


def cases(quick, points=False):
    """``{name: (model builder, dt, steps)}`` (``points``: the point-load cases only)."""
    steps = 40 if quick else 200
    if points:
        return {
            f"chain N=5 points{' stiff' if stiff else ''}": (
                lambda stiff=stiff: points_model(stiff),
                DT_CHAIN,
                steps,
            )
            for stiff in (False, True)
        }
    out = {"space robot": (lambda: __import__("space_robot_flexible").build(), DT_ROBOT, steps)}
    for n in CHAIN_NS:
        for stiff in (False, True):
            out[f"chain N={n}{' stiff' if stiff else ''}"] = (
                lambda n=n, stiff=stiff: chain_model(n, stiff),
                DT_CHAIN,
                steps,
            )
    return out


def per_evaluation(s, reps):
    """Seconds per evaluation of the Python path's ``system.qdd`` (loads applied from
    Python, then the compiled forward dynamics) and of the compiled
    ``_flexkernels.forward_dynamics`` alone (joint forces set once), best of ``reps``
    rounds of 200 calls, at a perturbed initial state."""
    from flexmbd.recursive import _flexkernels as FK

    rng = np.random.default_rng(0)
    q, qd = s.normalize(s.q0() + 1e-3 * rng.normal(size=s.nq)), 0.1 * rng.normal(size=s.nv)
    fl, n = s.flex, 200
    reac = np.empty((len(s.joint_names), 6))
    args = (s.arrays.gravity, s.use_gravity, reac, fl.any_stiff, 1e-13, 100, fl.info)
    best = [np.inf, np.inf]
    for _ in range(reps):
        tic = time.perf_counter()
        for _ in range(n):
            s.qdd(q, qd, None, 0.01)
        best[0] = min(best[0], (time.perf_counter() - tic) / n)
        tic = time.perf_counter()
        for _ in range(n):
            FK.forward_dynamics(fl.work, q, qd, *args)
        best[1] = min(best[1], (time.perf_counter() - tic) / n)
    return best


def worker(quick, reps, peer, points=False):
    """Per RK4 step (s) of every case in this process: ``{name: [stepper, whole call]}``
    (best of ``reps``; the first run, which loads the kernels, not counted)."""
    out = {}
    for name, (build, dt, steps) in cases(quick, points).items():
        s = build().compile("recursive")
        s.simulate(2 * dt, dt=dt, integrator="rk4")  # kernels loaded
        best = [np.inf, np.inf]
        for _ in range(reps):
            tic = time.perf_counter()
            res = s.simulate(steps * dt, dt=dt, integrator="rk4")
            whole = time.perf_counter() - tic
            best[0] = min(best[0], res.meta["wall_time"] / steps)
            best[1] = min(best[1], whole / steps)
        out[name] = best
        if peer:  # (the new process: where the Python path's evaluation goes)
            out[f"eval: {name}"] = per_evaluation(s, reps)
    if peer and not points:
        _, dt, steps = cases(quick)["chain N=5"]
        ab = chain_model(5, False).compile("absolute")
        ab.simulate(2 * dt, dt=dt)
        best = np.inf
        for _ in range(reps):
            tic = time.perf_counter()
            ab.simulate(steps * dt, dt=dt)
            best = min(best, (time.perf_counter() - tic) / steps)
        out["peer: absolute chain N=5"] = [best, best]
    return out


ADAPTIVE = "flexible-adaptive"
T_CHAIN = 0.01  # s, adaptive chains (steps of about 1e-5 s: the constraint modes)
T_ROBOT = 0.5  # s, adaptive space robot


def robot_undriven():
    """The flexible space robot without its ``JointForce.of_time`` drives (no load: the
    compiled adaptive blocks apply) and its initial joint speeds (rad/s)."""
    import space_robot_flexible as sr

    orig = sr.arm

    def arm(b, mount, *a, **k):
        orig(b, mount, *a, **k)
        del b.drive

    sr.arm = arm
    try:
        m = sr.build()
    finally:
        sr.arm = orig
    s = m.compile("recursive")
    qd0 = np.zeros(s.nv)
    for name, sl in s.layout.joints.items():
        if name != "float":
            qd0[sl.v] = 0.3
    return s, qd0


def adaptive_cases(quick):
    """``{name: (system, qd0, t_end, simulate options)}``."""
    t_c, t_r = (T_CHAIN / 4, T_ROBOT / 4) if quick else (T_CHAIN, T_ROBOT)
    out = {}
    for n, stiff in ((5, False), (5, True), (10, False)):
        s = chain_model(n, stiff).compile("recursive")
        name = f"chain N={n}{' stiff' if stiff else ''}"
        for meth in ("RK45", "DOP853"):
            out[f"{name} {meth}"] = (s, None, t_c, {"integrator": meth})
        if n == 5 and not stiff:
            out[f"{name} RK45 dt"] = (s, None, t_c, {"integrator": "RK45", "dt": t_c / 50})
    s, qd0 = robot_undriven()
    for meth in ("RK45", "DOP853"):
        out[f"space robot (no drives) {meth}"] = (s, qd0, t_r, {"integrator": meth})
    return out


def same_run(a, b):
    """Two results with the same bits (t, states, accelerations, reactions, energies,
    step statistics)."""
    keys = ("t", "q", "qd", "qdd", "reactions")
    same = all(np.array_equal(getattr(a, k), getattr(b, k)) for k in keys)
    same &= all(np.array_equal(a.energy[k], b.energy[k], equal_nan=True) for k in a.energy)
    return same and all(np.array_equal(a.stats[k], b.stats[k], equal_nan=True) for k in a.stats)


def adaptive_worker(quick, reps, rounds):
    """``{name: {"old": [[stepper, whole] per round], "new": ..., "steps", "evals",
    "kernel", "bitwise"}}``: per accepted step (s), each round's best of ``reps`` runs of
    the old and the new path in turn; ``kernel`` the compiled forward dynamics alone per
    evaluation (s, :func:`per_evaluation`)."""
    from flexmbd.integrators.explicit import TreeStepper

    out = {}
    for name, (s, qd0, t_end, kw) in adaptive_cases(quick).items():
        s.simulate(t_end / 10, qd0=qd0, **kw)  # kernels loaded
        rec = {"old": [], "new": [], "bitwise": True}
        for _ in range(rounds):
            runs = {}
            for label, blocks in (("old", False), ("new", True)):
                TreeStepper.step_blocks = blocks
                best = [np.inf, np.inf]
                for _ in range(reps):
                    tic = time.perf_counter()
                    res = s.simulate(t_end, qd0=qd0, **kw)
                    whole = time.perf_counter() - tic
                    n = res.meta["steps"]
                    best = [min(best[0], res.meta["wall_time"] / n), min(best[1], whole / n)]
                rec[label].append(best)
                runs[label] = res
            TreeStepper.step_blocks = True
            rec["bitwise"] &= bool(same_run(runs["old"], runs["new"]))
        rec["steps"] = int(res.meta["steps"])
        rec["evals"] = float(np.asarray(res.stats["rhs_evaluations"])[-1]) / rec["steps"]
        rec["kernel"] = per_evaluation(s, reps)[1]
        rec["run"] = [
            [o[1] * rec["steps"], n[1] * rec["steps"]] for o, n in zip(rec["old"], rec["new"])
        ]
        out[name] = rec
    # peer: the absolute formulation's own run of the N = 5 chain over the same time (its
    # default integrator, generalized-alpha with the compiled engine, steps of DT_CHAIN)
    t_c = T_CHAIN / 4 if quick else T_CHAIN
    ab = chain_model(5, False).compile("absolute")
    ab.simulate(2 * DT_CHAIN, dt=DT_CHAIN)
    runs = []
    for _ in range(rounds):
        best = np.inf
        for _ in range(reps):
            tic = time.perf_counter()
            ab.simulate(t_c, dt=DT_CHAIN)
            best = min(best, time.perf_counter() - tic)
        runs.append(best)
    out["peer"] = runs
    return out


def _med(x, i):
    """Median, min and max (us) of column ``i`` of the timings ``x`` (s)."""
    a = np.array([v[i] for v in x]) * 1e6
    return np.median(a), a.min(), a.max()


def _old_new(o, n):
    """The cells ``old [min-max] | new [min-max] | speed-up`` of two :func:`_med`."""
    return (
        f"{o[0]:.0f} [{o[1]:.0f}-{o[2]:.0f}] | {n[0]:.0f} [{n[1]:.0f}-{n[2]:.0f}] "
        f"| {o[0] / n[0]:.1f}x"
    )


def _speed_rows(old, new):
    """The table of the stepper's and the whole call's time per step, old vs new, of the
    cases of ``new`` that ``old`` has (not the ``eval`` entries)."""
    lines = [
        "| case | old stepper | new stepper | speed-up | old whole | new whole | speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    for k in new:
        if k in old and not k.startswith("eval"):
            stepper = _old_new(_med(old[k], 0), _med(new[k], 0))
            lines.append(f"| {k} | {stepper} | {_old_new(_med(old[k], 1), _med(new[k], 1))} |")
    return lines


def adaptive_table(data, args):
    lines = [
        "## Adaptive integrators of trees with flexible bodies: compiled blocks",
        "",
        f"- Command: `python benchmarks/bench_flexible_rk4.py --adaptive --rounds "
        f"{args.rounds} --reps {args.reps}{' --quick' if args.quick else ''}`; old = scipy's "
        "`step()` on the Python right-hand side (`TreeStepper.step_blocks = False`), new = "
        "the compiled blocks (`_flexblock.flex_rk_block`); one process, interleaved run by "
        "run, each pair compared bit for bit; 2-core machine shared with other jobs.",
        f"- Per accepted step (us): the stepper's time (`meta['wall_time']`) and the whole "
        f"`simulate` call, median [min-max] over {args.rounds} rounds of the best of "
        f"{args.reps}; output at every step unless `dt` (50 samples, scipy's dense output "
        f"in Python between the blocks). Chains: {T_CHAIN:g} s (spring-damper laws, "
        f"gravity); space robot: {T_ROBOT:g} s without its drives, joints started at "
        "0.3 rad/s. Kernel floor: evaluations per step x the compiled forward dynamics "
        "alone.",
        "",
        "| case | steps | evals/step | old stepper | new stepper | speed-up | old whole "
        "| new whole | speed-up | kernel floor | old Python share | bitwise |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k, r in data.items():
        if k == "peer":
            continue
        o, n = _med(r["old"], 0), _med(r["new"], 0)
        ow, nw = _med(r["old"], 1), _med(r["new"], 1)
        floor = r["evals"] * r["kernel"] * 1e6
        lines.append(
            f"| {k} | {r['steps']} | {r['evals']:.1f} | {_old_new(o, n)} | {_old_new(ow, nw)} "
            f"| {floor:.0f} "
            f"| {100 * (1 - floor / o[0]):.0f} % | {'yes' if r['bitwise'] else 'NO'} |"
        )
    peer = np.median(data["peer"]) * 1e3
    run = data["chain N=5 RK45"]["run"]
    lines += [
        "",
        f"- Peer in the same process: the absolute formulation's own run of the N = 5 chain "
        f"over the same time (its default integrator, generalized-alpha with the compiled "
        f"engine, steps of {DT_CHAIN:g} s, a sample at each): {peer:.0f} ms for the whole "
        f"`simulate`, against RK45 here {np.median([x[0] for x in run]) * 1e3:.0f} ms (old) "
        f"and {np.median([x[1] for x in run]) * 1e3:.0f} ms (new).",
    ]
    return lines


OUTPUT = "flexible-adaptive-output"


def digest(res):
    """A digest of a run's bits but its momenta: times, states, accelerations,
    reactions, energies, statistics, step count and body modal series."""
    import hashlib

    h = hashlib.sha1()
    for a in (res.t, res.q, res.qd, res.qdd, res.reactions):
        h.update(np.ascontiguousarray(a).tobytes())
    for group in (res.energy, res.stats):
        for k in sorted(group):
            h.update(k.encode() + np.ascontiguousarray(group[k], dtype=float).tobytes())
    for k in sorted(res.body_series):
        h.update(k.encode() + np.ascontiguousarray(res.body(k).modal).tobytes())
    h.update(str(res.meta["steps"]).encode())
    return h.hexdigest()


def output_cases(quick):
    """``{name: (system, qd0, t_end, integrator)}`` of ``--output``."""
    t_c, t_r = (T_CHAIN / 4, T_ROBOT / 4) if quick else (T_CHAIN, T_ROBOT)
    chain = chain_model(5, False).compile("recursive")
    robot, qd0 = robot_undriven()
    out = {}
    for meth in ("RK45", "DOP853"):
        out[f"chain N=5 {meth}"] = (chain, None, t_c, meth)
        out[f"space robot (no drives) {meth}"] = (robot, qd0, t_r, meth)
    return out


def output_worker(quick, reps, dump):
    """``{case: {"steps", "samples": {label: n}, "cpu": {label: s per step}, "digest":
    {label: str}}}``: each process's best of ``reps`` whole ``simulate`` calls (CPU time)
    per accepted step, end only and with output every ~10 steps and ~3 per step; the
    sampled runs' momenta (floating base) saved to the ``dump`` directory; ``"flexmbd"``
    the package timed (imported first: ``bench_cfa`` puts this checkout on the path)."""
    import flexmbd

    out = {"flexmbd": flexmbd.__file__}
    for name, (s, qd0, t_end, meth) in output_cases(quick).items():
        res = s.simulate(t_end, qd0=qd0, integrator=meth, dt=t_end)  # kernels loaded
        n = res.meta["steps"]
        rec = {"steps": n, "samples": {}, "cpu": {}, "digest": {}}
        for label, dt in (("end only", t_end), ("~1 per 10 steps", 10 * t_end / n),
                          ("~3 per step", t_end / (3 * n))):  # fmt: skip
            best = np.inf
            for _ in range(reps):
                tic = time.process_time()
                res = s.simulate(t_end, qd0=qd0, integrator=meth, dt=dt)
                best = min(best, time.process_time() - tic)
            rec["cpu"][label] = best / res.meta["steps"]
            rec["samples"][label] = len(res.t) - 1
            rec["digest"][label] = digest(res)
            if res.extra and dump:
                key = f"{name} {label}".replace(" ", "_").replace("~", "")
                np.savez(Path(dump) / f"{key}.npz", **res.extra)
        out[name] = rec
    return out


def output_main(args):
    """Interleaved old / new ``--output`` workers, then the table."""
    import tempfile

    runs = {"old": [], "new": []}
    dumps = {k: tempfile.mkdtemp(prefix=f"flexout-{k}-") for k in runs}
    for r in range(args.rounds):
        order = (("old", args.old), ("new", ROOT))
        for label, path in order if r % 2 == 0 else order[::-1]:
            env = dict(os.environ, PYTHONPATH=str(path), OPENBLAS_NUM_THREADS="1")
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--output"]
            cmd += ["--reps", str(args.reps), "--dump", dumps[label]]
            cmd += ["--quick"] if args.quick else []
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                                  cwd=ROOT)  # fmt: skip
            got = json.loads(done.stdout.strip().splitlines()[-1])
            assert Path(got.pop("flexmbd")).is_relative_to(Path(path).resolve()), label
            runs[label].append(got)
            print(f"round {r + 1} {label} done", flush=True)
    lines = output_table(runs, dumps, args)
    print("\n".join(lines))
    if args.write:
        from results_file import markers, replace_section

        replace_section("\n".join(lines), *markers(OUTPUT))


def momenta_difference(dumps):
    """Largest |new - old| of the saved momenta relative to the largest component."""
    worst = 0.0
    for f in sorted(Path(dumps["new"]).glob("*.npz")):
        a, b = np.load(f), np.load(Path(dumps["old"]) / f.name)
        for k in a.files:
            worst = max(worst, float(np.abs(a[k] - b[k]).max() / np.abs(b[k]).max()))
    return worst


def output_table(runs, dumps, args):
    def stat(label, case, out):
        a = np.array([r[case]["cpu"][out] for r in runs[label]]) * 1e6
        return np.median(a), a.min(), a.max()

    lines = [
        "## Output times of adaptive runs of trees with flexible bodies",
        "",
        f"- Command: `python benchmarks/bench_flexible_rk4.py --output --rounds {args.rounds} "
        f"--reps {args.reps} --old {args.old}{' --quick' if args.quick else ''}`; old = "
        f"{args.old} (blocks up to each output time, scipy's dense output in Python, the "
        "samples' evaluations in a batch after the run, the floating base's momenta per "
        "state in Python), new = this checkout (the samples in the compiled blocks, "
        "`_flexblock.flex_rk_block_dense`; the momenta by one compiled pass, "
        "`_flexblock.flex_momenta`; the body series' poses in batches, "
        "`_flexblock.flex_frame_history`, `spatial.quat_from_rotvec_batch`); separate "
        "processes, interleaved round by round; "
        "2-core machine shared with other jobs.",
        f"- CPU time of the whole `simulate` per accepted step (us), median [min-max] over "
        f"{args.rounds} rounds of each process's best of {args.reps}; adds = sampled / end "
        f"only - 1 of the medians. Chain: {T_CHAIN:g} s; space robot: {T_ROBOT:g} s "
        "without its drives.",
        "",
        "| case | output | samples / steps | old | new | speed-up | old adds | new adds "
        "| bitwise |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for case in runs["new"][0]:
        o_end, n_end = stat("old", case, "end only")[0], stat("new", case, "end only")[0]
        for out in runs["new"][0][case]["cpu"]:
            o, n = stat("old", case, out), stat("new", case, out)
            same = all(
                r[case]["digest"][out] == runs["old"][0][case]["digest"][out]
                for label in runs
                for r in runs[label]
            )
            rec = runs["new"][0][case]
            adds = "" if out == "end only" else f"{100 * (o[0] / o_end - 1):.0f} %"
            nadds = "" if out == "end only" else f"{100 * (n[0] / n_end - 1):.0f} %"
            lines.append(
                f"| {case} | {out} | {rec['samples'][out]} / {rec['steps']} "
                f"| {o[0]:.0f} [{o[1]:.0f}-{o[2]:.0f}] | {n[0]:.0f} [{n[1]:.0f}-{n[2]:.0f}] "
                f"| {o[0] / n[0]:.1f}x | {adds} | {nadds} | {'yes' if same else 'NO'} |"
            )
    lines += [
        "",
        "- bitwise: times, states, accelerations, reactions, energies, statistics, step "
        "count and body modal series of every round of both versions equal. The space "
        "robot's momenta: largest |new - old| "
        f"{momenta_difference(dumps):.1e} of the largest component (compiled products' "
        "rounding against numpy's per-state `momentum`).",
    ]
    return lines


def run_worker(path, quick, reps, peer, points=False):
    env = dict(os.environ, PYTHONPATH=str(path), OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--reps", str(reps)]
    cmd += ["--quick"] if quick else []
    cmd += ["--points"] if points else []
    cmd += ["--peer"] if peer else []
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def fit_exponent(ns, ts):
    """Growth exponent of ``ts`` in ``ns`` (least squares in log-log)."""
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--old", default="/work/main")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--peer", action="store_true")
    ap.add_argument("--adaptive", action="store_true")
    ap.add_argument("--points", action="store_true")
    ap.add_argument("--output", action="store_true")
    ap.add_argument("--dump", default="")
    args = ap.parse_args(argv)
    if args.output and args.worker:
        print(json.dumps(output_worker(args.quick, args.reps, args.dump)))
        return
    if args.output:
        return output_main(args)
    if args.adaptive:
        data = adaptive_worker(args.quick, args.reps, args.rounds)
        lines = adaptive_table(data, args)
        print("\n".join(lines))
        if args.write:
            from results_file import markers, replace_section

            replace_section("\n".join(lines), *markers(ADAPTIVE))
        return
    if args.worker:
        import flexmbd

        print(flexmbd.__file__, file=sys.stderr)
        print(json.dumps(worker(args.quick, args.reps, args.peer, args.points)))
        return
    old, new = {}, {}
    for r in range(args.rounds):
        for label, path, acc in (("old", args.old, old), ("new", ROOT, new)):
            got = run_worker(path, args.quick, args.reps, label == "new", args.points)
            for k, v in got.items():
                acc.setdefault(k, []).append(v)
            print(
                f"round {r + 1} {label}: "
                + ", ".join(f"{k} {v[0] * 1e6:.0f}" for k, v in got.items())
            )
    lines = points_table(old, new, args) if args.points else table(old, new, args)
    print("\n".join(lines))
    if args.write:
        from results_file import markers, replace_section

        replace_section("\n".join(lines), *markers(POINTS if args.points else SECTION))


POINTS = "flexible-points"


def points_table(old, new, args):
    """The ``flexible-points`` section: the point-load cases, old vs new."""

    lines = [
        "## RK4 of trees with flexible bodies: point forces and SDAs in the blocks",
        "",
        f"- Command: `python benchmarks/bench_flexible_rk4.py --points --rounds {args.rounds} "
        f"--reps {args.reps}{' --quick' if args.quick else ''}`; old = {args.old} (point "
        "forces and SDAs send the run to the Python RK4 stage loop), new = this checkout "
        "(the point-load table in `_flexblock.flex_rk4_block`); separate processes, "
        "interleaved round by round; 2-core machine shared with other jobs.",
        "- Model (`points_model`): the N = 5 chain of steel CB beams with its joint laws, a "
        "rigid tip, an SDA between two beams' deforming interfaces (an actuator of time), a "
        "point force at a deforming interface, an SDA from the ground to the rigid tip; "
        f"steps of {DT_CHAIN:g} s, a sample at every step.",
        f"- Per RK4 step (us): the stepper's time and the whole `simulate` call, median "
        f"[min-max] over {args.rounds} rounds of each process's best of {args.reps}.",
        "",
        *_speed_rows(old, new),
    ]
    lines += ["", "New Python path per evaluation (us): `system.qdd` vs the kernel alone.", ""]
    for k in new:
        if k.startswith("eval: "):
            py, kern = _med(new[k], 0)[0], _med(new[k], 1)[0]
            lines.append(f"- {k[6:]}: `system.qdd` {py:.1f}, `forward_dynamics` alone {kern:.1f}")
    return lines


def table(old, new, args):
    lines = [
        "## RK4 of trees with flexible bodies: compiled blocks",
        "",
        f"- Command: `python benchmarks/bench_flexible_rk4.py --rounds {args.rounds} "
        f"--reps {args.reps}{' --quick' if args.quick else ''}`; old = {args.old} "
        "(the Python RK4 stage loop), new = this checkout (`_flexblock.flex_rk4_block`); "
        "separate processes, interleaved round by round; 2-core machine shared with other "
        "jobs.",
        f"- Per RK4 step (us): the stepper's time (`meta['wall_time']`) and the whole "
        f"`simulate` call (results included), median [min-max] over {args.rounds} rounds of "
        f"each process's best of {args.reps}; steps of {DT_CHAIN:g} s (chains) and "
        f"{DT_ROBOT:g} s (space robot).",
        "",
        *_speed_rows(old, new),
    ]
    lines += [
        "",
        "Where an evaluation of the Python RK4 path goes (same processes, us per call): "
        "`system.qdd` (the loads applied from Python per evaluation, then the compiled "
        "forward dynamics) vs `_flexkernels.forward_dynamics` alone; the block's "
        "evaluation is its stepper time per step / 4.",
        "",
        "| case | `system.qdd` | kernel alone | Python share | block per evaluation |",
        "|---|---|---|---|---|",
    ]
    for k in new:
        if k.startswith("eval: "):
            name = k[6:]
            py, kern = _med(new[k], 0)[0], _med(new[k], 1)[0]
            blk = _med(new[name], 0)[0] / 4
            lines.append(
                f"| {name} | {py:.1f} | {kern:.1f} | {100 * (1 - kern / py):.0f} % | {blk:.1f} |"
            )
    lines.append("")
    for k in new:
        if k.startswith("peer"):
            p = _med(new[k], 0)
            lines.append(
                "- Peer in the same run (new processes): the absolute formulation's own run of "
                "the N = 5 chain (its default integrator, generalized-alpha with the compiled "
                f"engine; same model, step and output): {p[0]:.0f} [{p[1]:.0f}-{p[2]:.0f}] us "
                "per step, whole `simulate` call."
            )
    for tag in ("", " stiff"):
        ks = [f"chain N={n}{tag}" for n in CHAIN_NS]
        eo = fit_exponent(CHAIN_NS, [_med(old[k], 0)[0] for k in ks])
        en = fit_exponent(CHAIN_NS, [_med(new[k], 0)[0] for k in ks])
        what = tag or " (no stiffening)"
        lines.append(
            f"- growth exponent in N of the stepper's time per step, chains{what}: "
            f"old {eo:.2f}, new {en:.2f}."
        )
    return lines


if __name__ == "__main__":
    main()
