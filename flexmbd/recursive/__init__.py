"""Recursive formulation: joint coordinates of the spanning tree (plus the modal
coordinates of flexible bodies), solved by the Constraint Force Algorithm (Liu, Hu,
Zhang 2016; extended to flexible bodies in :mod:`flexmbd.recursive.flexible`), and
closed loops on top of the tree solver (:class:`LoopSystem`, :mod:`flexmbd.recursive.loops`).

>>> import flexmbd as fm
>>> m = fm.Model("pendulum")
>>> m.link = fm.RigidBody.rod(1.0, 1.0, radius=0.01, origin="end")
>>> m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1))
>>> m.g = fm.Gravity((0, -9.81, 0))
>>> sys = m.compile("recursive")
>>> fd = sys.forward_dynamics([0.0], [0.0])
>>> round(float(fd.qdd[0]), 4)   # -m g (L/2) / (m L^2/3 + m r^2/4)
-14.7139
"""

from .compile import compile_system
from .schedule import Schedule, build_schedule
from .system import ForwardDynamics, RecursiveSystem

__all__ = [
    "compile_system",
    "RecursiveSystem",
    "ForwardDynamics",
    "Schedule",
    "build_schedule",
    "LoopSystem",
    "compile_loops",
    "needs_loops",
]

_LOOPS = ("LoopSystem", "compile_loops", "needs_loops")


def __getattr__(name):
    # the closed-loop formulation (constraints, projection, its stepper) loads on first use
    if name in _LOOPS:
        from . import loops

        return getattr(loops, name)
    raise AttributeError(f"module 'flexmbd.recursive' has no attribute {name!r}")
