"""Which mode set describes a connecting rod under a small-end bore load?

The rod (``meshes/rod_tet10.msh``, quadratic tetrahedra) is clamped at the
big-end bore and loaded at the small-end bore by a lateral half-sine force
pulse.  Several mode sets with a similar number of modes are compared with
the full finite-element model: frequency errors, static deflection error,
the truncation error of review eq. 8, the transient response error and cost.

Run ``python examples/connecting_rod_modes.py``; the table (markdown and CSV)
and a figure go to ``examples/out/``.  ``main(small=True)`` uses a coarse
scikit-fem mesh of the same rod and finishes in seconds (used by the tests).

CPU time at defaults: 26 s; with ``--quick`` (the tests' small settings, ``QUICK``): 3.7 s
(process CPU of ``python examples/connecting_rod_modes.py``, compiled-kernel cache warm;
2-core machine, load average 1-5, 29 November 2026).
"""

from pathlib import Path

import numpy as np

from flexmbd.example_args import quick_settings

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
MESH = HERE.parent / "meshes" / "rod_tet10.msh"
R1, R2, LEN = 0.025, 0.012, 0.20  # bore radii and centre distance of the shipped rod


def small_rod():
    """A coarse rod-like bar of quadratic tetrahedra with two bores (pure scikit-fem)."""
    import skfem

    # a flat bar 0.25 x 0.05 x 0.02 with the bores approximated by node selections
    m = skfem.MeshTet1.init_tensor(
        np.linspace(-0.03, 0.22, 16), np.linspace(-0.025, 0.025, 4), np.linspace(0, 0.02, 3)
    )
    return skfem.MeshTet2.from_mesh(m)


def main(small=False, n=8, write=True):
    import flexmbd.fem as F
    from flexmbd.fem.compare import LoadCase

    steel = F.Material(E=2.1e11, nu=0.3, rho=7850, name="steel")
    if small:
        mesh = small_rod()
        big = F.Box((-0.03, -0.03, -1), (-0.0299, 0.03, 1))
        smallb = F.Box((0.2199, -0.03, -1), (0.23, 0.03, 1))
    else:
        mesh = str(MESH)
        big, smallb = F.NodeSet("big_bore"), F.NodeSet("small_bore")
    load = F.PointLoad(smallb, force=(0.0, 1000.0, 0.0))  # 1 kN lateral at the small end
    lc = LoadCase(fixed=big, load=load, pulse="half-sine", n_steps=200 if small else 400)
    itf = {"big": big, "small": smallb}
    strategies = {
        f"NormalModes({n}) free-free": F.NormalModes(n),
        f"NormalModes({n}) clamped": F.NormalModes(n, fixed=big),
        f"StaticCorrection({n - 6}+6) clamped": F.StaticCorrection(n - 6, ["small"], fixed=big),
        f"CraigBampton({n - 6}, rigid)": F.CraigBampton(n - 6, itf, "rigid"),
        f"CraigBampton({n - 6}, distributing)": F.CraigBampton(n - 6, itf, "distributing"),
        f"RitzVectors({n}) clamped": F.RitzVectors(n, load, fixed=big),
    }
    lc.interfaces = {"small": smallb}
    table, fig = F.compare_modes(mesh, steel, strategies, lc, n_freq=6, figure=True)
    if write:
        OUT.mkdir(exist_ok=True)
        cols = [
            "strategy",
            "n_modes",
            "freq_err_max",
            "static_err",
            "trunc_load",
            "trunc_static",
            "transient_err",
            "time_s",
        ]
        tab = table[cols] if hasattr(table, "to_markdown") else table
        name = "connecting_rod_small" if small else "connecting_rod"
        if hasattr(tab, "to_csv"):
            tab.to_csv(OUT / f"{name}.csv", index=False)
            (OUT / f"{name}.md").write_text(_markdown(tab))
        fig.savefig(OUT / f"{name}.png", dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return table


def _markdown(df):
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    body = ""
    for _, r in df.iterrows():
        cells = [f"{v:.3g}" if isinstance(v, float) else str(v) for v in r.values]
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(small=True)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    import pandas as pd

    pd.set_option("display.width", 200)
    t = main(**settings())
    print(
        t[
            [
                "strategy",
                "n_modes",
                "freq_err_max",
                "static_err",
                "trunc_load",
                "trunc_static",
                "transient_err",
                "time_s",
            ]
        ].to_string()
    )
