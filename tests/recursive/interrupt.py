"""A checkpointed run cut short between two of its chunks (the resume tests)."""

import contextlib

import pytest

import flexmbd as fm
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


def resumes_in_blocks(monkeypatch, m, s, t_end, kw, every, path, ref, count, same):
    """Run ``s`` (compiled from the model ``m``) to ``t_end`` (s) with the simulate
    keywords ``kw`` and a checkpoint at ``path`` every ``every`` steps, interrupted at its
    third chunk, and resume it: ``same(resumed, ref)`` compares it with the uninterrupted
    run ``ref``, and every resumed step must have run in the compiled blocks
    (``count(monkeypatch)[0]``: the accepted steps of each block call from then on)."""
    assert ref.meta["steps"] > 3 * every
    with interrupted_at_chunk(monkeypatch) as seen:
        s.simulate(t_end, checkpoint=path, every=every, **kw)
    assert seen[:2] == [every, every]
    blocks = count(monkeypatch)[0]
    same(fm.resume(path, model=m), ref)
    assert sum(blocks) == ref.meta["steps"] - 2 * every
