"""A checkpointed run cut short between two of its chunks (the resume tests)."""

import contextlib

import pytest

from flexmbd.integrators.stepper import ExplicitStepper


@contextlib.contextmanager
def interrupted_at_chunk(monkeypatch, at=3):
    """Inside the ``with`` block ``ExplicitStepper.advance`` raises at its ``at``-th call
    (the run stops after ``at - 1`` checkpointed chunks), and the block must end by that
    interruption; yields the list of the chunk sizes the run asked for."""

    class Interrupted(BaseException):
        pass

    real, seen = ExplicitStepper.advance, []

    def advance(self, n=None):
        seen.append(n)
        if len(seen) == at:
            raise Interrupted
        return real(self, n)

    monkeypatch.setattr(ExplicitStepper, "advance", advance)
    try:
        with pytest.raises(Interrupted):
            yield seen
    finally:
        monkeypatch.setattr(ExplicitStepper, "advance", real)
