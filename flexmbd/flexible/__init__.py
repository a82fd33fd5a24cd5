"""Flexible bodies in the floating frame of reference."""

from .ffr import ModalInvariants, gravity_forces, kinetic_energy, mass_matrix, velocity_forces

__all__ = ["ModalInvariants", "mass_matrix", "velocity_forces", "gravity_forces", "kinetic_energy"]
