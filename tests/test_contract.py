"""One System contract (issue #12 item 2, #13 item 5): the same ``forward_dynamics``
signature and result type, the same coordinate layout object, in the recursive tree, the
recursive formulation with closed loops and the absolute formulation; batches through an
explicit call; the single-state call is the compiled one."""

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.dynamics import CoordinateLayout, ForwardDynamics, ModalSlice


def double_pendulum():
    m = fm.Model("double_pendulum")
    m.upper = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.lower = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.shoulder = fm.Revolute(m.ground, m.upper, axis=(0, 0, 1), q0=[-np.pi / 4])
    m.elbow = fm.Revolute(m.upper, m.lower, parent_frame=(1.0, 0, 0), q0=[0.3])
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def four_bar():
    m = fm.Model("four_bar")
    m.crank = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.coupler = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.rocker = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.a = fm.Revolute(m.ground, m.crank, q0=[np.pi / 2])
    m.b = fm.Revolute(m.crank, m.coupler, parent_frame=(1.0, 0, 0), q0=[-np.pi / 2])
    m.c = fm.Revolute(m.coupler, m.rocker, parent_frame=(1.0, 0, 0), q0=[-np.pi / 2])
    m.d = fm.Revolute(m.rocker, m.ground, parent_frame=(1.0, 0, 0), child_frame=(1.0, 0, 0))
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def _absolute_state(ab, rec, q, qd):
    return ab.state_from_bodies(rec.body_states(q, qd))


def test_same_signature_and_result_type_in_every_formulation():
    rng = np.random.default_rng(0)
    tree = double_pendulum()
    rec, ab = tree.compile("recursive"), tree.compile("absolute")
    loop = four_bar().compile("recursive")
    q, qd, tau = np.array([0.4, -0.7]), np.array([1.1, -0.5]), np.array([0.8, -0.3])
    Q, QD = _absolute_state(ab, rec, q, qd)
    results = {
        "tree": rec.forward_dynamics(q, qd, tau, t=0.0),
        "absolute": ab.forward_dynamics(Q, QD, tau, t=0.0),
        "loop": loop.forward_dynamics(loop.q0(), loop.qd0() + 0.0, None, t=0.0),
    }
    for name, fd in results.items():
        assert type(fd) is ForwardDynamics, name
        assert dataclasses.is_dataclass(fd)
        with pytest.raises(dataclasses.FrozenInstanceError):
            fd.qdd = None
        assert fd.reactions.shape == (len(fd.layout.joint_names), 6)
        assert fd.body_accelerations.shape == (len(fd.layout.body_names), 6)
        assert isinstance(fd.layout, CoordinateLayout)
        assert set(fd.reactions_by_name) == set(fd.layout.joint_names)
    # the two formulations agree by name: reactions, body accelerations (tau mapped
    # through the joints' speeds in the absolute one)
    fr, fa = results["tree"], results["absolute"]
    for j in tree.joints():
        np.testing.assert_allclose(fa.reaction(j.name), fr.reaction(j.name), atol=1e-9)
    np.testing.assert_allclose(fa.body_accelerations, fr.body_accelerations, atol=1e-9)
    # tau in the absolute formulation is the joint torque: the motion-direction part of
    # the reaction (revolute axis z) is tau itself, in both formulations
    assert abs(fa.reaction("shoulder")[2] - tau[0]) < 1e-9
    assert abs(fr.reaction("elbow")[2] - tau[1]) < 1e-9
    # the loop result carries the projection and the tree solution
    fl = results["loop"]
    assert fl.rank == 2 and fl.tree is not None and fl.lam.shape == (len(loop.constraint_names),)
    assert rng is not None


def test_loop_and_absolute_agree_by_joint_name():
    m = four_bar()
    loop, ab = m.compile("recursive"), m.compile("absolute")
    q, qd = loop.q0(), loop.qd0()
    qd = loop.project(q, qd + np.array([0.7, 0.0, 0.0]))[1]
    fl = loop.forward_dynamics(q, qd)
    fa = ab.forward_dynamics(*_absolute_state(ab, loop, q, qd))
    np.testing.assert_allclose(fl.body_accelerations, fa.body_accelerations, atol=1e-8)
    # planar loop: redundant out-of-plane rows make the individual reactions
    # non-unique; the in-plane parts (fx, fy, nz) are determined
    for j in m.joints():
        np.testing.assert_allclose(
            fl.reaction(j.name)[[2, 3, 4]],
            fa.reaction(j.name)[[2, 3, 4]],
            atol=1e-7,
            err_msg=j.name,
        )


@pytest.mark.parametrize("kind", ["tree", "absolute", "loop"])
def test_batch_call_equals_single_calls(kind):
    rng = np.random.default_rng(3)
    m = four_bar() if kind == "loop" else double_pendulum()
    s = m.compile("absolute" if kind == "absolute" else "recursive")
    if kind == "absolute":
        rec = m.compile("recursive")
        states = [_absolute_state(s, rec, rng.normal(size=2), rng.normal(size=2)) for _ in range(3)]
        taus = rng.normal(size=(3, s.n_tau))
    else:
        states = (
            [(s.q0(), s.qd0()) for _ in range(3)]
            if kind == "loop"
            else [(rng.normal(size=2), rng.normal(size=2)) for _ in range(3)]
        )
        taus = rng.normal(size=(3, s.nv))
    Q = np.array([x[0] for x in states])
    QD = np.array([x[1] for x in states])
    fb = s.forward_dynamics_batch(Q, QD, taus, t=0.1)
    assert type(fb) is ForwardDynamics and fb.qdd.shape == (3, s.layout.nv)
    for i in range(3):
        fi = s.forward_dynamics(Q[i], QD[i], taus[i], t=0.1)
        np.testing.assert_allclose(fb.qdd[i], fi.qdd, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(fb.reactions[i], fi.reactions, rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(
            fb.body_accelerations[i], fi.body_accelerations, rtol=1e-13, atol=1e-12
        )


def test_single_state_call_is_the_compiled_entry_point():
    """The documented call returns exactly the lean entry point's numbers, and its body
    accelerations exactly the batch kernel's."""
    from tests.recursive.models import chain

    s = chain(6).compile("recursive")
    rng = np.random.default_rng(1)
    q, qd, tau = rng.normal(size=(3, 6))
    fd = s.forward_dynamics(q, qd, tau)
    qdd, reac = s.qdd_and_reactions(q, qd, tau)
    assert np.array_equal(fd.qdd, qdd) and np.array_equal(fd.reactions, reac)
    fb = s.forward_dynamics_batch(q[None], qd[None], tau[None])
    np.testing.assert_allclose(
        fd.body_accelerations, fb.body_accelerations[0], rtol=1e-14, atol=1e-13
    )
    # the general (dense) algorithm: same contract, same numbers
    fg = s.forward_dynamics(q, qd, tau, algorithm="general")
    np.testing.assert_allclose(fg.body_accelerations, fd.body_accelerations, atol=1e-10)


def test_one_state_only_and_clear_size_errors():
    s = double_pendulum().compile("recursive")
    with pytest.raises(fm.ModelError, match="forward_dynamics_batch"):
        s.forward_dynamics(np.zeros((3, 2)), np.zeros((3, 2)))
    ab = double_pendulum().compile("absolute")
    with pytest.raises(fm.ModelError, match="tau needs 2 values"):
        ab.forward_dynamics(ab.q0(), ab.qd0(), np.zeros(3))
    with pytest.raises(fm.ModelError, match="scalar time"):
        ab.forward_dynamics(ab.q0(), ab.qd0(), None, t=np.zeros(2))
    with pytest.raises(fm.ModelError, match="no joint 'knee'"):
        s.forward_dynamics(np.zeros(2), np.zeros(2)).reaction("knee")


def test_one_layout_object_for_modal_coordinates():
    steel = fm.Material(E=2.1e11, nu=0.3, rho=7850.0)
    beam = fm.fem.reduce(
        fm.data.mesh("beam_hex"),
        steel,
        fm.CraigBampton(2, interfaces={"A": "A"}, frame="interface"),
        name="beam",
    )
    p = fm.Model("flexible_pendulum")
    p.beam = fm.FlexibleBody(beam)
    p.hinge = fm.Revolute(
        p.ground,
        p.beam,
        axis=(0, 0, 1),
        parent_frame=(0, 0.025, 0.025),
        child_frame=p.beam.interface("A"),
    )
    p.g = fm.Gravity((0, -9.81, 0))
    rec, ab = p.compile("recursive"), p.compile("absolute")
    n = p.beam.n_modes
    for s, q0 in ((rec, 1), (ab, 7)):
        sl = s.layout.modal["beam"]
        assert isinstance(sl, ModalSlice) and sl.n == n and s.modal_slices["beam"] is sl
        assert sl.q == slice(q0, q0 + n)
        assert [s.layout.coordinates[i] for i in range(sl.q.start, sl.q.stop)] == [
            ("beam", f"q{i + 1}") for i in range(n)
        ]
        sq, sv = sl  # unpacks as (coordinates, speeds)
        assert sq == sl.q and sv == sl.v
    q = rec.q0()
    q[rec.layout.modal["beam"].q] = np.arange(1, n + 1) * 1e-6
    fd = rec.forward_dynamics(q, rec.qd0())
    np.testing.assert_array_equal(
        fd.modal_accelerations["beam"], fd.qdd[rec.layout.modal["beam"].v]
    )
    np.testing.assert_array_equal(rec.modal(q, "beam"), np.arange(1, n + 1) * 1e-6)
    assert set(rec.layout.joints) == {"hinge"} and not rec.layout.bodies
    assert set(ab.layout.bodies) == {"beam"} and not ab.layout.joints


# Private attributes of other objects: none read anywhere in the package except
# third-party private API with no public equivalent (defining module, attribute). The
# modelling framework's plumbing between components and blocks goes through public
# methods (register_in, unregister, add_member, apply_rule, mark_changed, summary).
ALLOWED = {
    # numpy's madvise(MADV_HUGEPAGE) switch for new arrays exists only privately
    ("fem/_threads.py", "_core"),
    ("fem/_threads.py", "_get_madvise_hugepage"),
    ("fem/_threads.py", "_set_madvise_hugepage"),
    # numba's LLVM struct proxy: _getvalue() is how an intrinsic returns the built struct
    ("recursive/_kernels.py", "_getvalue"),
    ("_jit.py", "_cache"),  # numba has no public way to give a dispatcher its cache class
    # nor to refuse a Python call of a kernel compiled without its Python wrapper (the
    # dispatcher's hook for calls no compiled version matches)
    ("_jit.py", "_compile_for_args"),
    # nor to load a cached library without parsing its bitcode: the code generator's
    # library class and its execution engine (the loaded kernel's entry address)
    ("_jit.py", "_library_class"),
    ("_jit.py", "_engine"),
}
SELF = {"self", "cls"}


def _private_reads(path):
    """Private attributes (``x._name``, ``getattr(x, "_name")``) read on anything but
    ``self``/``cls`` and imported modules."""
    tree = ast.parse(path.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
    out = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            v = node.value
            if isinstance(v, ast.Name) and (
                v.id in SELF or v.id in imported or not v.id[0].islower()
            ):
                continue
            out.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and node.args[1].value.startswith("_")
            and not node.args[1].value.startswith("__")
            and not (isinstance(node.args[0], ast.Name) and node.args[0].id in SELF)
        ):
            out.add(node.args[1].value)
    return out


def test_no_module_reads_other_objects_private_attributes():
    root = Path(fm.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        found |= {(rel, a) for a in _private_reads(path)}
    assert found - ALLOWED == set()
