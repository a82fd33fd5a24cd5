"""Model fingerprints: equal for models built alike (in any process), different when a
parameter differs; a resume in the same process sees a parameter changed since the run."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import flexmbd as fm
from flexmbd.errors import ModelError
from flexmbd.fingerprint import fingerprint_difference, model_fingerprint

ROOT = Path(__file__).resolve().parents[1]

BUILD = textwrap.dedent("""
    import flexmbd as fm

    def build(mass=1.0, k=5.0, g=-9.81, q0=0.5):
        m = fm.Model("pendulum")
        m.link = fm.RigidBody.rod(mass, 1.0, origin="end", radius=0.02)
        m.tip = fm.Frame(m.link, (1.0, 0, 0))
        m.hinge = fm.Revolute(m.ground, m.link, axis=(0, 0, 1), q0=[q0])
        m.g = fm.Gravity((0, g, 0))
        m.spring = fm.JointForce(m.hinge, lambda t, q, qd: -k * q)
        return m
""")
namespace = {}
exec(BUILD, namespace)
build = namespace["build"]


def test_same_model_in_another_process_has_the_same_fingerprint(tmp_path):
    script = tmp_path / "fp.py"
    script.write_text(
        BUILD
        + textwrap.dedent("""
        import json
        from flexmbd.fingerprint import model_fingerprint
        print(json.dumps(model_fingerprint(build())))
    """)
    )
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == model_fingerprint(build())


@pytest.mark.parametrize(
    "change, where",
    [
        (dict(mass=2.0), "link.mass"),
        (dict(k=6.0), "spring._f"),
        (dict(g=-1.62), "g.g"),
        (dict(q0=0.4), "hinge.q0"),
    ],
)
def test_a_changed_parameter_is_named(change, where):
    diff = fingerprint_difference(model_fingerprint(build()), model_fingerprint(build(**change)))
    assert where in diff


def test_the_fingerprint_does_not_change_by_simulating():
    m = build()
    before = model_fingerprint(m)
    m.simulate(0.05, dt=0.01, integrator="rk4")
    m.simulate(0.05, dt=0.01, integrator="newmark")
    assert model_fingerprint(m) == before


def test_resume_in_the_same_process_sees_a_parameter_changed_since_the_run(tmp_path):
    m = build()
    cp = tmp_path / "run.h5"
    m.simulate(0.05, dt=0.01, integrator="rk4", checkpoint=cp, every=2)
    m.link.mass = 2.0
    with pytest.raises(ModelError, match="link.mass"):
        fm.resume(cp, t_end=0.1)
    m.link.mass = 1.0
    assert fm.resume(cp, t_end=0.1).t[-1] == pytest.approx(0.1)
