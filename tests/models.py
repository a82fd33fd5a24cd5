"""Models shared by the tests (built once here, imported by every test that needs them).

``import models`` from any test module: pytest puts ``tests/`` on ``sys.path`` (the
rootdir-relative import mode of the top-level test files). Each function returns a
new :class:`flexmbd.Model`, so a test may change it freely.
"""

import numpy as np

import flexmbd as fm


def double_pendulum(elbow_axis=(0.0, 0.0, 1.0)):
    """The README's double pendulum: two 1 kg, 1 m rods on revolutes under gravity.

    ``elbow_axis`` tilts the elbow (a spatial pendulum); the README's is planar (z).
    """
    m = fm.Model("double_pendulum")
    m.upper = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.lower = fm.RigidBody.rod(mass=1.0, length=1.0, radius=0.02, origin="end")
    m.shoulder = fm.Revolute(m.ground, m.upper, axis=(0, 0, 1), q0=[-np.pi / 4])
    m.elbow = fm.Revolute(m.upper, m.lower, parent_frame=(1.0, 0, 0), axis=elbow_axis)
    m.g = fm.Gravity((0, -9.81, 0))
    return m


def four_bar():
    """Planar four-bar of 1 m rods, a closed loop (the recursive formulation cuts a joint
    and runs a LoopSystem); joints ``a``-``d``, the loop closes at ``d``."""
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


_REDUCED = {}


def flexible_pendulum():
    """The README's flexible pendulum, small: a Craig-Bampton steel beam (2 fixed-interface
    modes + 6 constraint modes of interface A) hinged on the deforming interface A."""
    if "beam" not in _REDUCED:
        steel = fm.Material(E=2.1e11, nu=0.3, rho=7850.0)
        _REDUCED["beam"] = fm.fem.reduce(
            fm.data.mesh("beam_hex"),
            steel,
            fm.CraigBampton(2, interfaces={"A": "A"}, frame="interface"),
            name="beam",
        )
    p = fm.Model("flexible_pendulum")
    p.beam = fm.FlexibleBody(_REDUCED["beam"])
    p.hinge = fm.Revolute(
        p.ground,
        p.beam,
        axis=(0, 0, 1),
        parent_frame=(0, 0.025, 0.025),
        child_frame=p.beam.interface("A"),
    )
    p.g = fm.Gravity((0, -9.81, 0))
    return p


def pendulum(mass=1.0):
    """One rod (``mass`` kg, 1 m) on a revolute ``hinge`` about z, q0 = 0.5 rad, gravity."""
    m = fm.Model("pendulum")
    m.link = fm.RigidBody.rod(mass, 1.0, origin="end", radius=0.02)
    m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1), q0=[0.5])
    m.g = fm.Gravity((0, -9.81, 0))
    return m


class Oscillator:
    """A unit harmonic oscillator stepped by symplectic Euler (step ``h`` s, start ``x``):
    the smallest stepper :func:`flexmbd.checkpoint.run` accepts."""

    def __init__(self, h=0.01, x=1.0):
        self.t, self.x, self.v, self.h = 0.0, x, 0.0, h

    def step(self):
        self.v -= self.h * self.x
        self.x += self.h * self.v
        self.t += self.h

    def sample(self):
        return {"q": np.array([self.x]), "qd": np.array([self.v])}

    def header(self):
        return {"coordinates": [("x", "x")], "speeds": [("x", "v")], "joint_names": [], "meta": {}}

    def state_dict(self):
        return {"t": self.t, "x": self.x, "v": self.v}

    def load_state_dict(self, s):
        self.t, self.x, self.v = s["t"], s["x"], s["v"]


def stiffened_pendulum(rb, name="itf_hanging"):
    """A flexible beam ``rb`` (a reduced body with interface ``B``, geometric stiffening on)
    hanging from a rigid arm (1.5 kg, centre of mass 0.3 m out) by a revolute ``j1`` at
    0.6 m whose child frame is the beam's interface B (a deforming child frame that carries
    the lagged interface load); the arm on a revolute ``j0`` to the ground; gravity -9.81 y.
    A double pendulum released with 3 rad/s in ``j1``."""
    m = fm.Model(name)
    m.arm = fm.RigidBody(1.5, (0.02, 0.03, 0.04), com=(0.3, 0.0, 0.0))
    m.beam = fm.FlexibleBody(rb)
    m.j0 = fm.Revolute(m.ground, m.arm, axis=(0, 0, 1))
    m.j1 = fm.Revolute(
        m.arm,
        m.beam,
        axis=(0, 0, 1),
        parent_frame=(0.6, 0.0, 0.0),
        child_frame=m.beam.interface("B"),
        qd0=[3.0],
    )
    m.g = fm.Gravity((0.0, -9.81, 0.0))
    return m
