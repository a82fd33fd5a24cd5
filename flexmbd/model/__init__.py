"""Pyomo-style declarative model: components named by attribute, rules, blocks."""

from . import forces, joints
from .block import Block
from .bodies import Body, Frame, Ground, RigidBody
from .component import Component, IndexedComponent
from .forces import ForceElement, Gravity, JointForce, PointForce, PointTorque
from .joints import (
    Cylindrical,
    Fixed,
    Free,
    Joint,
    Planar,
    Prismatic,
    Revolute,
    Screw,
    Spherical,
    Universal,
)
from .model import Model

__all__ = [
    "Block",
    "Body",
    "Frame",
    "Ground",
    "RigidBody",
    "Component",
    "IndexedComponent",
    *forces.__all__,
    *joints.__all__,
    "Model",
]
