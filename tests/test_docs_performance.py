"""The statements of docs/guide/performance.rst, each checked on a small model.

The page tells users which model, call and option runs compiled and which falls back to
Python. Each test here asserts the path one of its statements names, through what the
code exposes: :meth:`Engine.supports`, the implicit stepper's ``mode``,
:meth:`RecursiveSystem.packed_rigid` / :meth:`~RecursiveSystem.compiled_forces`,
:meth:`LoopSystem.compiled_rk4`, and calls of the compiled kernels counted through a
wrapper (``monkeypatch``). A change that moves a model off (or onto) the compiled path
fails here; then update the page with it.
"""

import models
import numpy as np
import pytest
from numba import cfunc

import flexmbd as fm
from flexmbd.absolute import engine as E
from flexmbd.absolute.engine import Engine
from flexmbd.integrators.implicit import implicit_stepper
from flexmbd.recursive import _flexblock as FB
from flexmbd.recursive import _nbforces as NF
from flexmbd.recursive import _nbloops as NL
from flexmbd.recursive import _nbsingle as NS
from flexmbd.recursive import _nbtimed as NT


def counting(monkeypatch, module, name):
    """Replace ``module.name`` by a wrapper that counts its calls; returns the counter.
    Only for kernels called from Python: a kernel that another kernel calls (a numba
    global) must not be replaced, or that kernel fails to compile with a cold cache."""
    calls = []
    inner = getattr(module, name)

    def wrapper(*args, **kw):
        calls.append(name)
        return inner(*args, **kw)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def mode(system, integrator="newmark", **options):
    """The implicit stepper's path: "compiled", "engine" or "generic"."""
    return implicit_stepper(system, 0.02, 0.01, integrator, **options).mode


def loaded_pendulum(**extra):
    """The double pendulum with an SDA to the ground, a point force and a point torque
    (constant), and the force elements in ``extra`` (name: a function of the model)."""
    m = models.double_pendulum()
    m.spring = fm.SpringDamperActuator(
        m.ground, (0.5, 0.5, 0.0), m.lower, (1.0, 0.0, 0.0), k=30.0, c=0.5, l0=1.0
    )
    m.push = fm.PointForce(m.lower, (0.5, 0.0, 0.0), (0.0, 2.0, 0.0))
    m.twist = fm.PointTorque(m.upper, (0.0, 0.0, 0.3))
    for name, make in extra.items():
        setattr(m, name, make(m))
    return m


def folded_four_bar():
    """:func:`models.four_bar` folded flat (crank along the ground, coupler back over it,
    rocker out again): the parallelogram's singular configuration."""
    m = fm.Model("folded_four_bar")
    m.crank = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.coupler = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.rocker = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.a = fm.Revolute(m.ground, m.crank, q0=[0.0])
    m.b = fm.Revolute(m.crank, m.coupler, parent_frame=(1.0, 0, 0), q0=[np.pi])
    m.c = fm.Revolute(m.coupler, m.rocker, parent_frame=(1.0, 0, 0), q0=[np.pi])
    m.d = fm.Revolute(m.rocker, m.ground, parent_frame=(1.0, 0, 0), child_frame=(1.0, 0, 0))
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def driven_four_bar():
    m = models.four_bar()
    m.drive = fm.JointDriver.constant_speed(m.a, 1.0, start=np.pi / 2)
    return m


# -- absolute formulation, implicit integrators ------------------------------------------


def test_absolute_rigid_models_with_compiled_elements_run_the_compiled_loop():
    """Section "Absolute formulation": gravity, SDAs, point loads, constant joint forces
    and spring_damper laws stay in the engine, with every scheme (HHT in its default
    acceleration form)."""
    m = loaded_pendulum(
        motor=lambda m: fm.JointForce(m.shoulder, [0.2]),
        hinge=lambda m: fm.JointForce.spring_damper(m.elbow, 10.0, 0.1),
    )
    s = m.compile("absolute")
    assert Engine.supports(s)
    for integrator in ("newmark", "hht", "generalized-alpha"):
        assert mode(s, integrator) == "compiled", integrator


def test_absolute_time_functions_of_loads_stay_in_the_engine():
    """A load given as a function of time only keeps the engine (evaluated once a step)."""
    m = models.double_pendulum()
    m.push = fm.PointForce(m.lower, (0.5, 0.0, 0.0), lambda t: [0.0, np.sin(t), 0.0])
    s = m.compile("absolute")
    assert Engine.supports(s) and mode(s) == "compiled"


def test_absolute_flexible_body_runs_the_compiled_loop():
    s = models.flexible_pendulum().compile("absolute")
    assert Engine.supports(s)
    assert mode(s, "generalized-alpha") == "compiled"


@pytest.mark.parametrize(
    "case",
    ["python law", "spherical force", "engine=False", "hht force form", "redundant rows", "screw"],
)
def test_absolute_fallbacks_to_the_generic_path(case):
    """Section "Absolute formulation", "falls back": each of these runs the whole model on
    the generic (Python, SciPy sparse) path."""
    if case == "python law":
        m = models.double_pendulum()
        m.law = fm.JointForce(m.elbow, lambda t, q, qd: -2.0 * q)
        s = m.compile("absolute")
        assert not Engine.supports(s)
        assert mode(s) == "generic"
    elif case == "spherical force":  # a constant force on a joint without a constant H
        m = fm.Model("ball")
        m.link = fm.RigidBody.rod(1.0, 1.0, origin="end", radius=0.02)
        m.ball = fm.Spherical(m.ground, m.link)
        m.push = fm.JointForce(m.ball, [0.0, 0.0, 0.1])
        m.g = fm.Gravity((0, -9.81, 0))
        s = m.compile("absolute")
        assert not Engine.supports(s)
        assert mode(s) == "generic"
    elif case == "engine=False":
        assert mode(models.double_pendulum().compile("absolute"), engine=False) == "generic"
    elif case == "hht force form":
        s = models.double_pendulum().compile("absolute")
        assert mode(s, "hht", form="force") == "generic"
    elif case == "redundant rows":
        # the planar four-bar of spatial revolutes: 2 redundant joint equations, which need
        # the generic path's QR row selection although every element is compiled
        s = models.four_bar().compile("absolute")
        assert Engine.supports(s)
        assert not s.engine().admission(s.q0())[1]
        assert mode(s) == "generic"
        with pytest.raises(fm.ModelError, match="redundant"):  # the engine required
            mode(s, engine=True)
    else:
        m = fm.Model("screw")
        m.nut = fm.RigidBody(2.0, (0.01, 0.02, 0.03))
        m.s = fm.Screw(m.ground, m.nut, axis=(0, 0, 1), pitch=0.05)
        m.sd = fm.JointForce.spring_damper(m.s, 3.0, 0.2)
        m.g = fm.Gravity((0, 0, -9.81))
        s = m.compile("absolute")
        assert not Engine.supports(s)  # the screw's coordinate row, whatever its force
        assert mode(s) == "generic"


def test_absolute_python_step_loop_around_the_compiled_newton():
    """A callback, or velocity projection of a rheonomic (driven) model: the Newton
    iterations in the engine, the step loop in Python ("engine")."""
    s = models.double_pendulum().compile("absolute")
    assert mode(s, callback=lambda t, q, qd: None) == "engine"
    m = models.double_pendulum()
    m.drive = fm.JointDriver.constant_speed(m.shoulder, 1.0, start=-np.pi / 4)
    s = m.compile("absolute")
    assert mode(s) == "engine"  # Newmark 1/4, 1/2 projects velocities
    assert mode(s, "generalized-alpha") == "compiled"  # no projection: compiled loop


def test_absolute_dense_or_sparse_newton_matrix():
    """Section "Absolute formulation": the Newton matrix of ``N = n + nc`` unknowns is
    solved by the compiled sparse LU when N > MAX_DENSE = 12 and no body's column block
    (7 + its modes) exceeds SPARSE_BLOCK_FRACTION = 0.3 of N; otherwise dense LAPACK."""
    assert (E.MAX_DENSE, E.SPARSE_BLOCK_FRACTION) == (12, 0.3)
    one = models.pendulum().compile("absolute")  # 13 unknowns, one block of 7
    two = models.double_pendulum().compile("absolute")  # 26 unknowns, blocks of 7
    flex = models.flexible_pendulum().compile("absolute")  # one body: its block is most
    assert one.n + one.nc == 13 and not one.engine().sparse
    assert two.n + two.nc == 26 and two.engine().sparse
    assert not flex.engine().sparse
    assert not E.prefers_sparse(6, 6, [7]) and E.prefers_sparse(70, 60, [7] * 10)


# -- recursive formulation, trees ----------------------------------------------------------


def test_tree_rk4_runs_compiled_blocks(monkeypatch):
    """Section "Recursive formulation, trees": RK4 of a rigid tree with compiled force
    elements (spring-damper joint laws included) and constant ``tau`` runs whole blocks of
    output intervals in one call."""
    m = loaded_pendulum(
        motor=lambda m: fm.JointForce(m.shoulder, [0.2]),
        law=lambda m: fm.JointForce.spring_damper(m.elbow, 10.0, 0.1),
    )
    s = m.compile("recursive")
    assert s.packed_rigid(forces=True) is not None and s.compiled_forces() is not None
    calls = counting(monkeypatch, NL, "tree_rk4_block")
    res = s.simulate(0.05, dt=0.01, integrator="rk4", tau=[0.1, 0.0])
    assert len(res.t) == 6 and len(calls) == 1  # the five intervals in one compiled call


@pytest.mark.parametrize("integrator", ["rk45", "dop853", "rk23"])
def test_tree_adaptive_steps_run_compiled_blocks(monkeypatch, integrator):
    """Section "Recursive formulation, trees": RK45 / DOP853 / RK23 of a rigid tree with
    compiled force elements and constant ``tau`` take their steps in compiled blocks;
    with output times the samples there too (the solver's interpolant, each sample's
    accelerations, reactions and energies: one block for the whole run), and with a
    sample at every step each step's sample in the block; the Python right-hand side
    only for scipy's start (the first derivative and the initial step's probe), no
    batch of samples after the run."""
    m = loaded_pendulum(
        motor=lambda m: fm.JointForce(m.shoulder, [0.2]),
        law=lambda m: fm.JointForce.spring_damper(m.elbow, 10.0, 0.1),
    )
    s = m.compile("recursive")
    blocks = counting(monkeypatch, NL, "tree_rk_block")
    dense = counting(monkeypatch, NL, "tree_rk_block_dense")
    qdd = counting(monkeypatch, type(s), "qdd")
    batch = counting(monkeypatch, type(s), "forward_dynamics_batch")
    kw = dict(integrator=integrator, tau=[0.1, 0.0], rtol=1e-6, atol=1e-8)
    res = s.simulate(0.05, dt=0.01, **kw)
    assert len(res.t) == 6 and len(dense) == 1 and not blocks and res.meta["steps"] >= 1
    assert len(qdd) == 2 and not batch
    qdd.clear()
    res = s.simulate(0.05, **kw)
    assert len(qdd) == 2 and not batch and len(res.t) == res.meta["steps"] + 1 > 2


@pytest.mark.parametrize("case", ["python law", "callable tau"])
def test_tree_adaptive_fallbacks_run_scipys_steps(monkeypatch, case):
    """scipy's step code in Python around compiled evaluations: a Python force law of the
    state, a callable ``tau``."""
    tau = None
    m = models.double_pendulum()
    if case == "python law":
        m.push = fm.JointForce(m.elbow, lambda t, q, qd: [0.1 * np.cos(t) - 0.2 * qd[0]])
    else:
        tau = lambda t, q, qd: [0.1 * np.sin(t), 0.0]  # noqa: E731
    s = m.compile("recursive")
    blocks = counting(monkeypatch, NL, "tree_rk_block")
    attempts = counting(monkeypatch, NT, "timed_block")
    res = s.simulate(0.03, integrator="rk45", tau=tau)
    assert not blocks and not attempts and res.meta["steps"] > 0


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
def test_tree_adaptive_time_functions_run_compiled_attempts(monkeypatch, integrator):
    """Section "Recursive formulation, trees": RK45 / DOP853 of a tree whose loads include
    a Python function of time take every attempt in one compiled call
    (``_nbtimed.timed_block``), the function tabulated at the attempt's stage times; the
    Python right-hand side only for scipy's start."""
    m = models.double_pendulum()
    m.push = fm.PointForce(m.lower, (0.5, 0.0, 0.0), lambda t: [0.0, np.cos(t), 0.0])
    s = m.compile("recursive")
    blocks = counting(monkeypatch, NL, "tree_rk_block")
    steps = []
    inner = NT.timed_block
    monkeypatch.setattr(NT, "timed_block", lambda *a: steps.append(a) or inner(*a))
    qdd = counting(monkeypatch, type(s), "qdd")
    res = s.simulate(0.3, integrator=integrator, rtol=1e-9, atol=1e-11)
    assert not blocks and steps and res.meta["steps"] > 5 and len(qdd) == 2


@pytest.mark.parametrize("integrator", ["rk45", "dop853"])
def test_tree_adaptive_quaternion_trees_run_compiled_blocks(monkeypatch, integrator):
    """Section "Recursive formulation, trees": RK45 / DOP853 of a tree with a Spherical
    joint take every step in compiled blocks (the Python right-hand side only for
    scipy's start), each sample at every step from an evaluation in the block; with
    output times the samples in the block too (no batch after the run)."""
    m = fm.Model("spherical")
    m.upper = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.lower = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.shoulder = fm.Revolute(m.ground, m.upper, q0=[-np.pi / 4])
    m.elbow = fm.Spherical(m.upper, m.lower, parent_frame=(1.0, 0, 0))
    m.g = fm.Gravity((0, -9.81, 0))
    s = m.compile("recursive")
    blocks = counting(monkeypatch, NL, "tree_rk_block")
    qdd = counting(monkeypatch, type(s), "qdd")
    batch = counting(monkeypatch, type(s), "forward_dynamics_batch")
    res = s.simulate(0.05, integrator=integrator, rtol=1e-8, atol=1e-10)
    assert blocks and len(qdd) == 2 and res.meta["steps"] > 2 and not batch
    dense = counting(monkeypatch, NL, "tree_rk_block_dense")
    res = s.simulate(0.05, dt=0.005, integrator=integrator, rtol=1e-8, atol=1e-10)
    assert len(res.t) == 11 and len(dense) == 1 and len(qdd) == 4 and not batch


@pytest.mark.parametrize("case", ["spherical", "floating"])
def test_tree_rk4_quaternion_trees_run_compiled_blocks(monkeypatch, case):
    """Section "Recursive formulation, trees": quaternion coordinates (a Spherical
    joint, a floating base with a time-driven joint) run whole blocks of output
    intervals in one compiled call, the drive tabulated; no evaluation from Python."""
    m = fm.Model(case)
    if case == "spherical":
        m.upper = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
        m.lower = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
        m.shoulder = fm.Revolute(m.ground, m.upper, q0=[-np.pi / 4])
        m.elbow = fm.Spherical(m.upper, m.lower, parent_frame=(1.0, 0, 0))
        m.g = fm.Gravity((0, -9.81, 0))
    else:
        m.box = fm.RigidBody(1.0, (0.1, 0.2, 0.3))
        m.free = fm.Free(m.ground, m.box, qd0=[0.0, 0.0, 0.0, 0.3, 0.2, 0.1])
        m.arm = fm.RigidBody.rod(mass=0.5, length=0.4, radius=0.02, origin="end")
        m.hinge = fm.Revolute(m.box, m.arm, parent_frame=(0.2, 0, 0))
        m.drive = fm.JointForce.of_time(m.hinge, lambda t: 0.1 * np.sin(t))
    s = m.compile("recursive")
    assert s.nq > s.nv and s.packed_rigid(forces=True, timed=True) is not None
    calls = counting(monkeypatch, NL, "tree_rk4_block")
    qdd = counting(monkeypatch, type(s), "qdd")
    res = s.simulate(0.05, dt=0.01, integrator="rk4")
    assert len(res.t) == 6 and len(calls) == 1 and not qdd


@pytest.mark.parametrize("case", ["callable tau", "python law"])
def test_tree_rk4_fallbacks_run_python_rk4(monkeypatch, case):
    """The RK4 step in Python around compiled forward dynamics: a callable ``tau``, a
    JointForce with a Python law."""
    tau = None
    if case == "callable tau":
        m = models.double_pendulum()
        tau = lambda t, q, qd: [0.1 * np.sin(t), 0.0]  # noqa: E731
    else:
        m = models.double_pendulum()
        m.law = fm.JointForce(m.elbow, lambda t, q, qd: [-10.0 * q[0] - 0.1 * qd[0]])
    s = m.compile("recursive")
    if case == "python law":
        assert s.compiled_forces() is None and s.packed_rigid(forces=True) is None
    calls = counting(monkeypatch, NL, "tree_rk4_block")
    qdd = counting(monkeypatch, type(s), "qdd")
    sample = counting(monkeypatch, type(s), "qdd_and_reactions")
    res = s.simulate(0.03, dt=0.01, integrator="rk4", tau=tau)
    assert len(res.t) == 4 and not calls
    # four evaluations from Python per RK4 step, the first (the output sample) with reactions
    assert len(qdd) == 9 and len(sample) == len(res.t)  # the last: after the run


def test_tree_time_functions_are_evaluated_once_per_call(monkeypatch):
    """A time function on a point force: the single-state calls evaluate the function
    once in Python and apply the force in the compiled call; RK4 tabulates it on the
    stage times and runs compiled blocks; ``compiled_forces`` (the constant table that
    closed loops take) is None."""
    m = models.double_pendulum()
    seen = []
    m.push = fm.PointForce(m.lower, (0.5, 0.0, 0.0), lambda t: seen.append(t) or [0.0, 1.0, 0.0])
    s = m.compile("recursive")
    assert s.compiled_forces() is None and s.timed_forces(0.0) is not None
    calls = counting(monkeypatch, type(m.push), "wrenches")
    seen.clear()
    s.qdd(s.q0(), s.qd0(), t=0.25)
    assert not calls and seen == [0.25]
    blocks = counting(monkeypatch, NL, "tree_rk4_block")
    s.simulate(0.05, dt=0.01, integrator="rk4")
    assert len(blocks) == 1 and not calls


def test_tree_python_force_laws_are_evaluated_in_python(monkeypatch):
    """A user force law of the state in Python: evaluated from Python at each
    evaluation (the whole table with it), the tree solve stays compiled."""
    m = loaded_pendulum(law=lambda m: fm.JointForce(m.elbow, lambda t, q, qd: [-q[0]]))
    s = m.compile("recursive")
    assert s.compiled_forces() is None and s.timed_forces(0.0) is None
    calls = counting(monkeypatch, fm.PointForce, "wrenches")
    s.qdd(s.q0(), s.qd0())
    assert calls


@cfunc(fm.JointForce.LAW_SIGNATURE)
def _cubic_law(q, qd, t, which):
    if which == 0:
        return -10.0 * q * q * q - 0.1 * qd + 0.2 * np.sin(t)
    return -30.0 * q * q if which == 1 else -0.1


def law_calls(monkeypatch, el):
    """Record the times at which the element ``el``'s Python law runs."""
    seen = []
    inner = el.generalized_force
    monkeypatch.setattr(el, "generalized_force", lambda t, *a: seen.append(t) or inner(t, *a))
    return seen


def test_tree_compiled_laws_run_in_the_compiled_calls_and_blocks(monkeypatch):
    """A ``compiled_law`` cfunc on a tree joint: a row of the force table (called by its
    address with the call's time): single-state calls and RK4 blocks, no Python call."""
    m = loaded_pendulum(law=lambda m: fm.JointForce.compiled_law(m.elbow, _cubic_law))
    s = m.compile("recursive")
    assert s.timed_forces(0.0) is not None and s.packed_rigid(forces=True, timed=True)
    seen = law_calls(monkeypatch, m.law)
    qdd = counting(monkeypatch, NF, "tree_forward")
    s.forward_dynamics(s.q0(), s.qd0(), t=0.1)
    blocks = counting(monkeypatch, NL, "tree_rk4_block")
    res = s.simulate(0.05, dt=0.01, integrator="rk4")
    assert len(qdd) == 1 and len(res.t) == 6 and len(blocks) == 1 and not seen


@pytest.mark.parametrize("integrator", ["rk45", "dop853", "rk23"])
def test_tree_compiled_laws_adaptive_steps_run_compiled_blocks(monkeypatch, integrator):
    """A ``compiled_law`` cfunc of time on a tree joint: RK45 / DOP853 / RK23 take every
    step in compiled blocks (the kernel sets the law's clock per stage); the Python
    right-hand side runs only for scipy's start, the law never from Python."""
    m = loaded_pendulum(law=lambda m: fm.JointForce.compiled_law(m.elbow, _cubic_law))
    s = m.compile("recursive")
    seen = law_calls(monkeypatch, m.law)
    blocks = counting(monkeypatch, NL, "tree_rk_block")
    qdd = counting(monkeypatch, type(s), "qdd")
    res = s.simulate(0.05, integrator=integrator, rtol=1e-8, atol=1e-10)
    assert blocks and res.meta["steps"] > 2 and len(qdd) == 2 and not seen


def test_loop_compiled_laws_rk4_and_adaptive_compiled(monkeypatch):
    """A ``compiled_law`` cfunc on a loop's tree joint: RK4 in compiled blocks (its time
    tabulated), DOP853 with output times in compiled blocks (the kernels set the time per
    stage: ``compiled_rk4(clock=True)``); the law runs from Python only at output samples
    (the first, before the block)."""
    m = models.four_bar()
    m.law = fm.JointForce.compiled_law(m.a, _cubic_law)
    s = m.compile("recursive")
    assert s.compiled_rk4() is None and s.compiled_rk4(clock=True) is not None
    seen = law_calls(monkeypatch, m.law)
    blocks = counting(monkeypatch, NL, "loop_rk4_block")
    res = s.simulate(0.03, dt=0.01, integrator="rk4")
    assert len(res.t) == 4 and blocks
    rk_blocks = counting(monkeypatch, NL, "loop_rk_block_dense")  # (output times: dt)
    seen.clear()
    res = s.simulate(0.03, dt=0.01, integrator="dop853", rtol=1e-6, atol=1e-8)
    assert rk_blocks and set(seen) <= set(res.t.tolist())


def test_loop_compiled_laws_single_state_calls_compiled(monkeypatch):
    """A ``compiled_law`` cfunc on a loop's tree joint: ``forward_dynamics``,
    ``accelerations(compiled=True)`` and ``project`` run the loop kernels once the
    projector has its rows (the call's time in the clock); no Python call of the law."""
    m = models.four_bar()
    m.law = fm.JointForce.compiled_law(m.a, _cubic_law)
    s = m.compile("recursive")
    q, qd = s.project(*s.initial_state())
    seen = law_calls(monkeypatch, m.law)
    kernels = [
        counting(monkeypatch, NL, "loop_correct"),
        counting(monkeypatch, NS, "loop_forward_dynamics_rows"),
        counting(monkeypatch, NS, "loop_accelerations_kept"),
    ]
    s.forward_dynamics(q, qd, t=0.2)
    s.accelerations(q, qd, t=0.2, compiled=True)
    s.project(q, qd, t=0.2)
    assert all(len(k) == 1 for k in kernels) and not seen


def test_flexible_forward_dynamics_is_the_lean_pass_and_the_body_accelerations(monkeypatch):
    """Flexible trees: ``forward_dynamics`` is one compiled call, the pass of the flexible
    kernels that ``qdd_and_reactions`` makes with the body accelerations (and the finite
    check) in it."""
    s = models.flexible_pendulum().compile("recursive")
    q, qd = s.q0(), s.qd0()
    one = []
    inner = NS.flex_forward_dynamics
    monkeypatch.setattr(NS, "flex_forward_dynamics", lambda *a: one.append(a[-2]) or inner(*a))
    s.qdd_and_reactions(q, qd)
    assert one == [False]  # (its with_acc argument)
    s.forward_dynamics(q, qd)
    assert one == [False, True]


def test_tree_flexible_bodies_have_no_whole_tree_kernel():
    """Flexible trees: no compiled single-state entry point of the whole tree (one state at
    a time through the flexible CFA)."""
    s = models.flexible_pendulum().compile("recursive")
    assert s.packed_rigid(forces=True) is None


def test_tree_flexible_rk4_runs_compiled_blocks(monkeypatch):
    """Section "Recursive formulation, trees": RK4 of a tree with flexible bodies whose
    loads are gravity, constant ``tau`` and joint spring-damper laws runs whole blocks of
    output intervals in one call (``_flexblock.flex_rk4_block``); the samples' energies
    come from one compiled call after the run (``flex_energies``), no per-state Python."""
    m = models.flexible_pendulum()
    m.law = fm.JointForce.spring_damper(m.hinge, 2.0, 0.1, 0.0, lambda t: np.sin(t))
    s = m.compile("recursive")
    calls = counting(monkeypatch, FB, "flex_rk4_block")
    energies = counting(monkeypatch, FB, "flex_energies")
    qdd = counting(monkeypatch, type(s), "qdd")
    ke = counting(monkeypatch, type(s), "kinetic_energy")
    res = s.simulate(1e-4, dt=2e-5, integrator="rk4", tau=np.full(s.nv, 0.1))
    assert len(res.t) == 6 and len(calls) == 1 and len(energies) == 1
    assert not qdd and not ke


def test_tree_flexible_point_loads_run_compiled_blocks(monkeypatch):
    """Section "Recursive formulation, trees": point forces (at a deforming interface),
    point torques (a function of time) and SDAs (here to a beam point) on a tree with
    flexible bodies run the RK4 blocks and, when constant, the adaptive blocks; no
    evaluation and no energy from Python per state (one ``flex_energies`` call)."""
    m = models.flexible_pendulum()
    b = m.beam
    m.push = fm.PointForce(b, b.interface("A"), (0.0, 0.0, 1.0))
    m.spring = fm.SpringDamperActuator(m.ground, (0.5, 0.3, 0.0), b, (0.4, 0.0, 0.0), 100.0, 1.0)
    m.torque = fm.PointTorque(b, lambda t: (0.0, 0.0, 0.1 * t))
    s = m.compile("recursive")
    calls = counting(monkeypatch, FB, "flex_rk4_block")
    energies = counting(monkeypatch, FB, "flex_energies")
    qdd = counting(monkeypatch, type(s), "qdd")
    ke = counting(monkeypatch, type(s), "kinetic_energy")
    res = s.simulate(1e-4, dt=2e-5, integrator="rk4")
    assert len(res.t) == 6 and len(calls) == 1 and len(energies) == 1
    assert not qdd and not ke
    m.torque = fm.PointTorque(b, (0.0, 0.0, 0.1))
    s = m.compile("recursive")
    blocks = counting(monkeypatch, FB, "flex_rk_block")
    res = s.simulate(1e-4, integrator="RK45")
    assert len(blocks) >= 1 and len(qdd) == 2  # (scipy's start)


@pytest.mark.parametrize("integrator", ["RK45", "DOP853"])
def test_tree_flexible_time_functions_run_compiled_attempts(monkeypatch, integrator):
    """Section "Recursive formulation, trees": RK45 / DOP853 of a tree with flexible
    bodies whose loads include Python functions of time (an ``of_time`` drive, a point
    torque of time) take every attempt in one compiled call (``_nbtimed.timed_block``),
    no block of constant loads; the Python right-hand side only for scipy's start."""
    m = models.flexible_pendulum()
    m.drive = fm.JointForce.of_time(m.hinge, lambda t: 0.5 * np.sin(30.0 * t))
    m.torque = fm.PointTorque(m.beam, lambda t: (0.0, 0.0, 0.1 * t))
    s = m.compile("recursive")
    blocks = counting(monkeypatch, FB, "flex_rk_block")
    steps = []
    inner = NT.timed_block

    def block(*a):
        got = inner(*a)
        steps.append(got[0])
        return got

    monkeypatch.setattr(NT, "timed_block", block)
    qdd = counting(monkeypatch, type(s), "qdd")
    res = s.simulate(2e-3, integrator=integrator)
    assert not blocks and sum(steps) == res.meta["steps"] > 5 and len(qdd) == 2


@pytest.mark.parametrize("case", ["callable tau", "python law"])
def test_tree_flexible_rk4_fallbacks_run_python_rk4(monkeypatch, case):
    """Flexible trees with a callable ``tau`` or a load evaluated in Python (a Python joint
    force law; a user's force element): the RK4 stage loop in Python,
    four evaluations per step, each one compiled forward dynamics."""
    m = models.flexible_pendulum()
    tau = None
    if case == "callable tau":
        tau = lambda t, q, qd: np.zeros(len(qd))  # noqa: E731
    else:
        m.law = fm.JointForce(m.hinge, lambda t, q, qd: [-2.0 * q[0]])
    s = m.compile("recursive")
    calls = counting(monkeypatch, FB, "flex_rk4_block")
    qdd = counting(monkeypatch, type(s), "qdd")
    res = s.simulate(6e-5, dt=2e-5, integrator="rk4", tau=tau)
    assert len(res.t) == 4 and not calls and len(qdd) == 9


def test_tree_flexible_adaptive_runs_compiled_blocks(monkeypatch):
    """Section "Recursive formulation, trees": RK45 / DOP853 of a tree with flexible
    bodies whose loads the RK4 block covers and none a function of time: the accepted
    steps in compiled blocks (``_flexblock.flex_rk_block``), the Python right-hand side
    only for scipy's start (2 calls), the energies from one compiled call; with an
    actuator that is a function of time no such block (its compiled attempts instead:
    :func:`test_tree_flexible_time_functions_run_compiled_attempts`), the Python
    right-hand side still only for scipy's start."""
    m = models.flexible_pendulum()
    m.law = fm.JointForce.spring_damper(m.hinge, 2.0, 0.1, 0.0, 0.3)
    s = m.compile("recursive")
    calls = counting(monkeypatch, FB, "flex_rk_block")
    energies = counting(monkeypatch, FB, "flex_energies")
    qdd = counting(monkeypatch, type(s), "qdd")
    for method in ("RK45", "DOP853"):
        calls.clear(), qdd.clear(), energies.clear()
        res = s.simulate(2e-3, integrator=method, tau=np.full(s.nv, 0.1))
        assert res.meta["steps"] > 5 and len(calls) == 1 and len(qdd) == 2
        assert len(energies) == 1
    m.law2 = fm.JointForce.spring_damper(m.hinge, 0.0, 0.0, 0.0, lambda t: np.sin(t))
    calls.clear(), qdd.clear()
    res = m.compile("recursive").simulate(2e-3)
    assert not calls and len(qdd) == 2 and res.meta["steps"] > 5


def test_tree_flexible_adaptive_output_times_run_compiled_blocks(monkeypatch):
    """Section "Recursive formulation, trees": with output times (``dt``) RK45 / DOP853
    of a tree with flexible bodies (loads of the block) take every step and every sample
    in one dense block (``_flexblock.flex_rk_block_dense``: no plain block, no scipy
    dense output and no batch of samples in Python; the Python right-hand side only for
    scipy's start), the energies from one compiled call after the run; a floating base's
    momenta of every sample come from one compiled pass, flexible
    (``_flexblock.flex_momenta``) or rigid (``_momenta.momenta_history``)."""
    from flexmbd.recursive import system as S

    m = models.flexible_pendulum()
    m.law = fm.JointForce.spring_damper(m.hinge, 2.0, 0.1, 0.0, 0.3)
    s = m.compile("recursive")
    dense = counting(monkeypatch, FB, "flex_rk_block_dense")
    plain = counting(monkeypatch, FB, "flex_rk_block")
    energies = counting(monkeypatch, FB, "flex_energies")
    qdd = counting(monkeypatch, type(s), "qdd")
    batch = counting(monkeypatch, type(s), "forward_dynamics_batch")
    for method in ("RK45", "DOP853"):
        for c in (dense, plain, energies, qdd, batch):
            c.clear()
        res = s.simulate(2e-3, integrator=method, dt=1e-4, tau=np.full(s.nv, 0.1))
        assert res.meta["steps"] > 5 and len(res.t) == 21
        assert len(dense) == 1 and not plain and len(qdd) == 2 and not batch
        assert len(energies) == 1
    flex, rigid = counting(monkeypatch, FB, "flex_momenta"), []
    inner = S._momenta_history
    monkeypatch.setattr(S, "_momenta_history", lambda *a: rigid.append(1) or inner(*a))
    f = fm.Model("floating_flex")
    f.arm = fm.FlexibleBody(m.beam.reduced, geometric_stiffening=False)
    f.base = fm.Free(f.ground, f.arm, qd0=[0.1, 0.2, 0.3, 0.0, 0.0, 0.0])
    res = f.compile("recursive").simulate(1e-3, integrator="RK45", dt=1e-4)
    assert len(flex) == 1 and not rigid and res.extra["momentum_linear"].shape == (11, 3)
    r = fm.Model("floating_rigid")
    r.body = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02)
    r.base = fm.Free(r.ground, r.body, qd0=[0.1, 0.2, 0.3, 0.0, 0.0, 0.0])
    res = r.compile("recursive").simulate(1e-2, integrator="RK45", dt=1e-3)
    assert len(flex) == 1 and len(rigid) == 1 and res.extra["momentum_angular"].shape == (11, 3)


def test_single_state_forward_dynamics_is_one_compiled_call(monkeypatch):
    """``forward_dynamics`` of a rigid tree with no force element but gravity: one call of
    the compiled entry point, no Python per body."""
    s = models.double_pendulum().compile("recursive")
    s.forward_dynamics(s.q0(), s.qd0())  # the first call builds the lean path
    from flexmbd.recursive import system as S

    calls = counting(monkeypatch, S, "_qdd_reactions")
    fd = s.forward_dynamics(s.q0(), s.qd0())
    assert len(calls) == 1 and fd.qdd.shape == (2,)


# -- recursive formulation, closed loops -------------------------------------------------


def test_loop_rk4_runs_compiled_blocks(monkeypatch):
    """Section "closed loops": RK4 with projection "step", method "qr" and no callable
    ``tau`` runs compiled blocks of output intervals."""
    s = models.four_bar().compile("recursive")
    assert s.compiled_rk4() is not None
    calls = counting(monkeypatch, NL, "loop_rk4_block")
    res = s.simulate(0.05, dt=0.01, integrator="rk4")
    assert len(res.t) == 6 and calls


@pytest.mark.parametrize("integrator", ["dop853", "rk45", "rk23"])
def test_loop_adaptive_steps_are_compiled(monkeypatch, integrator):
    """DOP853 / RK45 / RK23 with projection "rhs": the steps in compiled blocks, one call
    per output interval at most (no compiled call, nor scipy's step code, per step);
    with output times the blocks run across them (``loop_rk_block_dense``)."""
    s = models.four_bar().compile("recursive")
    blocks = counting(monkeypatch, NL, "loop_rk_block_dense")
    steps = counting(monkeypatch, NL, "loop_rk_step")
    sampled = counting(monkeypatch, NL, "loop_rk_step_sampled")
    res = s.simulate(0.05, dt=0.01, integrator=integrator, rtol=1e-6, atol=1e-8)
    assert len(res.t) == 6 and 1 <= len(blocks) <= 5 and res.meta["steps"] >= 1
    assert not steps and not sampled


@pytest.mark.parametrize("case", ["callable tau", "baumgarte", "driver"])
def test_loop_fallbacks_run_python(monkeypatch, case):
    """The Python path of a loop (QR correction and accelerations from Python per
    evaluation): a callable ``tau``, another constraint method, a driver."""
    tau, method = None, None
    m = models.four_bar()
    if case == "callable tau":
        tau = lambda t, q, qd: np.zeros(3)  # noqa: E731
    elif case == "baumgarte":
        method = "baumgarte"
    else:
        m = driven_four_bar()
    s = m.compile("recursive")
    # the model (driver) or the run's option (tau, method) decides
    assert (s.compiled_rk4() is None) == (case == "driver")
    calls = counting(monkeypatch, NL, "loop_rk4_block")
    step = counting(monkeypatch, NL, "loop_rk4_step")
    res = s.simulate(0.03, dt=0.01, integrator="rk4", tau=tau, method=method)
    assert len(res.t) == 4 and not calls and not step


def test_loop_time_functions_rk4_compiled_adaptive_compiled_attempts(monkeypatch):
    """A loop with a force element that is a function of time: RK4 runs the compiled
    blocks (the values tabulated on the stage times); an adaptive run each attempt in
    one compiled call (``_nbtimed.timed_block``: no compiled steps or blocks of
    ``_nbloops``), the values of time tabulated at its stage times, the Python QR path
    only before the projector has its rows; the samples at output times one compiled
    call each with the values at their time (``LoopSystem.set_time``)."""
    m = models.four_bar()
    m.push = fm.PointForce(m.coupler, (0.5, 0.0, 0.0), lambda t: [0.0, 1.0 + t, 0.0])
    s = m.compile("recursive")
    assert s.compiled_rk4() is None and s.compiled_rk4(timed=True) is not None
    assert s.compiled_rk4(clock=True) is None
    blocks = counting(monkeypatch, NL, "loop_rk4_block")
    res = s.simulate(0.03, dt=0.01, integrator="rk4")
    assert len(res.t) == 4 and blocks
    steps = counting(monkeypatch, NL, "loop_rk_step")
    rk_blocks = counting(monkeypatch, NL, "loop_rk_block")
    attempts = counting(monkeypatch, NT, "timed_block")
    python = counting(monkeypatch, s, "accelerations")  # the Python path's evaluations
    timed = counting(monkeypatch, s, "set_time")
    res = s.simulate(0.03, dt=0.01, integrator="dop853")
    assert not steps and not rk_blocks and attempts and len(python) <= 2
    assert len(timed) >= len(res.t) - 1


def test_loop_adaptive_python_with_a_callable_tau(monkeypatch):
    s = models.four_bar().compile("recursive")
    steps = counting(monkeypatch, NL, "loop_rk_step")
    blocks = counting(monkeypatch, NL, "loop_rk_block")
    python = counting(monkeypatch, s, "accelerations")  # the Python path's evaluations
    s.simulate(0.03, dt=0.01, integrator="dop853", tau=lambda t, q, qd: np.zeros(3))
    assert not steps and not blocks and python


def test_loop_singular_start_keeps_the_qr_for_the_whole_adaptive_run(monkeypatch):
    """``qr_seen``: an adaptive run that meets a state the QR must decide (here: it starts
    at a singular configuration) keeps the Python QR at every later evaluation."""
    s = folded_four_bar().compile("recursive")
    q, qd = s.initial_state()
    st = s.stepper(0.02, dt=0.01, integrator="dop853")
    assert not s.rank_is_stable(q) and st.qr_seen
    steps = counting(monkeypatch, NL, "loop_rk_step")
    from flexmbd.checkpoint import run

    run(st, 0.02, progress=False)
    assert not steps


# -- output sampling -------------------------------------------------------------------


def test_dop853_interpolated_samples_use_the_compiled_dense_output(monkeypatch):
    """Interpolated output (``dt`` or ``t_eval``): the dense output's extra stages, the
    interpolation and each sample's correction and dynamics inside the compiled block of
    steps (``loop_rk_block_dense``: no call per step or per sample); a sample at every
    accepted step (neither) needs no dense output: its step's last evaluation gives it."""
    s = models.four_bar().compile("recursive")
    dense = counting(monkeypatch, NL, "loop_dop853_dense")
    after = counting(monkeypatch, NL, "loop_correct_samples")
    blocks = counting(monkeypatch, NL, "loop_rk_block_dense")
    res = s.simulate(0.05, dt=0.005, integrator="dop853", rtol=1e-6, atol=1e-8)
    assert not dense and not after and 1 <= len(blocks) < len(res.t) - 1
    blocks = counting(monkeypatch, NL, "loop_rk_block_sampled")
    steps = counting(monkeypatch, NL, "loop_rk_step_sampled")
    res = s.simulate(0.05, integrator="dop853", rtol=1e-6, atol=1e-8)
    # every accepted step and its sample in compiled blocks (no call per step)
    assert not dense and not steps and 1 <= len(blocks) < res.meta["steps"]
    assert res.meta["steps"] == len(res.t) - 1


def test_rk4_samples_are_the_intervals_first_stage():
    """RK4: a sample is the first stage of its interval, so the right-hand-side count per
    interval is 4 substeps whether or not it is sampled."""
    s = models.four_bar().compile("recursive")
    res = s.simulate(0.05, dt=0.01, integrator="rk4", substeps=3)
    ev = res.stats["rhs_evaluations"]
    assert np.array_equal(np.diff(ev), np.full(5, 12))


def test_tree_qdd_evaluates_table_elements_in_the_compiled_call(monkeypatch):
    """Section "trees": ``qdd`` (the integrators' call) and ``qdd_and_reactions`` evaluate
    constant elements and spring-damper joint laws inside the compiled call, and so do
    ``forward_dynamics``, ``forward_dynamics_batch`` and ``inverse_dynamics`` (the same
    numbers: one kernel for the single-state calls)."""
    s = loaded_pendulum(
        motor=lambda m: fm.JointForce(m.shoulder, [0.2]),
        law=lambda m: fm.JointForce.spring_damper(m.elbow, 10.0, 0.1),
    ).compile("recursive")
    calls = counting(monkeypatch, fm.PointForce, "wrenches")
    laws = counting(monkeypatch, fm.JointForce, "generalized_force")
    tree = counting(monkeypatch, NF, "tree_forward")
    qdd = s.qdd(s.q0(), s.qd0())
    qdd2, reac = s.qdd_and_reactions(s.q0(), s.qd0())
    fd = s.forward_dynamics(s.q0(), s.qd0())
    batch = s.forward_dynamics_batch(np.array([s.q0()] * 2), np.array([s.qd0()] * 2))
    s.inverse_dynamics(s.q0(), s.qd0(), qdd)
    assert not calls and not laws and len(tree) == 1
    assert np.array_equal(fd.qdd, qdd) and np.array_equal(qdd, qdd2)
    assert np.array_equal(fd.reactions, reac) and np.array_equal(batch.qdd[1], qdd)


def test_loop_joint_force_on_a_cut_joint_leaves_the_compiled_loop():
    m = models.four_bar()
    m.damper = fm.JointForce(m.d, [0.1])
    assert m.compile("recursive").compiled_rk4() is None


def test_loop_forward_dynamics_is_compiled_once_the_projector_has_rows(monkeypatch):
    s = models.four_bar().compile("recursive")
    q, qd = s.project(*s.initial_state())
    calls = counting(monkeypatch, NS, "loop_forward_dynamics_rows")
    s.forward_dynamics(q, qd)
    assert calls


def test_loop_per_component_tolerances_run_scipys_step_code(monkeypatch):
    s = models.four_bar().compile("recursive")
    steps = counting(monkeypatch, NL, "loop_rk_step")
    s.simulate(0.02, dt=0.01, integrator="dop853", atol=np.full(2 * s.nv, 1e-8))
    assert not steps


def test_equal_step_times_mark_the_compiled_implicit_loop():
    """Section "Telling which path a run took": the compiled loop spreads a block's time
    evenly over its steps; the generic path times each step."""
    s = models.double_pendulum().compile("absolute")
    fast = s.simulate(0.05, dt=0.01, integrator="newmark").stats["step_time"][1:]
    slow = fm.integrators.implicit.integrate(s, 0.05, 0.01, engine=False).stats["step_time"][1:]
    assert np.all(fast == fast[0]) and len(np.unique(slow)) == len(slow) == 5


def test_loop_rk4_crosses_a_singular_window_in_compiled_weak_steps(monkeypatch):
    """Section "closed loops": at weak (singular) states RK4 takes compiled weak steps
    (``loop_rk4_step_weak``), then the compiled blocks resume. The example's four-bar
    (rtol 3e-2: a wide singular window) over its first crossing."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "four_bar.py"
    spec = importlib.util.spec_from_file_location("four_bar_example", path)
    fb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fb)
    s = fb.build().compile("recursive", rtol=3e-2, tangent_projection=True)
    weak = counting(monkeypatch, NL, "loop_rk4_step_weak")
    blocks = []
    inner = NL.loop_rk4_block

    def block(*args):
        done = inner(*args)
        blocks.append((args[18], done))  # (first interval, intervals done)
        return done

    monkeypatch.setattr(NL, "loop_rk4_block", block)
    res = s.simulate(0.8, dt=1e-3, integrator="rk4", progress=False)
    w = np.flatnonzero(res.stats["n_weak"] == 1)
    assert len(w) >= 10 and weak
    assert sum(d for _, d in blocks) > 0.8 * len(res.t)  # most intervals in blocks ...
    assert any(i > w[-1] and d > 0 for i, d in blocks)  # ... again after the window
