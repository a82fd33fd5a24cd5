"""examples/space_robot_flexible.py runs (small), and its flexible robot agrees with the
absolute formulation (accelerations and every reaction)."""

import io
from contextlib import redirect_stdout

import numpy as np

from .example_scripts import example


def _load():
    return example("space_robot_flexible")


def test_example_runs_small(tmp_path):
    mod = _load()
    buf = io.StringIO()
    with redirect_stdout(buf):
        res_f, res_r = mod.main(t_end=0.1, dt=2e-3, substeps=4, out=tmp_path, show=False)
    text = buf.getvalue()
    assert "reaction on arm-1 link 1" in text
    assert len(list(tmp_path.glob("space_robot_flexible_*.png"))) == 3
    # no external load: momentum stays zero
    assert np.abs(res_f.extra["momentum_linear"]).max() < 1e-8
    assert np.abs(res_f.extra["momentum_angular"]).max() < 1e-8
    # the bars deflect and the reactions feel it (the bars ring as the torques ramp up)
    assert np.abs(res_f.body("arm1.link1").modal).max() > 0
    r_f, r_r = res_f.reaction("arm1.joint[0]"), res_r.reaction("arm1.joint[0]")
    assert 0 < np.abs(r_f - r_r).max() < 0.3 * np.abs(r_r).max()


def test_example_model_against_absolute():
    import flexmbd as fm

    mod = _load()
    m = mod.build(True)
    for name in ("arm1", "arm2"):  # the absolute side has no JointForce on flexible models yet
        delattr(getattr(m, name), "drive")
    rec = m.compile("recursive")
    ab = m.compile("absolute")
    rng = np.random.default_rng(7)
    q = rec.normalize(rec.q0() + 0.4 * rng.normal(size=rec.nq))
    qd = 0.5 * rng.normal(size=rec.nv)
    for _name, (sq, sv) in rec.modal_slices.items():
        q[sq] = 1e-4 * rng.normal(size=sq.stop - sq.start)
        qd[sv] = 1e-2 * rng.normal(size=sv.stop - sv.start)
    fr = rec.forward_dynamics(q, qd)
    Q, QD = ab.state_from_bodies(rec.body_states(q, qd))
    for name, (sq, sv) in rec.modal_slices.items():
        Q[ab.modal_slices[name].q], QD[ab.modal_slices[name].q] = q[sq], qd[sv]
    fa = ab.forward_dynamics(Q, QD)
    scale = 1.0 + np.abs(fr.reactions).max()
    assert (
        np.abs(fr.reactions - np.array([fa.reaction(n) for n in rec.joint_names])).max()
        <= 1e-9 * scale
    )
    for b in m.bodies():
        for x, y in zip(fr.body_acceleration(b.name), fa.body_acceleration(b.name)):
            assert np.abs(x - y).max() <= 1e-9 * (1.0 + np.abs(x).max())
    assert isinstance(m.arm1.link1, fm.FlexibleBody)
