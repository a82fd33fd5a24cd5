"""Flagship demo: a closed-loop mechanism built with the declarative model API.

A planar four-bar linkage (crank, coupler, rocker) with a slider-crank hanging off
the rocker: two loops, found and cut automatically by the topology analysis
(Qi-Huang-Shao regular labeling). Prints the model summary and its resolved
topology. Run: ``python examples/flagship.py``.
"""

import numpy as np

import flexmbd as fm


def build():
    """The mechanism as an ``fm.Model`` (SI units; planar, z is the hinge axis)."""
    m = fm.Model("four_bar_with_slider")
    m.crank = fm.RigidBody.rod(1.0, 0.2, origin="end", radius=0.01)
    m.coupler = fm.RigidBody.rod(2.0, 0.6, origin="end", radius=0.01)
    m.rocker = fm.RigidBody.rod(1.5, 0.4, origin="end", radius=0.01)
    m.rod = fm.RigidBody.rod(1.0, 0.5, origin="end", radius=0.01)
    m.slider = fm.RigidBody.box(0.5, (0.1, 0.05, 0.05))

    m.j_crank = fm.Revolute(m.ground, m.crank, q0=[np.pi / 3])
    m.j_coupler = fm.Revolute(m.crank, m.coupler, parent_frame=(0.2, 0, 0))
    m.j_rocker = fm.Revolute(m.ground, m.rocker, parent_frame=(0.5, 0, 0))
    # closes loop 1: coupler tip meets rocker tip
    m.j_close = fm.Revolute(m.coupler, m.rocker, parent_frame=(0.6, 0, 0),
                            child_frame=(0.4, 0, 0))
    m.j_rod = fm.Revolute(m.rocker, m.rod, parent_frame=(0.2, 0, 0))
    m.j_slide = fm.Prismatic(m.ground, m.slider, axis=(1, 0, 0), parent_frame=(0.9, 0, 0))
    # closes loop 2: rod end pinned to the slider (a spherical is cut before a revolute)
    m.j_pin = fm.Spherical(m.rod, m.slider, parent_frame=(0.5, 0, 0))

    m.g = fm.Gravity((0, -9.81, 0))
    m.drive = fm.JointForce(m.j_crank, [1.0])
    return m


def main():
    m = build()
    m.pprint()
    return m


if __name__ == "__main__":
    main()
