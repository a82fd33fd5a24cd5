"""Exceptions raised by flexmbd.

Every error names the component it concerns and says how to fix the input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


class FlexmbdError(Exception):
    """Base class of every error raised by flexmbd."""


class ModelError(FlexmbdError, ValueError):
    """Invalid model input: names, masses, inertias, axes, frames, connections."""


class TopologyError(ModelError):
    """Invalid connectivity: isolated branches, unknown bodies, bad incidence data."""


class MeshError(FlexmbdError, ValueError):
    """Unsupported or invalid mesh, empty interface selection, missing material."""


class SolverError(FlexmbdError, RuntimeError):
    """A solver failed (Newton divergence, singular system, NaN).

    ``partial`` holds the results computed up to the failure (or None): every sample
    up to the last good step. ``time`` is the simulation time at which it failed: the
    end of the step that could not be taken (Newton did not converge there, or the
    state became non-finite on the way); for a failure outside a step (e.g. the
    initial state) the time of that state.
    """

    def __init__(self, message: str, partial: Any | None = None, time: float | None = None) -> None:
        super().__init__(message)
        self.partial = partial
        self.time = time


class ConvergenceError(SolverError):
    """Newton iterations did not converge within the allowed iterations."""


class FileError(FlexmbdError, OSError):
    """A file cannot be read or written: missing, a directory, unwritable, in use by
    another run, already holding saved work, or not a (complete) flexmbd file."""


class UnitsWarning(UserWarning):
    """Input whose size or magnitude suggests a unit mix-up (flexmbd works in SI).

    E.g. a mesh hundreds of metres across with a steel-like material (a mesh in
    millimetres), or a material whose wave speed sqrt(E/rho) no solid reaches.
    """


class ModeWarning(UserWarning):
    """The mode count asked for keeps only part of a group of equal natural frequencies
    (e.g. one of the two equal bending modes of a square section): the modes kept are a
    convention (the first of the group's canonical basis), not physics; keep whole
    groups."""


class PhysicsWarning(UserWarning):
    """A run shows physically meaningless behaviour but goes on (e.g. a runaway of a
    flexible body with ``FLEXMBD_RUNAWAY=warn``, see :mod:`flexmbd.monitor`)."""
