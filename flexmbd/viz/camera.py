"""Where the camera looks from, chosen from gravity and the motion (numpy only).

The default 3-D view of :mod:`flexmbd.viz` puts "up" on the screen opposite to
gravity, so a pendulum hangs and falls downwards in the picture:

* with gravity ``g``: ``up = -g / |g|``;
* without gravity: ``up`` is the principal axis of the drawn points (over the
  whole motion) with the middle spread, so that the longest extent of the
  mechanism runs across the screen and its plane of motion faces the camera.

The camera looks along the normal of the plane of motion (the principal axis
of smallest spread of the points), turned by ``azimuth`` about ``up`` and raised
by ``elevation`` so that the third dimension stays visible; when the motion is
horizontal (its normal along ``up``) the camera looks down on it from
``elevation_top``. Signs are fixed so that the choice is deterministic: the
camera sits on the side of the normal's largest positive world component.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..geometry import gravity_of

if TYPE_CHECKING:
    from .._typing import Array, ArrayLike

__all__ = ["gravity_of", "auto_view"]


def _canonical_sign(v):
    """``v`` or ``-v``: the one whose largest-magnitude component is positive."""
    k = int(np.argmax(np.abs(v)))
    return v if v[k] >= 0 else -v


def auto_view(
    points: ArrayLike,
    gravity: ArrayLike | None = None,
    azimuth: float = 20.0,
    elevation: float = 15.0,
    elevation_top: float = 35.0,
) -> tuple[Array, Array]:
    """Camera direction and up vector for drawing ``points`` (m, 3 world positions).

    Parameters
    ----------
    points : (m, 3) array
        Points of the drawing, world axes (m); over the whole motion for an
        animation (their principal axes give the plane of motion).
    gravity : (3,) array, optional
        Gravity (m/s^2, world axes); ``up = -gravity`` when given.
    azimuth, elevation : float
        Degrees the camera is turned about ``up`` and raised above the plane
        perpendicular to ``up``, from the normal of the plane of motion.
    elevation_top : float
        Degrees above the horizon when the motion is horizontal.

    Returns
    -------
    toward_camera : (3,) array
        Unit vector from the focal point to the camera.
    up : (3,) array
        Unit vector that points up on the screen.
    """
    X = np.asarray(points, dtype=float).reshape(-1, 3)
    X = X[np.all(np.isfinite(X), axis=1)]
    if len(X) >= 2:
        C = np.cov((X - X.mean(axis=0)).T)
        _, V = np.linalg.eigh(0.5 * (C + C.T))  # ascending spread
    else:
        V = np.eye(3)[:, [2, 1, 0]]
    normal = _canonical_sign(V[:, 0])
    if gravity is not None and np.any(gravity):
        up = -np.asarray(gravity, dtype=float)
        up = up / np.linalg.norm(up)
    else:
        up = _canonical_sign(V[:, 1])
    # horizontal part of the plane normal: the direction to look from
    n_h = normal - (normal @ up) * up
    el = elevation
    if np.linalg.norm(n_h) < 0.3:  # horizontal motion: look down on it
        el = elevation_top
        # look across the longest horizontal extent
        for k in (2, 1, 0):
            d = V[:, k] - (V[:, k] @ up) * up
            if np.linalg.norm(d) > 1e-6:
                break
        n_h = np.cross(up, d)
        n_h = _canonical_sign(n_h)
    e1 = n_h / np.linalg.norm(n_h)
    e2 = np.cross(up, e1)
    az, el = np.radians(azimuth), np.radians(el)
    c = np.cos(el) * (np.cos(az) * e1 + np.sin(az) * e2) + np.sin(el) * up
    return c / np.linalg.norm(c), up
