"""A failing run on the compiled blocks and on the reference path (the failure tests)."""

import pytest

import flexmbd as fm


def failures_on_both_paths(monkeypatch, cls, flag, call):
    """``(fast, ref)``: the :class:`flexmbd.errors.SolverError` that ``call()`` raises with
    the stepper class attribute ``cls.flag`` True (the compiled blocks), then False (the
    reference path); each run must fail so."""
    errs = []
    for on in (True, False):
        monkeypatch.setattr(cls, flag, on)
        with pytest.raises(fm.errors.SolverError) as info:
            call()
        errs.append(info.value)
    return tuple(errs)
