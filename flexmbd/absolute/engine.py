r"""Compiled Newton engine of the absolute formulation.

The generic path of :class:`~flexmbd.absolute.system.AbsoluteSystem` assembles every
term from vectorized numpy pieces into sparse matrices (exact, any size, any force
element). For the models that make up most flexible-multibody runs — rigid and
flexible bodies, any joint (drivers included), uniform gravity, spring-damper-actuators
(rigid and deforming ends) and point forces and torques (:mod:`.force_kernels`) — this
module runs
the whole Newton iteration of one implicit step in compiled code (numba, allocation
light): the same equations, the same exact Jacobians, the same
convergence test as :func:`flexmbd.integrators.implicit.integrate`. Its kernels are
line-by-line ports of the numpy reference (:mod:`.inertia`, :mod:`.flexible`,
:mod:`.constraints`, :mod:`.forces` gravity, :mod:`flexmbd.flexible.ffr`) and are
tested against it (``tests/flexible/test_engine.py``: residuals and Newton matrices
equal to round-off on random states).

Used by the integrators when :func:`Engine.supports` says so (every force element one of
:attr:`Engine.COMPILED_FORCES`, no HHT force form, no coordinate rows), at any size;
``integrate(..., engine=False)`` forces the generic path. Joint forces run in the engine
when constant or given as :meth:`~flexmbd.JointForce.spring_damper` or
:meth:`~flexmbd.JointForce.compiled_law` laws. Other force elements (a
:class:`~flexmbd.JointForce` with a Python law, user
:class:`~flexmbd.model.forces.ForceElement` subclasses written in Python) keep the whole
model on the generic path: that is the
Python callback path for user force laws, measured at 6.5 ms per step on the seed
slider-crank (one SDA) where the compiled engine takes tens of microseconds
(``benchmarks/bench_forces.py``). The compiled loop (:meth:`Engine.run`) also projects
the velocities after each step when asked (scleronomic models).

Data layout: bodies in system order, the rigid block ``7 nb`` first, then the modal
coordinates; flexible-body invariants concatenated in flat arrays with offsets. The
kernels are free functions over a compiled, immutable :class:`Model` (typed named tuples
of arrays: :class:`Bodies`, :class:`Joints`, :class:`Forces`, :class:`Interfaces`), the
time- and run-dependent :class:`Inputs` and a :class:`Workspace` (Pinocchio's model/data
split); :class:`Engine` builds the model once per system and refreshes only the inputs.

Geometric stiffening: the lagged interface loads (wrenches the joints apply at a stiffened
body's interfaces, :meth:`~flexmbd.absolute.system.AbsoluteSystem.update_interface_loads`)
are updated inside the compiled step loop after every accepted step from the joint
reactions it computes (:func:`_interface_loads`, a transcription of the numpy reference
:func:`flexmbd.absolute.flexible.interface_wrenches`), plus the point forces and SDA ends
acting at such interfaces (:func:`.force_kernels.interface_force_loads`).

Newton matrix (issue 13 item 4): above ``MAX_DENSE`` unknowns, unless one body's block is
more than ``SPARSE_BLOCK_FRACTION`` of them (:func:`prefers_sparse`), it is assembled in a
column-compressed layout (:func:`._sparse.kkt_layout`: ``(n + nc) x width``, columns
that never share a row share a slot, so storage and assembly grow with the number of
bodies) and solved by the compiled sparse LU of :mod:`._sparse` (COLAMD column order and
pattern computed once per system; the first solve of each step refactorizes with the
reference pivots of :meth:`Engine.reference_pivots`, a partial-pivoting factorization at
the model's initial state, and factors with partial pivoting only when a pivot fails its
test; with :attr:`Engine.modified_newton` (off by default) the later corrections of a
step reuse its factors while the residual falls by :data:`MODIFIED_RATIO` per correction,
else assemble and refactorize: each step's arithmetic depends on its own state only, so
a resumed run is bitwise equal).
Otherwise the dense matrix and LAPACK (the identity layout, same kernels; full Newton).
Cost per step of a chain of rods with SDAs: linear in the number of bodies
(``benchmarks/bench_forces.py``).
"""

from typing import Any, NamedTuple

import numpy as np
from numba.core import types
from numba.extending import overload

from .._jit import njit
from .._nbalgebra import cross as _cross
from .._nbalgebra import dot as _dot
from .._nbalgebra import mm as _mm
from .._nbalgebra import mv as _mv
from .._nbalgebra import tv as _tv
from .._nbrotation import Apoly as _A
from .._nbrotation import Apoly_to as _A_to
from .._nbrotation import Gmat as _G
from .._nbrotation import Smat_add as _Smat_add
from .._nbrotation import dAs_to as _dAs_to
from ..errors import FlexmbdError
from ..flexible._nbbody import FlexScratch, flex_scratch
from ..flexible._nbbody import flex_block as _flex_block
from ..flexible._nbbody import flex_gravity as _flex_gravity
from ..flexible._nbbody import flex_mass as _flex_mass
from ..flexible._nbbody import rigid_block as _rigid_block_to
from ..flexible._nbbody import rigid_gravity as _rigid_gravity
from ..flexible.rotation import exp_jets
from ..integrators.convergence import newton_converged
from ._sparse import (
    KKTLayout,
    LUWork,
    analyze,
    dense_layout,
    factor,
    fresh_work,
    full_row_rank,
    gather,
    has_diagonal,
    kkt_full_row_rank,
    kkt_layout,
    refactor_cost,
    refactor_or_factor,
    set_reference,
    solve,
)
from .force_kernels import (
    ForceTable,
    force_energies,
    forces_add_into,
    forces_scratch,
    interface_force_loads,
    joint_force_kind,
    joint_forces_add_into,
    joint_forces_scratch,
)

__all__ = [
    "Bodies",
    "Engine",
    "Forces",
    "Inputs",
    "Interfaces",
    "Joints",
    "MAX_DENSE",
    "MAX_ORDER_CHOICE",
    "MODIFIED_RATIO",
    "Model",
    "SPARSE_BLOCK_FRACTION",
    "Workspace",
    "prefers_sparse",
]

#: the largest Newton system (``n + nc`` unknowns) always solved with dense LAPACK; larger
#: ones use the compressed layout and the compiled sparse LU of :mod:`._sparse` (faster
#: from 13 unknowns up on rigid bodies: ``benchmarks/bench_forces.py`` ``crossover``) ...
MAX_DENSE = 12
#: ... unless one body's column block (7 + its modes) exceeds this fraction of the
#: unknowns: a flexible body's dense modal block factors faster in LAPACK (flexible
#: pendulum, 4-32 modes: the sparse LU took 1.06-1.67x the dense time per step; flagship
#: slider-crank, 17 of 52: equal)
SPARSE_BLOCK_FRACTION = 0.3
#: sparse LU with :attr:`Engine.modified_newton`: a Newton correction reuses the step's
#: factors while the residual norm is at most this fraction of the one before (else the
#: matrix is assembled and factored again)
MODIFIED_RATIO = 0.1
#: sparse LU up to this many unknowns: the reference pivots choose between COLAMD and a
#: minimum degree order of ``A + A^T`` (:meth:`Engine.reference_pivots`; the seed
#: slider-crank's 41 unknowns: 1825 instead of 3046 in :func:`._sparse.refactor_cost`);
#: above it COLAMD only (the other order's factor storage grows with the square)
MAX_ORDER_CHOICE = 200


def prefers_sparse(n, nc, blocks):
    """True when a Newton system of ``n + nc`` unknowns whose bodies own column blocks of
    sizes ``blocks`` is solved faster by the sparse LU than by dense LAPACK (see
    :data:`MAX_DENSE`, :data:`SPARSE_BLOCK_FRACTION`)."""
    N = n + nc
    return N > MAX_DENSE and max(blocks, default=0) <= SPARSE_BLOCK_FRACTION * N


# -- the compiled model description and the per-run workspace -------------------------------
# Pinocchio's model/data split: :class:`Model` (three typed tuples of arrays, built once per
# system by :class:`Engine`) describes the system and is never written by a kernel;
# :class:`Inputs` carries what changes with time or between runs (driver slot vectors and
# targets, actuator and load time functions, lagged interface-load stiffness, gravity);
# :class:`Workspace` is the scratch of one Newton loop. The kernels are free functions over
# (model, inputs, workspace, state). Typed named tuples rather than numba structrefs: equal
# kernel code, cacheable, and the boundary cost is only paid once per compiled run (measured
# in the report of issue 12: ~9 us per Python call for ~40 arrays vs ~2 us positional).
class Bodies(NamedTuple):
    """Rigid and flexible bodies: rigid inertia per body (``rm`` kg, ``rc`` m and ``rJ``,
    ``rJc`` kg m^2 in body axes), ``isflex`` (flexible-body index or -1) and the flexible
    invariants concatenated in flat arrays with offsets ``f_o1``/``f_o2``/``f_o3``."""

    nb: int
    rm: np.ndarray
    rc: np.ndarray
    rJ: np.ndarray
    rJc: np.ndarray
    isflex: np.ndarray
    f_body: np.ndarray
    f_col0: np.ndarray
    f_n: np.ndarray
    f_mass: np.ndarray
    f_c: np.ndarray
    f_E0: np.ndarray
    f_St: np.ndarray
    f_S: np.ndarray
    f_P: np.ndarray
    f_Pt: np.ndarray
    f_K: np.ndarray
    f_D: np.ndarray
    f_stiff: np.ndarray
    f_Kw: np.ndarray
    f_Kal: np.ndarray
    f_Ka: np.ndarray
    f_o1: np.ndarray
    f_o2: np.ndarray
    f_o3: np.ndarray


class Joints(NamedTuple):
    """Constraint primitives (bodies ``b``, signs ``sg``, position flags ``pt`` of the four
    slots per row), the deforming slots ``fs_*`` and the reaction bookkeeping ``r_*``
    (row -> joint, side, sign; joint frames on the child) and ``d_*`` (deforming joint
    frames); ``nj`` joint rows (the rows the violation is measured on)."""

    b: np.ndarray
    sg: np.ndarray
    pt: np.ndarray
    fs_index: np.ndarray
    fs_col0: np.ndarray
    fs_n: np.ndarray
    fs_point: np.ndarray
    fs_X: np.ndarray
    fs_off: np.ndarray
    nj: int
    r_joint: np.ndarray
    r_side: np.ndarray
    r_sgn: np.ndarray
    r_child: np.ndarray
    r_side_body: np.ndarray
    r_CC: np.ndarray
    r_sC: np.ndarray
    d_joint: np.ndarray
    d_col0: np.ndarray
    d_n: np.ndarray
    d_modes: np.ndarray
    d_off: np.ndarray


class Forces(NamedTuple):
    """Compiled force elements (:class:`.force_kernels.ForceTable`): SDA, point-load and
    joint-force tables (their parameters ``k``, ``c``, ``l0`` are refreshed in place; the
    users' compiled joint laws by their addresses in ``j_int``) and the rows of forces at
    stiffened interfaces."""

    s_int: np.ndarray
    s_flt: np.ndarray
    s_U: np.ndarray
    l_int: np.ndarray
    l_flt: np.ndarray
    l_U: np.ndarray
    j_int: np.ndarray
    j_flt: np.ndarray
    i_int: np.ndarray
    #: True when the model has force elements, else None: a type-level flag, so that the
    #: kernels of a model without them do not compile the force kernels (:func:`_force_terms`)
    active: Any = None


class Interfaces(NamedTuple):
    """Joint reactions that load stiffened interfaces (lagged interface loads of the
    geometric stiffening): the rows of :class:`.flexible.InterfaceLoadTable` (joint, side
    sign, body, load offset, undeformed origin ``s0`` and translation modes ``X`` of the
    interface frame) and per flexible body the first load component ``load_off``, their
    number ``n_load`` and the unit matrices ``U`` (flat, from ``U_off``). Empty when the
    loads are not updated in compiled code."""

    joint: np.ndarray
    sign: np.ndarray
    body: np.ndarray
    off: np.ndarray
    s0: np.ndarray
    X: np.ndarray
    X_off: np.ndarray
    col0: np.ndarray
    n: np.ndarray
    load_off: np.ndarray
    n_load: np.ndarray
    U: np.ndarray
    U_off: np.ndarray


class Model(NamedTuple):
    """Compiled, immutable description of one absolute system; ``layout`` the storage of
    its Newton matrix (:class:`._sparse.KKTLayout`: dense, or compressed for the sparse LU)."""

    bodies: Bodies
    joints: Joints
    forces: Forces
    interfaces: Interfaces
    layout: KKTLayout


class Inputs(NamedTuple):
    """What changes with time or between runs: slot vectors ``s`` (np, 4, 3) and targets of
    the driver rows, actuator forces ``fa`` (N), point loads ``lf`` (p, 6; N, N m), the lagged
    interface loads ``itf`` (:class:`Interfaces` load vector) and their stiffness ``Kitf``
    (flat, per flexible body n x n) and gravity ``g`` (m/s^2, world; ``has_g`` False: no
    gravity element)."""

    s: np.ndarray
    target: np.ndarray
    fa: np.ndarray
    lf: np.ndarray
    itf: np.ndarray
    Kitf: np.ndarray
    g: np.ndarray
    has_g: bool


class JointScratch(NamedTuple):
    """Scratch of :func:`_constraints` for deforming slots of up to ``nf`` modes
    (:func:`joint_scratch`): per joint equation the four slots' vectors (``v3``: values,
    slot vectors, X, Y, mu, a column), slot Jacobians ``Jq`` (4, 3, nf) and Hessians ``Hs``
    (4, 3, 3, 3), rotations ``Ab`` (4, 3, 3), ``dA`` (4, 3, 4), ``Bj`` (3, 4), the full
    slot Jacobians ``Jfull`` (4, 3, 7 + nf) and their columns ``cols`` (4, 7 + nf),
    ``iw`` (2, 4) the slots' deforming-slot ids and column counts, ``m33`` (2, 3, 3)
    (``Hm``, ``Jy``), ``th`` (3), ``XH`` (nf, 3) and ``XHX`` (nf, nf)."""

    v3: np.ndarray
    Jq: np.ndarray
    Hs: np.ndarray
    Ab: np.ndarray
    dA: np.ndarray
    Bj: np.ndarray
    Jfull: np.ndarray
    cols: np.ndarray
    iw: np.ndarray
    m33: np.ndarray
    th: np.ndarray
    XH: np.ndarray
    XHX: np.ndarray


def joint_scratch(nf):
    """A :class:`JointScratch` for deforming slots of up to ``nf`` modes."""
    n = max(int(nf), 1)
    z = np.zeros
    return JointScratch(
        z((14, 3)), z((4, 3, n)), z((4, 3, 3, 3)), z((4, 3, 3)), z((4, 3, 4)), z((3, 4)),
        z((4, 3, 7 + n)), np.zeros((4, 7 + n), np.int64), np.zeros((2, 4), np.int64),
        z((2, 3, 3)), z(3), z((n, 3)), z((n, n)),
    )  # fmt: skip


class Workspace(NamedTuple):
    """Scratch of one Newton loop over ``n`` coordinates and ``nc`` constraint rows; the
    matrices in the layout's storage (``width`` columns); ``lu``, ``Ax`` the sparse LU's
    factors and values (None and size 0 for the dense layout); the body kernels' scratch (built
    once per run, so that an assembly allocates nothing): ``B``, ``W`` of the rigid
    bodies (:func:`_rigid_terms`), ``fb`` of the flexible bodies
    (:class:`~flexmbd.flexible._nbbody.FlexScratch`), ``fidx`` (7 + nf) their columns,
    ``fR`` (7 + nf) and ``fM`` (4, 7 + nf, 7 + nf) a flexible body's residual, gravity
    force and blocks ``M``, ``K``, ``D``, ``dQg/dq``; ``PtL`` (n) of :func:`_system_terms`;
    ``js`` of :func:`_constraints`; ``fe_buf``, ``fe_idx`` the force elements' scratch
    (:func:`.force_kernels.forces_scratch`) and ``jf`` the joint forces'
    (:func:`.force_kernels.joint_forces_scratch`)."""

    r: np.ndarray
    phi: np.ndarray
    A: np.ndarray
    res: np.ndarray
    q1: np.ndarray
    v1: np.ndarray
    R: np.ndarray
    Q: np.ndarray
    Pq: np.ndarray
    Hm: np.ndarray
    lu: LUWork | None
    Ax: np.ndarray
    B: np.ndarray
    W: np.ndarray
    fb: FlexScratch
    fidx: np.ndarray
    fR: np.ndarray
    fM: np.ndarray
    PtL: np.ndarray
    js: JointScratch
    fe_buf: np.ndarray
    fe_idx: np.ndarray
    jf: tuple


def workspace(n, nc, layout=None, lu=None, nf=0, nfs=0, forces=None):
    """A fresh :class:`Workspace` for ``n`` coordinates and ``nc`` constraint rows, its
    matrices in ``layout``'s storage (None: dense), flexible bodies of up to ``nf``
    modes, deforming joint slots of up to ``nfs``; ``lu``: the analysis of the sparse LU
    (:func:`._sparse.analyze`; None: the dense solve), which gets its own storage;
    ``forces``: the model's :class:`Forces` (None: no force elements)."""
    z = np.zeros
    W = n + nc if layout is None else layout.width
    lu = None if lu is None else fresh_work(lu)
    N = 7 + max(int(nf), 1)
    if forces is not None and forces.s_int.shape[0] + forces.l_int.shape[0] > 0:
        fe = forces_scratch(forces.s_int, forces.l_int)
    else:  # no force elements: the force kernels do not run (nor load for the scratch)
        fe = np.empty(0), np.empty((4, 0), np.int64)
    return Workspace(
        z(n),
        z(nc),
        z((n + nc, W)),
        z(n + nc),
        z(n),
        z(n),
        z(n),
        z(n),
        z((nc, W)),
        z((n, W)),
        lu,
        z(0 if lu is None else layout.gidx.shape[0]),
        z((6, 7, 7)),
        z((32, 4)),
        flex_scratch(nf),
        np.zeros(N, np.int64),
        z((2, N)),
        z((4, N, N)),
        z(n),
        joint_scratch(nfs),
        *fe,
        joint_forces_scratch.py_func(),  # numpy allocations: no kernel to load
    )


# -- body terms, rotations and small algebra: flexmbd.flexible._nbbody, flexmbd._nbrotation,
# flexmbd._nbalgebra (imported above under the names the kernels below use)


@njit(cache=True, _nrt=False)
def _slot_s(p, k, s, fs_index, fs_col0, fs_n, fs_point, fs_X, fs_off, q, y, Jyq, Hy, th, Jy):
    """Effective slot vector y (3,), dy/dq_f (3, n) and (direction) Hy; returns flex slot id.
    ``th`` (3) and ``Jy`` (3, 3) scratch (no allocation; the sums in the order of
    ``_nbalgebra.mv`` / ``mm``)."""
    f = fs_index[p, k]
    if f < 0:
        for i in range(3):
            y[i] = s[p, k, i]
        return -1
    n = fs_n[f]
    X = fs_X[fs_off[f] : fs_off[f] + 3 * n].reshape(3, n)
    qf = q[fs_col0[f] : fs_col0[f] + n]
    for i in range(3):
        v = 0.0
        for l in range(n):
            v += X[i, l] * qf[l]
        th[i] = v
    if fs_point[f]:
        for i in range(3):
            y[i] = s[p, k, i] + th[i]
            for j in range(n):
                Jyq[i, j] = X[i, j]
    else:
        exp_jets(th, s[p, k], y, Jy, Hy)
        _mm_to(Jy, X, Jyq, n)
    return f


@njit(cache=True, inline="always", _nrt=False)
def _mm_to(A, B, C, n):
    """``C[:, :n] = A @ B[:, :n]`` in the order of ``_nbalgebra.mm`` (zero products skipped)."""
    for i in range(A.shape[0]):
        for j in range(n):
            C[i, j] = 0.0
        for l in range(A.shape[1]):
            a = A[i, l]
            if a != 0.0:
                for j in range(n):
                    C[i, j] += a * B[l, j]


@njit(cache=True, inline="always")
def _joint_rows(jm):
    """The joint table's per-row arrays (bodies, signs, points, deforming-frame slots)
    that :func:`_constraints` and :func:`_reactions` read, in their order. Inlined: a
    returned array's reference count follows its caller's mode (``_constraints`` runs
    without reference counting, ``_reactions`` with it; numba compiles a non-inlined
    callee once, in the mode of the caller that first compiles it)."""
    return (
        jm.b,
        jm.sg,
        jm.pt,
        jm.fs_index,
        jm.fs_col0,
        jm.fs_n,
        jm.fs_point,
        jm.fs_X,
        jm.fs_off,
    )


@njit(cache=True, _nrt=False)
def _constraints(q, nb, jm, s, target, lam, phi, Pq, H, hessian, cm, js):
    """phi (nc), Phi_q (nc, n) and (optionally) H += d(Phi_q^T lam)/dq (n, n); column ``j``
    of ``Pq`` and ``H`` in slot ``cm[j]`` (the compressed layout, ``_sparse.kkt_layout``).
    ``js``: a :class:`JointScratch` for the model's largest deforming slot (no
    allocation, no reference counting: ~10 array views per joint equation)."""
    b, sg, pt, fs_index, fs_col0, fs_n, fs_point, fs_X, fs_off = _joint_rows(jm)
    npm = b.shape[0]
    v3 = js.v3
    vals = v3[0:4]
    ys = v3[4:8]
    X, Y, mu, jc = v3[8], v3[9], v3[10], v3[11]
    Jq, Hs, Ab, dA, Bj, Jfull, cols = js.Jq, js.Hs, js.Ab, js.dA, js.Bj, js.Jfull, js.cols
    fid = js.iw[0]
    ncol = js.iw[1]
    Hm = js.m33[0]
    for p in range(npm):
        for k in range(4):
            bk = b[p, k]
            if fs_index[p, k] < 0:  # rigid slot (inline: a call costs more than the copy)
                fid[k] = -1
                for i in range(3):
                    ys[k, i] = s[p, k, i]
            else:
                fid[k] = _slot_s(
                    p, k, s, fs_index, fs_col0, fs_n, fs_point, fs_X, fs_off, q, ys[k], Jq[k],
                    Hs[k], js.th, js.m33[1],
                )  # fmt: skip
            sgk = sg[p, k]
            if bk >= 0:
                e = q[7 * bk + 3 : 7 * bk + 7]
                _A_to(e, Ab[k])
                ptk = pt[p, k]
                for i in range(3):
                    vals[k, i] = sgk * (
                        Ab[k, i, 0] * ys[k, 0]
                        + Ab[k, i, 1] * ys[k, 1]
                        + Ab[k, i, 2] * ys[k, 2]
                        + ptk * q[7 * bk + i]
                    )
                _dAs_to(e, ys[k], sgk, dA[k])
            else:
                for i in range(3):
                    vals[k, i] = sgk * ys[k, i]
        for i in range(3):
            X[i] = vals[0, i] + vals[1, i]
            Y[i] = vals[2, i] + vals[3, i]
        phi[p] = X[0] * Y[0] + X[1] * Y[1] + X[2] * Y[2] - target[p]
        for k in range(4):
            bk = b[p, k]
            if bk < 0:
                continue
            o = Y if k < 2 else X
            c7 = 7 * bk
            for i in range(3):
                Pq[p, cm[c7 + i]] += sg[p, k] * pt[p, k] * o[i]
            for j in range(4):
                Pq[p, cm[c7 + 3 + j]] += (
                    dA[k, 0, j] * o[0] + dA[k, 1, j] * o[1] + dA[k, 2, j] * o[2]
                )
            f = fid[k]
            if f >= 0:
                n = fs_n[f]
                for j in range(n):
                    for r in range(3):
                        v = 0.0
                        for l in range(3):
                            if Ab[k, r, l] != 0.0:
                                v += Ab[k, r, l] * Jq[k, l, j]
                        jc[r] = sg[p, k] * v
                    Pq[p, cm[fs_col0[f] + j]] += jc[0] * o[0] + jc[1] * o[1] + jc[2] * o[2]
        if not hessian:
            continue
        lp = lam[p]
        if lp == 0.0:
            continue
        # cross terms lam (Jx^T Jy + Jy^T Jx), slot Jacobians over their own columns
        for k in range(4):
            bk = b[p, k]
            if bk < 0:
                ncol[k] = 0
                continue
            f = fid[k]
            nf = fs_n[f] if f >= 0 else 0
            ncol[k] = 7 + nf
            for i in range(7):
                cols[k, i] = 7 * bk + i
            for r in range(3):
                for i in range(7 + nf):
                    Jfull[k, r, i] = 0.0
                Jfull[k, r, r] = sg[p, k] * pt[p, k]
                for i in range(4):
                    Jfull[k, r, 3 + i] = dA[k, r, i]
            if f >= 0:
                for j in range(nf):
                    cols[k, 7 + j] = fs_col0[f] + j
                for r in range(3):
                    for j in range(nf):
                        Jfull[k, r, 7 + j] = sg[p, k] * (
                            Ab[k, r, 0] * Jq[k, 0, j]
                            + Ab[k, r, 1] * Jq[k, 1, j]
                            + Ab[k, r, 2] * Jq[k, 2, j]
                        )
        for kx in range(2):
            ncx = ncol[kx]
            for ky in range(2, 4):
                ncy = ncol[ky]
                for i in range(ncx):
                    ci = cols[kx, i]
                    for j in range(ncy):
                        cj = cols[ky, j]
                        v = lp * (
                            Jfull[kx, 0, i] * Jfull[ky, 0, j]
                            + Jfull[kx, 1, i] * Jfull[ky, 1, j]
                            + Jfull[kx, 2, i] * Jfull[ky, 2, j]
                        )
                        H[ci, cm[cj]] += v
                        H[cj, cm[ci]] += v
        # own second derivatives
        for k in range(4):
            bk = b[p, k]
            if bk < 0:
                continue
            o = Y if k < 2 else X
            e = q[7 * bk + 3 : 7 * bk + 7]
            c3 = 7 * bk + 3
            _Smat_add(o, ys[k], lp * sg[p, k], H, c3, cm[c3])
            f = fid[k]
            if f < 0:
                continue
            n = fs_n[f]
            cf = fs_col0[f]
            sgl = lp * sg[p, k]
            for j in range(n):
                for r in range(3):
                    jc[r] = Jq[k, r, j]
                _dAs_to(e, jc, 1.0, Bj)
                for i4 in range(4):
                    v = sgl * (Bj[0, i4] * o[0] + Bj[1, i4] * o[1] + Bj[2, i4] * o[2])
                    H[c3 + i4, cm[cf + j]] += v
                    H[cf + j, cm[c3 + i4]] += v
            if not fs_point[f]:
                for i in range(3):
                    mu[i] = Ab[k, 0, i] * o[0] + Ab[k, 1, i] * o[1] + Ab[k, 2, i] * o[2]
                for r in range(3):
                    for c in range(3):
                        Hm[r, c] = 0.0
                for i in range(3):
                    for r in range(3):
                        for c in range(3):
                            Hm[r, c] += mu[i] * Hs[k, i, r, c]
                Xf = fs_X[fs_off[f] : fs_off[f] + 3 * n].reshape(3, n)
                kf = cm[cf]  # a body's columns keep consecutive slots
                XH = js.XH
                _mm_to(Xf.T, Hm, XH, 3)  # Xf^T Hm (n, 3)
                XHX = js.XHX
                for i in range(n):  # (Xf^T Hm) Xf (n, n), the order of _nbalgebra.mm
                    for j in range(n):
                        XHX[i, j] = 0.0
                    for r in range(3):
                        x = XH[i, r]
                        if x != 0.0:
                            for j in range(n):
                                XHX[i, j] += x * Xf[r, j]
                for i in range(n):
                    for j in range(n):
                        H[cf + i, kf + j] += sgl * XHX[i, j]
    # normalization rows
    for i in range(nb):
        e = q[7 * i + 3 : 7 * i + 7]
        phi[npm + i] = 0.5 * (e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3] - 1.0)
        for j in range(4):
            Pq[npm + i, cm[7 * i + 3 + j]] += e[j]
        if hessian:
            li = lam[npm + i]
            for j in range(4):
                H[7 * i + 3 + j, cm[7 * i + 3 + j]] += li


# -- whole-system terms ---------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def _rigid_terms(
    rm, rc, rJ, isflex, g, has_g, q, qd, qdd, aM, aKin, aDin, aK, R, Q, Amat, cm, jac, nb, B, W
):  # fmt: skip
    """The rigid bodies' part of :func:`_system_terms`: inertia residual into ``R``,
    gravity into ``Q`` and, with ``jac``, ``aM M + aKin K + aDin D - aK dQg/dq`` into
    ``Amat``. ``B`` (6, 7, 7): a body's ``R`` and gravity ``Q`` (rows 0, 1 of slot 0), ``M``, ``K``,
    ``D`` and the gravity Jacobian; ``W`` (32, 4): the body kernels' scratch. No
    allocation: compiled without reference counting (no atomic increment and decrement
    per array view, 5 views per body per call)."""
    Rb = B[0, 0]
    Qb = B[0, 1]
    Mb = B[1]
    Kb = B[2]
    Db = B[3]
    Kg7 = B[4]
    ws_rb = W[0:29]
    ws_g = W[29:32]
    for i in range(nb):
        if isflex[i] >= 0:
            continue
        c7 = 7 * i
        e = q[c7 + 3 : c7 + 7]
        if jac:
            for a in range(7):
                for bb in range(7):
                    Mb[a, bb] = 0.0
                    Kb[a, bb] = 0.0
                    Db[a, bb] = 0.0
        _rigid_block_to(
            rm[i],
            rc[i],
            rJ[i],
            e,
            qd[c7 + 3 : c7 + 7],
            qdd[c7 : c7 + 3],
            qdd[c7 + 3 : c7 + 7],
            Rb,
            Mb,
            Kb,
            Db,
            ws_rb,
            jac,
        )
        for a in range(7):
            R[c7 + a] += Rb[a]
        if has_g:
            for a in range(7):
                Qb[a] = 0.0
                if jac:
                    for bb in range(7):
                        Kg7[a, bb] = 0.0
            _rigid_gravity(rm[i], rc[i], g, e, Qb, Kg7, ws_g, jac)
            for a in range(7):
                Q[c7 + a] += Qb[a]
        if jac:
            for a in range(7):
                for bb in range(7):
                    v = aM * Mb[a, bb] + aKin * Kb[a, bb] + aDin * Db[a, bb]
                    if has_g:
                        v -= aK * Kg7[a, bb]
                    Amat[c7 + a, cm[c7 + bb]] += v


def _force_terms(active, fm, inp, ws, q, qd, Q, Amat, cm, aK, aD, jac):
    """Adds the force elements' generalized forces to ``Q`` (n) and, with ``jac``, their
    Jacobians (times ``aK``, ``aD``) to ``Amat``; compiled code only (the overload below:
    nothing, and no force kernel compiled, when ``active`` is None)."""


# typed in _system_terms' NRT mode: the force kernels compile without reference counting
# when this overload is the first to type them, as they did when _system_terms called them
@overload(_force_terms, inline="always", jit_options={"_nrt": False})
def _force_terms_impl(active, fm, inp, ws, q, qd, Q, Amat, cm, aK, aD, jac):
    if isinstance(active, types.NoneType):  # no force element: nothing to compile
        return lambda active, fm, inp, ws, q, qd, Q, Amat, cm, aK, aD, jac: None

    def impl(active, fm, inp, ws, q, qd, Q, Amat, cm, aK, aD, jac):
        if fm.s_int.shape[0] + fm.l_int.shape[0] > 0:
            forces_add_into(
                q,
                qd,
                fm.s_int,
                fm.s_flt,
                fm.s_U,
                inp.fa,
                fm.l_int,
                fm.l_flt,
                fm.l_U,
                inp.lf,
                Q,
                Amat,
                cm,
                aK,
                aD,
                jac,
                ws.fe_buf,
                ws.fe_idx,
            )
        if fm.j_int.shape[0] > 0:  # joint forces: time functions after the point loads in lf
            lf_j = inp.lf[fm.l_int.shape[0] :]
            S, V, M3, B6 = ws.jf
            joint_forces_add_into(
                q, qd, fm.j_int, fm.j_flt, lf_j, Q, Amat, cm, aK, aD, jac, S, V, M3, B6
            )

    return impl


def _interface_force_terms(active, m, inp, q, qd, v, Kitf):
    """:func:`_interface_force_loads` when the model has point forces or SDAs at stiffened
    interfaces; compiled code only (nothing compiled when ``active`` is None)."""


@overload(_interface_force_terms, inline="always")
def _interface_force_terms_impl(active, m, inp, q, qd, v, Kitf):
    if isinstance(active, types.NoneType):
        return lambda active, m, inp, q, qd, v, Kitf: None

    def impl(active, m, inp, q, qd, v, Kitf):
        if m.forces.i_int.shape[0]:  # point forces and SDAs at the interfaces
            _interface_force_loads(m, inp, q, qd, v, Kitf)

    return impl


@njit(cache=True, _nrt=False, callee_only="engine.system_terms")
def _system_terms(
    m, inp, ws, q, qd, qdd, lam, aM, aKin, aDin, aK, aD, r_out, phi, Amat, jac, stiffening
):
    """Residual ``R + Phi_q^T lam - Q`` (n) and ``phi`` (nc); with ``jac`` the KKT matrix
    ``[[aM M + aKin dR/dq + aDin dR/ddq + aK (H - dQ/dq) - aD dQ/ddq, Phi_q^T], [Phi_q, 0]]``.
    Returns the norms (|R|, |PtL|, |Q|) used by the convergence test."""
    bm, fm = m.bodies, m.forces
    nb = bm.nb
    cm, rptr, rcol = m.layout.cmap, m.layout.rptr, m.layout.rcol
    (
        rm,
        rc,
        rJ,
        isflex,
        f_body,
        f_col0,
        f_n,
        f_mass,
        f_c,
        f_E0,
        f_St,
        f_S,
        f_P,
        f_Pt,
        f_K,
        f_D,
        f_stiff,
        f_Kw,
        f_Kal,
        f_Ka,
        f_o1,
        f_o2,
        f_o3,
    ) = (
        bm.rm,
        bm.rc,
        bm.rJ,
        bm.isflex,
        bm.f_body,
        bm.f_col0,
        bm.f_n,
        bm.f_mass,
        bm.f_c,
        bm.f_E0,
        bm.f_St,
        bm.f_S,
        bm.f_P,
        bm.f_Pt,
        bm.f_K,
        bm.f_D,
        bm.f_stiff,
        bm.f_Kw,
        bm.f_Kal,
        bm.f_Ka,
        bm.f_o1,
        bm.f_o2,
        bm.f_o3,
    )
    g, has_g = inp.g, inp.has_g
    f_Kitf = inp.Kitf
    n = q.shape[0]
    nc = phi.shape[0]
    R = ws.R
    Q = ws.Q
    R[:] = 0.0
    Q[:] = 0.0
    if jac:  # the constraint rows (n: ) are written whole below
        Amat[:n, :] = 0.0
    _rigid_terms(
        rm, rc, rJ, isflex, g, has_g, q, qd, qdd, aM, aKin, aDin, aK, R, Q, Amat, cm, jac,
        nb, ws.B, ws.W,
    )  # fmt: skip
    for k in range(f_body.shape[0]):
        i = f_body[k]
        nf = f_n[k]
        c7 = 7 * i
        c0 = f_col0[k]
        N = 7 + nf
        idx = ws.fidx[0:N]
        for j in range(7):
            idx[j] = c7 + j
        for j in range(nf):
            idx[7 + j] = c0 + j
        St = f_St[f_o1[k] : f_o1[k] + 3 * nf].reshape(3, nf)
        S = f_S[f_o2[k] : f_o2[k] + 9 * nf].reshape(3, 3, nf)
        P = f_P[f_o3[k] : f_o3[k] + 9 * nf * nf].reshape(3, 3, nf, nf)
        Pt = f_Pt[f_o3[k] : f_o3[k] + 9 * nf * nf].reshape(3, 3, nf, nf)
        o = f_o3[k] // 9
        Kff = f_K[o : o + nf * nf].reshape(nf, nf)
        Dff = f_D[o : o + nf * nf].reshape(nf, nf)
        Kitf = f_Kitf[o : o + nf * nf].reshape(nf, nf)
        Kw = f_Kw[6 * o : 6 * o + 6 * nf * nf].reshape(6, nf, nf)
        Kal = f_Kal[3 * o : 3 * o + 3 * nf * nf].reshape(3, nf, nf)
        Ka = f_Ka[3 * o : 3 * o + 3 * nf * nf].reshape(3, nf, nf)
        Rf = ws.fR[0, 0:N]
        Mf = ws.fM[0, 0:N, 0:N]
        Kf = ws.fM[1, 0:N, 0:N]
        Df = ws.fM[2, 0:N, 0:N]
        Kgf = ws.fM[3, 0:N, 0:N]
        if jac:
            for a in range(N):
                for bb in range(N):
                    Kf[a, bb] = 0.0
                    Df[a, bb] = 0.0
                    Kgf[a, bb] = 0.0
        e = q[c7 + 3 : c7 + 7]
        _flex_block(
            f_mass[k],
            f_c[k],
            f_E0[k],
            St,
            S,
            P,
            Pt,
            Kff,
            Dff,
            f_stiff[k] and stiffening,
            Kw,
            Kal,
            Ka,
            Kitf,
            g,
            e,
            q[c0 : c0 + nf],
            qd[c7 + 3 : c7 + 7],
            qd[c0 : c0 + nf],
            qdd[c7 : c7 + 3],
            qdd[c7 + 3 : c7 + 7],
            qdd[c0 : c0 + nf],
            Rf,
            Mf,
            Kf,
            Df,
            jac,
            ws.fb,
        )
        for a in range(N):
            R[idx[a]] += Rf[a]
        if has_g:
            Qf = ws.fR[1, 0:N]
            Qf[:] = 0.0
            _flex_gravity(f_mass[k], f_c[k], St, g, e, q[c0 : c0 + nf], Qf, Kgf, jac, ws.fb)
            for a in range(N):
                Q[idx[a]] += Qf[a]
        if jac:
            for a in range(N):
                for bb in range(N):
                    v = aM * Mf[a, bb] + aKin * Kf[a, bb] + aDin * Df[a, bb]
                    if has_g:
                        v -= aK * Kgf[a, bb]
                    Amat[idx[a], cm[idx[bb]]] += v
    # force elements (SDAs, point loads, joint forces; :mod:`.force_kernels`)
    _force_terms(fm.active, fm, inp, ws, q, qd, Q, Amat, cm, aK, aD, jac)
    # constraints (Phi_q and H in the layout's slots; rcol: the columns of each row)
    W = Amat.shape[1]
    Pq = ws.Pq
    Pq[:, :] = 0.0
    Hm = ws.Hm
    if jac:
        Hm[:, :] = 0.0
    _constraints(q, nb, m.joints, inp.s, inp.target, lam, phi, Pq, Hm, jac, cm, ws.js)
    PtL = ws.PtL
    PtL[:] = 0.0
    for a in range(nc):
        la = lam[a]
        for t in range(rptr[a], rptr[a + 1]):
            j = rcol[t]
            PtL[j] += Pq[a, cm[j]] * la
    for a in range(n):
        r_out[a] = R[a] + PtL[a] - Q[a]
    if jac:
        for a in range(n):
            for bb in range(W):
                Amat[a, bb] += aK * Hm[a, bb]
        for a in range(nc):
            ka = cm[n + a]
            for bb in range(W):
                Amat[n + a, bb] = Pq[a, bb]
            for t in range(rptr[a], rptr[a + 1]):
                j = rcol[t]
                Amat[j, ka] = Pq[a, cm[j]]
    return np.sqrt(_sumsq(R, 0, n)), np.sqrt(_sumsq(PtL, 0, n)), np.sqrt(_sumsq(Q, 0, n))


@njit(cache=True, inline="always", _nrt=False)
def _sumsq(x, i0, i1):
    """``sum(x[i0:i1] ** 2)`` summed in order (as ``(x * x).sum()``; no temporary)."""
    v = 0.0
    for i in range(i0, i1):
        v += x[i] * x[i]
    return v


#: numba's C entry of LAPACK's ``?gesv`` (its helper library calls scipy's
#: ``cython_lapack.dgesv``): the routine ``np.linalg.solve`` calls in compiled code
_XGESV = types.ExternalFunction(
    "numba_xgesv",
    types.intc(
        types.char, types.intp, types.intp, types.CPointer(types.float64), types.intp,
        types.CPointer(types.intc), types.CPointer(types.float64), types.intp,
    ),
)  # fmt: skip


@njit(cache=True, _nrt=False)
def _gesv(a, ipiv, x):
    """LAPACK ``dgesv`` on the Fortran-ordered square ``a`` (n x n, overwritten by its LU
    factors), the pivots ``ipiv`` (n, int32) and the right-hand side ``x`` (n, overwritten
    by the solution); returns LAPACK's ``info`` (> 0: singular). The arrays are the
    caller's, alive for the whole call."""
    n = a.shape[0]
    return _XGESV(100, n, 1, a.ctypes, n, ipiv.ctypes, x.ctypes, n)  # 100: ord("d")


@njit(cache=True)
def _dense_solve(A, b):
    """``A^-1 b`` (n square, n) by LAPACK's ``dgesv``: the operations and the errors of
    numba's ``np.linalg.solve`` (``LinAlgError`` for a non-finite entry or a singular
    matrix), without its generic code (shape checks with formatted messages, 2-D
    right-hand sides, copies by slice assignment), which the engine's kernels would
    otherwise compile and link (cold start, issue 13)."""
    n = A.shape[1]
    for i in range(A.shape[0]):
        for j in range(n):
            if not np.isfinite(A[i, j]):
                raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    for i in range(b.shape[0]):
        if not np.isfinite(b[i]):
            raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    if A.shape[0] != n or b.shape[0] != n:
        raise np.linalg.LinAlgError("Incompatible array sizes, system is not dimensionally valid.")
    a = np.empty((n, n)).T  # Fortran order, as LAPACK reads it
    for j in range(n):
        for i in range(n):
            a[i, j] = A[i, j]
    x = np.empty(n)
    for i in range(n):
        x[i] = b[i]
    if n == 0:
        return x
    ipiv = np.empty(n, np.intc)
    if _gesv(a, ipiv, x) > 0:
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")
    return x


def _kkt_solve(A, rhs, gidx, lu, Ax, fresh):
    """``A^-1 rhs`` for the Newton matrix in its layout: LAPACK for the dense layout
    (``lu`` None); else the compiled sparse LU (:mod:`._sparse`,
    :func:`._sparse.refactor_or_factor`): with ``fresh`` a refactorization with the
    engine's reference pivots, otherwise with the last pivots, factoring with partial
    pivoting when a pivot fails its test (or the solution is not finite).
    Raises ``LinAlgError`` when the matrix is singular. Compiled code only (the overload
    below); the choice is made on the type of ``lu``, so a dense model compiles no sparse
    LU and a sparse one no LAPACK solve."""


@overload(_kkt_solve, inline="always")
def _kkt_solve_impl(A, rhs, gidx, lu, Ax, fresh):
    if isinstance(lu, types.NoneType):
        return lambda A, rhs, gidx, lu, Ax, fresh: _dense_solve(A, rhs)

    def impl(A, rhs, gidx, lu, Ax, fresh):
        gather(A, gidx, Ax)
        out = np.empty(lu.n)
        st = refactor_or_factor(lu, Ax, fresh)
        for _attempt in range(2):
            if st == 0:
                raise np.linalg.LinAlgError("singular Newton matrix (sparse LU)")
            if st < 0:
                raise np.linalg.LinAlgError("sparse LU: factors exceed their capacity")
            solve(lu, Ax, rhs, out, 0)
            ok = True
            for i in range(lu.n):
                if not np.isfinite(out[i]):
                    ok = False
                    break
            if ok:
                return out
            if lu.stat[4] == 2:
                break  # a pivoting factorization and still not finite
            st = factor(lu, Ax)
        raise np.linalg.LinAlgError("singular Newton matrix (sparse LU)")

    return impl


@njit(cache=True)
def kkt_solve(A, rhs, gidx, lu, Ax, fresh):
    """:func:`_kkt_solve` for Python callers: ``A^-1 rhs`` (n + nc) of the Newton matrix
    ``A`` in its layout; ``lu`` None (dense LAPACK) or the workspace's sparse LU."""
    return _kkt_solve(A, rhs, gidx, lu, Ax, fresh)


def _kkt_resolve(A, rhs, gidx, lu, Ax):
    """``A^-1 rhs`` with the factors of the last :func:`_kkt_solve` (sparse LU only; ``A``
    unused); None when the solution is not finite, always None for the dense solve
    (``lu`` None: a modified Newton step factors again). Compiled code only."""


@overload(_kkt_resolve)
def _kkt_resolve_impl(A, rhs, gidx, lu, Ax):
    if isinstance(lu, types.NoneType):
        return lambda A, rhs, gidx, lu, Ax: None

    def impl(A, rhs, gidx, lu, Ax):
        out = np.empty(lu.n)
        solve(lu, Ax, rhs, out, 0)
        for i in range(lu.n):
            if not np.isfinite(out[i]):
                return None
        return out

    return impl


def _sparse_lu(lu):
    """True when ``lu`` is a sparse LU of at least one unknown (None: the dense solve)."""


@overload(_sparse_lu, inline="always")
def _sparse_lu_impl(lu):
    if isinstance(lu, types.NoneType):
        return lambda lu: False
    return lambda lu: lu.n > 0


@njit(cache=True, callee_only="engine.newton")
def _newton(
    m, inp, ws, q_pred, v_pred, x_qdd, x_lam, bh2, gh, sc, tol, rtol, max_iter, hist, k_guess,
    modified,
):  # fmt: skip
    """Newton iteration of one generalized-alpha / Newmark step (see integrators.implicit).

    Returns (status, k, constraint violation): status 1 converged, 0 iteration limit,
    -1 non-finite residual; ``x_qdd``, ``x_lam`` are updated in place.

    ``k_guess`` (the previous step's number of corrections; < 1: none): at that iteration
    the residual is evaluated first without the Newton matrix, which is only needed if the
    test fails (then the terms are evaluated again with it; the residual is the same to
    the bit). A converging step thus skips the matrix it would not use.

    ``modified`` with the sparse LU (``ws.lu`` not None): the corrections after the first
    reuse the step's factors (modified Newton) while each residual is at most
    :data:`MODIFIED_RATIO` of the one before; otherwise the Newton matrix is assembled
    and factored again at the current iterate (each step's iterates depend on its own
    state only). Otherwise full Newton."""
    nj = m.joints.nj
    n = q_pred.shape[0]
    nc = x_lam.shape[0]
    r, phi, A, res, q1, v1 = ws.r, ws.phi, ws.A, ws.res, ws.q1, ws.v1
    scale = -1.0
    tiny = False
    modified = modified and _sparse_lu(ws.lu)
    factored = False  # the step's Newton matrix is factored
    nr_prev = np.inf
    # non-literal arguments: the same compiled specialization as Engine.terms
    one = bh2 / bh2
    for k in range(max_iter + 1):  # k == 0: the step's first solve
        for i in range(n):
            q1[i] = q_pred[i] + bh2 * x_qdd[i]
            v1[i] = v_pred[i] + gh * x_qdd[i]
        jac = k != k_guess and not (modified and factored)
        norms = _system_terms(
            m, inp, ws, q1, v1, x_qdd, x_lam, one, bh2, gh, bh2, gh, r, phi, A, jac, True
        )
        nrf = 0.0
        for i in range(n):
            res[i] = r[i]
            nrf += r[i] * r[i]
        nphi = 0.0
        for i in range(nc):
            res[n + i] = sc * phi[i]
            nphi += phi[i] * phi[i]
        nrf = np.sqrt(nrf)
        nphi = np.sqrt(nphi)
        nr = np.sqrt(nrf * nrf + (sc * nphi) * (sc * nphi))
        hist[k] = nr
        if scale < 0.0:
            scale = norms[2]
        viol = 0.0
        for i in range(nj):
            viol = max(viol, abs(phi[i]))
        if not np.isfinite(nr):
            return -1, k, viol
        qmax = 1.0
        for i in range(n):
            qmax = max(qmax, abs(q1[i]))
        # one rule with the generic path (integrators.convergence): force and constraint
        # rows each against their own round-off floor
        if (
            tiny
            or newton_converged(
                nrf, nphi, sc, tol + rtol * scale, norms[0] + norms[1] + norms[2], nc, qmax
            )
            > 0
        ):
            return 1, k, viol
        if k == max_iter:
            return 0, k, viol
        dx = None
        for i in range(n + nc):  # the right-hand side -res, in place
            res[i] = -res[i]
        if factored and modified and nr <= MODIFIED_RATIO * nr_prev:
            dx = _kkt_resolve(A, res, m.layout.gidx, ws.lu, ws.Ax)
        if dx is None:
            if not jac:  # the matrix at this iterate: the same terms again, with it
                _system_terms(
                    m, inp, ws, q1, v1, x_qdd, x_lam, one, bh2, gh, bh2, gh, r, phi, A, True, True
                )
            dx = _kkt_solve(A, res, m.layout.gidx, ws.lu, ws.Ax, not factored)
            factored = True
        nr_prev = nr
        x_qdd += dx[:n]
        x_lam += dx[n:]
        nq = np.sqrt(_sumsq(dx, 0, n))
        nl = np.sqrt(_sumsq(dx, n, n + nc))
        tiny = nq <= 1e-13 * (1.0 + np.sqrt(_sumsq(x_qdd, 0, n))) and nl <= 1e-13 * (
            1.0 + np.sqrt(_sumsq(x_lam, 0, nc))
        )
    return 0, max_iter, 0.0


@njit(cache=True)
def system_terms(
    m, inp, ws, q, qd, qdd, lam, aM, aKin, aDin, aK, aD, r_out, phi, Amat, jac, stiffening
):
    """:func:`_system_terms` for Python callers (the kernel itself has no Python entry:
    ``callee_only``, :func:`flexmbd._jit.njit`): residual ``r_out`` (n), constraints
    ``phi`` (nc) and, with ``jac``, the Newton matrix ``Amat`` in the model's layout;
    returns the norms (|R|, |PtL|, |Q|)."""
    return _system_terms(
        m, inp, ws, q, qd, qdd, lam, aM, aKin, aDin, aK, aD, r_out, phi, Amat, jac, stiffening
    )


@njit(cache=True)
def newton(
    m, inp, ws, q_pred, v_pred, x_qdd, x_lam, bh2, gh, sc, tol, rtol, max_iter, hist, k_guess,
    modified,
):  # fmt: skip
    """:func:`_newton` for Python callers (the kernel itself has no Python entry): one
    step's Newton loop, in place on ``x_qdd``, ``x_lam``; returns (status, k, violation)."""
    return _newton(
        m, inp, ws, q_pred, v_pred, x_qdd, x_lam, bh2, gh, sc, tol, rtol, max_iter, hist,
        k_guess, modified,
    )  # fmt: skip


@njit(cache=True)
def _run(
    m, inp, ws, sched, st, h, be, ga, am, af, tol, rtol, max_iter, gauge, project, modified, out
):
    """The whole generalized-alpha step loop (see integrators.implicit.integrate): returns 0,
    or the index ``i`` of the first step that failed: ``i`` when Newton did not converge
    (or its residual is not finite), ``-i`` when a linear solve raised (a singular Newton
    or projection matrix, or sparse-LU factors beyond their capacity). The rows of ``out``
    before ``i`` are complete either way; ``S_all``/``T_all`` hold the
    rheonomic slot vectors and targets per step (first axis 1: constant). After every
    accepted step the joint reactions go to ``reac`` and, when the model has
    :class:`Interfaces` rows, update the lagged interface loads ``inp.itf`` and their
    stiffness ``inp.Kitf`` for the next step (in place)."""
    q, qd, qdd, a, lam = st
    times, S_all, T_all, FA_all, LF_all = sched
    Tq, Tqd, Tqdd, Tlam, reac, iters, resid, hist, viol = out
    nb = m.bodies.nb
    nt = times.shape[0]
    bp = be * (1 - af) / (1 - am)
    gp = ga * (1 - af) / (1 - am)
    bh2 = bp * h * h
    gh = gp * h
    sc = 1.0 / bh2
    timed = S_all.shape[0] > 1
    k_prev = -1
    n = q.shape[0]
    nc = lam.shape[0]
    nj = reac.shape[1]
    FC = np.zeros((nj, 3, 3))
    pC = np.zeros((nj, 3))
    itf_on = m.interfaces.n_load.sum() > 0
    if project:  # scratch of the velocity projection (the mass matrix: no stiffening)
        zn = np.zeros(n)
        zc = np.zeros(nc)
        r_p = np.zeros(n)
        phi_p = np.zeros(nc)
        A_p = np.zeros((n + nc, ws.A.shape[1]))
        rhs = np.zeros(n + nc)
    # the step's predictors and iterates, updated in place (the same operations as the
    # array expressions of integrators.implicit, element by element: no allocation per step)
    q_pred = np.empty(n)
    v_pred = np.empty(n)
    x_qdd = np.empty(n)
    x_lam = np.empty(nc)
    hq = h * h * (0.5 - be)
    hb = h * h * be
    hv = h * (1 - ga)
    hg = h * ga
    for i in range(1, nt):
        for j in range(n):
            a_part = (af * qdd[j] - am * a[j]) / (1 - am)
            q_pred[j] = q[j] + h * qd[j] + hq * a[j] + hb * a_part
            v_pred[j] = qd[j] + hv * a[j] + hg * a_part
            x_qdd[j] = qdd[j]
        for j in range(nc):
            x_lam[j] = lam[j]
        inp_i = Inputs(
            S_all[i] if timed else inp.s,
            T_all[i] if timed else inp.target,
            FA_all[i] if FA_all.shape[0] > 1 else FA_all[0],
            LF_all[i] if LF_all.shape[0] > 1 else LF_all[0],
            inp.itf,
            inp.Kitf,
            inp.g,
            inp.has_g,
        )
        try:
            status, k, vi = _newton(
                m,
                inp_i,
                ws,
                q_pred,
                v_pred,
                x_qdd,
                x_lam,
                bh2,
                gh,
                sc,
                tol,
                rtol,
                max_iter,
                hist[i],
                k_prev,
                modified,
            )
        except Exception:  # the Newton matrix's solve (LinAlgError): the steps before stay
            return -i
        iters[i] = k
        resid[i] = hist[i, k]
        if status != 1:
            return i
        k_prev = k
        for j in range(n):
            a[j] = ((1 - af) * x_qdd[j] + af * qdd[j] - am * a[j]) / (1 - am)
            q[j] = q_pred[j] + bh2 * x_qdd[j]
            qd[j] = v_pred[j] + gh * x_qdd[j]
            qdd[j] = x_qdd[j]
        for j in range(nc):
            lam[j] = x_lam[j]
        if project:
            # mass-orthogonal projection on Phi_q qd = 0 (scleronomic; Engine.project)
            _system_terms(
                m, inp_i, ws, q, zn, zn, zc, 1.0, 0.0, 0.0, 0.0, 0.0, r_p, phi_p, A_p, True, False
            )
            cm, rptr, rcol = m.layout.cmap, m.layout.rptr, m.layout.rcol
            for r in range(nc):
                v = 0.0
                for t in range(rptr[r], rptr[r + 1]):
                    c = rcol[t]
                    v += A_p[n + r, cm[c]] * qd[c]
                rhs[n + r] = -v
            try:
                dx = _kkt_solve(A_p, rhs, m.layout.gidx, ws.lu, ws.Ax, False)
            except Exception:  # singular projection matrix: step i is not accepted
                return -i
            for c in range(n):
                qd[c] += dx[c]
        elif gauge:  # Euler-parameter rates without their component along e
            for b in range(nb):
                c3 = 7 * b + 3
                ee = 0.0
                ed = 0.0
                for j in range(4):
                    ee += q[c3 + j] * q[c3 + j]
                    ed += q[c3 + j] * qd[c3 + j]
                for j in range(4):
                    qd[c3 + j] -= q[c3 + j] * (ed / ee)
        viol[i] = vi
        for j in range(n):  # element loops: no slice assignment (cold start, issue 13)
            Tq[i, j] = q[j]
            Tqd[i, j] = qd[j]
            Tqdd[i, j] = qdd[j]
        for j in range(nc):
            Tlam[i, j] = lam[j]
        _reactions(q, lam, nb, m.joints, inp_i.s, reac[i], FC, pC)
        if itf_on:  # lagged interface loads of the geometric stiffening (next step's)
            _interface_loads(m.interfaces, m.bodies, q, reac[i], FC, pC, inp.itf, inp.Kitf)
            _interface_force_terms(m.forces.active, m, inp_i, q, qd, inp.itf, inp.Kitf)
    return 0


@njit(cache=True)
def _interface_force_loads(m, inp, q, qd, v, Kitf):
    """:func:`.force_kernels.interface_force_loads` with the model's tables."""
    fm, it, bm = m.forces, m.interfaces, m.bodies
    lf = inp.lf
    interface_force_loads(
        q,
        qd,
        fm.s_int,
        fm.s_flt,
        fm.s_U,
        inp.fa,
        fm.l_int,
        lf,
        fm.i_int,
        it.U,
        it.U_off,
        it.load_off,
        bm.f_n,
        bm.f_o3,
        v,
        Kitf,
    )


@njit(cache=True)
def _reactions(q, lam, nb, jm, s, out, FCo, pCo):
    """Joint reactions (port of ConstraintSet.reactions) into ``out`` (nj, 6); the child
    joint frames (rotation, origin; world) into ``FCo`` (nj, 3, 3), ``pCo`` (nj, 3)."""
    b, sg, pt, fs_index, fs_col0, fs_n, fs_point, fs_X, fs_off = _joint_rows(jm)
    r_joint, r_side, r_sgn, r_child, r_side_body, r_CC, r_sC = (
        jm.r_joint,
        jm.r_side,
        jm.r_sgn,
        jm.r_child,
        jm.r_side_body,
        jm.r_CC,
        jm.r_sC,
    )
    d_joint, d_col0, d_n, d_modes, d_off = (jm.d_joint, jm.d_col0, jm.d_n, jm.d_modes, jm.d_off)
    npm = b.shape[0]
    nj = out.shape[0]
    Rn = np.empty((nb, 3, 3))
    for i in range(nb):
        e = q[7 * i + 3 : 7 * i + 7]
        n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]
        _A_to(e, Rn[i])
        for a in range(3):
            for c in range(3):
                Rn[i, a, c] /= n2
    N = np.zeros((nj, 3))
    F = np.zeros((nj, 3))
    nmax = 1
    for f in range(fs_n.shape[0]):
        nmax = max(nmax, fs_n[f])
    v3 = np.zeros((16, 3))
    y, X, Y, pC, nC, d3 = v3[0], v3[1], v3[2], v3[3], v3[4], v3[5]
    As = v3[8:12]
    vals = v3[12:16]
    FC = np.empty((3, 3))
    Jq = np.zeros((3, nmax))
    Hy = np.zeros((3, 3, 3))
    th3 = np.empty(3)
    Jy3 = np.empty((3, 3))
    for p in range(npm):
        for k in range(4):
            if fs_index[p, k] < 0:
                for i in range(3):
                    y[i] = s[p, k, i]
            else:
                _slot_s(
                    p, k, s, fs_index, fs_col0, fs_n, fs_point, fs_X, fs_off, q, y, Jq, Hy, th3,
                    Jy3,
                )  # fmt: skip
            bk = b[p, k]
            sgk = sg[p, k]
            if bk >= 0:
                for i in range(3):
                    As[k, i] = Rn[bk, i, 0] * y[0] + Rn[bk, i, 1] * y[1] + Rn[bk, i, 2] * y[2]
                    vals[k, i] = sgk * (As[k, i] + pt[p, k] * q[7 * bk + i])
            else:
                for i in range(3):
                    As[k, i] = y[i]
                    vals[k, i] = sgk * y[i]
        for i in range(3):
            X[i] = vals[0, i] + vals[1, i]
            Y[i] = vals[2, i] + vals[3, i]
        side = r_side[p]
        lamp = lam[p] * r_sgn[p]
        j = r_joint[p]
        for k in range(4):
            if b[p, k] != side or b[p, k] < 0:
                continue
            o = Y if k < 2 else X
            for i in range(3):
                i1 = (i + 1) % 3
                i2 = (i + 2) % 3
                dr = sg[p, k] * (As[k, i1] * o[i2] - As[k, i2] * o[i1])
                N[j, i] -= lamp * dr
                F[j, i] -= lamp * sg[p, k] * pt[p, k] * o[i]
    for j in range(nj):
        jb = r_child[j]
        sd = r_side_body[j]
        CC = r_CC[j]  # views (read only; a deforming joint's rotated copies below)
        sC = r_sC[j]
        for m in range(d_joint.shape[0]):
            if d_joint[m] == j:
                n = d_n[m]
                Md = d_modes[d_off[m] : d_off[m] + 6 * n].reshape(6, n)
                qf = q[d_col0[m] : d_col0[m] + n]
                th = _mv(Md[:3], qf)
                Rd = np.empty((3, 3))
                ek = np.zeros(3)
                ys = np.zeros(3)
                Jy = np.zeros((3, 3))
                for c in range(3):
                    ek[:] = 0.0
                    ek[c] = 1.0
                    exp_jets(th, ek, ys, Jy, Hy)
                    for a in range(3):
                        Rd[a, c] = ys[a]
                CC = _mm(Rd, r_CC[j])
                sC = r_sC[j] + _mv(Md[3:], qf)
        # child joint frame in the world: FC = Rc CC at pC = rc + Rc sC (ground: Rc = I)
        for a in range(3):
            for c in range(3):
                if jb >= 0:
                    v = 0.0
                    for l in range(3):
                        if Rn[jb, a, l] != 0.0:
                            v += Rn[jb, a, l] * CC[l, c]
                    FC[a, c] = v
                else:
                    FC[a, c] = CC[a, c]
            if jb >= 0:
                pC[a] = q[7 * jb + a] + (
                    Rn[jb, a, 0] * sC[0] + Rn[jb, a, 1] * sC[1] + Rn[jb, a, 2] * sC[2]
                )
            else:
                pC[a] = sC[a]
            d3[a] = pC[a] - (q[7 * sd + a] if sd >= 0 else 0.0)
        for a in range(3):  # element loops: no slice assignment (cold start, issue 13)
            pCo[j, a] = pC[a]
            for c in range(3):
                FCo[j, a, c] = FC[a, c]
        for a in range(3):
            a1 = (a + 1) % 3
            a2 = (a + 2) % 3
            nC[a] = N[j, a] - (d3[a1] * F[j, a2] - d3[a2] * F[j, a1])
        for a in range(3):
            out[j, a] = FC[0, a] * nC[0] + FC[1, a] * nC[1] + FC[2, a] * nC[2]
            out[j, 3 + a] = FC[0, a] * F[j, 0] + FC[1, a] * F[j, 1] + FC[2, a] * F[j, 2]


@njit(cache=True)
def _interface_loads(it, bm, q, reac, FC, pC, v, Kitf):
    """Lagged interface loads from the joint reactions: the load vector ``v`` (port of
    :func:`flexmbd.absolute.flexible.interface_wrenches`) and the interface-load stiffness
    ``Kitf`` (flat, per flexible body ``sum_c v_c U_c``, as ``set_interface_loads``)."""
    v[:] = 0.0
    Rb = np.empty((3, 3))
    nw = np.empty(3)
    fw = np.empty(3)
    p = np.empty(3)
    dp = np.empty(3)
    d = np.empty(3)
    for c in range(it.joint.shape[0]):
        k = it.joint[c]
        b = it.body[c]
        n = it.n[c]
        X = it.X[it.X_off[c] : it.X_off[c] + 3 * n].reshape(3, n)
        qf = q[it.col0[c] : it.col0[c] + n]
        e = q[7 * b + 3 : 7 * b + 7]
        n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]
        _A_to(e, Rb)
        for a in range(3):
            for l in range(3):
                Rb[a, l] /= n2
        for a in range(3):
            nw[a] = FC[k, a, 0] * reac[k, 0] + FC[k, a, 1] * reac[k, 1] + FC[k, a, 2] * reac[k, 2]
            fw[a] = FC[k, a, 0] * reac[k, 3] + FC[k, a, 1] * reac[k, 4] + FC[k, a, 2] * reac[k, 5]
            sb = it.s0[c, a]
            for l in range(n):
                sb += X[a, l] * qf[l]
            p[a] = sb
        sg = it.sign[c]
        for a in range(3):  # pC - (r + R sb)
            dp[a] = pC[k, a] - (
                q[7 * b + a] + (Rb[a, 0] * p[0] + Rb[a, 1] * p[1] + Rb[a, 2] * p[2])
            )
        for a in range(3):
            a1 = (a + 1) % 3
            a2 = (a + 2) % 3
            d[a] = sg * (nw[a] + (dp[a1] * fw[a2] - dp[a2] * fw[a1]))
        o = it.off[c]
        for a in range(3):
            v[o + a] += Rb[0, a] * d[0] + Rb[1, a] * d[1] + Rb[2, a] * d[2]
            v[o + 3 + a] += sg * (Rb[0, a] * fw[0] + Rb[1, a] * fw[1] + Rb[2, a] * fw[2])
    for kf in range(it.load_off.shape[0]):
        m = it.n_load[kf]
        if m == 0:
            continue
        nf = bm.f_n[kf]
        ko = bm.f_o3[kf] // 9
        K = Kitf[ko : ko + nf * nf]
        K[:] = 0.0
        U = it.U[it.U_off[kf] : it.U_off[kf] + m * nf * nf].reshape(m, nf * nf)
        lo = it.load_off[kf]
        for c in range(m):
            vc = v[lo + c]
            if vc != 0.0:
                for a in range(nf * nf):
                    K[a] += vc * U[c, a]


@njit(cache=True)
def _energies(Q, Qd, bm, g, out):
    """Per sample: kinetic, gravity potential, strain energy, modal damping power -> out (nt, 4)."""
    nb = bm.nb
    (
        rm,
        rc,
        rJc,
        isflex,
        f_col0,
        f_n,
        f_mass,
        f_c,
        f_E0,
        f_St,
        f_S,
        f_P,
        f_K,
        f_D,
        f_o1,
        f_o2,
        f_o3,
    ) = (
        bm.rm,
        bm.rc,
        bm.rJc,
        bm.isflex,
        bm.f_col0,
        bm.f_n,
        bm.f_mass,
        bm.f_c,
        bm.f_E0,
        bm.f_St,
        bm.f_S,
        bm.f_P,
        bm.f_K,
        bm.f_D,
        bm.f_o1,
        bm.f_o2,
        bm.f_o3,
    )
    nt = Q.shape[0]
    for t in range(nt):
        q = Q[t]
        qd = Qd[t]
        kin = 0.0
        grav = 0.0
        strain = 0.0
        pd = 0.0
        for i in range(nb):
            c7 = 7 * i
            e = q[c7 + 3 : c7 + 7]
            n2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] + e[3] * e[3]
            A = _A(e) / n2
            w = 2.0 * _mv(_G(e), qd[c7 + 3 : c7 + 7]) / n2
            r = q[c7 : c7 + 3]
            rd = qd[c7 : c7 + 3]
            k = isflex[i]
            if k < 0:
                vc = rd + _mv(A, _cross(w, rc[i]))
                kin += 0.5 * rm[i] * _dot(vc, vc) + 0.5 * _dot(w, _mv(rJc[i], w))
                grav -= rm[i] * _dot(g, r + _mv(A, rc[i]))
                continue
            nf = f_n[k]
            c0 = f_col0[k]
            St = f_St[f_o1[k] : f_o1[k] + 3 * nf].reshape(3, nf)
            S = f_S[f_o2[k] : f_o2[k] + 9 * nf].reshape(3, 3, nf)
            P = f_P[f_o3[k] : f_o3[k] + 9 * nf * nf].reshape(3, 3, nf, nf)
            o = f_o3[k] // 9
            Kff = f_K[o : o + nf * nf].reshape(nf, nf)
            Dff = f_D[o : o + nf * nf].reshape(nf, nf)
            qf = q[c0 : c0 + nf].copy()
            qfd = qd[c0 : c0 + nf].copy()
            u = np.empty(6 + nf)
            vb = _tv(A, rd)
            for a in range(3):  # element loops: no slice assignment (cold start, issue 13)
                u[a] = w[a]
                u[3 + a] = vb[a]
            for a in range(nf):
                u[6 + a] = qfd[a]
            M = _flex_mass(f_mass[k], f_c[k], f_E0[k], St, S, P, qf)
            kin += 0.5 * _dot(u, _mv(M, u))
            Sbar = f_c[k] + _mv(St, qf)
            grav -= _dot(g, f_mass[k] * r + _mv(A, Sbar))
            strain += 0.5 * _dot(qf, _mv(Kff, qf))
            pd += _dot(qfd, _mv(Dff, qfd))
        out[t, 0] = kin
        out[t, 1] = grav
        out[t, 2] = strain
        out[t, 3] = pd


def _with_layout(m, layout):
    """``m`` (:class:`Model`) with another Newton-matrix layout."""
    return Model(m.bodies, m.joints, m.forces, m.interfaces, layout)


class Engine:
    """Compiled Newton engine of one :class:`~flexmbd.absolute.system.AbsoluteSystem`.

    Builds the system's compiled :class:`Model` once (:attr:`model`) and refreshes only
    what changes (:meth:`inputs`: driver slots and targets, force time functions and
    parameters, lagged interface loads, gravity); :meth:`terms` evaluates residual and
    Newton matrix (for tests), :meth:`newton` runs the Newton loop of one implicit step,
    :meth:`run` all steps, :meth:`reactions` the joint reactions, :meth:`project` the
    velocity projection.
    """

    def __init__(self, system, sparse=None):
        from ..model.forces import Gravity

        s = system
        self.system = s
        self.nb = s.nb
        inert = s.inertia
        isflex = -np.ones(s.nb, np.int64)
        fl = s.flexible.flex
        for k, d in enumerate(fl):
            isflex[d.index] = k
        nfb = len(fl)
        cat = lambda xs: (
            np.ascontiguousarray(np.concatenate([np.ravel(x) for x in xs]), float)
            if xs
            else np.zeros(0)
        )
        z = [np.zeros((6, d.n, d.n)) for d in fl]
        off = np.concatenate([[0], np.cumsum([d.n for d in fl])]).astype(np.int64)
        off2 = np.concatenate([[0], np.cumsum([d.n * d.n for d in fl])]).astype(np.int64)
        bodies = Bodies(
            nb=int(s.nb),
            rm=np.ascontiguousarray(inert.m, float),
            rc=np.ascontiguousarray(inert.c, float),
            rJ=np.ascontiguousarray(inert.J, float),
            rJc=np.ascontiguousarray(inert.Jc, float),
            isflex=isflex,
            f_body=np.array([d.index for d in fl], np.int64),
            f_col0=np.array([d.col0 for d in fl], np.int64),
            f_n=np.array([d.n for d in fl], np.int64),
            f_mass=np.array([d.inv.mass for d in fl], float),
            f_c=np.array([d.inv.c for d in fl], float).reshape(nfb, 3),
            f_E0=np.array([d.inv.E0 for d in fl], float).reshape(nfb, 3, 3),
            f_St=cat([d.inv.St for d in fl]),
            f_S=cat([d.inv.S for d in fl]),
            f_P=cat([d.inv.P for d in fl]),
            # P with its mode indices swapped (Pt[a, b, l, k] = P[a, b, k, l]): the
            # contractions P q run as vectorizable column updates, summed in the same order
            f_Pt=cat([np.swapaxes(d.inv.P, 2, 3) for d in fl]),
            f_K=cat([d.K for d in fl]),
            f_D=cat([d.D for d in fl]),
            f_stiff=np.array([d.stiffening for d in fl], np.bool_),
            f_Kw=cat([d.Kw if d.stiffening else zz for d, zz in zip(fl, z)]),
            f_Kal=cat([d.Kal if d.stiffening else zz[:3] for d, zz in zip(fl, z)]),
            f_Ka=cat([d.Ka if d.stiffening else zz[:3] for d, zz in zip(fl, z)]),
            f_o1=3 * off[:-1],
            f_o2=9 * off[:-1],
            f_o3=9 * off2[:-1],
        )
        # lagged interface loads: updated in the compiled step loop (joint reactions,
        # point forces and SDA ends at the interfaces: .force_kernels.interface_force_loads)
        self.itf_lagged = any(d.itf_names for d in fl)
        interfaces = self._interfaces(s, fl)
        self.itf = np.zeros(int(interfaces.n_load.sum()))  # lagged loads (Inputs)
        self.Kitf = np.zeros(int(off2[-1]))  # their stiffness (Inputs)
        self._grav = [f for f in s.forces if type(f) is Gravity]
        # constraints
        cs = s.constraints
        self.cs = cs
        fs_index = -np.ones((cs.np, 4), np.int64)
        for f, fs in enumerate(cs.fslots):
            fs_index[fs.p, fs.k] = f
        self.nj = cs.n_joint_rows
        jr = cs.reaction_map
        dfm = jr["deforming"]
        n_fs = [3 * fs.n for fs in cs.fslots]
        joints = Joints(
            b=cs.b,
            sg=cs.sg,
            pt=cs.pt,
            fs_index=fs_index,
            fs_col0=np.array([fs.col0 for fs in cs.fslots], np.int64),
            fs_n=np.array([fs.n for fs in cs.fslots], np.int64),
            fs_point=np.array([fs.point for fs in cs.fslots], np.bool_),
            fs_X=cat([fs.X for fs in cs.fslots]),
            fs_off=np.concatenate([[0], np.cumsum(n_fs)]).astype(np.int64)[:-1],
            nj=int(self.nj),
            r_joint=jr["joint"],
            r_side=jr["side"],
            r_sgn=jr["sgn"],
            r_child=jr["child"],
            r_side_body=jr["side_body"],
            r_CC=jr["CC"],
            r_sC=jr["sC"],
            d_joint=np.array([x[0] for x in dfm], np.int64),
            d_col0=np.array([x[2] for x in dfm], np.int64),
            d_n=np.array([x[3] for x in dfm], np.int64),
            d_modes=cat([x[1].modes for x in dfm]),
            d_off=np.concatenate([[0], np.cumsum([6 * x[3] for x in dfm])]).astype(np.int64)[:-1],
        )
        self.n_joints = len(cs.joints)
        self.ft = ft = ForceTable(s)
        forces = Forces(
            ft.s_int,
            ft.s_flt,
            ft.s_U,
            ft.l_int,
            ft.l_flt,
            ft.l_U,
            ft.j_int,
            ft.j_flt,
            ft.i_int,
            True if sum(len(t) for t in (ft.s_int, ft.l_int, ft.j_int, ft.i_int)) else None,
        )
        self.model = Model(bodies, joints, forces, interfaces, dense_layout(s.n, s.nc))
        self.refresh_interface_loads()
        if sparse is None:
            blocks = [7] * s.nb
            for d in s.flexible.flex:
                blocks[d.index] += d.n
            sparse = prefers_sparse(s.n, s.nc, blocks)
        #: True: the compressed layout and the sparse LU (else dense LAPACK)
        self.sparse = bool(sparse)
        self._lu = None
        if self.sparse:
            self.model = _with_layout(self.model, self._layout())
            L = self.model.layout
            self._lu = analyze(L.Ap, L.Ai, s.n + s.nc)
        #: the sparse LU's analyses the reference pivots choose from (:meth:`reference_pivots`;
        #: the first, COLAMD, also serves the rank test)
        self._analyses = () if self._lu is None else (self._lu,)
        #: the compiled description of the system (:class:`Model`), built once
        self.ws = self._workspace(s.n, s.nc, self._lu)  # scratch of newton
        self.k_prev = -1  # corrections of the last converged step (Newton's guess)
        self._ref_key = None  # the coefficients of the reference pivots (sparse LU)
        self._rank_scratch = None  # (LUWork, A, Ax) of the compiled rank test (sparse LU)
        self._rank_memo = (None, False)  # (Phi_q bytes, full rank) of the last rank test
        #: sparse LU: modified Newton within a step (:func:`_newton`; changes the number
        #: of corrections, so off by default: full Newton as the generic path)
        self.modified_newton = False

    #: force-element types the engine evaluates in compiled code (:mod:`.force_kernels`)
    COMPILED_FORCES = (
        "Gravity",
        "SpringDamperActuator",
        "PointForce",
        "PointTorque",
        "JointForce",
    )

    @staticmethod
    def supports(system, scheme=None):
        """True when every force element is compiled (:attr:`COMPILED_FORCES`: gravity,
        spring-damper-actuators with rigid or deforming ends, point forces and torques, joint
        forces that are constant or :meth:`~flexmbd.JointForce.spring_damper` laws:
        :func:`.force_kernels.joint_force_kind`), no coordinate rows (screws, gear
        couplings) and no HHT force form. Any size: above ``MAX_DENSE`` unknowns the engine
        solves with its compiled sparse LU."""
        from ..model.forces import Gravity, JointForce, PointForce, PointTorque
        from ..model.sda import SpringDamperActuator

        if getattr(system.constraints, "ncr", 0):  # Screw / GearCoupling rows: generic path
            return False
        ok = (Gravity, SpringDamperActuator, PointForce, PointTorque)
        for f in system.forces:
            if isinstance(f, JointForce) and joint_force_kind(f) >= 0:
                continue
            if type(f) not in ok:
                return False
        if scheme is not None and getattr(scheme, "hht_alpha", 0.0) != 0.0:
            return False
        return True

    def _interfaces(self, s, fl):
        """The :class:`Interfaces` table (empty unless :attr:`itf_lagged`)."""
        i8 = lambda x: np.asarray(x, np.int64)
        if not self.itf_lagged:
            z = np.zeros(0, np.int64)
            return Interfaces(
                z, np.zeros(0), z, z, np.zeros((0, 3)), np.zeros(0), z, z, z, z, z, np.zeros(0), z
            )
        tab = s.interface_load_table()
        U = [np.ascontiguousarray(d.Kitf, float).ravel() for d in fl]
        return Interfaces(
            tab.joint,
            tab.sign,
            tab.body,
            tab.off,
            np.ascontiguousarray(tab.s0),
            tab.X,
            tab.X_off,
            tab.col0,
            tab.n,
            i8(tab.load_off),
            i8([6 * len(d.itf_names) for d in fl]),
            np.concatenate(U) if U else np.zeros(0),
            i8(np.concatenate([[0], np.cumsum([len(u) for u in U])])[:-1]),
        )

    def update_bodies(self):
        """Re-read, in place, the bodies' parameters that a parameter write changes without
        a rebuild (:meth:`AbsoluteSystem.refresh
        <flexmbd.absolute.system.AbsoluteSystem.refresh>`): the rigid bodies' mass (kg),
        centre of mass (m, body frame) and inertia (kg m^2) and the flexible bodies' modal
        stiffness and damping. What depends on them starts afresh as in a new engine: the
        sparse LU's reference pivots and the Newton guess of the last step."""
        s, b = self.system, self.model.bodies
        inert = s.inertia
        for dst, src in ((b.rm, inert.m), (b.rc, inert.c), (b.rJ, inert.J), (b.rJc, inert.Jc)):
            dst[...] = src
        fl = s.flexible.flex
        if fl:
            b.f_K[...] = np.concatenate([np.ravel(d.K) for d in fl])
            b.f_D[...] = np.concatenate([np.ravel(d.D) for d in fl])
        self._ref_key = None
        self.k_prev = -1

    def _block_layout(self):
        """``(KKTLayout, body columns)``: :func:`._sparse.kkt_layout` of the bodies each
        joint row and force element couples (block-dense, a superset of the non-zeros)."""
        s, cs, ft = self.system, self.cs, self.ft
        n, nc = s.n, s.nc
        body_cols = [list(range(7 * b, 7 * b + 7)) for b in range(s.nb)]
        for d in s.flexible.flex:
            body_cols[d.index] += list(range(d.col0, d.col0 + d.n))
        npm = cs.np
        rows = [list(cs.b[p]) for p in range(npm)]
        rows += [[] for _ in range(nc - npm - s.nb)]  # coordinate rows (not in the engine)
        rows += [[i] for i in range(s.nb)]
        couplings = rows[:npm] + ft.couplings()
        return kkt_layout(n, nc, body_cols, rows, couplings), body_cols

    def newton_pattern(self):
        """``(rows, cols)`` (int arrays) of the entries of the (n + nc) square Newton
        matrix ``[[J, Phi_q^T], [Phi_q, 0]]`` that :meth:`terms` can make non-zero, for any
        state, time, coefficients and parameter values: block-dense over the bodies that a
        joint row or a force element couples (a superset of the non-zeros, fixed for the
        model's structure)."""
        L = self._block_layout()[0]
        return np.asarray(L.Ai, np.int64), np.repeat(np.arange(L.n + L.nc), np.diff(L.Ap))

    def _layout(self, probes=2):
        """The compressed layout of the Newton matrix (:func:`._sparse.kkt_layout` from the
        bodies each joint row and force element couples), its factorization pattern pruned
        of the entries that the model's constant geometry keeps zero (a ground axis along x
        touches only x columns): the union of the non-zeros at ``probes`` random states
        (coordinates, rates, multipliers, coefficients, force-element parameters and
        actuator/point-load values random; driven models: every slot vector random too). A
        body's own block is kept whole (interface-load stiffness, stiffening). The storage
        (slots) is that of the whole block pattern; only the LU's pattern shrinks."""
        s, cs, ft = self.system, self.cs, self.ft
        n, nc = s.n, s.nc
        L, body_cols = self._block_layout()
        dense = self.model.layout
        self.model = _with_layout(self.model, L)
        self.ws = self._workspace(n, nc, None)
        rng = np.random.default_rng(20261127)
        arrays = (cs.s, ft.s_flt, ft.s_int, ft.fa, ft.l_int, ft.F, ft.j_int, ft.j_flt)
        saved = [x.copy() for x in arrays]
        nz = np.zeros(len(L.Ai), bool)
        try:
            if cs.rheonomic:
                cs.s[...] = rng.standard_normal(cs.s.shape)
            ft.s_flt[:, 6:8] = rng.uniform(1.0, 2.0, (len(ft.s_flt), 2))  # k, c
            ft.s_int[:, 8] = 1  # every Jacobian in the matrix
            if len(ft.l_int):
                ft.l_int[:, 6] = 1
            ft.j_int[:, 3] = 1
            for _ in range(probes):
                ft.fa[...] = rng.standard_normal(ft.fa.shape)
                ft.F[...] = rng.standard_normal(ft.F.shape)
                q = rng.standard_normal(n)
                for b in range(s.nb):
                    q[7 * b + 3 : 7 * b + 7] /= np.linalg.norm(q[7 * b + 3 : 7 * b + 7])
                q[7 * s.nb :] *= 1e-3
                qd, qdd, lam = (rng.standard_normal(k) for k in (n, n, nc))
                co = tuple(rng.uniform(0.5, 2.0, 5))
                A = self._terms(q, qd, qdd, lam, 0.0, co, True, True, set_time=False)[2]
                nz |= A.ravel()[L.gidx] != 0.0
        finally:
            for x, v in zip(arrays, saved):
                x[...] = v
            self.model = _with_layout(self.model, dense)
        owner = np.full(n + nc, -1)
        for b, c in enumerate(body_cols):
            owner[c] = b
        cols = np.repeat(np.arange(n + nc), np.diff(L.Ap))
        keep = nz | ((owner[L.Ai] == owner[cols]) & (owner[cols] >= 0))
        Ap = np.concatenate([[0], np.cumsum(np.bincount(cols[keep], minlength=n + nc))])
        return KKTLayout(
            L.n,
            L.nc,
            L.width,
            L.cmap,
            Ap.astype(np.int64),
            L.Ai[keep],
            L.gidx[keep],
            L.rptr,
            L.rcol,
        )

    def reference_pivots(self, bh2, gh):
        """Set the sparse LU's reference pivots (:func:`._sparse.set_reference`) for the
        Newton matrices of a scheme with coefficients ``bh2 = beta' h^2`` (s^2) and
        ``gh = gamma' h`` (s): the pattern and pivots of a partial-pivoting factorization
        of the Newton matrix at the model's consistent initial state (t = 0, no lagged
        interface loads, no stiffening), with which every step's first solve starts; up
        to :data:`MAX_ORDER_CHOICE` unknowns in the cheaper of two column orders
        (:meth:`_choose_analysis`).
        A function of the model and the coefficients only (not of the run's history), so
        that a resumed run is bitwise equal to an uninterrupted one. No reference when that
        state cannot be computed or its matrix is singular: every step's first solve then
        factors with partial pivoting. A no-op for the dense solve and for coefficients
        already set (to 12 digits)."""
        if not self.sparse:
            return
        key = (float(f"{bh2:.12g}"), float(f"{gh:.12g}"))
        if key == self._ref_key:
            return
        self._ref_key = key
        for an in self._analyses:
            an.rstat[0] = 0
        s = self.system
        try:
            q, qd, qdd, lam = s.initial_conditions()
        except (FlexmbdError, np.linalg.LinAlgError):
            return
        self._set_time(0.0)
        L = self.model.layout
        n, nc = s.n, s.nc
        z = np.zeros
        g, has_g = self._g()
        ft = self.ft
        itf, Kitf = np.zeros_like(self.itf), np.zeros_like(self.Kitf)
        inp = Inputs(self.cs.s, self.cs.target, ft.fa, ft.F, itf, Kitf, g, has_g)
        A = z((n + nc, L.width))
        c1, c2 = key
        system_terms(
            self.model, inp, self.ws, q, qd, qdd, lam, 1.0, c1, c2, c1, c2, z(n), z(nc), A,
            True, False,
        )  # fmt: skip
        Ax = z(len(L.gidx))
        gather(A, L.gidx, Ax)
        self._choose_analysis(Ax)

    def _choose_analysis(self, Ax):
        """Set the reference pivots of the Newton matrix ``Ax`` (CSC values) in each
        analysis and keep the one whose refactorization costs the fewest multiply-adds
        (:func:`._sparse.refactor_cost`): up to :data:`MAX_ORDER_CHOICE` unknowns a
        minimum degree order of ``A + A^T`` is tried besides COLAMD (a function of the
        model and the coefficients only). ``self.ws`` follows the kept analysis."""
        L = self.model.layout
        N = L.n + L.nc
        if len(self._analyses) == 1 and N <= MAX_ORDER_CHOICE:
            self._analyses += (analyze(L.Ap, L.Ai, N, order="MMD_AT_PLUS_A"),)
        best = None
        for an in self._analyses:
            if set_reference(fresh_work(an), Ax) == 1:
                cost = refactor_cost(an)
                if best is None or cost < best[0]:
                    best = (cost, an)
        chosen = self._analyses[0] if best is None else best[1]
        if chosen is not self._lu:
            self._lu = chosen
            self.ws = self._workspace(L.n, L.nc, chosen)

    def _dense(self, A):
        """The Newton matrix of a layout-shaped array as a dense (n + nc) square array."""
        L = self.model.layout
        if not self.sparse:
            return A
        N = L.n + L.nc
        out = np.zeros((N, N))
        cols = np.repeat(np.arange(N), np.diff(L.Ap))
        out[L.Ai, cols] = A.ravel()[L.gidx]
        return out

    def refresh_interface_loads(self):
        """Copy the lagged interface loads of every flexible body (and their stiffness) into
        the engine."""
        o = 0
        for d in self.system.flexible.flex:
            m = d.n * d.n
            self.Kitf[o : o + m] = d.K_itf.ravel()
            o += m
        it = self.model.interfaces
        for kf, d in enumerate(self.system.flexible.flex):
            if it.n_load.shape[0] and it.n_load[kf]:
                lo = it.load_off[kf]
                self.itf[lo : lo + it.n_load[kf]] = d.itf_load

    def store_interface_loads(self):
        """Write the interface loads the compiled loop updated back to the flexible bodies
        (``itf_load``, ``K_itf``; the state checkpoints save), as
        :meth:`~flexmbd.absolute.system.AbsoluteSystem.update_interface_loads` would."""
        if not self.itf_lagged:
            return
        it = self.model.interfaces
        bm = self.model.bodies
        for kf, d in enumerate(self.system.flexible.flex):
            o, n = bm.f_o3[kf] // 9, d.n
            d.K_itf = self.Kitf[o : o + n * n].reshape(n, n).copy()
            if it.n_load[kf]:
                lo = it.load_off[kf]
                d.itf_load = self.itf[lo : lo + it.n_load[kf]].copy()

    def _g(self):
        if not self._grav:
            return np.zeros(3), False
        return sum(np.asarray(e.g, float) for e in self._grav), True

    def inputs(self):
        """The current :class:`Inputs` (driver slots and targets as last set, force time
        functions as last evaluated, lagged interface loads, gravity)."""
        g, has_g = self._g()
        ft = self.ft
        return Inputs(self.cs.s, self.cs.target, ft.fa, ft.F, self.itf, self.Kitf, g, has_g)

    def _set_time(self, t):
        self.cs.set_time(t)
        if not self.ft.empty:
            self.ft.refresh()
            self.ft.at(t)

    def _workspace(self, n, nc, lu):
        """A fresh :func:`workspace` for this model's layout and flexible bodies."""
        nf = int(self.model.bodies.f_n.max(initial=0))
        nfs = int(self.model.joints.fs_n.max(initial=0))
        return workspace(n, nc, self.model.layout, lu, nf, nfs, self.model.forces)

    def terms(self, q, qd, qdd, lam, t, coefs=(1.0, 0.0, 0.0, 0.0, 0.0), jac=True, stiff=True):
        """``(R + Phi_q^T lam - Q, phi, KKT matrix)`` at one state (dense); ``stiff``
        False: without the geometric stiffening (the symmetric mass matrix)."""
        r, phi, A = self._terms(q, qd, qdd, lam, t, coefs, jac, stiff)
        return r, phi, self._dense(A)

    def _terms(self, q, qd, qdd, lam, t, coefs, jac, stiff, set_time=True):
        """:meth:`terms` with the matrix in the engine's layout."""
        s = self.system
        if set_time:
            self._set_time(t)
        n, nc = s.n, s.nc
        r = np.zeros(n)
        phi = np.zeros(nc)
        A = np.zeros((n + nc, self.ws.A.shape[1]))
        system_terms(
            self.model,
            self.inputs(),
            self.ws,
            np.asarray(q, float),
            np.asarray(qd, float),
            np.asarray(qdd, float),
            np.asarray(lam, float),
            *map(float, coefs),
            r,
            phi,
            A,
            jac,
            stiff,
        )
        return r, phi, A

    def constraint_jacobian(self, q, t=0.0):
        """Sparse ``Phi_q`` (nc x n, CSR) at coordinates ``q`` and time ``t`` (s) from the
        compiled constraint kernel: :meth:`AbsoluteSystem.constraint_jacobian
        <flexmbd.absolute.system.AbsoluteSystem.constraint_jacobian>` to round-off,
        without its Python evaluation (the integrator's engine admission tests its rank
        before every run)."""
        return self.constraint_and_jacobian(q, t)[1]

    def constraint_and_jacobian(self, q, t=0.0):
        """``(Phi, Phi_q)`` at coordinates ``q`` and time ``t`` (s) from one call of the
        compiled constraint kernel: ``Phi`` (nc,) as :meth:`constraint`, sparse ``Phi_q``
        (nc x n, CSR) as :meth:`constraint_jacobian`."""
        phi, Pq = self._constraint_terms(q, t)
        return phi, self._csr(Pq)

    def _csr(self, Pq):
        """``Phi_q`` (nc x n, SciPy CSR) of its compressed rows ``Pq``."""
        import scipy.sparse as sp

        L = self.model.layout
        n, nc = self.system.n, self.system.nc
        rows = np.repeat(np.arange(nc), np.diff(L.rptr))
        return sp.csr_matrix((Pq[rows, L.cmap[L.rcol]], L.rcol, L.rptr), shape=(nc, n))

    def admission(self, q, t=0.0):
        """``(Phi, full_rank)`` at coordinates ``q`` and time ``t`` (s) from one call of
        the compiled constraint kernel: ``Phi`` (nc,) as :meth:`constraint` and whether
        ``Phi_q`` has full row rank (no redundant joint equations: the integrator's engine
        admission before every run). With the sparse LU the rank test runs compiled on
        the engine's own pattern (:func:`._sparse.kkt_full_row_rank`: no SciPy matrices
        nor SuperLU analysis per run); otherwise :func:`._sparse.full_row_rank` of
        :meth:`constraint_jacobian`'s matrix. The answer for the last ``Phi_q`` is kept:
        a run from the same state (equal ``Phi_q`` bytes) reuses it (both tests are
        functions of ``Phi_q`` only)."""
        phi, Pq = self._constraint_terms(q, t)
        key = Pq.tobytes()
        if key == self._rank_memo[0]:
            return phi, self._rank_memo[1]
        full = self._full_row_rank(Pq)
        self._rank_memo = (key, full)
        return phi, full

    def _full_row_rank(self, Pq):
        """The rank test of :meth:`admission` on ``Phi_q`` in compressed rows ``Pq``."""
        if self.sparse:
            L = self.model.layout
            if self._rank_scratch is None:
                ok = has_diagonal(L.Ap, L.Ai, L.n)
                A = np.zeros((L.n + L.nc, L.width))
                an = self._analyses[0]
                self._rank_scratch = (fresh_work(an), A, np.zeros(len(L.gidx))) if ok else ()
            if self._rank_scratch:
                w, A, Ax = self._rank_scratch
                r = kkt_full_row_rank(w, L, Pq, A, Ax, 1e-10)
                if r >= 0:
                    return bool(r)
        return full_row_rank(self._csr(Pq))

    def constraint(self, q, t=0.0):
        """``Phi(q, t)`` (nc,) from the compiled constraint kernel:
        :meth:`AbsoluteSystem.constraint <flexmbd.absolute.system.AbsoluteSystem.constraint>`
        to round-off, without its Python evaluation."""
        return self._constraint_terms(q, t)[0]

    def _constraint_terms(self, q, t):
        """``(Phi, Phi_q)`` at ``q``, ``t``: Phi_q in the engine's compressed row layout."""
        self._set_time(t)
        nc = self.system.nc
        Pq = np.zeros((nc, self.ws.A.shape[1]))
        phi = np.zeros(nc)
        q = np.ascontiguousarray(q, dtype=float)
        _constraints(
            q, self.model.bodies.nb, self.model.joints, self.cs.s, self.cs.target,
            np.zeros(nc), phi, Pq, self.ws.Hm, False, self.model.layout.cmap, self.ws.js,
        )  # fmt: skip
        return phi, Pq

    def newton(self, q_pred, v_pred, x_qdd, x_lam, t, bh2, gh, sc, tol, rtol, max_iter, hist):
        """Newton loop of one step (in place on ``x_qdd``, ``x_lam``): (status, k, violation)."""
        self.reference_pivots(bh2, gh)
        self._set_time(t)
        out = newton(
            self.model,
            self.inputs(),
            self.ws,
            q_pred,
            v_pred,
            x_qdd,
            x_lam,
            bh2,
            gh,
            sc,
            tol,
            rtol,
            max_iter,
            hist,
            self.k_prev,
            self.modified_newton,
        )
        self.k_prev = out[1] if out[0] == 1 else -1
        return out

    def project(self, q, qd, t):
        """Mass-orthogonal velocity projection on ``Phi_q qd = nu``
        (as statics.project_velocities)."""
        s = self.system
        n, nc = s.n, s.nc
        z = np.zeros(n)
        _, _, A = self._terms(q, z, z, np.zeros(nc), t, (1, 0, 0, 0, 0), True, False)
        L = self.model.layout
        row = np.repeat(np.arange(nc), np.diff(L.rptr))
        Pqd = np.bincount(row, A[n + row, L.cmap[L.rcol]] * qd[L.rcol], minlength=nc)
        viol = Pqd + self.cs.phi_t(q, t)
        rhs = np.concatenate([np.zeros(n), -viol])
        dx = kkt_solve(A, rhs, L.gidx, self.ws.lu, self.ws.Ax, False)
        return qd + dx[:n]

    def energies(self, Q, Qd):
        """(kinetic, gravity, strain, modal damping power) arrays over a history."""
        g, _ = self._g()
        out = np.zeros((len(Q), 4))
        _energies(np.ascontiguousarray(Q), np.ascontiguousarray(Qd), self.model.bodies, g, out)
        return out[:, 0], out[:, 1], out[:, 2], out[:, 3]

    def force_energies(self, times, Q, Qd):
        """``(spring, damper power, actuator power, external power)`` of the compiled force
        elements (SDAs, point loads) over a history (:func:`.force_kernels.force_energies`)."""
        ft = self.ft
        out = np.zeros((len(Q), 4))
        if not ft.empty:
            ft.refresh()
            FA, LF = ft.tabulate(np.asarray(times, float))
            force_energies(
                np.ascontiguousarray(Q),
                np.ascontiguousarray(Qd),
                ft.s_int,
                ft.s_flt,
                ft.s_U,
                FA,
                ft.l_int,
                ft.l_flt,
                ft.l_U,
                LF,
                out,
                ft.j_int,
                ft.j_flt.copy(),
            )
        return out[:, 0], out[:, 1], out[:, 2], out[:, 3]

    def run(
        self,
        q,
        qd,
        qdd,
        a,
        lam,
        times,
        h,
        scheme,
        tol,
        rtol,
        max_iter,
        gauge,
        Tq,
        Tqd,
        Tqdd,
        Tlam,
        reac,
        iters,
        resid,
        hist,
        viol,
        project=False,
    ):
        """All steps of an integration in compiled code; returns 0, or the first failed step
        ``i`` (Newton did not converge), or ``-i`` (its linear solve raised: a singular
        matrix). The rows of the outputs before ``i`` are the completed steps either way.

        ``project``: mass-orthogonal velocity projection after each step (as
        :meth:`project`; scleronomic models only, ``cs.rheonomic`` False).

        Drivers: their time-dependent slot vectors and targets are tabulated per step
        first (``JointDriver`` functions are Python callables)."""
        cs = self.cs
        bp = scheme.beta * (1 - scheme.alpha_f) / (1 - scheme.alpha_m)
        gp = scheme.gamma * (1 - scheme.alpha_f) / (1 - scheme.alpha_m)
        self.reference_pivots(bp * h * h, gp * h)
        if cs.rheonomic:
            nt = len(times)
            S_all = np.empty((nt,) + cs.s.shape)
            T_all = np.empty((nt, len(cs.target)))
            for i, t in enumerate(times):
                cs.set_time(float(t))
                S_all[i] = cs.s
                T_all[i] = cs.target
        else:
            S_all = np.empty((1,) + cs.s.shape)
            T_all = np.empty((1, len(cs.target)))
        ft = self.ft
        if not ft.empty:
            ft.refresh()
        FA_all, LF_all = ft.tabulate(times)
        sched = (np.asarray(times, float), S_all, T_all, FA_all, LF_all)
        state = tuple(np.array(x, float) for x in (q, qd, qdd, a, lam))
        out = (Tq, Tqd, Tqdd, Tlam, reac, iters, resid, hist, viol)
        return _run(
            self.model,
            self.inputs(),
            self._workspace(len(state[0]), len(state[4]), self._lu),
            sched,
            state,
            float(h),
            scheme.beta,
            scheme.gamma,
            scheme.alpha_m,
            scheme.alpha_f,
            float(tol),
            float(rtol),
            int(max_iter),
            bool(gauge),
            bool(project),
            bool(self.modified_newton),
            out,
        )

    def interface_loads(self, q, lam, qd=None):
        """``(v, Kitf)``: the lagged interface loads and their stiffness (flat) that the
        compiled loop sets after a step ending at ``(q, lam)`` (rates ``qd``: SDA damping at
        the interfaces, at rest when None; :func:`_interface_loads`; zeros unless
        :attr:`itf_lagged`). Does not change the engine's own."""
        nj = self.n_joints
        q = np.asarray(q, float)
        reac, FC, pC = np.zeros((nj, 6)), np.zeros((nj, 3, 3)), np.zeros((nj, 3))
        _reactions(q, np.asarray(lam, float), self.nb, self.model.joints, self.cs.s, reac, FC, pC)
        v, K = np.zeros_like(self.itf), np.zeros_like(self.Kitf)
        if self.itf_lagged:
            m = self.model
            _interface_loads(m.interfaces, m.bodies, q, reac, FC, pC, v, K)
            if m.forces.i_int.shape[0]:
                qd = np.zeros_like(q) if qd is None else np.asarray(qd, float)
                _interface_force_loads(m, self.inputs(), q, qd, v, K)
        return v, K

    def reactions(self, q, lam):
        """Joint reactions ``(n_joints, 6)`` (``[n; f]`` in the child joint frame, as
        :meth:`ConstraintSet.reactions`) at ``(q, lam)`` with the current slot vectors."""
        nj = self.n_joints
        out = np.zeros((nj, 6))
        jm = self.model.joints
        FC, pC = np.zeros((nj, 3, 3)), np.zeros((nj, 3))
        _reactions(
            np.asarray(q, float), np.asarray(lam, float), self.nb, jm, self.cs.s, out, FC, pC
        )
        return out
