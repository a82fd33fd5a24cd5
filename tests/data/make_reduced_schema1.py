"""Write a tiny schema-1 reduced body (tests/data/reduced_schema1.npz) with the code of
flexmbd before ``flexmbd.reduced/2`` (that checkout on PYTHONPATH)."""

import sys

import numpy as np
import skfem

import flexmbd as fm

mesh = skfem.MeshHex1.init_tensor(
    np.linspace(0, 0.4, 5), np.linspace(0, 0.05, 2), np.linspace(0, 0.05, 2)
)
end = lambda x: fm.fem.Plane((x, 0, 0), (1, 0, 0))
rb = fm.fem.reduce(
    mesh,
    fm.Material(E=2.1e11, nu=0.3, rho=7850.0),
    fm.CraigBampton(2, interfaces={"A": end(0.0), "B": end(0.4)}, frame="interface"),
    name="bar",
    geometric=True,
)
rb.save(sys.argv[1])
