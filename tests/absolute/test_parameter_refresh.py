"""Parameter writes update a compiled absolute system in place (no rebuild), and every
write is seen: after it the system gives the numbers of a freshly compiled one, bit for bit.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import flexmbd as fm
import flexmbd.pyomo as fmo
from flexmbd.absolute.engine import Engine
from flexmbd.errors import ModelError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from models import flexible_pendulum  # noqa: E402

TERMS = ("R", "Q", "PtL", "phi", "M", "Kin", "Din", "Phq", "H", "KQ", "DQ")


def rigid_model():
    """Two-link chain: gravity, a rigid-end SDA, a viscous bearing, a point load."""
    m = fm.Model("chain")
    m.a = fm.RigidBody(2.0, inertia=(0.01, 0.2, 0.2), com=(0.5, 0, 0))
    m.b = fm.RigidBody(1.5, inertia=(0.05, 0.1, 0.12), com=(0.4, 0.02, 0))
    m.ha = fm.Revolute(m.ground, m.a, axis=(0, 0, 1), q0=[0.3], qd0=[0.5])
    m.hb = fm.Revolute(m.a, m.b, axis=(0, 0, 1), parent_frame=(1.0, 0, 0), q0=[-0.4])
    m.g = fm.Gravity((0, -9.81, 0))
    m.sda = fm.SpringDamperActuator(m.ground, (0.5, 0.8, 0), m.b, (0.8, 0, 0), k=60.0, c=3.0)
    m.fric = fmo.ViscousBearing(m.hb, 0.2)
    m.push = fm.PointForce(m.b, (0.8, 0, 0), (0.0, 4.0, 0.0))
    return m


def state(s, seed):
    """The initial configuration (modal coordinates perturbed) with random rates,
    accelerations and multipliers."""
    rng = np.random.default_rng(seed)
    q, qd, _, _ = s.initial_conditions()
    q[s.n_rigid :] += 1e-5 * rng.standard_normal(s.n - s.n_rigid)
    return (
        q,
        qd + 0.1 * rng.standard_normal(s.n),
        rng.standard_normal(s.n),
        rng.standard_normal(s.nc),
    )


def terms(s, x):
    T = s.dae_terms(*x, t=0.1)
    return {k: getattr(T, k) for k in TERMS}


def equal(a, b):
    """Arrays or COO triplets equal, bit for bit."""
    if isinstance(a, tuple):
        return all(np.array_equal(u, v) for u, v in zip(a, b))
    return np.array_equal(a, b)


def assert_same_terms(A, B):
    for k in TERMS:
        assert equal(A[k], B[k]), k


def check_write(m, write, seed=0, simulate=True):
    """Write a parameter into a compiled model: the system refreshes without a rebuild,
    its terms, initial conditions and a short simulation change and equal those of a
    system compiled after the write, bit for bit."""
    s = m.compile("absolute")
    x = state(s, seed)
    before = terms(s, x)
    ic0 = s.initial_conditions()
    if simulate:
        s.simulate(0.02, 0.01)  # builds the compiled engine where supported
    structure = s.constraints
    engine = s.engine() if simulate and Engine.supports(s) else None
    write()
    s.refresh()
    assert s.constraints is structure  # updated in place, not rebuilt
    if engine is not None:
        assert s.engine() is engine  # the compiled engine too (masses, modal matrices)
    after = terms(s, x)
    assert any(not equal(before[k], after[k]) for k in TERMS)  # the write changed them
    fresh = m.compile("absolute")
    assert_same_terms(after, terms(fresh, x))
    for a, b in zip(s.initial_conditions(), fresh.initial_conditions()):
        np.testing.assert_array_equal(a, b)
    if simulate:
        r1, r2 = s.simulate(0.05, 0.01), fresh.simulate(0.05, 0.01)
        np.testing.assert_array_equal(r1.q, r2.q)
        np.testing.assert_array_equal(r1.qd, r2.qd)
    return ic0


@pytest.mark.parametrize(
    "component, attribute, value",
    [
        ("a", "mass", 2.5),
        ("b", "inertia", (0.06, 0.15, 0.11)),
        ("b", "com", (0.35, 0.0, 0.01)),
        ("sda", "k", 85.0),
        ("sda", "c", 1.25),
        ("sda", "l0", 0.7),
        ("g", "g", (0.0, -3.7, 0.0)),
        ("fric", "c", 0.45),
    ],
)
def test_rigid_parameter_write_is_seen_without_rebuild(component, attribute, value):
    m = rigid_model()
    check_write(m, lambda: setattr(getattr(m, component), attribute, value), seed=3)


@pytest.mark.parametrize(
    "writes",
    [
        {("a", "mass"): 3.0, ("sda", "k"): 20.0, ("sda", "c"): 0.5},
        {("sda", "k"): 20.0},  # the engine is kept: its force table re-reads k
        {("sda", "l0"): 0.9},
        {("g", "g"): (0.0, 0.0, -9.81)},
    ],
)
def test_compiled_engine_sees_parameter_writes(writes):
    """A model the compiled engine runs (no Python joint law): its simulation after
    parameter writes equals a fresh system's, bit for bit."""
    m = rigid_model()
    del m.fric
    s = m.compile("absolute")
    assert s.engine().supports(s)

    def write():
        for (c, a), v in writes.items():
            setattr(getattr(m, c), a, v)

    check_write(m, write, seed=4)


def test_structural_writes_rebuild():
    m = rigid_model()
    s = m.compile("absolute")
    structure = s.constraints
    m.ha.q0 = [0.1]  # a joint's initial angle: not a parameter attribute
    s.refresh()
    assert s.constraints is not structure
    fresh = m.compile("absolute")
    for a, b in zip(s.initial_conditions(), fresh.initial_conditions()):
        np.testing.assert_array_equal(a, b)
    structure = s.constraints
    m.sda.l0 = None  # back to the default (the initial length): rebuilt
    s.refresh()
    assert s.constraints is not structure
    assert m.sda.l0 == pytest.approx(fresh.force_terms.sda_batch.el[0].l0)


def test_long_change_log_falls_back_to_a_rebuild():
    m = rigid_model()
    s = m.compile("absolute")
    structure = s.constraints
    for i in range(300):  # more writes than the model remembers
        m.sda.k = 60.0 + i
    assert m.changes_since(m.revision - 300) is None
    assert m.changes_since(m.revision - 2) == [(m.sda, "k")] * 2
    s.refresh()
    assert s.constraints is not structure
    x = state(s, 5)
    assert_same_terms(terms(s, x), terms(m.compile("absolute"), x))


def test_bad_parameter_raises_in_place():
    m = rigid_model()
    s = m.compile("absolute")
    m.a.mass = -1.0
    with pytest.raises(ModelError, match="rigid body 'a': mass must be a positive"):
        s.refresh()


@pytest.mark.parametrize("name, value", [("beam.zeta[1]", 0.02), ("beam.stiffness_scale", 1.3)])
def test_modal_parameter_write_is_seen_without_rebuild(name, value):
    m = flexible_pendulum()
    m.beam.geometric_stiffening = False
    P = fmo.parameters(m)
    check_write(m, lambda: setattr(P[name], "value", value), seed=6)
