"""Whole-history pose reconstruction against the sample-by-sample reference.

``rot_to_quat_batch``, ``joint_transforms`` and ``tree_poses_batch`` compute the
poses of every sample at once; the plain-Python per-sample functions
(:func:`flexmbd.spatial.rot_to_quat`, :func:`flexmbd.kinematics.tree_poses`) are the
oracle, to round-off.
"""

import numpy as np
from models import double_pendulum

import flexmbd as fm
from flexmbd.kinematics import tree_poses, tree_poses_batch
from flexmbd.results import Results, attach_tree_poses, rot_to_quat_batch
from flexmbd.spatial import quat_to_rot, rot_to_quat


def _sequential_quats(R):
    """The former per-sample rule: Shepperd per sample, then sign continuity."""
    E = np.array([rot_to_quat(Ri) for Ri in R])
    for k in range(1, len(E)):
        if E[k] @ E[k - 1] < 0:
            E[k] = -E[k]
    return E


def test_rot_to_quat_batch_matches_the_per_sample_rule_on_every_branch():
    rng = np.random.default_rng(3)
    E = rng.normal(size=(400, 4))
    # every Shepperd branch: near-identity, and half turns about x, y and z
    E[:10] = [1.0, 1e-3, -2e-3, 1e-3]
    E[10:20] = [1e-3, 1.0, 0.1, -0.1]
    E[20:30] = [1e-3, 0.1, 1.0, 0.1]
    E[30:40] = [-1e-3, 0.1, -0.1, 1.0]
    R = np.array([quat_to_rot(e) for e in E])
    ref = _sequential_quats(R)
    got = rot_to_quat_batch(R)
    assert np.abs(got - ref).max() <= 4e-16
    # round trip to the rotation matrices
    back = np.array([quat_to_rot(e) for e in got])
    assert np.abs(back - R).max() < 1e-14
    # continuity: neighbours never jump between e and -e
    assert np.all(np.einsum("ij,ij->i", got[1:], got[:-1]) >= 0)
    # without continuity, e0 >= 0 as rot_to_quat
    raw = rot_to_quat_batch(R, continuous=False)
    assert np.all(raw[:, 0] >= 0)
    assert np.abs(raw - np.array([rot_to_quat(Ri) for Ri in R])).max() <= 4e-16


def _every_joint_chain():
    m = fm.Model("chain")
    names = ["a", "b", "c", "d", "e", "f", "g", "h"]
    for n in names:
        setattr(m, n, fm.RigidBody.box(1.0, (0.2, 0.1, 0.05)))
    frame = dict(parent_frame=(0.3, 0.1, -0.2))
    m.j1 = fm.Revolute(m.ground, m.a, axis=(0.2, 0.5, 1.0), **frame)
    m.j2 = fm.Prismatic(m.a, m.b, axis=(1, 0, 0), **frame)
    m.j3 = fm.Cylindrical(m.b, m.c, axis=(0, 1, 0), **frame)
    m.j4 = fm.Universal(m.c, m.d, axis1=(0, 0, 1), axis2=(0, 1, 0), **frame)
    m.j5 = fm.Spherical(m.d, m.e, **frame)
    m.j6 = fm.Planar(m.e, m.f, normal=(0, 0, 1), **frame)
    m.j7 = fm.Fixed(m.f, m.g, **frame)
    m.j8 = fm.Free(m.g, m.h, child_frame=(0.05, -0.02, 0.01))
    return m


def test_tree_poses_batch_matches_tree_poses_for_every_joint_type():
    m = _every_joint_chain()
    rng = np.random.default_rng(7)
    nt = 60
    Q = {}
    for j in m.joints():
        q = rng.normal(size=(nt, j.nq))
        if isinstance(j, fm.Spherical):
            q /= np.linalg.norm(q, axis=1, keepdims=True)
        if isinstance(j, fm.Free):
            q[:, 3:] /= np.linalg.norm(q[:, 3:], axis=1, keepdims=True)
        Q[j] = q
    batch = tree_poses_batch(m, Q, nt)
    for i in range(nt):
        ref = tree_poses(m, {j: q[i] for j, q in Q.items()})
        for b in m.bodies():
            assert np.abs(batch[b][0][i] - ref[b][0]).max() < 1e-14
            assert np.abs(batch[b][1][i] - ref[b][1]).max() < 1e-14


def test_attach_tree_poses_of_a_run_matches_the_per_sample_path():
    """A short run of the README's double pendulum: the poses attached at once equal
    tree kinematics sample by sample (positions bitwise, Euler parameters to 1e-16)."""
    m = double_pendulum()
    res = m.simulate(t_end=0.2, dt=1e-3, integrator="rk4")
    out = attach_tree_poses(
        Results(res.t, res.q, res.qd, coordinates=res.coordinates, speeds=res.speeds), m
    )
    cols = {j: [i for i, (o, _) in enumerate(res.coordinates) if o == j.name] for j in m.joints()}
    for b in m.bodies():
        R_ref = np.empty((len(res.t), 3, 3))
        r_ref = np.empty((len(res.t), 3))
        for i in range(len(res.t)):
            R_ref[i], r_ref[i] = tree_poses(m, {j: res.q[i, c] for j, c in cols.items()})[b]
        assert np.array_equal(out.body(b.name).position, r_ref)
        E = out.body(b.name).orientation
        assert np.abs(E - _sequential_quats(R_ref)).max() <= 4e-16
    # the lower body hangs below the shoulder at -45 deg: y of its frame origin < 0
    assert out.body("lower").position[0, 1] < -0.7
