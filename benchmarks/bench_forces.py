"""Force elements in the compiled absolute engine vs Exudyn (issue 13 item 1).

* the seed 002 slider-crank (``examples/sda_slider_crank.py``: revolute, spherical,
  universal and prismatic joints, one SDA k = 2e4 N/m between the link centres, 1 kN on
  the slider);
* chains of N rods (revolute joints about z, 1 kg, 0.5 m, gravity, an SDA k = 5e3 N/m,
  c = 20 N s/m between every pair of neighbours; ``bench_absolute.chain``), N = 10, 25,
  50, 100, 200, 400 (issue 13 item 4: above ``MAX_DENSE`` unknowns the engine solves with
  its compiled sparse LU, :mod:`flexmbd.absolute._sparse`);
* torsion chains (:func:`torsion_chain`: the chains with a torsion spring-damper at every
  joint instead of the SDAs), the law compiled (``JointForce.spring_damper``) and as a
  Python callback, vs Exudyn ``TorsionalSpringDamper`` connectors (issue 13 items 1, 4);
* the dense/sparse crossover of the engine's solve: chains of N = 5 ... 30 run both ways
  (``engine.MAX_DENSE`` set to force either).

Both codes: rigid bodies in Euler parameters, the same joints, SpringDamper connectors,
Newmark beta = 1/4, gamma = 1/2 (index 3), dt = 0.01 s, Newton tolerance 1e-7 (flexmbd:
scaled residual; Exudyn: relative and absolute), full Newton (flexmbd's default; also
timed: its opt-in modified Newton of the sparse LU, ``Engine.modified_newton``; Exudyn:
the faster of its full and modified Newton), no velocity projection
(flexmbd's default for gamma = 1/2 projects the velocities after each step; Exudyn does
not, so both run without). Exudyn runs
its dense and its sparse (Eigen) linear solver (sparse only above 1,000 unknowns, where
the dense one takes seconds per step); the faster is reported. CPU time
(``time.process_time``) of the whole time integration (initial conditions excluded, no
energy bookkeeping, no file output), best of ``REPEAT`` runs.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_forces.py`` (writes the forces
section of benchmarks/RESULTS.md; ``--no-write`` to only print; ``--joint-forces`` to run
and write only the joint-force table, :func:`joint_force_rows`).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)
from results_file import machine_line  # noqa: E402

DT = 0.01
TOL = 1e-7
REPEAT = 5  # both codes: the minimum is the estimate least inflated by a loaded machine


def run_flexmbd(model, steps, modified=False):
    """CPU s per step, corrections per step, body positions (nt, nb, 3), engine mode;
    ``modified``: the engine's modified Newton (``Engine.modified_newton``)."""
    from flexmbd.absolute.engine import Engine

    s = model.compile("absolute")
    s.initial_conditions()
    if Engine.supports(s):
        s.engine().modified_newton = modified
    kw = dict(
        dt=DT,
        integrator="newmark",
        beta=0.25,
        gamma=0.5,
        tol=TOL,
        max_iter=50,
        energy=False,
        project_velocities=False,
    )
    s.simulate(3 * DT, **kw)  # compiled kernels loaded
    best = np.inf
    for _ in range(REPEAT):
        c = time.process_time()
        res = s.simulate(steps * DT, **kw)
        best = min(best, time.process_time() - c)
    pos = np.stack(
        [s.body_states(q, qd)[b.name][1] for q, qd in zip(res.q, res.qd) for b in s.bodies]
    ).reshape(len(res.q), s.nb, 3)
    return {
        "cpu": best / steps,
        "iters": float(res.stats["newton_iterations"][1:].mean()),
        "pos": pos,
        "engine": Engine.supports(s),
        "sparse": Engine.supports(s) and s.engine().sparse,
        "n": s.n + s.nc,
    }


def _split_kernels():
    """numba loops calling the engine's kernels ``N`` times (compiled on first use)."""
    from numba import njit

    from flexmbd.absolute import _sparse as S
    from flexmbd.absolute import engine as E
    from flexmbd.absolute.force_kernels import forces_add

    @njit
    def terms(m, inp, ws, q, qd, qdd, lam, co, r, phi, A, jac, N):
        c0, c1, c2, c3, c4 = co
        for _ in range(N):
            E.system_terms(m, inp, ws, q, qd, qdd, lam, c0, c1, c2, c3, c4, r, phi, A, jac, True)

    @njit
    def forces(m, inp, ws, q, qd, A, aK, aD, jac, N):
        fm = m.forces
        for _ in range(N):
            forces_add(
                q, qd, fm.s_int, fm.s_flt, fm.s_U, inp.fa, fm.l_int, fm.l_flt, fm.l_U, inp.lf,
                ws.Q, A, m.layout.cmap, aK, aD, jac,
            )  # fmt: skip

    @njit
    def constraints(m, inp, ws, q, lam, phi, jac, N):
        for _ in range(N):
            E._constraints(
                q, m.bodies.nb, m.joints, inp.s, inp.target, lam, phi, ws.Pq, ws.Hm, jac,
                m.layout.cmap, ws.js,
            )  # fmt: skip

    @njit
    def lu_solve(A, gidx, lu, Ax, b, out, fresh, N):
        for _ in range(N):
            S.gather(A, gidx, Ax)
            S.refactor_or_factor(lu, Ax, fresh)
            S.solve(lu, Ax, b, out, 0)

    @njit
    def reactions(m, inp, q, lam, out, FC, pC, N):
        for _ in range(N):
            E._reactions(q, lam, m.bodies.nb, m.joints, inp.s, out, FC, pC)

    return terms, forces, constraints, lu_solve, reactions


def step_split(model, steps, reps=5):
    """Where a Newmark step of ``model`` goes (issue 13 item 1): CPU us per call of the
    engine's kernels at the initial state, called in compiled loops (best of ``reps``),
    and the per-step total they make with full Newton at 2 corrections (2 assemblies with
    the Newton matrix, 1 residual, 2 sparse solves (gather, refactorization, triangular
    solves), 1 joint-reaction evaluation), against the measured ``simulate`` time per
    step and the fixed cost of one ``simulate`` call (1 step, best of ``reps``)."""
    from flexmbd.absolute import _sparse as S

    terms, forces, constraints, lu_solve, reactions = _split_kernels()
    s = model.compile("absolute")
    q, qd, qdd, lam = s.initial_conditions()
    eng = s.engine()
    bh2, gh = 0.25 * DT * DT, 0.5 * DT
    eng.reference_pivots(bh2, gh)
    n, nc = s.n, s.nc
    L = eng.model.layout
    ws = eng._workspace(n, nc, eng._lu)
    inp = eng.inputs()
    m = eng.model
    co = (1.0, bh2, gh, bh2, gh)
    r, phi, A = np.zeros(n), np.zeros(nc), np.zeros((n + nc, L.width))
    nj = len(s.joints)
    FC, pC, reac = np.zeros((nj, 3, 3)), np.zeros((nj, 3)), np.zeros((nj, 6))
    b, x = np.ones(n + nc), np.zeros(n + nc)

    def best(f, *a):
        N = max(10, 30000 // (n + nc))
        f(*a, 1)
        t = np.inf
        for _ in range(reps):
            c = time.process_time()
            f(*a, N)
            t = min(t, (time.process_time() - c) / N)
        return t * 1e6

    out = {
        "assembly with Newton matrix": best(
            terms, m, inp, ws, q, qd, qdd, lam, co, r, phi, A, True
        ),
        "residual only": best(terms, m, inp, ws, q, qd, qdd, lam, co, r, phi, A, False),
        "force elements with Jacobian": best(forces, m, inp, ws, q, qd, A, bh2, gh, True),
        "force elements, residual": best(forces, m, inp, ws, q, qd, A, bh2, gh, False),
        "constraints with Hessian": best(constraints, m, inp, ws, q, lam, phi, True),
    }
    terms(m, inp, ws, q, qd, qdd, lam, co, r, phi, A, True, 1)
    out["sparse solve (first of a step)"] = best(lu_solve, A, L.gidx, ws.lu, ws.Ax, b, x, True)
    out["sparse solve (second)"] = best(lu_solve, A, L.gidx, ws.lu, ws.Ax, b, x, False)
    out["joint reactions"] = best(reactions, m, inp, q, lam, reac, FC, pC)
    kw = dict(dt=DT, integrator="newmark", beta=0.25, gamma=0.5, tol=TOL, max_iter=50,
              energy=False, project_velocities=False)  # fmt: skip
    s.simulate(DT, **kw)
    one = np.inf
    for _ in range(reps):
        c = time.process_time()
        s.simulate(DT, **kw)
        one = min(one, time.process_time() - c)
    out["simulate call, 1 step"] = one * 1e6
    out["step from the kernels"] = (
        2 * out["assembly with Newton matrix"]
        + out["residual only"]
        + out["sparse solve (first of a step)"]
        + out["sparse solve (second)"]
        + out["joint reactions"]
    )
    out["simulate per step"] = run_flexmbd(model, steps)["cpu"] * 1e6
    costs = [S.refactor_cost(an) for an in eng._analyses]
    out["refactor cost"] = S.refactor_cost(eng._lu)
    out["order"] = "COLAMD" if eng._lu is eng._analyses[0] else "MMD(A+A^T)"
    out["other cost"] = max(costs) if len(costs) > 1 else 0
    counts = lu_counts(model, steps)
    out["refused per 100 steps"] = counts[2] * 100.0 / steps
    out["pivoting per 100 steps"] = counts[0] * 100.0 / steps
    return out


def lu_counts(model, steps):
    """Sparse-LU counts of one ``simulate`` run of ``steps`` (``run_flexmbd``'s settings):
    (pivoting factorizations, refactorizations, refused refactorizations, refactorizations
    with an alternative reference); a refused refactorization with the reference pivots
    is followed by one with the alternative pivots of the refused step (built once per
    engine), and only when that is refused too by a pivoting factorization from its
    refused elimination step on (:mod:`flexmbd.absolute._sparse`). Reads the run's
    workspace through ``Engine._workspace`` (a benchmark, not API)."""
    s = model.compile("absolute")
    s.initial_conditions()
    eng = s.engine()
    made = []
    make = eng._workspace
    eng._workspace = lambda n, nc, lu: made.append(make(n, nc, lu)) or made[-1]
    s.simulate(steps * DT, dt=DT, integrator="newmark", beta=0.25, gamma=0.5, tol=TOL,
               max_iter=50, energy=False, project_velocities=False)  # fmt: skip
    st = made[-1].lu.stat
    return int(st[0]), int(st[1]), int(st[2]), int(st[7])


def exudyn_model(model):
    """The same rigid-body model in Exudyn, from flexmbd's consistent initial state."""
    import exudyn as exu
    from exudyn.utilities import RigidBodyInertia

    import flexmbd as fm

    s = model.compile("absolute")
    q, qd, _, _ = s.initial_conditions()
    st = s.body_states(q, qd)
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    g = [0.0, 0.0, 0.0]
    for f in model.forces():
        if isinstance(f, fm.Gravity):
            g = list(f.g)
    idx = {}
    for b in s.bodies:
        R, r, w, v = st[b.name]
        inert = RigidBodyInertia(
            mass=float(b.mass),
            inertiaTensor=np.asarray(b.inertia_matrix),
            com=list(b.com_vector),
            inertiaTensorAtCOM=True,
        )
        idx[id(b)] = mbs.CreateRigidBody(
            referencePosition=list(r),
            referenceRotationMatrix=R,
            initialVelocity=list(v),
            initialAngularVelocity=list(w),
            inertia=inert,
            gravity=g,
        )
    ground = mbs.CreateGround()

    def num(b):
        return idx.get(id(b), ground)

    def world(b, p):
        if isinstance(b, fm.model.bodies.Ground):
            return np.asarray(p, float)
        R, r, _, _ = st[b.name]
        return r + R @ np.asarray(p, float)

    for j in s.joints:
        pf = j.parent_frame
        pos = world(j.parent, pf.position)
        Rp = np.eye(3) if isinstance(j.parent, fm.model.bodies.Ground) else st[j.parent.name][0]
        Fp = Rp @ pf.rotation
        nums = [num(j.parent), num(j.child)]
        if isinstance(j, fm.Revolute):
            mbs.CreateRevoluteJoint(itemNumbers=nums, position=list(pos), axis=list(Fp @ j.axis))
        elif isinstance(j, fm.Spherical):
            mbs.CreateSphericalJoint(itemNumbers=nums, position=list(pos))
        elif isinstance(j, fm.Prismatic):
            mbs.CreatePrismaticJoint(itemNumbers=nums, position=list(pos), axis=list(Fp @ j.axis))
        elif isinstance(j, fm.Universal):
            a1, a2 = Fp @ j.axis1, Fp @ j.axis2
            a3 = np.cross(a1, a2)
            mbs.CreateGenericJoint(
                itemNumbers=nums,
                position=list(pos),
                rotationMatrixAxes=np.column_stack([a3, a1, a2]),
                constrainedAxes=[1, 1, 1, 1, 0, 0],
            )
        else:  # pragma: no cover
            raise NotImplementedError(type(j).__name__)
    for f in model.forces():
        if isinstance(f, fm.SpringDamperActuator):
            mbs.CreateSpringDamper(
                itemNumbers=[num(f.body_i), num(f.body_j)],
                localPosition0=list(f.point_i),
                localPosition1=list(f.point_j),
                referenceLength=f.l0,
                stiffness=f.k,
                damping=f.c,
            )
        elif isinstance(f, fm.JointForce) and (f.law or getattr(f, "torsion", None)):
            j = f.joint  # a torsion spring-damper at rest at the initial angle (the reference
            k, c = f.law[:2] if f.law else f.torsion  # configuration of Exudyn's connector)
            Rp = np.eye(3) if isinstance(j.parent, fm.model.bodies.Ground) else st[j.parent.name][0]
            mbs.CreateTorsionalSpringDamper(
                itemNumbers=[num(j.parent), num(j.child)],
                position=list(world(j.parent, j.parent_frame.position)),
                axis=list(Rp @ j.parent_frame.rotation @ j.axis),
                stiffness=k,
                damping=c,
            )
        elif isinstance(f, fm.PointForce):
            mbs.CreateForce(
                itemNumber=num(f.body),
                loadVector=list(f.force(0.0)),
                localPosition=list(f.point),
                bodyFixed=f.frame == "body",
            )
    mbs.Assemble()
    return exu, mbs, idx, [num(b) for b in s.bodies]


def run_exudyn(model, steps, solvers=("EXUdense", "EigenSparse")):
    best = np.inf
    out = None
    for solver, modified in ((a, b) for a in solvers for b in (False, True)):
        for _ in range(REPEAT):
            exu, mbs, idx, order = exudyn_model(model)
            sim = exu.SimulationSettings()
            ti = sim.timeIntegration
            ti.numberOfSteps = steps
            ti.endTime = steps * DT
            ga = ti.generalizedAlpha
            ga.useNewmark = True
            ga.newmarkBeta = 0.25
            ga.newmarkGamma = 0.5
            ga.useIndex2Constraints = False
            ga.computeInitialAccelerations = True
            ti.newton.useModifiedNewton = modified
            ti.newton.relativeTolerance = TOL
            ti.newton.absoluteTolerance = TOL
            ti.verboseMode = 0
            sim.linearSolver.solverType = getattr(exu.LinearSolverType, solver)
            sim.solution.file.write = False
            sim.solution.sensors.writePeriod = DT
            sim.show.computationTime = False
            sens = [
                mbs.AddSensor(
                    exu.utilities.SensorBody(
                        bodyNumber=b,
                        storeInternal=True,
                        outputVariableType=exu.OutputVariableType.Position,
                    )
                )
                for b in order
            ]
            mbs.Assemble()
            c = time.process_time()
            mbs.SolveDynamic(sim, storeSolver=True)
            cpu = time.process_time() - c
            if cpu < best:
                best = cpu
                pos = np.stack([mbs.GetSensorStoredData(k)[:, 1:4] for k in sens], axis=1)
                it = mbs.sys["dynamicSolver"].it.newtonStepsCount / steps
                newton = "modified" if modified else "full"
                out = {"solver": f"{solver}, {newton}", "pos": pos, "iters": it}
    out["cpu"] = best / steps
    return out


def user_force_model():
    """The slider-crank with its SDA as a user force element written in Python (a
    subclass: the engine does not know it, so the model runs the generic path, calling the
    element's Python ``wrenches``/``jacobians`` at every Newton iteration)."""
    import sda_slider_crank as sc

    import flexmbd as fm

    class UserSpring(fm.SpringDamperActuator):
        """A user force law in Python (here the SDA's own law)."""

    m = sc.build(2e4, 0.0)
    old = m.sda
    del m.sda
    m.user = UserSpring(old.body_i, old.point_i, old.body_j, old.point_j, k=old.k, c=old.c)
    return m


def _cfunc_law(k, c):
    """The torsion law (rest angle 0) as a user's numba cfunc (``JointForce.compiled_law``)."""
    from numba import cfunc

    import flexmbd as fm

    @cfunc(fm.JointForce.LAW_SIGNATURE)
    def law(q, qd, t, which):
        if which == 0:
            return -k * q - c * qd
        return -k if which == 1 else -c

    return law


def torsion_chain(n, python_law=False, cfunc_law=False, rest_zero=False):
    """A chain of ``n`` rods on revolute joints about z (``bench_absolute.chain`` without its
    SDAs) with a torsion spring-damper k = 50 N m/rad, c = 0.5 N m s/rad at every joint,
    at rest at the initial angles: ``JointForce.spring_damper`` (compiled in the engine) or,
    with ``python_law``, the same law as a Python ``JointForce`` ``f(t, q, qd)`` with its
    ``dfdq``/``dfdqd`` (the documented callback path: generic numpy path); with
    ``cfunc_law``, a user's numba cfunc (``JointForce.compiled_law``, called inside the
    engine's step; rest angle 0, as with ``rest_zero``)."""
    import bench_absolute as ba

    import flexmbd as fm

    m = ba.chain(n)
    k, c = 50.0, 0.5
    law = _cfunc_law(k, c) if cfunc_law else None
    for i in range(n):
        j = getattr(m, f"j{i}")
        if i:
            delattr(m, f"s{i}")
        q0 = 0.0 if rest_zero else float(j.q0[0])
        if cfunc_law:
            el = fm.JointForce.compiled_law(j, law)
        elif python_law:
            el = fm.JointForce(
                j,
                lambda t, q, qd, q0=q0: np.array([-k * (q[0] - q0) - c * qd[0]]),
                dfdq=lambda t, q, qd: np.array([[-k]]),
                dfdqd=lambda t, q, qd: np.array([[-c]]),
            )
            el.torsion = (k, c)  # for exudyn_model (the engine does not read it)
        else:
            el = fm.JointForce.spring_damper(j, k, c, q0=q0)
        setattr(m, f"t{i}", el)
    return m


def joint_force_rows():
    """The joint-force table of the forces section (issue 13 item 1: JointForce in the
    compiled engine; item 4: the measured cost of the Python law path)."""
    load = os.getloadavg()[0]
    rows = [
        ("torsion chain, 10 bodies, compiled law", compare(torsion_chain(10), 100)),
        ("same, Python law f(t, q, qd)", compare(torsion_chain(10, True), 20)),
        ("torsion chain, 50 bodies, compiled law", compare(torsion_chain(50), 60)),
        ("same, Python law f(t, q, qd)", compare(torsion_chain(50, True), 10)),
    ]
    lines = [
        "",
        "Joint forces (`benchmarks/bench_forces.py` `joint_force_rows()`): chains of rods on "
        "revolute joints, gravity, a torsion spring-damper (50 N m/rad, 0.5 N m s/rad) at "
        "every joint: `fm.JointForce.spring_damper` (compiled in the engine with its exact "
        "Jacobian) vs the same law as a Python `JointForce` callback `f(t, q, qd)` with "
        "`dfdq`/`dfdqd` (the generic path); Exudyn `TorsionalSpringDamper` connectors; "
        "same integrator, tolerance and timing as above; the Python-law runs are "
        "shorter (20 and 10 steps vs 100 and 60), so is the time their position "
        "difference covers "
        f"({time.strftime('%Y-%m-%d')}, load average at start {load:.1f}).",
        "",
        "| model | unknowns | flexmbd us/step | path | corrections | Exudyn us/step | "
        "Exudyn solver | ratio flexmbd/Exudyn | position diff (m) |",
        "|---|---:|---:|---|---:|---:|---|---:|---:|",
    ]
    for name, r in rows:
        a, b = r["ours"], r["exu"]
        path = "generic"
        if a["engine"]:
            path = "engine, sparse LU" if a["sparse"] else "engine, dense"
        lines.append(
            f"| {name} | {a['n']} | {a['cpu'] * 1e6:.0f} | {path} | {a['iters']:.2f} | "
            f"{b['cpu'] * 1e6:.0f} | {b['solver']} | {a['cpu'] / b['cpu']:.2f} | "
            f"{r['diff']:.1e} |"
        )
    slow = [rows[k + 1][1]["ours"]["cpu"] / rows[k][1]["ours"]["cpu"] for k in (0, 2)]
    uc = run_flexmbd(torsion_chain(10, cfunc_law=True), 100)
    us = run_flexmbd(torsion_chain(10, rest_zero=True), 100)
    du = float(np.abs(uc["pos"] - us["pos"]).max())
    lines += [
        "",
        f"The Python law costs {slow[0]:.0f}x (10 bodies) and {slow[1]:.0f}x (50 bodies) "
        "the compiled law per step: it is called per element and Newton iteration, and "
        "the model leaves the compiled engine for the generic numpy path.",
        "",
        "A user's numba cfunc law (`JointForce.compiled_law`, the same torsion law with "
        "rest angle 0, called inside the engine's step): 10 bodies "
        f"{uc['cpu'] * 1e6:.0f} us per step vs {us['cpu'] * 1e6:.0f} us with "
        "`JointForce.spring_damper(q0=0)` (same run; "
        + ("bitwise equal positions)." if du == 0 else f"positions equal to {du:.0e} m)."),
    ]
    return lines


def write_joint_force_rows():
    """Run :func:`joint_force_rows` alone and put its table at the end of the forces
    section of RESULTS.md (replacing an earlier one)."""
    text = "\n".join(joint_force_rows())
    path = os.path.join(HERE, "RESULTS.md")
    old = open(path).read()
    a_, b_ = old.index("<!-- forces:start -->"), old.index("<!-- forces:end -->")
    sec = old[a_:b_]
    k = sec.find("\nJoint forces (`benchmarks/bench_forces.py`")
    sec = (sec[:k] if k >= 0 else sec).rstrip("\n") + "\n" + text + "\n"
    with open(path, "w") as fh:
        fh.write(old[:a_] + sec + old[b_:])
    print(text)


def compare(model, steps):
    a = run_flexmbd(model, steps)
    mod = run_flexmbd(model, steps, modified=True) if a["sparse"] else None
    b = run_exudyn(model, steps, ("EigenSparse",) if a["n"] > 1000 else ("EXUdense", "EigenSparse"))
    n = min(len(a["pos"]), len(b["pos"]))
    diff = float(np.abs(a["pos"][:n] - b["pos"][:n]).max())
    out = {"ours": a, "exu": b, "diff": diff, "mod": mod}
    if mod is not None:
        out["diff_mod"] = float(np.abs(mod["pos"][:n] - b["pos"][:n]).max())
    return out


def rotor(steps=20000, generic_steps=200):
    """``examples/abaqus_rotor.py`` (Exudyn's perfObjectFFRFreducedOrder): CPU s of flexmbd's
    run (compiled engine), of the generic path (``engine=False``, per 1,000 steps from
    ``generic_steps``) and of Exudyn's own model's ``SolveDynamic`` (the model of
    ``tests/test_example_abaqus_rotor.py``), and the radial bearing-face difference."""
    import importlib.util
    from pathlib import Path

    import exudyn as exu

    root = Path(HERE).parent
    spec = importlib.util.spec_from_file_location(
        "abaqus_rotor", root / "examples" / "abaqus_rotor.py"
    )
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    rb = ex.reduced_rotor()
    kw = dict(dt=1e-4, integrator="generalized-alpha", rho_inf=0.5, rtol=1e-10)
    m = ex.build(rb)
    m.simulate(t_end=5e-4, **kw)
    c = time.process_time()
    res = m.simulate(t_end=steps * 1e-4, **kw)
    ours = time.process_time() - c
    m2 = ex.build(rb)
    c = time.process_time()
    m2.simulate(t_end=generic_steps * 1e-4, engine=False, **kw)
    generic = (time.process_time() - c) / generic_steps * 1000
    sys.path.insert(0, str(root / "tests"))
    import test_example_abaqus_rotor as T

    orig = exu.SolveDynamic
    cpu = {}

    def timed(*a, **k):
        c0 = time.process_time()
        out = orig(*a, **k)
        cpu["t"] = time.process_time() - c0
        return out

    exu.SolveDynamic = timed
    try:
        ref = T._exudyn_bearing_positions(Path(ex.data_dir()), steps, 1e-4)
    finally:
        exu.SolveDynamic = orig
    diff = max(
        np.abs(m.rotor.interface(s_).trajectory(res)[:, :2] - b[:, :2]).max()
        / np.abs(b[:, :2]).max()
        for s_, b in zip(("left", "right"), ref)
    )
    return {
        "steps": steps,
        "ours": ours,
        "generic_per_1000": generic,
        "exu": cpu["t"],
        "diff": diff,
    }


def crossover(sizes=(5, 10, 15, 20, 25, 30), steps=60):
    """CPU us per step of the chains with the engine's dense LAPACK solve and with its
    sparse LU (``engine.MAX_DENSE`` set to force either), same run."""
    import bench_absolute as ba

    from flexmbd.absolute import engine as E

    keep = E.MAX_DENSE
    out = []
    try:
        for n in sizes:
            row = [n]
            for limit in (10**9, 0):
                E.MAX_DENSE = limit
                r = run_flexmbd(ba.chain(n), steps)
                row += [r["cpu"] * 1e6]
            out.append((row[0], r["n"], row[1], row[2]))
    finally:
        E.MAX_DENSE = keep
    return out


def main(write=True):
    import bench_absolute as ba
    import exudyn
    import sda_slider_crank as sc

    rows = [
        ("seed 002 slider-crank, 1 SDA", compare(sc.build(2e4, 0.0), 300)),
        ("same, SDA as a Python user force element", compare(user_force_model(), 30)),
    ]
    sizes = (10, 25, 50, 100, 200, 400)
    chains = []
    for n in sizes:
        r = compare(ba.chain(n), 100 if n <= 50 else 40 if n <= 100 else 20)
        chains.append((n, r))
        rows.append((f"chain, {n} bodies, {n - 1} SDAs", r))
    p_ours = np.polyfit(np.log(sizes), np.log([r["ours"]["cpu"] for _, r in chains]), 1)[0]
    p_mod = np.polyfit(np.log(sizes), np.log([r["mod"]["cpu"] for _, r in chains]), 1)[0]
    big = [k for k, n in enumerate(sizes) if n >= 50]
    p_big = np.polyfit(
        np.log(np.array(sizes)[big]), np.log([chains[k][1]["ours"]["cpu"] for k in big]), 1
    )[0]
    cross = crossover()
    split = [
        ("seed 002 slider-crank", step_split(sc.build(2e4, 0.0), 300)),
        ("chain, 50 bodies", step_split(ba.chain(50), 100)),
        ("chain, 200 bodies", step_split(ba.chain(200), 20)),
    ]
    c50, sc_ = chains[sizes.index(50)][1], rows[0][1]

    def met(x, target):
        return "reached" if x <= target else "not reached"

    p_exu = np.polyfit(np.log(sizes), np.log([r["exu"]["cpu"] for _, r in chains]), 1)[0]
    lines = [
        "<!-- forces:start -->",
        "## Force elements in the compiled engine vs Exudyn (issue 13 item 1)",
        "",
        "Rigid bodies in Euler parameters, SDAs as Exudyn `SpringDamper` connectors, "
        "Newmark beta = 1/4, gamma = 1/2, index 3, dt = 0.01 s, Newton tol 1e-7; CPU "
        "time of the time integration per step (the whole `simulate` call), best of "
        f"{REPEAT}. flexmbd: full Newton (its default) and, for the sparse LU, its opt-in "
        "modified Newton (`s.engine().modified_newton = True`: a step's later corrections "
        "reuse its factors while the residual falls 10x per correction); Exudyn: the "
        "fastest of its dense and sparse solvers with full and with modified Newton; both "
        "without velocity projection. `engine`: the model runs in flexmbd's "
        "compiled engine (dense LAPACK solve up to `MAX_DENSE` unknowns, above it the "
        "compiled sparse LU of `flexmbd.absolute._sparse` with its compressed matrix "
        "layout). Position difference: max over bodies and steps "
        "of the body reference points, flexmbd - Exudyn. The Python user force element "
        "row is the documented callback path for force laws the engine does not "
        "compile: the model leaves the engine.",
        "",
        "- Command: `OPENBLAS_NUM_THREADS=1 python benchmarks/bench_forces.py`",
        machine_line(f"Exudyn {exudyn.__version__}"),
        "",
        "| model | unknowns | flexmbd us/step | path | corrections | modified Newton "
        "us/step (corrections) | Exudyn us/step | Exudyn solver | corrections | ratio "
        "flexmbd/Exudyn (modified) | position diff (m) (modified) |",
        "|---|---:|---:|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for name, r in rows:
        a, b, mo = r["ours"], r["exu"], r["mod"]
        path = "generic"
        if a["engine"]:
            path = "engine, sparse LU" if a["sparse"] else "engine, dense"
        mcol, mratio, mdiff = "-", "", ""
        if mo is not None:
            mcol = f"{mo['cpu'] * 1e6:.0f} ({mo['iters']:.2f})"
            mratio = f" ({mo['cpu'] / b['cpu']:.2f})"
            mdiff = f" ({r['diff_mod']:.1e})"
        lines.append(
            f"| {name} | {a['n']} | {a['cpu'] * 1e6:.0f} | {path} | {a['iters']:.2f} | "
            f"{mcol} | {b['cpu'] * 1e6:.0f} | {b['solver']} | {b['iters']:.2f} | "
            f"{a['cpu'] / b['cpu']:.2f}{mratio} | {r['diff']:.1e}{mdiff} |"
        )
    rt = rotor()
    lines += [
        "",
        f"Abaqus rotor (`examples/abaqus_rotor.py`, Exudyn's perfObjectFFRFreducedOrder: "
        f"8 modes, 5 spring-dampers at the deforming bearing faces, generalized-alpha "
        f"rho_inf = 0.5, h = 1e-4 s, {rt['steps']} steps): flexmbd "
        f"{rt['ours']:.2f} s CPU ({rt['ours'] / rt['steps'] * 1000:.3f} s per 1,000 "
        f"steps; the generic path: {rt['generic_per_1000']:.1f} s per 1,000 steps), "
        f"Exudyn's own model (`SolveDynamic`) {rt['exu']:.2f} s: ratio "
        f"{rt['ours'] / rt['exu']:.2f}; bearing-face radial motion agrees within "
        f"{100 * rt['diff']:.2f} % of its peak.",
    ]
    lines += [
        "",
        f"Growth with the number of bodies N = {', '.join(map(str, sizes))} "
        f"(time per step ~ N^p): flexmbd p = {p_ours:.2f} (N >= 50: {p_big:.2f}; "
        f"modified Newton {p_mod:.2f}), Exudyn p = {p_exu:.2f}.",
        "",
        "Issue 13 targets: 50-body chain <= 0.5 ms per step, measured "
        f"{c50['ours']['cpu'] * 1e3:.2f} ms ({met(c50['ours']['cpu'], 5e-4)}; modified "
        f"Newton {c50['mod']['cpu'] * 1e3:.2f} ms); seed slider-crank <= 30 us, measured "
        f"{sc_['ours']['cpu'] * 1e6:.0f} us ({met(sc_['ours']['cpu'], 3e-5)}; modified "
        f"Newton {sc_['mod']['cpu'] * 1e6:.0f} us); ratio to Exudyn's fastest mode in this "
        f"run {sc_['ours']['cpu'] / sc_['exu']['cpu']:.2f} (slider-crank) and "
        f"{c50['ours']['cpu'] / c50['exu']['cpu']:.2f} (50-body chain). Per step with full "
        "Newton (2 corrections): two Newton-matrix assemblies, one residual and two sparse "
        "refactorizations, the first with the engine's reference pivots (a "
        "partial-pivoting factorization of the Newton matrix at the model's initial "
        "state; when a reference pivot fails its test, the alternative pivots of that "
        "elimination step, a function of the reference and the step only), "
        "the second with the first's pivots: each step depends on its own state only, "
        "checkpoints resume bitwise. The time includes the `simulate` call's fixed cost "
        "(the table below). Exudyn's modified Newton keeps its Jacobian and factors across "
        "steps (6-7 corrections per step, few factorizations) and is its fastest mode on "
        "every model here; flexmbd's steps stay independent of the steps before them "
        "(bitwise checkpoint resume), so its modified Newton reuses factors within a step "
        "only.",
        "",
        "Where a step goes (`bench_forces.step_split`, same run): CPU us per call of the "
        "engine's kernels at the initial state, each called in a compiled loop (best of 5); "
        "`kernels per step` = 2 assemblies with the Newton matrix + 1 residual + the two "
        "sparse solves (gather, refactorization, triangular solves) + joint reactions; the "
        "rest of `simulate per step` is the step loop itself (predictors, history), the "
        "fixed cost of the call spread over the run's steps and cache effects.",
        "",
        "| model | assembly with Newton matrix (of it: force elements, constraints) | "
        "residual only | sparse solve, first / second of a step | joint reactions | "
        "kernels per step | simulate per step | simulate call of 1 step | refused "
        "refactorizations per 100 steps (pivoting factorizations) | refactorization "
        "multiply-adds (column order; the other order's) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *(
            f"| {nm} | {o['assembly with Newton matrix']:.1f} "
            f"({o['force elements with Jacobian']:.1f}, {o['constraints with Hessian']:.1f})"
            f" | {o['residual only']:.1f} | {o['sparse solve (first of a step)']:.1f} / "
            f"{o['sparse solve (second)']:.1f} | {o['joint reactions']:.1f} | "
            f"{o['step from the kernels']:.0f} | {o['simulate per step']:.0f} | "
            f"{o['simulate call, 1 step']:.0f} | {o['refused per 100 steps']:.0f} "
            f"({o['pivoting per 100 steps']:.0f}) | "
            f"{o['refactor cost']} ({o['order']}"
            + (f"; {o['other cost']}" if o["other cost"] else "")
            + ") |"
            for nm, o in split
        ),
        "",
        "A refused refactorization: a reference pivot fails its threshold test (on the "
        "50-body chain a pivot passes through zero as the chain swings: 17 of the first "
        "100 steps, at elimination step 644 of 650 or 126). The solve then refactorizes "
        "with the alternative pivots of that step: the reference matrix factored with the "
        "reference pivots before the step and partial pivoting from it on, the refused "
        "row excluded at the step (built once per engine and step, two kept; a function "
        "of the reference and the step only, so each solve still depends on its own "
        "matrix only). Only when those are refused too does partial pivoting take over "
        "from their refused step (before issue 13's sparse-speed work a refusal factored "
        "all 650 columns again with pivoting; until sda4 it pivoted from the refused step "
        "on: 0.40 ms for both solves of such a step on the 50-body chain, 0.18 ms with "
        "the alternative). Refactorization "
        "multiply-adds: the `L` column lengths over the `U` entries plus the factors' "
        "non-zeros (`_sparse.refactor_cost`); up to `engine.MAX_ORDER_CHOICE` unknowns the "
        "reference pivots are set in two column orders, COLAMD and a minimum degree "
        "order of A + A^T, and the engine keeps the cheaper (the slider-crank: the "
        "minimum degree order; the 10-body chain: COLAMD; the 50- and 200-body chains "
        "are above the limit).",
        "",
        "Dense/sparse crossover of the engine's Newton solve (`benchmarks/bench_forces.py`"
        " `crossover()`, the same chains, us per step, same run; `engine.MAX_DENSE` "
        "forced):",
        "",
        "| bodies | unknowns | dense LAPACK | sparse LU | sparse / dense |",
        "|---:|---:|---:|---:|---:|",
        *(f"| {n} | {m} | {d:.0f} | {sp_:.0f} | {sp_ / d:.2f} |" for n, m, d, sp_ in cross),
        *joint_force_rows(),
        "<!-- forces:end -->",
    ]
    text = "\n".join(lines)
    print(text)
    if write:
        path = os.path.join(HERE, "RESULTS.md")
        old = open(path).read()
        if "<!-- forces:start -->" in old:
            a_, b_ = old.index("<!-- forces:start -->"), old.index("<!-- forces:end -->")
            new = old[:a_] + text + old[b_ + len("<!-- forces:end -->") :]
        else:
            new = old.rstrip("\n") + "\n\n" + text + "\n"
        with open(path, "w") as fh:
            fh.write(new)
    return rows


if __name__ == "__main__":
    if "--joint-forces" in sys.argv:  # only the joint-force table
        write_joint_force_rows()
    else:
        main(write="--no-write" not in sys.argv)
