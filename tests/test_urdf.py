"""URDF import: hand-written robots, checked against Pinocchio's own URDF parser."""

import numpy as np
import pytest

import flexmbd as fm
from flexmbd.kinematics import tree_poses
from flexmbd.model.urdf import rpy_to_rot

BRANCHED = """<?xml version="1.0"?>
<robot name="branched">
  <link name="base">
    <inertial><origin xyz="0 0 0.1" rpy="0 0 0"/><mass value="5.0"/>
      <inertia ixx="0.2" ixy="0" ixz="0" iyy="0.3" iyz="0" izz="0.4"/></inertial>
    <visual><geometry><box size="0.4 0.3 0.2"/></geometry></visual>
  </link>
  <link name="torso">
    <inertial><origin xyz="0.05 0 0.2" rpy="0.3 -0.2 0.5"/><mass value="3.0"/>
      <inertia ixx="0.05" ixy="0.001" ixz="0.002" iyy="0.06" iyz="0.003" izz="0.04"/></inertial>
  </link>
  <link name="mount"/>
  <link name="left">
    <inertial><origin xyz="0 0.2 0"/><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.01"/></inertial>
  </link>
  <link name="right">
    <inertial><origin xyz="0 -0.2 0"/><mass value="1.2"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.01"/></inertial>
  </link>
  <link name="slide">
    <inertial><origin xyz="0.1 0 0"/><mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
  <joint name="waist" type="revolute">
    <parent link="base"/><child link="torso"/>
    <origin xyz="0 0 0.2" rpy="0 0 0.1"/><axis xyz="0 0 1"/>
    <limit lower="-1.5" upper="1.5" effort="50" velocity="2"/>
  </joint>
  <joint name="weld" type="fixed">
    <parent link="torso"/><child link="mount"/><origin xyz="0 0 0.4" rpy="0.1 0 0"/>
  </joint>
  <joint name="shoulder_l" type="continuous">
    <parent link="mount"/><child link="left"/>
    <origin xyz="0 0.15 0" rpy="0 0.2 0"/><axis xyz="1 0 0"/>
  </joint>
  <joint name="shoulder_r" type="revolute">
    <parent link="mount"/><child link="right"/>
    <origin xyz="0 -0.15 0" rpy="0.2 0 0"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/>
  </joint>
  <joint name="slider" type="prismatic">
    <parent link="left"/><child link="slide"/>
    <origin xyz="0 0.4 0"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.3" effort="10" velocity="1"/>
  </joint>
</robot>
"""


def test_branched_robot_structure_and_data():
    m = fm.Model.from_urdf(BRANCHED)
    assert [b.name for b in m.bodies()] == ["base", "torso", "left", "right", "slide"]
    kinds = {j.name: type(j).__name__ for j in m.joints()}
    assert kinds == {
        "base_root": "Fixed",
        "waist": "Revolute",
        "shoulder_l": "Revolute",
        "shoulder_r": "Revolute",
        "slider": "Prismatic",
    }
    assert m.waist.limits == {"lower": -1.5, "upper": 1.5, "effort": 50.0, "velocity": 2.0}
    # inertia rotated from the <inertial> frame into the link frame
    R = rpy_to_rot((0.3, -0.2, 0.5))
    J = np.array([[0.05, 0.001, 0.002], [0.001, 0.06, 0.003], [0.002, 0.003, 0.04]])
    assert np.allclose(m.torso.inertia_matrix, R @ J @ R.T, atol=1e-15)
    # the massless 'mount' link becomes a frame on 'torso'
    assert m.shoulder_l.parent is m.torso
    assert np.allclose(
        m.shoulder_l.parent_frame.position, [0, 0.15 * np.cos(0.1), 0.4 + 0.15 * np.sin(0.1)]
    )
    assert m.base.visual[0]["type"] == "box"
    assert m.topology().cut_joints == ()


def test_floating_root():
    m = fm.Model.from_urdf(BRANCHED, floating=True)
    assert isinstance(m.base_root, fm.Free)


def test_forward_kinematics_matches_pinocchio():
    pin = pytest.importorskip("pinocchio")
    m = fm.Model.from_urdf(BRANCHED)
    pm = pin.buildModelFromXML(BRANCHED)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(5):
        qs = {j: rng.uniform(-1, 1, size=j.nq) for j in m.joints()}
        qpin = np.zeros(pm.nq)
        for j in m.joints():
            if j.nq:
                jid = pm.getJointId(j.name)
                jm = pm.joints[jid]
                if jm.nq == 2:  # pin's continuous joint stores (cos, sin)
                    qpin[jm.idx_q : jm.idx_q + 2] = np.cos(qs[j][0]), np.sin(qs[j][0])
                else:
                    qpin[jm.idx_q] = qs[j][0]
        pin.forwardKinematics(pm, pd, qpin)
        poses = tree_poses(m, qs)
        for j in m.joints():
            if not j.nq:
                continue
            jid = pm.getJointId(j.name)
            R, r = poses[j.child]
            assert np.allclose(R, pd.oMi[jid].rotation, atol=1e-12)
            assert np.allclose(r, pd.oMi[jid].translation, atol=1e-12)
        # inertias agree too
        for j in m.joints():
            if j.nq:
                inert = pm.inertias[pm.getJointId(j.name)]
                assert np.isclose(inert.mass, float(j.child.mass))
                assert np.allclose(inert.lever, j.child.com_vector, atol=1e-14)


@pytest.mark.parametrize(
    "xml, match",
    [
        (
            "<robot name='r'><link name='a'/><joint name='j' type='revolute'><parent link='x'/>"
            "<child link='a'/></joint></robot>",
            "parent link 'x' is not defined",
        ),
        (
            "<robot name='r'><link name='a'/><link name='b'/>"
            "<joint name='j' type='weird'><parent link='a'/><child link='b'/></joint></robot>",
            "unknown type 'weird'",
        ),
        (
            "<robot name='r'><link name='a'><inertial><mass value='1'/></inertial></link>"
            "<link name='b'><inertial><mass value='1'/></inertial></link>"
            "<joint name='j1' type='fixed'><parent link='a'/><child link='b'/></joint>"
            "<joint name='j2' type='fixed'><parent link='b'/><child link='a'/></joint></robot>",
            "root link",
        ),
        ("<notrobot/>", "must be <robot>"),
    ],
)
def test_bad_urdf_raises_clear_errors(xml, match):
    with pytest.raises(fm.ModelError, match=match):
        fm.Model.from_urdf(xml)


def test_missing_file():
    with pytest.raises(fm.ModelError, match="does not exist"):
        fm.Model.from_urdf("/nonexistent/robot.urdf")
