"""Progress bars for simulations, reductions and sweeps (tqdm, optional).

One helper the integrators, reductions and sweeps call::

    from flexmbd.progress import progress

    with progress(total=n_steps, desc="generalized-alpha", enabled=None) as bar:
        for k in range(n_steps):
            ...
            bar.update(1)

``enabled=None`` (the default) decides automatically: the environment variable
``FLEXMBD_PROGRESS`` wins (``0``/``false``/``off`` silences every bar, ``1``/``true``/
``on`` forces them), otherwise a bar is shown only when standard error is a
terminal. Tests and CI are therefore quiet by default. Without tqdm installed the
bar is a silent no-op object with the same methods.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["progress", "progress_enabled", "NullBar"]

_OFF = {"0", "false", "off", "no", ""}
_ON = {"1", "true", "on", "yes"}


def progress_enabled(enabled: bool | None = None) -> bool:
    """Whether a bar should be drawn (see the module docstring for the rule)."""
    if enabled is not None:
        return bool(enabled)
    env = os.environ.get("FLEXMBD_PROGRESS")
    if env is not None:
        v = env.strip().lower()
        if v in _ON:
            return True
        if v in _OFF:
            return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class NullBar:
    """A bar that draws nothing: ``update``, ``set_postfix``, ``set_description``, ``close``."""

    def __init__(self, total: float | None = None, desc: str | None = None) -> None:
        self.total = total
        self.desc = desc
        self.n = 0

    def update(self, n: float = 1) -> None:
        self.n += n

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        pass

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc

    def close(self) -> None:
        pass


@contextlib.contextmanager
def progress(
    total: float | None = None,
    desc: str | None = None,
    enabled: bool | None = None,
    unit: str = "it",
    **kwargs: Any,
) -> Iterator[Any]:
    """Context manager yielding a tqdm bar (or a :class:`NullBar` when quiet).

    Parameters
    ----------
    total : int or float, optional
        Expected number of updates (steps, simulated seconds, cases).
    desc : str, optional
        Label in front of the bar.
    enabled : bool or None
        Force the bar on or off; ``None`` applies the automatic rule.
    unit : str
        Unit shown by tqdm.

    >>> with progress(3, "demo", enabled=False) as bar:
    ...     bar.update(3)
    >>> bar.n
    3
    """
    bar = None
    if progress_enabled(enabled):
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - tqdm is an optional extra
            bar = None
        else:
            bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, **kwargs)
    if bar is None:
        bar = NullBar(total, desc)
    try:
        yield bar
    finally:
        bar.close()
