"""Reduced-body files of schema ``flexmbd.reduced/1`` (written by the code before the
single interface sign convention) load into the convention of schema 2.

The fixture ``tests/data/reduced_schema1.npz`` was written by that code
(``tests/data/make_reduced_schema1.py``): a 0.4 m steel bar, Craig-Bampton with 2
fixed-interface modes, interfaces A (x = 0, reference) and B (x = 0.4), geometric
stiffness. The same bar reduced now spans the same modes up to column signs ``S``; the
converted interface modes and interface-moment geometric stiffness must equal today's
in that basis, and the stored interface modes are the least-squares rigid fit
``u = t + theta x r`` of the mode shapes at the interface nodes.
"""

from pathlib import Path

import numpy as np
import skfem

import flexmbd as fm

DATA = Path(__file__).resolve().parents[1] / "data"


def _bar():
    mesh = skfem.MeshHex1.init_tensor(
        np.linspace(0, 0.4, 5), np.linspace(0, 0.05, 2), np.linspace(0, 0.05, 2)
    )
    end = lambda x: fm.fem.Plane((x, 0, 0), (1, 0, 0))  # noqa: E731
    return fm.fem.reduce(
        mesh,
        fm.Material(E=2.1e11, nu=0.3, rho=7850.0),
        fm.CraigBampton(2, interfaces={"A": end(0.0), "B": end(0.4)}, frame="interface"),
        name="bar",
        geometric=True,
    )


def _fit(rb, name):
    """Least-squares rigid fit (6, m) of the mode shapes at the interface nodes."""
    _, origin, nodes, _ = rb.interface(name)
    r = rb.nodes[nodes] - origin
    G = np.zeros((len(nodes), 3, 6))
    for j in range(3):
        G[:, :, j] = np.cross(np.eye(3)[j], r)  # theta x r
    G[:, 0, 3] = G[:, 1, 4] = G[:, 2, 5] = 1.0
    dofs = (3 * np.asarray(nodes)[:, None] + np.arange(3)).ravel()
    return np.linalg.lstsq(G.reshape(-1, 6), rb.modes[dofs], rcond=None)[0]


def test_schema1_reduced_body_converts_to_the_one_convention(tmp_path):
    old, new = fm.fem.ReducedBody.load(DATA / "reduced_schema1.npz"), _bar()
    np.testing.assert_allclose(old.frequencies, new.frequencies, rtol=1e-9)
    S = np.linalg.lstsq(old.modes, new.modes, rcond=None)[0]  # new = old @ S
    # S maps each mode to itself up to sign; within a repeated frequency (the square
    # bar's bending pairs) the eigensolver may return any orthonormal basis, so there
    # S is an orthogonal block: S is orthogonal and couples equal frequencies only
    np.testing.assert_allclose(S.T @ S, np.eye(new.n_modes), atol=1e-6)
    f = new.frequencies
    same = np.abs(f[:, None] - f[None, :]) <= 1e-6 * np.abs(f).max()
    np.testing.assert_allclose(np.where(same, 0.0, S), 0.0, atol=1e-6)
    single = same.sum(axis=1) == 1
    np.testing.assert_allclose(np.abs(np.diag(S))[single], 1.0, atol=1e-6)
    assert (np.diag(S)[single] < 0).any()  # the rotation constraint modes changed sign
    for rb in (old, new):
        for name in rb.interface_names:
            np.testing.assert_allclose(rb.interface(name)[3], _fit(rb, name), atol=1e-12)
    for name in ("B",):
        np.testing.assert_allclose(old.interface(name)[3] @ S, new.interface(name)[3], atol=1e-9)
    for k, label in enumerate(new.kg_names):
        j = old.kg_names.index(label)
        ref = np.abs(new.kg_unit[k]).max()
        np.testing.assert_allclose(
            S.T @ old.kg_unit[j] @ S, new.kg_unit[k], atol=1e-6 * ref + 1e-12, err_msg=label
        )
    # an interface moment load: the same geometric stiffness in either file
    w = {"B": [3.0, -2.0, 1.0, 0.0, 0.0, 0.0]}
    np.testing.assert_allclose(
        S.T @ old.geometric_stiffness(interface_forces=w) @ S,
        new.geometric_stiffness(interface_forces=w),
        rtol=1e-6,
        atol=1e-9,
    )
    path = tmp_path / "bar.npz"
    new.save(path)
    again = fm.fem.ReducedBody.load(path)  # schema 2: unchanged
    np.testing.assert_array_equal(again.interface_modes, new.interface_modes)
    np.testing.assert_array_equal(again.kg_unit, new.kg_unit)
    assert str(np.load(path)["schema"]) == fm.fem.reduced.SCHEMA == "flexmbd.reduced/2"
