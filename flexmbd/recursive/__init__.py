"""Recursive formulation: joint coordinates of the spanning tree (plus the modal
coordinates of flexible bodies), solved by the Constraint Force Algorithm (Liu, Hu,
Zhang 2016; extended to flexible bodies in :mod:`flexmbd.recursive.flexible`).

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

from .schedule import Schedule, build_schedule
from .system import ForwardDynamics, RecursiveSystem, compile_system

__all__ = ["compile_system", "RecursiveSystem", "ForwardDynamics", "Schedule", "build_schedule"]
