"""examples/abaqus_rotor.py with small settings (the tests/test_examples.py pattern)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg as sla

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fem"))
from abaqus_data import rotor_dir  # noqa: E402

import flexmbd as fm  # noqa: E402


def load():
    spec = importlib.util.spec_from_file_location(
        "abaqus_rotor", ROOT / "examples" / "abaqus_rotor.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_abaqus_rotor_example(tmp_path):
    d = rotor_dir()
    ex = load()
    model, res, rotor, cpu = ex.main(steps=60, h=1e-4, directory=d, plot=False)
    # the reduced rotor: 8 free-free modes of the scaled Abaqus matrices with the unbalance
    deck = fm.fem.read_abaqus(d / "rotorDiscTest.inp")
    K = 1e-2 * fm.fem.read_mtx(d / "rotorDiscTestSTIF1.mtx", deck, kind="stiffness")
    M = fm.fem.read_mtx(d / "rotorDiscTestMASS1.mtx", deck, kind="mass").toarray()
    i = int(np.argmin(np.linalg.norm(deck.mesh.nodes - np.asarray(ex.RIM), axis=1)))
    M[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] += 0.1 * np.eye(3)
    lam = sla.eigh(K.toarray(), M, eigvals_only=True)[6:14]
    np.testing.assert_allclose(rotor.frequencies, np.sqrt(lam) / (2 * np.pi), rtol=1e-9)
    assert rotor.mass == pytest.approx(M.trace() / 3, rel=1e-14)
    # the unbalance splits the first bending pair (104.6 Hz without it)
    assert rotor.frequencies[0] < rotor.frequencies[1]
    # the spin is kept (the bearings are on the axis: no torque about z)
    e = res.body("rotor").orientation  # Euler parameters and their rates (absolute coords)
    cols = [k for k, (owner, lab) in enumerate(res.speeds) if owner == "rotor"][3:7]
    ed = res.qd[:, cols]
    wz = 2 * (e[:, 0] * ed[:, 3] - e[:, 3] * ed[:, 0] + e[:, 1] * ed[:, 2] - e[:, 2] * ed[:, 1])
    np.testing.assert_allclose(wz, ex.SPIN, rtol=1e-4)
    # Newton: the bearing springs are the only external forces, sum F = m a_com (x, y)
    com = res.body("rotor").position  # body-frame origin; add the rotating com offset
    R = fm.results.quat_to_rot_batch(res.body("rotor").orientation)
    q = res.body("rotor").modal
    c = np.einsum("tij,tj->ti", R, rotor.com + (q @ rotor.St.T) / rotor.mass) + com
    a = np.gradient(np.gradient(c, res.t, axis=0), res.t, axis=0)
    F = ex.bearing_forces(model, res, "left") + ex.bearing_forces(model, res, "right")
    sl = slice(5, -5)
    err = np.abs(F[sl, :2] - rotor.mass * a[sl, :2]).max() / np.abs(F[sl, :2]).max()
    assert err < 0.05  # finite differences of sampled positions (measured 2.7 %)
    assert np.isfinite(cpu) and cpu > 0


def _exudyn_bearing_positions(d, steps, h):
    """Exudyn's own model of the performance test (FEMinterface + ObjectFFRFreducedOrder,
    CartesianSpringDamper bearings): world positions (steps + 1, 3) of the mean of each
    end face."""
    import exudyn as exu
    from exudyn.FEM import FEMinterface, ObjectFFRFreducedOrderInterface
    from exudyn.itemInterface import (
        CartesianSpringDamper,
        MarkerBodyPosition,
        MarkerSuperElementPosition,
        ObjectGround,
        SensorMarker,
    )

    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    fem = FEMinterface()
    fem.ImportFromAbaqusInputFile(str(d / "rotorDiscTest.inp"), typeName="Instance", name="rotor-1")
    fem.ReadMassMatrixFromAbaqus(str(d / "rotorDiscTestMASS1.mtx"))
    fem.ReadStiffnessMatrixFromAbaqus(str(d / "rotorDiscTestSTIF1.mtx"))
    fem.ScaleStiffnessMatrix(1e-2)
    fem.AddNodeMass(fem.GetNodeAtPoint(point=[0.0, 0.19598444, 0.15]), 0.1)
    fem.ComputeEigenmodes(8, excludeRigidBodyModes=6, useSparseSolver=False)
    cms = ObjectFFRFreducedOrderInterface(fem)
    obj = cms.AddObjectFFRFreducedOrder(
        mbs,
        positionRef=[0, 0, 0],
        initialVelocity=[0, 0, 0],
        initialAngularVelocity=[0, 0, 100 * np.pi],
    )
    ground = mbs.AddObject(ObjectGround())
    k = 2e8
    sensors = []
    for p, stiff in (([0, 0, 0], [k, k, k]), ([0, 0, 0.5], [k, k, 0])):
        nodes = fem.GetNodesInPlane(p, [0, 0, 1])
        ms = mbs.AddMarker(
            MarkerSuperElementPosition(
                bodyNumber=obj["oFFRFreducedOrder"],
                meshNodeNumbers=np.array(nodes),
                weightingFactors=np.ones(len(nodes)) / len(nodes),
            )
        )
        mg = mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=p))
        mbs.AddObject(
            CartesianSpringDamper(markerNumbers=[ms, mg], stiffness=stiff, damping=[0.01 * k] * 3)
        )
        sensors.append(
            mbs.AddSensor(
                SensorMarker(
                    markerNumber=ms,
                    storeInternal=True,
                    outputVariableType=exu.OutputVariableType.Position,
                )
            )
        )
    mbs.Assemble()
    ss = exu.SimulationSettings()
    ss.timeIntegration.numberOfSteps = steps
    ss.timeIntegration.endTime = steps * h
    ss.timeIntegration.generalizedAlpha.spectralRadius = 0.5
    ss.timeIntegration.verboseMode = 0
    ss.solution.file.write = False
    ss.solution.sensors.writePeriod = h
    exu.SolveDynamic(mbs, ss)
    return [np.asarray(mbs.GetSensorStoredData(s))[:, 1:] for s in sensors]


def test_abaqus_rotor_against_exudyn():
    """Exudyn's own model of the same test, same files: the radial motion of both bearing
    faces agrees within 1 % of its peak over 300 steps (measured 0.34 % left, 0.28 %
    right). The axial motion (micrometres, driven by the spinning disc's Poisson
    contraction) does not agree: left face peak 0.7 um here vs 5.6 um in Exudyn, right
    21.8 vs 9.4 um — not yet explained (the bearings are modelled differently: three
    line springs per face here, a Cartesian spring-damper there); not asserted."""
    pytest.importorskip("exudyn")
    d = rotor_dir()
    ex = load()
    steps, h = 300, 1e-4
    model, res, rotor, _ = ex.main(steps=steps, h=h, directory=d, plot=False)
    ref = _exudyn_bearing_positions(d, steps, h)
    for side, b in zip(("left", "right"), ref):
        a = model.rotor.interface(side).trajectory(res)
        assert a.shape == b.shape
        peak = np.abs(b[:, :2]).max()
        assert peak > 1e-6  # the unbalance moves the bearings by micrometres
        assert np.abs(a[:, :2] - b[:, :2]).max() < 0.01 * peak
