"""The Newton convergence test of the implicit integrators (one rule, two callers).

A step's residual has two parts: the force rows ``r = R + Phi_q^T lam - Q`` (N, N m,
modal forces) and the constraint rows ``Phi`` (m, rad; positions). Newton's method
solves the scaled system ``[r; Phi / (beta' h^2)]`` (:mod:`flexmbd.integrators.implicit`),
and the user's tolerance applies to the 2-norm of that scaled residual::

    |[r; Phi / (beta' h^2)]| <= tol + rtol * scale                    (1)

In floating point (1) may be out of reach: the scaled constraint rows carry the
round-off of the positions, ``eps |q| / (beta' h^2)``, which grows like ``1/h^2``
(at ``h = 2.5e-7`` s it is ~1e-3 for positions of order 1 m), and the force rows the
round-off of the force terms. A step is then accepted when **each part is within its
own floor** (or within the tolerance on its own)::

    |r|   <= max(tol + rtol * scale, 10 eps (|R| + |Phi_q^T lam| + |Q|))      (2a)
    |Phi| <= max((tol + rtol * scale) beta' h^2, 10 eps sqrt(nc) max(1, |q|_inf))  (2b)

The force floor scales with the force magnitudes and the constraint floor with the
position scale, both independent of ``h``. (Earlier versions compared the combined
residual with the sum of the floors, so that at small steps the ``1/h^2`` constraint
floor exceeded real force residuals and steps were accepted with no Newton correction
at all: 1667 of 400,000 steps of Simeon's slider-crank at ``h = 2.5e-7`` s, and the
error stopped converging.)

A step accepted without any correction (``stats["newton_iterations"] == 0``) thus
satisfied (1) or both (2a) and (2b) with the predicted accelerations: a state that
truly needs no correction (rest, uniform motion).
"""

import numpy as np

from .._jit import njit

__all__ = ["EPS", "newton_converged"]

EPS = 2.220446049250313e-16  # machine epsilon of float64


@njit(cache=True)
def newton_converged(norm_r, norm_phi, sc, target, force_size, nc, q_size):
    """Convergence test of one Newton iterate (module docstring).

    Parameters
    ----------
    norm_r : float
        2-norm of the force rows ``r`` (force units).
    norm_phi : float
        2-norm of the constraint rows ``Phi`` (position units, unscaled).
    sc : float
        Scaling of the constraint rows, ``1 / (beta' h^2)`` (1/s^2).
    target : float
        ``tol + rtol * scale``: the user's tolerance on the scaled residual.
    force_size : float
        ``|R| + |Phi_q^T lam| + |Q|``: the size of the force terms (their round-off floor
        is ``eps`` times it).
    nc : int
        Number of constraint rows.
    q_size : float
        ``max(1, |q|_inf)``: the position scale (its floor is ``eps sqrt(nc)`` times it).

    Returns
    -------
    int
        0: not converged; 1: within the tolerance (1); 2: each part within its own
        round-off floor or tolerance (2a, 2b).
    """
    cs = sc * norm_phi
    if np.sqrt(norm_r * norm_r + cs * cs) <= target:
        return 1
    force_ok = norm_r <= target or norm_r <= 10.0 * EPS * force_size
    phi_ok = cs <= target or norm_phi <= 10.0 * EPS * np.sqrt(nc) * q_size
    if force_ok and phi_ok:
        return 2
    return 0
