"""Closed-loop ring of N bodies: recursive + cut-joint formulation vs absolute formulation.

The ring: N rods (1 m, 1 kg, square section 0.1 m) on the sides of a planar
regular (N+1)-gon whose last side is the ground, joined by revolute joints whose
axes are tilted out of the plane (so that the loop is a generic spatial one,
mobility N - 5, without redundant constraints that the absolute formulation's
KKT matrix could not take). Gravity along -y, released from rest.

Timed per size N = 10 ... 500 (best of a few repeats):

* ``fd``: one forward-dynamics evaluation at the assembled state -- recursive:
  the CFA tree solver for the free accelerations, 5 O(N) ``solve_mass`` columns,
  the cut-joint equations and the QR projection (:class:`flexmbd.recursive.LoopSystem`);
  absolute: the sparse KKT system of all 6(N+1)... body equations
  (``AbsoluteSystem.forward_dynamics``);
* ``step``: one integration step -- recursive: RK4 with the position/velocity
  projection after the step; absolute: Newmark (trapezoidal) with Newton.

The growth exponent is the least-squares slope of log(time) over log(N).
Run ``python benchmarks/bench_loops.py`` (``--write`` updates the loops section
of benchmarks/RESULTS.md between ``<!-- loops:start -->`` and ``<!-- loops:end -->``;
``--sizes 10 20 50`` for a quick run).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # time this working tree
sys.path.insert(0, str(Path(__file__).resolve().parent))  # (when imported from elsewhere)
from results_file import machine_line, replace_section  # noqa: E402

import flexmbd as fm  # noqa: E402
from flexmbd.integrators.explicit import tree_stepper  # noqa: E402
from flexmbd.recursive import _nbforces as NF  # noqa: E402
from flexmbd.recursive import _nbloops as NL  # noqa: E402
from flexmbd.recursive.loops import _GUARD, _NO_TIX, _NO_TT  # noqa: E402

RESULTS = Path(__file__).with_name("RESULTS.md")
START, END = "<!-- loops:start -->", "<!-- loops:end -->"
COMMAND = "python benchmarks/bench_loops.py --write"
SIZES = (10, 20, 50, 100, 200, 500)
#: the timed quantities whose growth with N the report gives
KEYS = ("tree_step", "tree_step_py", "rec_step", "rec_out", "rec_fd", "rec_fd_c", "abs_fd")
KEYS += ("abs_step",)


def ring(N, L=1.0, m=1.0, b=0.1, tilt=0.3, seed=3, closed=True):
    """The ring model: rods ``rod[0..N-1]``, joints ``j[0..N]`` (``j[N]`` closes the loop;
    ``closed=False``: without it, the open chain of the same bodies -- the tree)."""
    rng = np.random.default_rng(seed)
    n = N + 1
    R = L / (2 * np.sin(np.pi / n))
    ang = 2 * np.pi * np.arange(n + 1) / n
    P = np.column_stack([R * np.cos(ang), R * np.sin(ang), np.zeros(n + 1)])
    P -= P[0]
    M = fm.Model(f"ring_{N}")
    Jt, Ja = m * (L * L + b * b) / 12, m * 2 * b * b / 12
    frames = []
    for i in range(N):
        u = (P[i + 1] - P[i]) / L
        Rb = np.column_stack([u, np.cross([0, 0, 1.0], u), [0, 0, 1.0]])
        frames.append((Rb, P[i]))
    M.rod = fm.RigidBody(
        range(N), rule=lambda blk, i: fm.RigidBody(mass=m, inertia=(Ja, Jt, Jt), com=(L / 2, 0, 0))
    )
    # joint k at vertex P_k with a tilted axis (world), expressed in each body's axes
    axes = []
    for _ in range(n):
        a = np.array([0, 0, 1.0]) + tilt * rng.standard_normal(3)
        axes.append(a / np.linalg.norm(a))

    def frame_on(i, k):  # joint k's frame on rod i (joint frame axes = world axes)
        Rb, o = frames[i]
        return (Rb.T @ (P[k] - o), Rb.T)

    def joint(blk, k):
        parent = blk.ground if k == 0 else blk.rod[k - 1]
        child = blk.ground if k == N else blk.rod[k]
        pf = (P[k], np.eye(3)) if k == 0 else frame_on(k - 1, k)
        cf = (P[k], np.eye(3)) if k == N else frame_on(k, k)
        return fm.Revolute(
            parent, child, axis=axes[k], parent_frame=pf, child_frame=cf, cut=(k == N)
        )

    M.j = fm.Revolute(range(n if closed else N), rule=joint)
    M.g = fm.Gravity((0.0, -9.81, 0.0))
    return M


def best_of(f, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def time_size(N, repeats=3, steps=3, dt=1e-3, rsteps=30):
    model = ring(N)
    out = {"N": N}
    # recursive + cut joints
    S = model.compile("recursive")
    q, qd = S.q0(), S.qd0()
    fd = S.forward_dynamics(q, qd)
    out["rank"] = fd.rank
    out["m"] = len(S.constraint_names)

    def rec_fd():
        S.constraints._key = None  # no cached constraint values
        S.accelerations(q, qd)

    out["rec_fd"] = best_of(rec_fd, repeats)
    out["rec_fd_c"] = best_of(lambda: S.accelerations(q, qd, compiled=True), repeats)
    S.simulate(3 * dt, dt=dt)  # warm up
    # integration only, in process time (the shared machine's other jobs do not count);
    # the loop's first step is the QR path that selects the rows
    out["rec_step"] = min(
        interval_cpu(S.stepper(2 * rsteps * dt, dt=rsteps * dt, substeps=rsteps), rsteps)
        for _ in range(repeats)
    )
    # output: every step is an output sample (accelerations, reactions, multipliers,
    # violations, energies, joint and body series): process time beyond the integration
    runs = []
    for _ in range(repeats):
        c0 = time.process_time()
        S.simulate(rsteps * dt, dt=dt)
        runs.append(time.process_time() - c0)
    out["rec_out"] = max(min(runs) - rsteps * out["rec_step"], 0.0) / (rsteps + 1)
    # the tree: the same bodies without the cut joint, the same RK4 stepper
    T = ring(N, closed=False).compile("recursive")
    T.simulate(3 * dt, dt=dt, integrator="rk4")
    out["tree_step"] = min(
        interval_cpu(tree_stepper(T, 2 * rsteps * dt, dt=rsteps * dt, substeps=rsteps), rsteps)
        for _ in range(repeats)
    )
    # the tree's RK4 driven from Python (four compiled forward dynamics per step): the
    # measure of the earlier rounds, before the compiled tree RK4 (_nbloops.tree_rk4_block)
    out["tree_step_py"] = min(
        interval_cpu(
            tree_stepper(T, 2 * rsteps * dt, dt=rsteps * dt, substeps=rsteps), rsteps, True
        )
        for _ in range(repeats)
    )
    # absolute
    try:
        A = model.compile("absolute")
        qa, qda = A.state_from_bodies(S.body_states(q, qd))
        fa = A.forward_dynamics(qa, qda)
        out["abs_fd"] = best_of(lambda: A.forward_dynamics(qa, qda), repeats)
        out["abs_step"] = min(
            float(
                np.mean(A.simulate(steps * dt, dt=dt, integrator="newmark").stats["step_time"][1:])
            )
            for _ in range(repeats)
        )
        # the two formulations agree on the accelerations of the bodies
        err = 0.0
        for b in model.bodies():
            al1, a1 = fd.tree.body_acceleration(b.name)
            al2, a2 = fa.body_acceleration(b.name)
            err = max(err, np.abs(al1 - al2).max(), np.abs(a1 - a2).max())
        out["agree"] = err
    except Exception as exc:  # noqa: BLE001 - report and continue
        out["abs_fd"] = out["abs_step"] = out["agree"] = np.nan
        out["abs_error"] = f"{type(exc).__name__}: {exc}"
    return out


def squeezer_rows(repeats=3):
    """Andrews' squeezer (examples/andrews_squeezer.py) to t = 0.03 s with DOP853: the
    compiled path (constant drive torque, compiled SDA) and the Python path (the drive as
    a Python function) in the same process; process time of build + compile + simulate
    (with its output samples), of the integration alone (the stepper's steps), worst
    matching digits against the Test Set reference."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import andrews_squeezer as sq

    cases = [
        ("compiled", dict(rtol=1e-9, atol=1e-11, n_out=30)),
        ("compiled", dict(rtol=1e-9, atol=1e-11, n_out=300)),
        ("compiled", dict(rtol=1e-12, atol=1e-14, n_out=30)),
        ("Python", dict(rtol=1e-9, atol=1e-11, n_out=30)),
    ]
    rows = []
    for path, kw in cases:
        fn = path == "Python"
        sq.simulate(0.03, drive_function=fn, **kw)  # warm: kernels loaded, first-call work

        def run(fn=fn, kw=kw):
            return sq.simulate(0.03, drive_function=fn, **kw)

        def integrate(fn=fn, kw=kw):
            s = sq.build(fn).compile("recursive")
            st = s.stepper(
                0.03, dt=0.03 / kw["n_out"], integrator="dop853", rtol=kw["rtol"], atol=kw["atol"]
            )
            for _ in range(kw["n_out"]):
                st.step()
            return st.solver.nfev

        pairs = [(cpu_of(run), cpu_of(integrate)) for _ in range(max(repeats, 5))]
        total, res = min((p[0] for p in pairs), key=lambda x: x[0])
        integ, nfev = min((p[1] for p in pairs), key=lambda x: x[0])
        output = float(np.median([p[0][0] - p[1][0] for p in pairs]))
        got = sq.angles(res)
        rows.append(
            dict(
                path=path,
                rtol=kw["rtol"],
                n_out=kw["n_out"],
                steps=res.meta["steps"],
                nfev=nfev,
                total=total,
                integ=integ,
                output=output,
                digits=min(sq.digits(got[a], sq.REFERENCE[a]) for a in sq.ANGLES),
            )
        )
        r = rows[-1]
        print(
            f"squeezer {path:8s} rtol {r['rtol']:g} samples {r['n_out']:3d}: {r['steps']} steps, "
            f"{nfev} evaluations, {1e3 * total:.1f} ms CPU (integration {1e3 * integ:.1f} ms), "
            f"{r['digits']:.2f} digits",
            flush=True,
        )
    return rows


def output_rows(repeats=5, steps=100, dt=1e-3):
    """What output sampling adds to a run (issue 13: <= 10 %): the same steps with an
    output sample after every step and with samples only at the start and the end
    (RK4: ``dt = steps h, substeps = steps``; DOP853: one output time), process time,
    median over back-to-back pairs of the ratio minus one. Ring N = 10 / 100 (recursive
    loop and tree, RK4, h = 1e-3 s) and the squeezer (DOP853, rtol 1e-9, 300 samples)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import andrews_squeezer as sq

    cases = []
    ring_systems = {}
    for N in (10, 100):
        for kind, closed in (("loop", True), ("tree", False)):
            S = ring(N, closed=closed).compile("recursive")
            T = steps * dt

            def every(S=S, T=T):
                return S.simulate(T, dt=dt, integrator="rk4")

            def end(S=S, T=T):
                return S.simulate(T, dt=T, substeps=steps, integrator="rk4")

            cases.append((f"ring N = {N}, {kind}, RK4", every, end))
            if kind == "loop":
                ring_systems[N] = S
    sqs = sq.build(False).compile("recursive")

    def sq_run(n_out, integrator="dop853"):
        return sqs.simulate(0.03, dt=0.03 / n_out, integrator=integrator, rtol=1e-9, atol=1e-11)

    cases.append(("squeezer, DOP853 rtol 1e-9", lambda: sq_run(300), lambda: sq_run(1)))
    # the interpolated rows of the other sizes and RK45's
    for integ, n_out in (("dop853", 30), ("rk45", 300), ("rk45", 30)):
        cases.append(
            (
                f"squeezer, {integ.upper()} rtol 1e-9, {n_out} interpolated samples",
                lambda integ=integ, n_out=n_out: sq_run(n_out, integ),
                lambda integ=integ: sq_run(1, integ),
            )
        )

    def sq_steps(integrator, end_only):  # no dt, no t_eval: a sample at every accepted step
        dt = 0.03 if end_only else None
        return sqs.simulate(0.03, dt=dt, integrator=integrator, rtol=1e-9, atol=1e-11)

    for integ in ("dop853", "rk45"):
        cases.append(
            (
                f"squeezer, {integ.upper()} rtol 1e-9, a sample at every accepted step",
                lambda integ=integ: sq_steps(integ, False),
                lambda integ=integ: sq_steps(integ, True),
            )
        )
    # examples/four_bar.py as documented: 10 s, RK4 h = 1e-3 s, a sample every step
    import four_bar

    fb = four_bar.build().compile("recursive", rtol=3e-2, tangent_projection=True)

    def fb_run(dt):
        return fb.simulate(10.0, dt=dt, substeps=round(dt / 1e-3), integrator="rk4")

    cases.append(("four-bar 10 s (example), RK4", lambda: fb_run(1e-3), lambda: fb_run(10.0)))
    rows = []
    for name, every, end in cases:
        every(), end()  # warm: kernels loaded, first-call work
        floor = (
            squeezer_floor(sqs, every(), end()) if name == "squeezer, DOP853 rtol 1e-9" else None
        )
        if name.startswith("ring") and name.endswith("loop, RK4"):
            floor = ring_sample_floor(ring_systems[int(name.split()[3].rstrip(","))], steps, dt)
        pairs = [(cpu_of(every), cpu_of(end)) for _ in range(repeats)]
        if pairs[0][1][0] < 5e-3:  # a run of a millisecond: more pairs against the noise
            pairs += [(cpu_of(every), cpu_of(end)) for _ in range(2 * repeats)]
        a, b = pairs[0][0][1], pairs[0][1][1]
        ratio = float(np.median([p[0][0] / p[1][0] - 1.0 for p in pairs]))
        rows.append(
            dict(
                case=name,
                samples=len(a.t),
                steps=a.meta.get("steps", len(a.t) - 1),
                steps_end=b.meta.get("steps", steps),
                every=min(p[0][0] for p in pairs),
                end=min(p[1][0] for p in pairs),
                share=ratio,
                floor=floor,
            )
        )
        r = rows[-1]
        print(
            f"output {name}: {r['samples']} samples {1e3 * r['every']:.1f} ms, "
            f"end only {1e3 * r['end']:.1f} ms, adds {100 * ratio:.1f} %",
            flush=True,
        )
    return rows


def ring_sample_floor(S, steps, dt, repeats=7):
    """What the ring loop's output samples cost inside the compiled RK4 block: the
    block of a run with a sample after every step (``_nbloops.loop_rk4_block`` of its
    ``steps - 1`` intervals after the QR step, the arguments as the run passed them)
    timed with its sample rows and with none (zero-length rows: every step
    ``loop_rk4_step``), best of ``repeats`` each, process time; ``{"per_sample" (s),
    "share"}`` of the sampled block over the unsampled."""
    from flexmbd.recursive import _nbloops as NL

    seen = {}
    block = NL.loop_rk4_block

    def keep(*a):
        if a[9] > 1:  # (the run's block of its intervals)
            seen["args"] = tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a)
        return block(*a)

    NL.loop_rk4_block = keep
    try:
        S.simulate(steps * dt, dt=dt, integrator="rk4")
    finally:
        NL.loop_rk4_block = block
    a = seen["args"]

    def run(sampled):
        b = list(a)
        b[6] = a[6].copy()  # (the block integrates y in place)
        if not sampled:
            b[19:29] = [x[:0] for x in a[19:29]]  # no sample rows
        return cpu_of(lambda: block(*b))[0]

    ts = min(run(True) for _ in range(repeats))
    tn = min(run(False) for _ in range(repeats))
    return dict(per_sample=(ts - tn) / a[9], share=ts / tn - 1.0, n=a[9], **sample_parts(a))


def sample_parts(a, n=2000):
    """A loop sample's own parts, each called ``n`` times in one compiled loop at the
    state ``a[6]`` of a block's arguments ``a`` (:func:`ring_sample_floor`) right after
    that state's stage (``loop_accelerations``): the Newton-Euler sweep with the cut
    wrenches (``_nbloops._tree_rnea_cuts``), the former tree solve with them
    (``_tree_with_cuts``, run last: it rewrites the bias forces) and the kinematics
    history row (``_nbforces.sample_history``); us per call."""
    from flexmbd.recursive import _kernels as K

    Ib, buf, cargs, forces, clab, body_row = a[:6]
    tau, sel, ws, reac = a[10], a[11], a[16], a[17]
    nv = len(a[6]) // 2
    q, v = a[6][:nv].copy(), a[6][nv:].copy()
    qdd, lam = np.empty(nv), np.empty(ws[0].shape[0])
    if NL.loop_accelerations(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, *ws, reac):
        return {}
    n1 = Ib[K.IB_N1]
    cuts = (cargs[22], clab, cargs[30], cargs[31], cargs[32])
    out = (np.empty(a[21].shape[1:]), np.empty(a[22].shape[1:]), body_row)
    cutF = np.empty(a[23].shape[1:])
    hist = (np.empty(7), np.empty((n1, 3, 3)), np.empty((n1, 3)), np.empty((n1, 6)))
    rnea = per_call(lambda k: _n_rnea(k, Ib, buf, *cuts, qdd, lam, cutF, *out), n, 7)
    row = per_call(lambda k: _n_history(k, Ib, buf, v, forces, *hist), n, 7)
    solve = per_call(
        lambda k: _n_tree_cuts(k, Ib, buf, forces, q, v, tau, *cuts, lam, cutF, *out), n, 7
    )
    return dict(rnea=rnea, history=row, solve=solve)


def rk_sample_parts(n=2000):
    """The parts of the squeezer's RK45 output sample (rtol 1e-9, a sample at every
    accepted step: ``_nbloops.loop_rk_block_sampled``), each called ``n`` times in one
    compiled loop at the middle sample's state right after its last evaluation
    (``loop_rhs_keep``): the violations, the margin test of the rank decision
    (``_margin_decision``), the QR replay it falls back on (``_qr_selects``), the
    Newton-Euler sweep with the cut wrenches, the kinematics history row and the whole
    sample (``_block_sample``); us per call, best of 7. Also how often the margin test
    refuses over the run's samples (``--rk-parts``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import andrews_squeezer as sq

    S = sq.build(False).compile("recursive")
    seen = []
    block = NL.loop_rk_block_sampled

    def keep(*a):
        done = block(*a)
        seen.append((a, done))
        return done

    NL.loop_rk_block_sampled = keep
    try:
        S.simulate(0.03, integrator="rk45", rtol=1e-9, atol=1e-11, progress=False)
    finally:
        NL.loop_rk_block_sampled = block
    a = seen[0][0]
    Ib, buf, cargs, forces, tau, sel, tol, mn, rtol, guard, ws, reac = a[:12]
    clab, body_row, rows = a[38], a[39], a[42:]
    RAW = rows[1]
    nv = RAW.shape[1] // 2
    f_new, yc, lam = np.empty(2 * nv), np.empty(2 * nv), np.empty(ws[0].shape[0])
    refused = taken = 0
    for y in (y for b, done in seen for y in b[35][:done]):  # (each block's accepted states)
        ok = NL.loop_rhs_keep(
            Ib, buf, cargs, forces, y.copy(), tau, sel, tol, mn, rtol, guard, ws, reac,
            f_new, yc, lam,
        ) == 0  # fmt: skip
        taken += ok
        refused += ok and not NL._margin_decision(ws[1], sel, rtol, guard)
    j = seen[0][1] // 2
    NL.loop_rhs_keep(
        Ib, buf, cargs, forces, RAW[j].copy(), tau, sel, tol, mn, rtol, guard, ws, reac,
        f_new, yc, lam,
    )  # fmt: skip
    phi, J, _ = ws
    cuts = NL.cut_arrays(cargs)
    qdd, v = f_new[nv:].copy(), yc[nv:].copy()
    own = (rows[7][j].copy(), rows[5][j].copy(), rows[6][j].copy(), body_row)  # CUTF REAC ACC
    hist = tuple(x[j].copy() for x in rows[9:])
    cp = tuple(x.copy() for x in rows)
    y1 = RAW[j].copy()
    parts = dict(
        violations=lambda k: _n_violations(k, phi, J, v),
        margin=lambda k: _n_margin(k, J, sel, rtol, guard),
        qr_selects=lambda k: _n_qr(k, J, sel, rtol),
        rnea=lambda k: _n_rnea(k, Ib, buf, cuts[0], clab, *cuts[1:], qdd, lam, *own),
        history=lambda k: _n_history(k, Ib, buf, v, forces, *hist),
        sample=lambda k: _n_block_sample(
            k, Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y1, yc, lam,
            f_new, j, 1, cp,
        ),
    )  # fmt: skip
    res = {name: per_call(f, n, 7) for name, f in parts.items()}
    print(f"squeezer RK45 samples: {taken}, the margin test refused {refused}")
    for name, us in res.items():
        print(f"  {name:11s} {us:6.3f} us")
    return dict(res, refused=refused, samples=taken)


@njit
def _n_violations(n, phi, J, v):
    s = 0.0
    for _ in range(n):
        s += NL._violations(phi, J, v)[1]
    return s


@njit
def _n_margin(n, J, sel, rtol, guard):
    c = 0
    for _ in range(n):
        c += NL._margin_decision(J, sel, rtol, guard)
    return c


@njit
def _n_qr(n, J, sel, rtol):
    c = 0
    for _ in range(n):
        c += NL._qr_selects(J, sel, rtol)
    return c


@njit
def _n_block_sample(
    n, Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y_new, yc, lam, f_new,
    j, row, rows,
):  # fmt: skip
    for _ in range(n):
        NL._block_sample(
            Ib, buf, forces, cuts, clab, tau, sel, rtol, guard, ws, body_row, y_new, yc, lam,
            f_new, j, row, rows,
        )  # fmt: skip


@njit
def _n_rnea(n, Ib, buf, cI, clab, Dall, Rcs, pcs, qdd, lam, cutF, reac, acc, body_row):
    for _ in range(n):
        NL._tree_rnea_cuts(Ib, buf, cI, clab, Dall, Rcs, pcs, qdd, lam, cutF, reac, acc, body_row)


@njit
def _n_tree_cuts(
    n, Ib, buf, forces, q, v, tau, cI, clab, Dall, Rcs, pcs, lam, cutF, reac, acc, body_row
):  # fmt: skip
    for _ in range(n):
        NL._tree_with_cuts(
            Ib, buf, forces, q, v, tau, cI, clab, Dall, Rcs, pcs, lam, cutF, reac, acc, body_row
        )


@njit
def _n_history(n, Ib, buf, v, forces, en, rw, pw, vel):
    for _ in range(n):
        NF.sample_history(Ib, buf, v, forces, en, rw, pw, vel)


def squeezer_floor(S, every, end, repeats=15):
    """What the squeezer's interpolated samples must add while each keeps its own
    corrected state and forward dynamics: the dense output's extra stage evaluations
    (counted: the runs' evaluations with every sample and with the end only) and, per
    extra sample, one forward dynamics with every reaction (`_nbloops.loop_samples`,
    at the corrected states) or the correction of the interpolated state and that
    forward dynamics in one pass (`_nbloops.loop_correct_samples`, what a run calls),
    in units of one right-hand side evaluation (`_nbloops.loop_rhs`: correction +
    accelerations), all timed at the run's sample states inside one compiled call
    (best of ``repeats``). Leaves out the interpolation and the result assembly, so
    it is a lower bound of the run's `adds`."""
    st = S.stepper(0.03, dt=0.03 / 300, integrator="dop853", rtol=1e-9, atol=1e-11)
    raw, _ = st.advance()  # the interpolated states before their correction
    P = st.P
    sel = P.selection()
    Ib, buf, cargs, forces, tau, ws, reac, clab, body_row = S.compiled_rk4()
    Q, V = np.ascontiguousarray(every.q), np.ascontiguousarray(every.qd)
    n, nv, m = Q.shape[0], Q.shape[1], ws[0].shape[0]
    Yq = np.ascontiguousarray(np.hstack([Q, V]))
    Yraw = np.ascontiguousarray(np.hstack([raw["q"], raw["qd"]]))
    Y = Yraw.copy()
    out = np.empty(2 * nv)
    corr = (P.position_tol, P.max_newton, P.rtol, _GUARD)
    TAU = np.zeros((n, nv))
    arrays = (
        np.empty((n, nv)), np.empty((n, m)), np.empty((n, reac.shape[0], 6)),
        np.empty((n, int(body_row.max()) + 1, 6)), np.empty((n, clab.shape[0], 6)),
        np.zeros((n, 3)), np.zeros(n, dtype=bool),
    )  # fmt: skip
    status = np.zeros(n, dtype=np.int64)

    def rhs():
        _n_rhs(Ib, buf, cargs, forces, Yq, tau, sel, *corr, ws, reac, out)

    def samples():
        NL.loop_samples(
            Ib, buf, cargs, forces, clab, Q, V, TAU, sel, P.rtol, _GUARD, ws, reac, body_row,
            *arrays,
        )  # fmt: skip

    def corrected_samples():
        Y[:] = Yraw
        NL.loop_correct_samples(
            Ib, buf, cargs, forces, clab, Y, TAU, sel, *corr, ws, body_row, status, *arrays
        )

    t_rhs = min(cpu_of(rhs)[0] for _ in range(repeats)) / n
    t_smp = min(cpu_of(samples)[0] for _ in range(repeats)) / n
    t_cs = min(cpu_of(corrected_samples)[0] for _ in range(repeats)) / n
    ev, en = (int(np.asarray(r.stats["rhs_evaluations"])[-1]) for r in (every, end))
    extra = len(every.t) - len(end.t)
    return dict(
        evals_every=ev, evals_end=en, t_rhs=t_rhs, t_sample=t_smp, t_corrected=t_cs,
        extra=extra, floor=(ev - en + extra * t_smp / t_rhs) / en,
        floor_corrected=(ev - en + extra * t_cs / t_rhs) / en,
    )  # fmt: skip


def _parts_text(f):
    """The sentence on a ring sample's parts (:func:`sample_parts`) of a floor ``f``."""
    if "rnea" not in f:
        return ""
    return (
        f" Alone (`sample_parts`, each called 2000 times in one compiled loop after the "
        f"stage at the block's first state): the Newton-Euler sweep with the cut wrenches "
        f"{f['rnea']:.1f} us (the tree solve with them that it replaced: "
        f"{f['solve']:.1f} us), the kinematics history row with the energies "
        f"{f['history']:.1f} us."
    )


def output_report(rows):
    """The output subsection of the loops section."""
    if not rows:
        return []
    lines = [
        "### Output sampling: what a sample after every step adds to a run",
        "",
        "The same steps with an output sample (accelerations, every reaction, multipliers, "
        "violations, rank statistics, energies, joint and body series) after every step "
        "and with samples only at the start and the end (RK4: `dt` = the span, `substeps` "
        "= the steps; DOP853: one output time), each a whole `simulate` in a warm process; "
        "process time, best of 5 (ms); `adds`: the median over 5 back-to-back pairs of "
        "(every / end - 1) (15 pairs for runs under 5 ms). RK4 runs go through compiled "
        "blocks of output intervals "
        "(`ExplicitStepper._rk4_block`: the loop's `_nbloops.loop_rk4_block`, the tree's "
        "`_nbloops.tree_rk4_block`), whose first stage of each interval is the output "
        "sample (the loop's: that stage's accelerations and multipliers, then one "
        "Newton-Euler sweep with those accelerations and the cut wrenches as loads for the "
        "reactions and body accelerations (`_nbloops._tree_rnea_cuts`) and the sample's "
        "row of the tree's kinematics history: world poses, twists, kinetic, gravity and "
        "force-table energies (`_nbforces.sample_history`); the tree's: its energies); "
        "the kinematics and energies of the samples no step wrote in one compiled call "
        "(`_nbforces.kinematics_history`); a body's motion history computed when read "
        "(the cut joints' bodies, from the kept history rows). DOP853 / RK45 with output "
        "times: their blocks of steps run across them (`_nbloops.loop_rk_block_dense`): "
        "after each step that covers output times, the step's dense output (DOP853: its "
        "three extra stages; RK45: scipy's `K^T P` by the same BLAS product), the "
        "interpolant at those times and each interpolated state's correction, forward "
        "dynamics with every reaction and kinematics history row, written in the block. "
        "A sample at every accepted step "
        "(no `dt`, no `t_eval`; `end only`: `dt` = the span): no interpolation and no "
        "dense stages; the step's last evaluation (FSAL) already corrected the accepted "
        "state and solved its accelerations and multipliers, so the sample adds only its "
        "violations, rank decision and the Newton-Euler sweep with the cut wrenches for "
        "the reactions, written in the compiled call that takes the step: adaptive steps "
        "run in compiled blocks (`_nbloops.loop_rk_block_sampled`, up to an `advance` "
        "chunk; `loop_rk_block` up to the next output time: scipy's DOP853 / RK45 / RK23 "
        "steps, the stall rule per step, the solver's state set once per block by "
        "`ExplicitStepper._block_steps`). The compiled sample rows go "
        "into the results by slices (views and block copies, no gathers or scatters per "
        "row), the rows of an adaptive run without output times are gathered without a "
        "`step` call per row (`ExplicitStepper._step_rows`).",
        "",
        "| run | samples | steps | every step | end only | adds |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['samples']} | {r['steps']} | {1e3 * r['every']:.1f} | "
            f"{1e3 * r['end']:.1f} | {100 * r['share']:.0f} % |"
        )
    met = [r["case"] for r in rows if r["share"] <= 0.10]
    lines += [
        "",
        f"Issue 13 target (output sampling adds <= 10 % to any run): met for "
        f"{', '.join(met) if met else 'none'}. " + OUTPUT_NOTES,
    ]
    for r in rows:
        f = r.get("floor")
        if f and "per_sample" in f:
            lines += [
                "",
                f"Inside the compiled block of the {r['case']} run (`ring_sample_floor`: "
                f"its `_nbloops.loop_rk4_block` call of {f['n']} intervals timed with its "
                f"sample rows and with none): {1e6 * f['per_sample']:.1f} us per sample, "
                f"{100 * f['share']:.1f} % of the block -- the sample's own work (its "
                f"violations, rank decision, the world poses, the Newton-Euler sweep "
                f"with the cut wrenches for every reaction and body acceleration, its "
                f"row of the kinematics history with the energies); the rest of the "
                f"row's share is the assembly of the extra rows (result arrays, joint "
                f"series)." + _parts_text(f),
            ]
        elif f:
            de = f["evals_every"] - f["evals_end"]
            lines += [
                "",
                f"The floor of the {r['case']} run (`squeezer_floor`): its "
                f"{f['evals_every']} evaluations against {f['evals_end']} with the end "
                f"only, i.e. {de} dense-output stage evaluations "
                f"(+{100 * de / f['evals_end']:.1f} %), and {f['extra']} more samples, each "
                f"a forward dynamics with every reaction ({1e6 * f['t_sample']:.1f} us per "
                f"sample in one `loop_samples` call, against {1e6 * f['t_rhs']:.1f} us per "
                f"right-hand side `loop_rhs`, both at the run's sample states): "
                f"{100 * f['floor']:.0f} % of the end-only run's evaluations. With the "
                f"correction of each interpolated state (the reported states are the "
                f"corrected ones) in the same pass, the operations a run's block does "
                f"(`loop_correct_samples`, {1e6 * f['t_corrected']:.1f} us per sample), "
                f"the floor is {100 * f['floor_corrected']:.0f} %: the dense stages, and "
                f"per sample two evaluations of the cut rows for the Newton steps, one with "
                f"the speed terms for the accelerations, the tree solve and the `M^-1` "
                f"columns, none of which a sample can skip and keep its numbers bit for "
                f"bit. Only the interpolation and the result assembly are left above it. "
                f"So with more samples than steps the 10 % target cannot hold "
                f"while every sample keeps its own corrected state, accelerations and "
                f"reactions: measured {100 * r['share']:.0f} % against this floor of "
                f"{100 * f['floor_corrected']:.0f} %.",
            ]
    return lines


# Where a loop step goes: each part of the compiled step called n times inside one
# compiled loop (no Python between the calls), at the state after the second output
# interval; the parts are the private kernels of flexmbd.recursive._nbloops.
@njit
def _n_free(n, Ib, buf, forces, q, v, tau, qdd, reac):
    for _ in range(n):
        NL._tree_free(Ib, buf, forces, q, v, tau, qdd, reac)


@njit
def _n_rows(n, cargs, q, v, with_v, phi, J, gamma):
    for _ in range(n):
        NL._eval(cargs, q, v, with_v, phi, J, gamma)


@njit
def _n_rows_tree(n, Ib, buf, cargs, q, v, phi, J, gamma):
    """The stage's cut rows n times, from the tree pass that the caller made at the same
    state (the tree's workspace ``buf`` holds it)."""
    for _ in range(n):
        NL._eval_after_tree(Ib, buf, cargs, q, v, phi, J, gamma)


@njit
def _n_cols(n, Ib, buf, cols, Y, s1, s2, s3):
    for _ in range(n):
        NL._tree_columns(Ib, buf, cols, Y, s1, s2, s3)


@njit
def _n_stage(n, Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac):
    for _ in range(n):
        NL.loop_accelerations(Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac)


@njit
def _n_stage_less(n, skip, Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac):
    """A stage (`_stage`'s parts in its order) without one part: ``skip`` 1 the cut rows
    (``J``, ``gamma`` of the last evaluation reused: the same state), 2 the columns (the
    last ``Y`` reused), 3 the Gram factorization and the refined solve. The stage minus
    this is what the part costs among the others (their data evicting each other's)."""
    nv = q.shape[0]
    sw = NL.stage_work(sel.shape[0], nv, Ib[NL.K.IB_N1])
    cols, Y, af, bx, Fe, A, lam_i, r, g = sw
    k = sel.shape[0]
    NL._eval(cargs, q, v, True, phi, J, gamma)
    for a in range(k):
        for j in range(nv):
            cols[a, j] = J[sel[a], j]
    NL._tree_columns(Ib, buf, cols, Y, af, bx, Fe)
    for _ in range(n):
        NL._tree_free(Ib, buf, forces, q, v, tau, qdd, reac)
        if skip != 1:
            NL._eval_after_tree(Ib, buf, cargs, q, v, phi, J, gamma)
        for a in range(k):
            g[a] = gamma[sel[a]]
            for j in range(nv):
                cols[a, j] = J[sel[a], j]
        if skip != 2:
            NL._tree_columns(Ib, buf, cols, Y, af, bx, Fe)
        if skip != 3:
            NL._gram_factor(cols, Y, A, k, nv)
            NL._refined_solve(cols, Y, A, g, qdd, lam_i, r, k, nv)


@njit
def _n_correct(n, cargs, y, sel, tol, mn, rtol, guard, phi, J, gamma):
    nv = y.shape[0] // 2
    for _ in range(n):
        yy = y.copy()
        NL.loop_correct(cargs, yy[:nv], yy[nv:], sel, tol, mn, rtol, guard, phi, J, gamma)


@njit
def _n_step(n, Ib, buf, cargs, forces, y, h, tau, sel, tol, mn, rtol, guard, ws, reac):
    for _ in range(n):
        yy = y.copy()
        NL.loop_rk4_step(
            Ib, buf, cargs, forces, yy, h, tau, sel, tol, mn, rtol, guard, ws, reac, _NO_TT, _NO_TIX
        )


# The operational-space alternative to the five columns (issue #13, round ring-osi): the
# inverse operational-space inertia of a chain's tip from the articulated-body
# factorization (Featherstone, RBDA; Wensing, Featherstone & Orin 2012), timed on a chain
# of the ring's size. Not a flexmbd kernel: a measurement of what that algorithm's
# recursion costs, checked against the dense J M^-1 J^T (`osim_check`).
@njit
def _xtmx(X, M, T, out):
    """``out += X^T M X`` (6x6) for a motion transform ``X = [[E, 0], [B, E]]`` (its zero
    block skipped): an inertia carried from the child's to the parent's coordinates."""
    for a in range(6):
        for b in range(6):
            s = 0.0
            for c in range(0 if b < 3 else 3, 6):
                s += M[a, c] * X[c, b]
            T[a, b] = s
    for a in range(6):
        for b in range(6):
            s = 0.0
            for c in range(0 if a < 3 else 3, 6):
                s += X[c, a] * T[c, b]
            out[a, b] += s


@njit
def _xmxt(X, M, T, out):
    """``out = X M X^T`` (6x6, ``X`` as in :func:`_xtmx`): a force-to-motion map carried
    from the parent's to the child's coordinates."""
    for a in range(6):
        for b in range(6):
            s = 0.0
            for c in range(3 if a < 3 else 6):
                s += X[a, c] * M[c, b]
            T[a, b] = s
    for a in range(6):
        for b in range(6):
            s = 0.0
            for c in range(3 if b < 3 else 6):
                s += T[a, c] * X[b, c]
            out[a, b] = s


@njit
def _osim_tip(X, Ib, IA, T, Om, Om2, w):
    """Inverse operational-space inertia ``Om`` (6x6, tip coordinates, unit force at the
    tip -> its spatial acceleration) of a fixed-base chain of revolute joints about
    each body's local z (``X[i]``: motion transform parent -> body i, ``Ib[i]``: spatial
    inertia of body i, its coordinates): articulated inertias ``IA`` tip to base, then
    ``Om_i = P_i X_i Om_p X_i^T P_i^T + S D_i^-1 S^T`` (``P_i = 1 - S D_i^-1 U_i^T``,
    ``U_i = IA_i S``, ``D_i = S^T U_i``) base to tip."""
    N = X.shape[0]
    IA[:] = Ib
    for i in range(N - 1, 0, -1):
        d = IA[i, 2, 2]
        for a in range(6):
            for b in range(6):
                Om2[a, b] = IA[i, a, b] - IA[i, a, 2] * IA[i, b, 2] / d
        _xtmx(X[i], Om2, T, IA[i - 1])
    Om[:] = 0.0
    for i in range(N):
        if i > 0:
            _xmxt(X[i], Om, T, Om2)
            Om[:] = Om2
        d = IA[i, 2, 2]
        c = 0.0
        for a in range(6):
            s = 0.0
            for b in range(6):
                s += Om[a, b] * IA[i, b, 2]
            w[a] = s
            c += IA[i, a, 2] * s
        for a in range(6):
            Om[2, a] -= w[a] / d
            Om[a, 2] -= w[a] / d
        Om[2, 2] += c / (d * d) + 1.0 / d


@njit
def _n_osim(n, X, Ib, IA, T, Om, Om2, w):
    for _ in range(n):
        _osim_tip(X, Ib, IA, T, Om, Om2, w)


def _skew(v):
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def osim_chain(N, seed=0):
    """A random fixed-base revolute chain of N bodies for :func:`_osim_tip`: motion
    transforms ``X`` (N, 6, 6) and spatial inertias ``Ib`` (N, 6, 6), plus the work
    arrays (the recursion's cost does not depend on the values)."""
    rng = np.random.default_rng(seed)
    X, Ib = np.zeros((N, 6, 6)), np.zeros((N, 6, 6))
    for i in range(N):
        Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
        E = Q * np.sign(np.linalg.det(Q))
        X[i, :3, :3] = X[i, 3:, 3:] = E
        X[i, 3:, :3] = -E @ _skew(rng.standard_normal(3))
        m, C = 1.0 + rng.random(), _skew(0.3 * rng.standard_normal(3))
        Ib[i, :3, :3] = np.diag(0.1 + rng.random(3)) + m * C @ C.T
        Ib[i, :3, 3:], Ib[i, 3:, :3], Ib[i, 3:, 3:] = m * C, m * C.T, m * np.eye(3)
    work = (np.empty((N, 6, 6)), np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6)))
    return X, Ib, work + (np.empty(6),)


def osim_check(N=20):
    """Largest relative difference between :func:`_osim_tip` and the dense
    ``J M^-1 J^T`` of the tip (``J`` the tip's body Jacobian, ``M`` from the bodies'
    Jacobians) on :func:`osim_chain`."""
    X, Ib, (IA, T, Om, Om2, w) = osim_chain(N)
    S = np.eye(6)[2]
    Js, Jp = [], np.zeros((6, N))
    for i in range(N):
        Ji = X[i] @ Jp
        Ji[:, i] = S
        Js.append(Ji)
        Jp = Ji
    M = sum(Js[i].T @ Ib[i] @ Js[i] for i in range(N))
    ref = Js[-1] @ np.linalg.solve(M, Js[-1].T)
    _osim_tip(X, Ib, IA, T, Om, Om2, w)
    return float(np.abs(Om - ref).max() / np.abs(ref).max())


@njit
def _n_rhs(Ib, buf, cargs, forces, Y, tau, sel, tol, mn, rtol, guard, ws, reac, out):
    for i in range(Y.shape[0]):
        NL.loop_rhs(Ib, buf, cargs, forces, Y[i], tau, sel, tol, mn, rtol, guard, ws, reac, out)


def per_call(f, n, repeats=25):
    """Best over ``repeats`` of the process time per call of ``f(n)`` (n calls in one
    compiled loop), us."""
    f(1)
    best = np.inf
    for _ in range(repeats):
        t0 = time.process_time()
        f(n)
        best = min(best, (time.process_time() - t0) / n)
    return 1e6 * best


def stage_rows(sizes=(10, 100, 500), dt=1e-3, rsteps=30):
    """The parts of the ring's compiled loop step, each timed alone inside a compiled
    loop (us per call): the tree's free accelerations (`_tree_free`, one per stage),
    the cut rows with and without the speed terms (`_eval`: the stage's and the
    correction's), the five `M^-1` columns (`_tree_columns`), a whole stage
    (`loop_accelerations`), the correction (`loop_correct`) and a whole step
    (`loop_rk4_step`)."""
    rows = []
    for N in sizes:
        r = stage_times(N, dt, rsteps)
        rows.append(r)
        print(
            f"stages N={N}: " + ", ".join(f"{a} {b:.1f}" for a, b in r.items() if a != "N"),
            flush=True,
        )
    return rows


def stage_times(N, dt, rsteps):
    """:func:`stage_rows` of one ring size."""
    S = ring(N).compile("recursive")
    st = S.stepper(1.0, dt=rsteps * dt, substeps=rsteps)
    st.step()
    st.advance(1)
    Ib, buf, cargs, forces, tau, ws, reac = S.compiled_rk4()[:7]
    P = st.P
    sel = P.selection()
    y = np.array(st.y, float)
    nv = S.nv
    q, v = y[:nv].copy(), y[nv:].copy()
    phi, J, gamma = ws
    qdd, lam = np.empty(nv), np.empty(phi.shape[0])
    n = max(10, 5000 // N)
    k, n1 = len(sel), int(Ib[NL.K.IB_N1])
    NL._eval(cargs, q, v, True, phi, J, gamma)
    cols, Y = np.ascontiguousarray(J[sel]), np.empty((k, nv))
    scratch = [np.empty((k, n1, 6)) for _ in range(3)]
    corr = (P.position_tol, P.max_newton, P.rtol, _GUARD)
    stage = (Ib, buf, cargs, forces, q, v, tau, sel, qdd, lam, phi, J, gamma, reac)
    r = dict(N=N)
    r["free"] = per_call(lambda n: _n_free(n, Ib, buf, forces, q, v, tau, qdd, reac), n)
    r["rows_v"] = per_call(lambda n: _n_rows(n, cargs, q, v, True, phi, J, gamma), n)
    r["rows"] = per_call(lambda n: _n_rows(n, cargs, q, v, False, phi, J, gamma), n)
    NL._tree_free(Ib, buf, forces, q, v, tau, qdd, reac)
    r["rows_t"] = per_call(lambda n: _n_rows_tree(n, Ib, buf, cargs, q, v, phi, J, gamma), n)
    r["cols"] = per_call(lambda n: _n_cols(n, Ib, buf, cols, Y, *scratch), n)
    one = (cols[:1].copy(), Y[:1].copy(), *(a[:1].copy() for a in scratch))
    r["col1"] = per_call(lambda n: _n_cols(n, Ib, buf, *one), n)
    X, Ibo, work = osim_chain(N)
    r["osim"] = per_call(lambda n: _n_osim(n, X, Ibo, *work), n)
    r["stage"] = per_call(lambda n: _n_stage(n, *stage), n)
    # the parts among the others: the stage minus the stage without the part (the same
    # period, alternated, best of each)
    less = {1: np.inf, 2: np.inf, 3: np.inf, 0: np.inf}
    for _ in range(3):
        for skip in less:
            t = per_call(lambda n, skip=skip: _n_stage_less(n, skip, *stage), n)
            less[skip] = min(less[skip], t)
    r["composed"] = less[0]
    r["ctx_rows"] = less[0] - less[1]
    r["ctx_cols"] = less[0] - less[2]
    r["ctx_solve"] = less[0] - less[3]
    r["correct"] = per_call(lambda n: _n_correct(n, cargs, y, sel, *corr, *ws), n)
    step = (Ib, buf, cargs, forces, y, dt, tau, sel, *corr, ws, reac)
    r["step"] = per_call(lambda n: _n_step(n, *step), max(5, n // 4))
    return r


def stage_report(rows, ring_rows):
    """The stage subsection of the loops section."""
    if not rows:
        return []
    tree = {r["N"]: r["tree_step"] for r in ring_rows}
    lines = [
        "### Where a loop step goes",
        "",
        "Each part of the ring's compiled loop step timed alone, called many times inside "
        "one compiled loop (no Python between the calls; process time per call, best of "
        "25, us) at the state after the second output interval: `tree stage` the tree's free "
        "accelerations of a stage (`_nbloops._tree_free`: kinematics, bias forces, "
        "factorization, solve, reactions), `cut rows` the cut joints' rows with the speed "
        "terms and without (the correction's) (`_eval`: the explicit loop kinematics), "
        "`stage's rows` the rows with the speed terms as a stage takes them, from the tree "
        "pass of the same state (`_eval_after_tree`, round ring6), `5 columns` the "
        "`M^-1 J_I^T` sweep (`_tree_columns`), `1 column` the same sweep for one column "
        "(one more tree solve), `OSIM` the operational-space recursion of the chain's tip "
        "(`_osim_tip` below, on a chain of N bodies), `stage` a whole "
        "`loop_accelerations`, `correction` `loop_correct`, `step` `loop_rk4_step` (4 "
        "stages + correction); `tree step` from the table above (ms there).",
        "",
        "| N | tree stage | cut rows (speeds) | cut rows | stage's rows | 5 columns "
        "| 1 column | OSIM | stage | correction | step | 4 tree stages | tree step |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        t = tree.get(r["N"])
        lines.append(
            f"| {r['N']} | {r['free']:.1f} | {r['rows_v']:.1f} | {r['rows']:.1f} | "
            f"{r['rows_t']:.1f} | "
            f"{r['cols']:.1f} | {r['col1']:.1f} | {r['osim']:.1f} | {r['stage']:.1f} | "
            f"{r['correct']:.1f} | {r['step']:.1f} | {4 * r['free']:.1f} | "
            f"{'' if t is None else f'{1e6 * t:.1f}'} |"
        )
    parts = []
    for r in rows:
        extra = r["step"] - 4 * r["free"]
        rest = extra - 4 * (r["rows_t"] + r["cols"]) - r["correct"]
        parts.append(
            f"N = {r['N']}: cut rows + columns {(r['rows_t'] + r['cols']) / r['free']:.1f} "
            f"tree stages; step {r['step']:.0f} us = 4 tree stages {4 * r['free']:.0f} + "
            f"cut rows {4 * r['rows_t']:.0f} ({100 * 4 * r['rows_t'] / extra:.0f} % of the "
            f"loop's extra) + columns {4 * r['cols']:.0f} "
            f"({100 * 4 * r['cols'] / extra:.0f} %) + correction {r['correct']:.0f} "
            f"({100 * r['correct'] / extra:.0f} %) + the rest {rest:.0f} "
            "(5 x 5 system, refinement, RK updates, and at large N the passes evicting each "
            "other's data)"
        )
    over = [r["N"] for r in rows if r["rows_t"] + r["cols"] > 2 * r["free"]]
    budget = (
        "Loop / tree <= 3 needs the loop's extra per stage (cut rows + columns + the rest + "
        "a quarter of the correction) within two tree stages; the cut rows and the columns "
        f"alone exceed that for N in {over or 'none'} of this run. "
    )
    lines += ["", "Per step: " + "; ".join(parts) + ". " + budget + STAGE_NOTES]
    ratio = {r["N"]: r["rec_step"] / r["tree_step"] for r in ring_rows}
    lines += ["", osim_projection(rows, ratio), "", context_report(rows, ratio)]
    return lines


def context_report(rows, ratio):
    """The parts among the others (`_n_stage_less`: a stage minus the stage without the
    part), per body, and what loop / tree would be without them: loop / tree of the ring
    table (``ratio`` by N) times the step without 4 x the part over the step."""
    per = []
    for r in rows:
        line = (
            f"N = {r['N']}: cut rows {r['ctx_rows']:.1f} (alone {r['rows_t']:.1f}), columns "
            f"{r['ctx_cols']:.1f} (alone {r['cols']:.1f}), Gram and refined solve "
            f"{r['ctx_solve']:.1f} us"
        )
        if r["N"] in ratio:
            f = ratio[r["N"]] / r["step"]
            rows_free = r["step"] - 4 * r["ctx_rows"]
            floor = rows_free - 4 * r["ctx_solve"]
            line += (
                f"; loop / tree {ratio[r['N']]:.2f} now, {f * rows_free:.2f} with cut rows "
                f"that cost nothing among the others, {f * floor:.2f} with the Gram and "
                f"solve free too"
            )
        per.append(line)
    big = [r for r in rows if r["N"] >= 100]
    slope = ""
    if len(big) >= 2:
        a, b = big[0], big[-1]
        dn = b["N"] - a["N"]
        slope = (
            f" Per body (the difference of N = {a['N']} and {b['N']}, ns per body per "
            f"stage): tree stage {1e3 * (b['free'] - a['free']) / dn:.0f}, columns "
            f"{1e3 * (b['ctx_cols'] - a['ctx_cols']) / dn:.0f} among the others "
            f"({1e3 * (b['cols'] - a['cols']) / dn:.0f} alone), cut rows "
            f"{1e3 * (b['ctx_rows'] - a['ctx_rows']) / dn:.0f} among the others "
            f"({1e3 * (b['rows_t'] - a['rows_t']) / dn:.0f} alone)."
        )
    return (
        "Among the others (round ring5): each part's cost inside a stage, the stage "
        "(`_n_stage_less`: the stage's parts in its order) minus the same stage without "
        "the part, in the same period: " + "; ".join(per) + "." + slope + " " + CONTEXT_NOTES
    )


def osim_projection(rows, ratio):
    """What the operational-space design would give, from the measured parts: per stage
    the OSIM and one tree solve (the cut wrench) in place of the five columns, and at
    best cut rows that cost nothing (taken from the tree's kinematics); loop / tree of
    the ring table (``ratio`` by N) scaled by the projected step over the step."""
    check = osim_check()
    if not check < 1e-12:
        raise RuntimeError(f"bench_loops: _osim_tip differs from the dense J M^-1 J^T ({check})")
    parts = []
    for r in rows:
        if r["N"] not in ratio:
            continue
        f = ratio[r["N"]] / r["step"]
        osim = r["step"] - 4 * (r["cols"] - r["osim"] - r["col1"])
        free = r["step"] - 4 * r["rows_v"]
        parts.append(
            f"N = {r['N']}: {ratio[r['N']]:.2f} now, {f * osim:.2f} with the OSIM, "
            f"{f * free:.2f} with cut rows that cost nothing, "
            f"{f * (osim + free - r['step']):.2f} with both"
        )
    return (
        "The two design changes of the brief, projected from these parts: loop / tree of "
        "the ring table times the projected step over `step`, the projected step being "
        "`step` minus 4 x (5 columns - OSIM - 1 column), or minus 4 x the cut rows with "
        "the speed terms (the bound for rows taken from the tree's kinematics): "
        + "; ".join(parts)
        + ". "
        + OSIM_NOTES.format(check=check)
    )


def cpu_of(f):
    """``(process time, result)`` of ``f()``."""
    c0 = time.process_time()
    out = f()
    return time.process_time() - c0, out


def interval_cpu(stepper, n, python=False):
    """Process time per step of the second output interval of ``n`` steps (the first,
    untimed, holds the loop's QR step that selects the rows): the integration alone,
    with one output sample per ``n`` steps, as a run takes it (``advance``: the compiled
    RK4 blocks); ``python``: the interval by ``step`` (the tree: RK4 from Python)."""
    stepper.step()
    c0 = time.process_time()
    if python:
        stepper.step()
    else:
        stepper.advance(1)
    return (time.process_time() - c0) / n


def slope(N, t):
    N, t = np.asarray(N, float), np.asarray(t, float)
    ok = np.isfinite(t)
    if ok.sum() < 2:
        return np.nan
    return float(np.polyfit(np.log(N[ok]), np.log(t[ok]), 1)[0])


def main(sizes=SIZES, repeats=3, write=False):
    squeezer = squeezer_rows(repeats)
    output = output_rows(max(repeats, 5))
    stages = stage_rows([N for N in (10, 100, 500) if N in sizes])
    rows = []
    for N in sizes:
        r = time_size(N, repeats)
        rows.append(r)
        print(
            f"N={N:4d}  cut rank {r['rank']}/{r['m']}  tree step {1e3 * r['tree_step']:8.3f} ms "
            f"(Python RK4 {1e3 * r['tree_step_py']:8.3f} ms) "
            f"| recursive fd {1e3 * r['rec_fd']:8.3f} ms compiled {1e3 * r['rec_fd_c']:8.3f} ms "
            f"step {1e3 * r['rec_step']:8.3f} ms ({r['rec_step'] / r['tree_step']:.2f} x tree) "
            f"output {1e3 * r['rec_out']:.3f} ms/sample "
            f"| absolute fd {1e3 * r['abs_fd']:8.2f} ms "
            f"step {1e3 * r['abs_step']:8.2f} ms | agree {r['agree']:.1e}",
            flush=True,
        )
        if "abs_error" in r:
            print("   absolute:", r["abs_error"])
    Ns = [r["N"] for r in rows]
    exps = {k: slope(Ns, [r[k] for r in rows]) for k in KEYS}
    print("growth exponents:", {k: round(v, 2) for k, v in exps.items()})
    text = report(rows, exps, squeezer, output, stages)
    if write:
        replace_section(text, START, END)
    return rows, exps


def write_squeezer(rows):
    """Replace only the squeezer subsection of the loops section of RESULTS.md
    (``--squeezer --write``: the rest of the section keeps its last run)."""
    old = RESULTS.read_text()
    head, nxt = "### Andrews' squeezer", "### Output sampling: what a sample"
    if head not in old or nxt not in old:
        raise SystemExit("RESULTS.md has no loops squeezer subsection: run --write")
    i, j = old.index(head), old.index(nxt)
    RESULTS.write_text(old[:i] + "\n".join(squeezer_report(rows)) + "\n\n" + old[j:])


def write_output(rows):
    """Replace only the output subsection of the loops section of RESULTS.md (``--output
    --write``: the rest of the section keeps its last full run)."""
    old = RESULTS.read_text()
    head = "### Output sampling: what a sample"
    if head not in old or END not in old:
        raise SystemExit("RESULTS.md has no loops output subsection: run --write")
    i, j = old.index(head), old.index(END)
    RESULTS.write_text(old[:i] + "\n".join(output_report(rows)) + "\n" + old[j:])


def report(rows, exps, squeezer=(), output=(), stages=()):

    lines = [
        START,
        "## Closed loops: ring of N bodies, recursive + cut joint vs tree and absolute",
        "",
        "A ring of N rods with tilted revolute axes closing through the ground (one loop, "
        "5 cut equations, no redundancy); the tree is the same N rods without the closing "
        "joint. `step`: one integration step, dt = 1e-3 s (tree: RK4; recursive loop: RK4 "
        "+ position/velocity projection after every step, compiled "
        "(`flexmbd.recursive._nbloops.loop_rk4_step`) while the rows the last QR selected "
        "hold; absolute: Newmark 1/4, 1/2 with Newton). `fd`: one evaluation of the "
        "accelerations and multipliers (`LoopSystem.accelerations`: the Python path, and "
        "`compiled=True`). Steps are timed in process time (CPU of this process) over one "
        "output interval of 30 steps (`substeps = 30`, after a first interval that holds "
        "the loop's QR step: the integration with one output sample per 30 steps). "
        "`output per sample`: what a run with an output sample after "
        "every step costs beyond its integration, per sample (accelerations, every "
        "reaction, multipliers, violations, rank statistics, energies, joint and body "
        "series), in process time beyond the run's integration. Times in ms, best of 3. "
        "`agree`: max difference of the body accelerations of the recursive and absolute "
        "formulations. The peer is the absolute formulation in the same run.",
        "",
        f"- Command: `{COMMAND}`",
        machine_line(),
        "",
        "| N | cut rank | tree step | loop step | loop / tree | tree step (Python RK4) "
        "| loop / that | output per sample "
        "| loop fd (Python) | loop fd (compiled) | absolute fd | absolute step | agree |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['N']} | {r['rank']}/{r['m']} | {1e3 * r['tree_step']:.3f} | "
            f"{1e3 * r['rec_step']:.3f} | {r['rec_step'] / r['tree_step']:.2f} | "
            f"{1e3 * r['tree_step_py']:.3f} | {r['rec_step'] / r['tree_step_py']:.2f} | "
            f"{1e3 * r['rec_out']:.3f} | {1e3 * r['rec_fd']:.3f} | {1e3 * r['rec_fd_c']:.3f} | "
            f"{1e3 * r['abs_fd']:.2f} | {1e3 * r['abs_step']:.2f} | {r['agree']:.1e} |"
        )
    lines += [
        "",
        "Growth exponents (slope of log time over log N): "
        + ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in exps.items()),
        "",
        summary(rows, exps),
        "",
        NOTES,
        "",
        *stage_report(stages, rows),
        "",
        *squeezer_report(squeezer),
        "",
        *output_report(output),
        END,
    ]
    return "\n".join(lines)


def squeezer_report(rows):
    """The squeezer's subsection of the loops section."""
    if not rows:
        return []
    lines = [
        "### Andrews' squeezer (IFToMM A03 / Test Set), recursive + 3 cut joints, DOP853",
        "",
        "`examples/andrews_squeezer.py` to t = 0.03 s (7 bodies, 15 cut equations of rank 6, "
        "one SDA, a constant drive torque). `compiled`: the model as given -- its SDA and "
        "joint torque are compiled force elements (`flexmbd.recursive._nbforces`), each "
        "DOP853 step is one compiled call (`_nbloops.loop_rk_step`: scipy's stages, "
        "error norm and step control, the correction on the last QR's rows with its rank "
        "check and the projected accelerations per stage). `Python`: the same model with "
        "the drive torque as a Python function (a user force law), which keeps the "
        "Python path (QR correction and force elements in Python per evaluation). "
        "`total`: process time of build + compile + simulate with its output samples "
        "(accelerations, every reaction, multipliers, violations, energies); "
        "`integration`: build + compile + the stepper's steps (no output samples); "
        "`output`: the median over 5 back-to-back pairs of the two of their difference, "
        "as a share of the total. Warm process (kernels loaded), best of 5, ms.",
        "",
        "| path | rtol | samples | steps | evaluations | total | integration | output "
        "| digits (worst angle) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out = r["output"]
        lines.append(
            f"| {r['path']} | {r['rtol']:g} | {r['n_out']} | {r['steps']} | {r['nfev']} | "
            f"{1e3 * r['total']:.1f} | {1e3 * r['integ']:.1f} | {1e3 * out:.1f} "
            f"({100 * out / r['total']:.0f} %) | {r['digits']:.2f} |"
        )
    fast = [r for r in rows if r["path"] == "compiled" and r["rtol"] == 1e-9 and r["n_out"] == 30]
    slow = [r for r in rows if r["path"] == "Python"]
    if fast and slow:
        f, p = fast[0], slow[0]
        lines += [
            "",
            f"Issue 13 target (8+ digits in <= 0.1 s CPU including output): "
            f"{1e3 * f['total']:.0f} ms for {f['digits']:.1f} digits "
            f"({'met' if f['total'] <= 0.1 and f['digits'] >= 8 else 'not met'}); "
            f"the Python path {1e3 * p['total']:.0f} ms in the same run "
            f"({p['total'] / f['total']:.1f}x). The published IFToMM figure for OpenSim is "
            "0.38 s for 0.05 s. A fresh process first loads the cached kernels "
            "(about 1.3 s here, issue 13 item 6).",
        ]
    return lines


def summary(rows, exps):
    """The issue-13 targets against this run."""
    ratio = [r["rec_step"] / r["tree_step"] for r in rows]
    ok = [r["N"] for r, x in zip(rows, ratio) if x <= 3.0]
    old = [r["rec_step"] / r["tree_step_py"] for r in rows]
    ok_old = [r["N"] for r, x in zip(rows, old) if x <= 3.0]
    return (
        f"Issue 13 targets: loop step / tree step {min(ratio):.1f} to {max(ratio):.1f} "
        f"(target <= 3: met for N in {ok or 'none'}) against the tree's compiled RK4; "
        f"{min(old):.1f} to {max(old):.1f} against the tree's RK4 from Python, the measure "
        f"of the earlier rounds (met for N in {ok_old or 'none'}); growth exponent of the "
        f"loop step {exps['rec_step']:.2f} (target <= 1.1). Before the compiled loop (2026-11-22, "
        "wall time): 1.74 ms per step at N = 10 and 9.04 ms at N = 500. Output: the "
        "output-sampling table below (the `output per sample` column also holds each "
        "run's set-up, the assembly and the first QR step, spread over its 31 samples)."
    )


STAGE_NOTES = (
    "Every part is O(N): the cut rows recompute the loop bodies' poses, motion axes and "
    "bias terms (a second kinematics pass beside the tree's), the five columns are five "
    "solves with the tree's factorization in one sweep (each body's matrices read once "
    "for all five), so the loop step is about 4 x (tree stage + cut rows + columns) + "
    "correction. Round loops3 concluded that the target takes another algorithm (the "
    "cut joint's 5 x 5 `J M^-1 J^T` from an operational-space recursion instead of five "
    "columns, the cut rows from the tree's own kinematics). Round ring-osi timed that "
    "recursion (next paragraph): it costs as much as the five columns. Also tried in "
    "ring-osi, outside the bench: the columns' backward pass with the column index "
    "innermost, so that SIMD could run across the columns. It took 27.5 us against "
    "18.9 us at N = 500 (numba did not vectorize it), so it was not pursued. Also "
    "timed outside the bench: `J M^-1 J^T` from the cut bodies' responses alone, i.e. "
    "the five columns' sweep without its last two passes (the accelerations and the "
    "`qdd`), with one more tree solve for the cut wrench. The sweep then takes 21.8 "
    "instead of 28.9 us (N = 100) and 115.8 instead of 150.2 us (N = 500). The saving is "
    "what the extra solve costs (7 / 35 us), so it was not pursued. Tried in "
    "round "
    "loops3 and not kept (each within the noise, interleaved against main, ring N = 10 "
    "/ 100 / 500): the stage's work arrays allocated once per block instead of per "
    "stage; the columns' elimination with the loop over the columns inside the schedule "
    "(each joint's factors loaded once); the `J_I M^-1 J_I^T`, Gram and residual sums "
    "side by side instead of one dependent chain each; the loop kinematics' 26 small "
    "work arrays passed in instead of allocated (0.4 us of a 1.8 us call at N = 10). "
    "Round ring2 (kept): the fixed cost of the cut rows and of a stage was reference "
    "counting more than arithmetic. Unpacking the cut arguments' tuple (34 arrays) in an "
    "NRT kernel costs an increment and a decrement per array (~10 ns each), and the rows "
    "allocated ~50 small arrays per evaluation. The cut rows (`_nbloop.cuts_eval`, "
    "`loop_kinematics`, `path_terms`, `cut_rows`, `_nbloops._eval`) and the stage "
    "(`_nbloops._stage`) now take their scratch from the caller (a `work` tuple at the end "
    "of `CutJointConstraints.compiled_args`; `stage_work`, once per RK4 step) and compile "
    "without NRT. The same operations on the same values, so the same numbers bit for bit. "
    "Same command before / after (ring2, us): cut rows with speeds 4.3 / 1.4 (N = 10), "
    "13.9 / 10.9 (N = 100), 54.7 / 51.8 (N = 500); stage 11.6 / 8.8, 70.8 / 67.7, "
    "372.5 / 373.5; correction 4.7 / 2.4, 13.6 / 11.4, 55.4 / 51.8; step 53.6 / 35.9, "
    "289.1 / 288.3, 1585 / 1592 (the after run at load 6, the before at load 1). The "
    "per-body cost (loop kinematics ~0.085 us per body, the five columns ~0.31 us per "
    "body) is unchanged: that is what keeps N >= 100 above 3. Round ring3 (kept): the RK4 "
    "step's own scratch is passed in too (`_nbloops.step_work`: the stage results, the "
    "four slopes, the stage state, the stage's `stage_work` and the correction's "
    "`correct_work`), allocated once per `loop_rk4_block` call instead of ~24 small arrays "
    "per step; the stages and the RK4 update (`_rk4_stages`) compile without NRT; the "
    "correction (`_correct`) allocates only in the rank test. The same operations on the "
    "same values (ring N = 10 / 50 states, samples and a `simulate` bit for bit equal to "
    "land3's). Interleaved against land3 (ring3, 2026-11-27, load 2-5, the bench's "
    "measure, loop step us, land3 / ring3): N = 10 40.5, 44.4 / 38.6, 39.7; N = 20 66.8, "
    "66.9 / 65.9, 64.2; N = 50 152.4, 150.1 / 151.8, 148.3; N = 100 (`advance` alone) "
    "279.8, 286.9, 289.3 / 278.1, 277.3, 277.1; N = 500 1442, 1510, 1440 / 1500, 1503, "
    "1537 (within the noise). A fixed cost of ~1-3 us per step, so the gain is at small "
    "N only. Also tried in ring3, not kept: the columns' scratch `af`, `Fe` laid out "
    "(body, column, 6), a body's columns side by side: 5 columns 156.4, 158.0 us against "
    "152.3, 152.8 (N = 500), 29.8, 28.9 against 29.1, 28.8 (N = 100). Round ring4 "
    "(kept): the loop kinematics' Revolute body (`_nbloop._revolute_body`) holds its "
    "3-vectors and 3 x 3 matrices as values (tuples) instead of rows of the scratch "
    "arrays: the array code reloaded its scratch operands after every store to an output "
    "array (the compiler cannot rule out that they alias); likewise the path's rotation "
    "and lever (`path_terms`) and the rows of `D` in `J = D J_rel` (`cut_rows`). The "
    "same sums in the same "
    "order, so the same numbers bit for bit (ring N = 10 / 50: a `simulate`'s q, qd, qdd, "
    "a stage's qdd and multipliers equal to main's). Same period, main / ring4 (us): loop "
    "kinematics alone 9.1 / 5.4 (N = 100), 44.3 / 26.4 (N = 500); cut rows with speeds "
    "10.9 / 6.9, 53.1 / 33.2 (7.3 / 35.7 with the kinematics' change alone). Loop step "
    "interleaved against main (the kinematics' change alone; the bench's measure, "
    "load 6, ms, main / ring4, two runs each): N = 10 0.044, 0.043 / 0.040, 0.039; N = 20 "
    "0.070, 0.079 / 0.070, 0.063; N = 50 0.160, 0.163 / 0.154, 0.154; N = 100 0.315, "
    "0.312 / 0.310, 0.282; N = 200 0.619, 0.634 / 0.563, 0.555; N = 500 1.678, 1.638 / "
    "1.575, 1.571 (4-11 % less); with both changes (load ~2): N = 10 0.045, 0.050 / "
    "0.041, 0.041; N = 20 0.077, 0.077 / 0.071, 0.072; N = 50 0.172, 0.168 / 0.152, "
    "0.153; N = 100 0.319, 0.310 / 0.303, 0.289; N = 200 0.627, 0.647 / 0.599, 0.553; "
    "N = 500 1.713, 1.671 / 1.606, 1.543 (5-13 % less; loop / tree 3.03-3.88 for main, "
    "3.09-3.43 for ring4 in these runs). Measured in ring4, not kept: the Revolute joints' "
    "cos q, sin q taken from the tree pass of the same stage (the tree keeps them per "
    "label), bit for bit the same: 44.7 -> 41.4 us of loop kinematics at N = 500, the "
    "stage within the noise (about 1 % of a step), not worth one more array in the cut "
    "arguments. What the rows still cost is arithmetic (~53 ns per body: the sine and "
    "cosine, three 3 x 3 products, the twist and bias cross products); the five columns "
    "(~0.31 us per body) are now well over half of the loop's extra."
)


CONTEXT_NOTES = (
    "Round ring5 (kept): the five columns' sweep (`_tree_columns`) with the same "
    "operations per column in another order. (1) The chains' elimination with the loop "
    "over the columns inside each step of the schedule (`_schedule_columns`): one column "
    "at a time waited on each step's dependent chain, five independent chains side by "
    "side overlap (alone: 53.3 -> 42.0 us at N = 500; round loops3 had tried it with the "
    "rest unchanged and found it within the noise). (2) A diagonal joint's right-hand "
    "sides with its transform, mask and permutation loaded once for all columns "
    "(`_diag_rhs`: that pass 34.6 -> 14.7 us at N = 500). (3) The back substitution of a "
    "diagonal revolute joint on values (the bias read through the inverse permutation, "
    "`_inverse_perm`; no `natural_order` pass; the parent's wrench on the transform held "
    "as values, `_f2p_sub`). (4) A diagonal revolute joint's first backward step on the "
    "torque part alone where its children left a zero force part (only revolute "
    "children or none; that pass 20.0 -> 15.4 us at N = 500). The same numbers bit for "
    "bit (ring N = 10 / 50 / 200: a "
    "`simulate`'s q, qd, qdd, lambda, the stepper's state and a stage's qdd and "
    "multipliers equal to main's). Same period, main / ring5 (us, alone): 5 columns "
    "2.93 / 2.20 (N = 10), 30.9 / 23.3 (N = 100), 170.2 / 122.3 (N = 500); stage 7.25 / "
    "7.16, 64.4 / 55.1, 363.2 / 312.7. Loop step interleaved against main (the bench's "
    "measure, best of 5, three rounds, load ~1, us, main / ring5): "
    "N = 10 39.9, 39.6, 39.0 / 35.7, 35.0, 37.9; N = 20 68.3, 65.9, 61.7 / 58.6, "
    "56.0, 57.8; N = 50 144.9, 143.5, 140.4 / 121.1, 127.0, 129.7; N = 100 265.8, "
    "285.6, 271.6 / 232.8, 240.5, 246.4; N = 200 578.2, 549.4, 525.9 / 465.6, "
    "471.3, 465.8; N = 500 1504, 1536, 1502 / 1390, 1318, 1327 (9-14 % less, best "
    "against best; loop / "
    "tree in the same runs 3.01-3.41 for main, 2.55-3.09 for ring5: N = 10 "
    "2.97-3.09, N = 20 ... 200 2.55-2.87, N = 500 2.96-3.02). What is left is the "
    "per-body line "
    "above: the five columns still cost 1.2-1.4 tree stages per stage (their "
    "elimination ~17 ns per body and column, about what its loads of the joints' 5 x 5 "
    "factors take at two loads per cycle), and at N = 500 the passes evict each "
    "other's data (the tree's workspace is ~5 KB per body, past the 2 MB L2): the cut "
    "rows and the columns cost 10-35 % more among the others than alone. Measured "
    "in ring5, not kept (the same numbers bit for bit, within the noise of the stage): "
    "the Gram's sums four rows of `Y` side by side and the refinement's residuals four "
    "rows side by side (alone 6.1 -> 3.1 us and 5.3 -> 4.2 us at N = 500, the stage "
    "352.0 / 352.7 us), the first residual before the columns, the cut rows before the "
    "tree pass (355.0 / 358.2 us), and the elimination's factors held as values for all "
    "columns (42.0 -> 41.1 us). Round ring6 (kept): a stage's cut rows from the tree "
    "pass that precedes them (`_nbloops._eval_after_tree`, "
    "`_nbloop.tree_loop_kinematics`): where every tree joint of the loops is a Revolute "
    "joint and none is reversed (`CutJointConstraints` gives the loop bodies' tree "
    "labels), the world pose of each joint's child frame is chained from the tree's "
    "relative poses `R_REL`, `P_REL` of the same state (one 3 x 3 product per body "
    "instead of three and a sine and cosine), the columns, twists and bias as before, "
    "and the body pose only for the bodies that carry a cut frame. The correction, the "
    "reactions, the samples and the Python path keep the explicit `loop_kinematics`. "
    "The rows equal the explicit ones to round-off (~1e-15; bit for bit on the planar "
    "four-bar). Same period, alone (us, land7 / ring6; N = 10 / 100 / 500): loop "
    "kinematics 26.2 / 12.3 (N = 500); the stage's cut rows 1.0 / 0.74, 6.7 / 4.1, "
    "32.3 / 18.9; stage 7.3, 7.6 / 6.4, 6.8, 6.9; 53.8, 55.3 / 51.6, 51.9, 52.7; "
    "303.2, 305.9 / 284.6, 292.3, 297.5. Loop step interleaved against land7 (the "
    "bench's measure, best of 5, three rounds, load ~2.5, us, land7 / ring6): N = 10 "
    "33.8, 34.4, 35.6 / 33.3, 33.7, 33.6; N = 20 55.7, 54.2, 55.1 / 54.6, 54.5, 51.5; "
    "N = 50 126.6, 124.2, 125.6 / 120.1, 119.2, 118.4; N = 100 239.0, 236.9, 233.6 / "
    "225.7, 223.8, 222.4; N = 200 467.9, 463.5, 461.4 / 496.1, 440.8, 444.8; N = 500 "
    "1363, 1304, 1273 / 1238, 1211, 1197 (loop / tree in the same runs 2.66-3.08 for "
    "land7, 2.56-2.93 for ring6: N = 10 2.76-2.93, N = 500 2.82-2.85). Then the rows' "
    "callees inlined (`path_terms`, `cut_rows`, `_frame_of`, `cuts_rows`, "
    "`tree_loop_kinematics`: no call passing 13-26 arrays per row evaluation; the same "
    "numbers bit for bit): the stage's rows alone 0.75 -> 0.57 us (N = 10), 4.1-4.5 -> "
    "3.6 (N = 100), the explicit rows 1.0 -> 0.87, 6.7 -> 6.3; loop step interleaved "
    "(two rounds, us, land7 / ring6): N = 10 33.6, 32.9 / 31.4, 31.3; N = 20 55.5, 52.5 "
    "/ 50.4, 52.0; N = 50 122.1, 116.2 / 112.3, 114.2; N = 100 237.7, 234.9 / 215.1, "
    "222.3; N = 200 458.8, 457.0 / 429.8, 461.5; N = 500 1321, 1320 / 1230, 1258 (loop "
    "/ tree 2.65-3.05 for land7, 2.51-2.86 for ring6: N = 10 2.80, 2.82, N = 500 2.86, "
    "2.83)."
)


OSIM_NOTES = (
    "`_osim_tip` is a straightforward implementation of the recursion (Featherstone, RBDA; "
    "Wensing, Featherstone & Orin 2012): the articulated inertias from the tip to the "
    "base, then `Om_i = P_i X_i Om_p X_i^T P_i^T + S D_i^-1 S^T` back to the tip. It uses "
    "dense 6 x 6 products with the transform's zero block skipped, and it matches the "
    "dense `J M^-1 J^T` of a random 20-body chain to {check:.0e} (relative). Per body it "
    "costs two 6 x 6 congruences (~146 ns each at N = 500), about as much as the five "
    "columns' sweep (~64 ns per column per body, already specialised for revolute chain "
    "links). Round ring-osi also timed a 3 x 3 block version of the congruence (rotate, "
    "then shift by the skew matrix): 158 ns, no cheaper, not kept. So for one cut joint "
    "(5 rows, a 6 x 6 operational-space inertia) the recursion costs what the five "
    "columns cost. It would also need the articulated inertias, which the CFA "
    "factorization does not form, and one tree solve with the cut wrench (two with the "
    "refinement) for the accelerations."
)


OUTPUT_NOTES = (
    "The rows with a sample at every accepted step meet it because such a sample reuses "
    "its step's last evaluation (the same numbers, bit for bit, as correcting and "
    "sampling the step's state after the run: t, q, qd, qdd, reactions, lambda, rank "
    "statistics, violations, energies compared in "
    "tests/recursive/test_output_loops.py). The interpolated row cannot. What an "
    "interpolated DOP853 sample costs is work, not Python: the dense output's "
    "three extra stage evaluations per step that holds a sample (+~17 % evaluations for "
    "300 samples over 98 steps), the correction of the interpolated state onto the "
    "constraints and a forward dynamics with every reaction per sample (each about one "
    "evaluation): with 300 samples over 98 steps that is ~35 % of the integration's "
    "evaluations, so <= 10 % would need fewer samples per step or no per-sample "
    "dynamics. The samples' own costs, measured, are the floor below. Round loops3: "
    "the interpolant evaluated by one compiled call (`_nbloops.dop853_interpolate`, the "
    "same values as scipy's) and a sample's violations and rank decision from the rows "
    "of its own accelerations (one evaluation of the cut rows less per sample): 50 % "
    "before (2026-11-27, same command). Earlier (same measure): 42 % / 40 % (ring N = "
    "10 loop / tree), 39 % / 38 % (N = 100), 70 % (squeezer) with the tree's RK4 from "
    "Python and the last sample through the parallel batch call. Round squeezer2: the "
    "correction of the interpolated states and their samples in one compiled pass "
    "(`_nbloops.loop_correct_samples`, the same numbers bit for bit) and the DOP853 "
    "class test of `_covered_samples` cached per class: within the noise "
    "(interleaved A/B against the code before, 3 x 7 pairs at load 6-8: 46 / 49 / "
    "48 % before, 51 / 45 / 45 % after; 3 x 9 pairs at load 5.5: 43.1 / 45.0 / 45.0 % "
    "before, 42.6 / 43.6 / 44.0 % after). The "
    "four-bar example's samples cost another way: near the mechanism's singular "
    "configurations (rtol 3e-2, a wide window) the compiled rank check's margin test "
    "refused 1888 of its 10,001 samples and 1890 of its 10,000 step corrections, which "
    "then ran the projector's QR and forward dynamics in Python (~0.4 ms per sample "
    "against ~20 us compiled). Round qr: where the margin test refuses, the compiled "
    "check replays the projector's pivoted QR (`_nbloops._qr_selects`: dlaqp2's pivots, "
    "the same threshold, ties within round-off left to the QR) and keeps the rows the QR "
    "would keep; 475 samples and 491 corrections still leave the compiled path, all at "
    "rank 1 of 2 (a weak direction, tangent projection: Python), and the 477 RK4 steps "
    "from those states run the generic Python step. Interleaved A/B (3 x 3 pairs, load "
    "~7, process time, sampled / end only, ms): before 1776 / 1197, 1847 / 1157, "
    "1778 / 1138; after 1025 / 786, 1024 / 801, 1004 / 833 (sampling +48..60 % before, "
    "+20..30 % after). Round weak: every one of those generic steps starts at a weak "
    "state (475 of 476; the other is the run's first step, before any QR), so none can "
    "return to the compiled step earlier; their first stage is now the output sample "
    "(the same call: the trajectory is bit for bit the same), and the sample's "
    "reactions of the QR's multipliers are one compiled call "
    "(`_nbloops.loop_reactions`, <= 7e-15 N apart over the 10 s run). Interleaved A/B "
    "(3 x 3 pairs against 9b71320, load 4-5, sampled / end only, ms): before 919 / 674, "
    "913 / 679, 940 / 685, 986 / 743, 893 / 697, 1003 / 731, 1014 / 731, 936 / 698, "
    "1009 / 719; after 712 / 674, 697 / 647, 808 / 693, 807 / 703, 765 / 695, "
    "750 / 735, 709 / 638, 717 / 706, 733 / 680 (sampling ~+36 % before, ~+8 % "
    "after). Round weak2: the steps from the weak states and their corrections are "
    "compiled too (`_nbloops.loop_rk4_step_weak`: each stage the projector's pivoted QR "
    "replayed, the tangent projection on [Q_n, Q_w] and the multipliers P R^-1 mu; "
    "`_nbloops.loop_correct_weak`: the Newton and velocity correction on the QR of each "
    "iterate); 475 of 475 weak steps and 475 of 475 weak corrections leave Python, the "
    "sample at a weak state is the step's first stage. Interleaved A/B (3 x 3 pairs "
    "against 7cc450f, load 5-6, sampled / end only, ms): before 933 / 839, 905 / 818, "
    "853 / 850, 873 / 824, 877 / 811, 853 / 825, 807 / 781, 794 / 749, 834 / 762; after "
    "288 / 282, 282 / 280, 284 / 300, 272 / 275, 294 / 275, 276 / 269, 277 / 288, "
    "289 / 280, 280 / 279 (end only -65 %, sampling ~+0 %). Over the 10 s run the states "
    "agree with the Python path (joint forces as a function) to 4e-11 rad and the "
    "regular samples' multipliers to 9e-10 N, as before; at the weak samples the "
    "multipliers differ by up to 9e-6 N, like the code before (8.8e-6 N against the same "
    "Python run): the weak direction's conditioning, ~3e-16/theta^3."
    " Round squeezer3: the "
    "rows with a sample at every accepted step, whose states were corrected and sampled "
    "again after the run before (`loop_correct_samples`, ~20 us per row), now take the "
    "step's last evaluation and add ~6 us per row (violations, rank decision, reactions); "
    "the interpolated states are stacked in one copy instead of a Python call per "
    "sample. Interleaved A/B against 7cc450f (whole `simulate`, every / end - 1, "
    "median of 7 pairs, 3 rounds, load 4-6, before / after): DOP853 every accepted step "
    "8.1, 8.8, 13.5 / 6.3, 7.9, 5.5 % (an earlier round at load 5-6: 11.2, 8.0, 10.1 / "
    "5.2, 7.8, 5.5 %); RK45 every accepted step (379 steps) 12.0, 9.1, 12.2 / 8.3, 7.1, "
    "10.6 % (13.5, 15.4, 15.6 / 10.0, 9.8, 12.5 %); DOP853 300 interpolated samples "
    "47.9, 46.2, 44.5 / 48.2, 46.8, 46.0 % (within the noise). What a step's sample still "
    "adds: ~6 us in the compiled call (the tree pass with the cut wrenches, the rank "
    "decision), a few us of Python per row (the row's bookkeeping in `advance`) and the "
    "results of the extra rows (energies, joint series), each about 1-2 % of the "
    "squeezer's run; this machine's load moves a run by more than that."
    " Round output3: RK45 and RK23 steps compiled like DOP853's "
    "(`_nbloops.loop_rk_step[_sampled]`: scipy's stages, its RMS error norm and step "
    "control; the same steps and evaluations as scipy's step code, the step sizes within "
    "5e-7 relative: numpy's BLAS dot products sum in another order and the error "
    "estimate's cancellation amplifies that), so an RK45 run with a sample at every "
    "accepted step writes each sample in its step's compiled call; the compiled sample "
    "rows enter the results by slices, the loop's result arrays are not NaN-filled "
    "whole, the every-step rows are gathered without a `step` call each, and the joint "
    "series' cross products skip `numpy.cross`'s axis handling (all bit for bit the "
    "same results; RK45 to round-off as said). Interleaved against main b6567f2 (this "
    "command three times each, alternating, load ~2.5; main / output3): the squeezer's "
    "RK45 run with a sample at every accepted step 105.5, 104.3, 106.8 / 64.8, 65.5, "
    "70.8 ms, end only 97.9, 97.8, 89.7 / 58.6, 59.2, 59.9 ms (the run ~38 % faster), "
    "its share 9.0, 7.6, 12.1 / 13.5, 11.4, 16.5 % (the same ~6-7 ms of output over a "
    "shorter run: ~5 us per row in the compiled call, ~4 us of Python per row, the "
    "results and joint series of 380 rows); DOP853 every accepted step 7.9, 7.7, 3.3 / "
    "4.5, 5.1, 4.7 %; ring N = 100 loop 10.3, 10.8, 10.0 / 10.6, 11.3, 9.4 %; ring N = "
    "100 tree 7.7, 7.9, 7.1 / 7.0, 9.2, 8.2 %; ring N = 10 tree 10.1, 9.1, 9.6 / 8.5, "
    "9.7, 12.1 % (a 1.2 ms run: 0.1 ms, ~1 us per row). What the ring N = 100 loop's "
    "samples cost inside the compiled block is measured below (`ring_sample_floor`)."
    " Round rkblock (re-measured: the squeezer rows; the ring and four-bar rows ran "
    "with the same RK4 code as before): adaptive steps in compiled blocks "
    "(`_nbloops.loop_rk_block[_sampled]`: up to an `advance` chunk of accepted steps "
    "per call, stopping after the step that reaches the next output time, before a "
    "step it hands back to scipy's step code, after a non-finite state or the stall "
    "rule's verdict; `ExplicitStepper._block_steps` sets scipy's solver state once per "
    "block), so neither scipy's `step()` nor the ~35 arguments of a compiled call are "
    "paid per step; all results bit for bit those of main 1f70a3a (432 arrays of the "
    "squeezer's DOP853 / RK45 / RK23 runs: every step, end only, 30 and 300 samples). "
    "Interleaved against main 1f70a3a (3 rounds of 7 back-to-back runs of each case, "
    "load ~2, best (ms) and median share; main / rkblock): RK45 every accepted step "
    "70.1, 71.4, 65.6 / 53.2, 55.6, 53.1, end only 61.8, 62.6, 58.8 / 48.6, 51.2, 47.8, "
    "share 11.3, 11.4, 10.9 / 9.6, 8.9, 9.9 %; DOP853 every accepted step 37.5, 38.6, "
    "37.2 / 33.2, 34.7, 32.5, end only 35.8, 35.7, 35.0 / 32.5, 33.6, 31.8, share 6.6, "
    "4.7, 5.7 / 3.4, 4.3, 1.7 %; DOP853 30 samples 39.8, 40.0, 38.2 / 37.6, 38.7, "
    "36.6; 300 samples 52.5, 51.8, 50.6 / 53.4, 55.4, 52.0 (unchanged: 98 steps, its "
    "cost is the samples; its share rises over the faster end-only run). What the RK45 "
    "run with a sample at every accepted step still adds (medians of 15 pairs, the "
    "kernels and `fill_joint_states` timed inside the run, 2 runs; main in brackets): "
    "1.5-2.3 ms in the compiled block (each sample's rank decision and tree pass with "
    "the cut wrenches, 4-6 us per row; 2.4-2.5), 1.6-1.7 ms of joint series "
    "(`fill_joint_states`: numpy over the 380 rows of the cut joints; 1.4-1.6) and "
    "1.1-1.6 ms of other results assembly (2.3-2.7): 4.3-5.0 ms (6.6); the end-only "
    "run's Python outside the kernels and joint series fell from 10.7-12.3 ms to 2.7-3.2 ms. "
    "Round ringout: a loop sample's reactions and body accelerations by one Newton-Euler "
    "sweep with its stage's accelerations and the cut wrenches as loads "
    "(`_nbloops._tree_rnea_cuts`: the stage's bias forces reused, no second tree solve; "
    "the RK4 blocks' and the adaptive steps' samples and `loop_samples` alike; the "
    "samples whose multipliers the QR solved keep the solve), and each RK4 sample's row "
    "of the tree's kinematics history with its energies written in the block "
    "(`_nbforces.sample_history`, kept for the results by `RecursiveSystem.keep_history`: "
    "the energies and the cut joints' series run no kinematics pass for those rows). "
    "Trajectory, multipliers, statistics, energies and joint positions and speeds bit for "
    "bit as before (ring N = 10 / 100 loop and tree, squeezer DOP853 / RK45, four-bar 2 "
    "s, the loaded four-bar's RK4 run); the reactions are now the Newton-Euler wrenches "
    "of the reported accelerations, and differ from the former second solve's by the "
    "stage's residual in the equations of motion, which that solve moved into the "
    "accelerations: relative to the largest reaction 3e-16 (squeezer), 2.5e-15 "
    "(four-bar), 7e-11 (ring N = 10), 1.1e-6 (ring N = 100, cond M = 5e7; against the "
    "independent RNEA of the reported motion the new reactions agree to 1e-13 on a "
    "30-body ring, the former to 3e-9). Interleaved against main 1f70a3a (the ring rows' "
    "measure, three rounds each, alternating, load 1.2-2.2; main / ringout): ring N = 100 "
    "loop 9.6, 9.6, 10.5, 11.0, 8.0, 9.5 / 2.5, 3.0, 6.7, 5.1, 4.6, 5.6 %, its block's "
    "samples (`ring_sample_floor`) 19.1, 18.4, 25.7, 14.1, 18.8, 21.6 / 9.3, 15.2, 5.8, "
    "3.0, 9.2, 12.4 us per sample; N = 10 loop -5.1, -3.4, 3.5, -8.2, -3.8, -2.4 / -2.2, "
    "-2.3, 0.4, -6.1, -3.3, -2.5 %; the tree rows unchanged (their code is): N = 100 "
    "6.3-10.0 / 6.4-10.0 %, N = 10 7.0-9.4 / 5.1-11.4 %; the squeezer's rows with a "
    "sample at every accepted step within the noise (DOP853 2.9, 2.8, 5.5 / 5.8, 4.7, 3.9 "
    "%, RK45 11.7, 7.0, 10.3 / 7.5, 9.4, 9.7 %). Only the ring rows of the table were "
    "re-measured in this round (the last ringout run of the three); the squeezer and "
    "four-bar rows are the previous run's; the ring loop rows' paragraphs below "
    "(`ring_sample_floor` with `sample_parts`) from one later run. "
    "Round series: the adaptive samples (a sample at every accepted step: the sampled "
    "blocks and `loop_rk_step_sampled` / `loop_step_sample`) also write their row of "
    "the tree's kinematics history (`_nbforces.sample_history` from the tree pass of "
    "the step's last evaluation at the corrected state, as the RK4 samples do), so the "
    "results run the history pass only for the first row (the squeezer's RK45 run: 1 "
    "row instead of 380; that pass costs 0.4 us per row, 0.155 ms for 380, about what "
    "the rows cost in the block); the kept step samples' other rows by a mask instead "
    "of `np.setdiff1d` (sorting and hashing); the cut joints' series with a row-wise "
    "cross product without `np.cross`'s axis handling also for the bodies' motion "
    "(`joint_states.cross_rows`), the pseudo-inverse of a constant motion subspace and "
    "a revolute axis's perpendicular basis kept, and a frame fixed on its body takes "
    "the body's terms only (no products of its zero rates) (`fill_joint_states` of the "
    "squeezer's 380 rows 1.98 -> 1.40 ms, best of 50, same process). Not compiled: "
    "numpy's einsum of the 3 x 3 products sums in another order than the left-to-right "
    "sum (checked on random rows), so a compiled series would differ by round-off, and "
    "einsum is already the fastest numpy form (6 us for 380 rows). Every compared array "
    "bit for bit as before (684, compared as int64 bits: t, q, qd, qdd, reactions, "
    "lambda, energies, statistics and the joint series of the squeezer's DOP853 / RK45 "
    "/ RK23 runs at every step and with 1, 30, 300 samples, ring N = 10 / 100 loop and "
    "tree every-step and end-only, four-bar 2 s RK45 and RK4, the absolute four-bar's "
    "and squeezer's runs with every joint's series). The tree's RK4 rows: its block's "
    "samples cost 0.06-0.4 us per row (the block with 101 samples against none, 300 "
    "calls each) and the results assembly ~10-40 us more for 101 rows than for 2; the "
    "rest of the 5-11 % is the noise of a 1.2 ms run. Interleaved against land8 "
    "(`--output`, alternating, land8 / series, adds %; three rounds before the "
    "rigid-frame change at load 1.3-1.7, then three on the final code at load 1.8-2.1): "
    "squeezer RK45 every step 10.1, 9.4, 8.9 / 11.8, 8.3, 8.4, then 7.9, 9.4, 9.0 / "
    "6.4, 8.5, 8.7; DOP853 every step 2.9, 1.9, 2.7 / 4.4, 4.4, 3.8, then 4.1, 4.3, 5.5 "
    "/ 4.6, 4.0, 3.5; ring N = 10 tree 8.1, 8.6, 9.6 / 6.2, 9.5, 7.1, then 6.5, 10.2, "
    "12.2 / 9.1, 10.6, 8.1; N = 100 tree 7.6, 6.8, 8.1 / 9.6, 10.0, 7.5, then 6.8, 8.5, "
    "6.2 / 7.9, 7.0, 7.0; N = 10 loop -0.8, -1.4, -2.5 / -3.1, -2.0, -3.0, then -7.3, "
    "-7.8, -4.8 / -4.4, -9.3, -6.2; N = 100 loop 5.7, 4.7, 5.6 / 8.5, 5.5, 4.2, then "
    "4.0, 3.2, 5.1 / 3.3, 5.3, 1.4: within the noise of these runs (the squeezer's "
    "sampled block alone, best of 60, three rounds: every step minus end only 2.3, 1.7, "
    "0.6 / 2.0, 2.1, 2.5 ms). Round dense: DOP853's output times inside the compiled "
    "block (`_nbloops.loop_rk_block_dense`: after each step that covers some, its dense "
    "output as `loop_dop853_dense` computes it, the interpolant at those times and each "
    "interpolated state's correction, forward dynamics with every reaction and "
    "kinematics history row as `loop_correct_samples` and `sample_history` give them, "
    "written in place; Python only slices the rows and sets the solver's state once per "
    "block), so neither a block call, a dense-output call and a solver update per step "
    "holding samples nor the samples' pass after the run remain. Every result bit for "
    "bit as before (t, q, qd, qdd, reactions, lambda, statistics, energies, joint "
    "series; 30, 300 and 57 irregular output times; checkpointed, resumed, a step handed "
    "back, a stall: tests/recursive/test_output_loops.py). RK45 / RK23 keep scipy's "
    "interpolant from Python: its `K^T P` and `Q p` are BLAS products whose summation "
    "order a compiled loop does not reproduce (different in 1974 / 1999 of 2000 random "
    "RK45 stage sets, by up to 4e-16 of |K|^T |P|), so their samples would differ by "
    "round-off. Interleaved against main fea4da8 (squeezer only, 7 back-to-back pairs "
    "per row, median adds, three rounds each, alternating, load 5-8; main / dense): "
    "DOP853 300 samples 70, 69, 67 / 39, 40, 41 %; 30 samples 17, 22, 19 / 8, 7, 8 %; "
    "RK45 300 samples 56, 50, 50 / 61, 55, 54 % and 30 samples 13, 16, 12 / 13, 12, 13 % "
    "(unchanged code: the noise); every accepted step DOP853 3, 4, 1 / 3, 3, 3 %, RK45 6, "
    "10, 7 / 8, 6, 6 %. The DOP853 300-sample row is now at its floor (`squeezer_floor`, "
    "~38 %): what is left is the samples' own work."
    " Round rkdense: RK45 / RK23 output times in the same blocks "
    "(`_nbloops.rk_dense`, `rk_interpolate`: scipy's `K^T P` and `Q p` by `np.dot`, "
    "which calls the same BLAS as numpy: 6000 of 6000 random stage sets bit for bit, "
    "and every result of the squeezer's runs bit for bit that of the path with the "
    "interpolant from Python). Interleaved against land11 10f10b4 (squeezer only, 7 "
    "back-to-back pairs per row, median adds, three rounds each, alternating, load "
    "~4; land11 / rkdense): RK45 300 samples 60, 56, 51 / 18, 17, 17 %; 30 samples "
    "11, 10, 11 / 1, 0, 1 %."
)


NOTES = (
    "The loop step is the tree's RK4 step plus, per stage, the cut-joint rows (the loop "
    "bodies' kinematics, O(N); Revolute joints inline in "
    "`flexmbd.constraints._nbloop.loop_kinematics`), five `M^-1` columns from the tree's "
    "factorization in one sweep over the bodies (`_nbloops._tree_columns`) and a 5 x 5 "
    "Cholesky solve with one refinement step, and per step the Newton position and the "
    "velocity correction (one to two more evaluations of the cut rows). A run's steps "
    "are compiled blocks of output intervals for both (`step` columns: `advance`, the "
    "loop's `_nbloops.loop_rk4_block`, the tree's `_nbloops.tree_rk4_block`); `tree step "
    "(Python RK4)`: the tree's interval by `step`, RK4 from Python around four compiled "
    "forward dynamics per step, the tree measure of the earlier rounds. Where the loop's "
    "step goes: the next table. Before round loops3 (2026-11-27, main 304fcd2, same "
    "command): loop / tree 5.41, 4.68, 4.03, 3.39, 3.43, 3.84 for N = 10 ... 500; after "
    "loops3: 5.42, 4.64, 3.86, 3.46, 3.42, 3.73. Neither loops3 nor ring-osi changed a "
    "kernel of the step, so the runs differ by the machine's load only; ring-osi's run: "
    "5.32, 4.51, 4.00, 3.45, 3.36, 3.64 (the table before round ring2, whose kernels "
    "allocate nothing and count no references in the cut rows and the stage). The `agree` "
    "column grows with N by the conditioning of long chains (compare "
    "residuals: docs/design/facts.rst)."
)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument("--squeezer", action="store_true", help="only the squeezer rows")
    ap.add_argument("--output", action="store_true", help="only the output-sampling rows")
    ap.add_argument("--stages", action="store_true", help="only the loop step's parts")
    ap.add_argument("--rk-parts", action="store_true", help="the squeezer RK45 sample's parts")
    a = ap.parse_args()
    if a.rk_parts:
        rk_sample_parts()
        sys.exit()
    if a.squeezer:
        sq_rows = squeezer_rows(a.repeats)
        if a.write:
            write_squeezer(sq_rows)
        sys.exit()
    if a.output:
        out_rows = output_rows(max(a.repeats, 5))
        if a.write:
            write_output(out_rows)
        sys.exit()
    if a.stages:
        stage_rows([N for N in (10, 100, 500) if N in a.sizes])
        sys.exit()
    main(a.sizes, a.repeats, a.write)
