"""Which mode set is good enough? A mode-selection study on the flexible slider-crank.

The mechanism of ``examples/flexible_slider_crank.py`` (Simeon's slider-crank: crank
0.15 m at 150 rad/s, steel rod 0.30 m x 8 mm x 8 mm meshed with 30 quadratic
hexahedra, slider), started on the rigid-body trajectory, geometric stiffening on.
The rod is reduced by four strategies (review, Yu & Hong 1998, eq. 1-12), each with
``m`` = 2 ... 16 modal coordinates, all in mean axes (free-free bases) so that they
model the same floating frame:

* **normal modes**: the ``m`` lowest free-free normal modes;
* **normal + static correction**: ``m - 4`` normal modes plus the static (inertia-
  relief) responses to the in-plane joint forces, axial and lateral at the pins A and
  B (eq. 1-6, re-diagonalized);
* **Craig-Bampton** (``frame="mean-axis"``, distributing interfaces): fixed-interface
  modes plus the constraint modes of the two end faces minus the six rigid-body
  motions (at least 6 coordinates);
* **Ritz vectors**: load-dependent Ritz vectors (eq. 9-12) started from the same four
  pin forces (block Ritz).

Every strategy attaches the joints to the end faces the same way: the faces deform,
the joint frame is their least-squares rigid fit and joint forces are spread over them
(distributing, RBE3-like). A Craig-Bampton basis with *rigid* faces models a slightly
stiffer rod (its limit differs by ~2e-3 of the peak); the tables show it as an extra column,
measured against its own 54-coordinate limit.

Figure of merit: the rod's midpoint deflection from the chord A-B (the quantity of the
Test Set), its largest deviation over the run from a high-mode reference (Craig-
Bampton with ``REFERENCE_MODES`` fixed-interface modes) relative to the reference's
peak, and the CPU time of reduction and simulation. The reference is checked against
a static-correction basis of as many coordinates (another route to the same limit)
and, as in the slider-crank example, against a geometrically exact rigid-segment chain.
The step (default 6.25e-6 s) keeps the time-discretization error of every run below
1e-4 of the peak: at 2.5e-5 s it is ~2e-3, larger than the differences of good mode
sets.

Run ``python examples/mode_selection_study.py``; writes ``examples/out/
mode_selection.png`` and ``.md``. ``main(t_end=..., mode_counts=...)`` small for tests.

CPU time at defaults: 72 s; with ``--quick`` (the tests' small settings, ``QUICK``): 7.6 s
(process CPU of ``python examples/mode_selection_study.py``, compiled-kernel cache warm;
2-core machine, load average 1-5, 29 November 2026).
"""

import time
from pathlib import Path

import numpy as np

import flexmbd as fm
from flexmbd.example_args import quick_settings

HERE = Path(__file__).resolve().parent
REFERENCE_MODES = 48  # fixed-interface modes of the reference (54 in all)
MODE_COUNTS = (2, 4, 6, 8, 10, 12, 16)
DT = 6.25e-6


def _crank():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "flexible_slider_crank", HERE / "flexible_slider_crank.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


sc = _crank()


def pin_forces():
    """The in-plane unit forces at the pins A and B (x: along the rod, y: lateral), spread
    over the end faces."""
    itf = sc.rod_interfaces()
    return [
        fm.fem.PointLoad(itf[p], force=f, name=f"{p}.f{c}")
        for p in ("A", "B")
        for c, f in (("x", (1.0, 0.0, 0.0)), ("y", (0.0, 1.0, 0.0)))
    ]


def craig_bampton(n_fixed, kind="distributing"):
    """Craig-Bampton in mean axes on the end faces A and B (``kind`` of interface)."""
    return fm.CraigBampton(
        n_fixed, interfaces=sc.rod_interfaces(), interface_kind=kind, frame="mean-axis"
    )


def strategy(kind, m):
    """The mode strategy ``kind`` with ``m`` modal coordinates in all, or None if it has
    no basis of that size (Craig-Bampton needs at least 6, static correction 4)."""
    if kind == "normal modes":
        return fm.NormalModes(m)
    if kind == "normal + static correction":
        return fm.StaticCorrection(m - 4, pin_forces()) if m >= 4 else None
    if kind == "Craig-Bampton":
        return craig_bampton(m - 6) if m >= 6 else None
    if kind == RIGID_CB:
        return craig_bampton(m - 6, "rigid") if m >= 6 else None
    if kind == "Ritz vectors":
        return fm.RitzVectors(m, pin_forces())
    raise ValueError(f"unknown strategy {kind!r}")


RIGID_CB = "Craig-Bampton, rigid faces*"
STRATEGIES = (
    "normal modes",
    "normal + static correction",
    "Craig-Bampton",
    "Ritz vectors",
    RIGID_CB,
)


def run(modes, t_end, dt, stiffening=True):
    """Reduce (CPU timed) and simulate; returns the midpoint history and the timings."""
    rod = sc.fe_rod(modes, stiffening=stiffening)
    tic = time.process_time()
    rb = rod.reduced
    t_red = time.process_time() - tic
    model = sc.build(rod)
    res, cpu = sc.simulate(model, t_end, dt)
    return {
        "t": res.t,
        "d": sc.midpoint_deflection(model, res),
        "reduction": t_red,
        "simulation": cpu,
        "n_modes": rb.n_modes,
        "frequencies": rb.frequencies,
    }


def _table(rows, strategies, mode_counts, cell):
    """Markdown table: one row per mode count, one column per strategy (``cell(row)``)."""
    lines = ["| modes | " + " | ".join(strategies) + " |", "|---:|" + "---:|" * len(strategies)]
    for m in mode_counts:
        cells = ["-" if (kind, m) not in rows else cell(rows[(kind, m)]) for kind in strategies]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return lines


def main(
    t_end=0.05,
    dt=DT,
    mode_counts=MODE_COUNTS,
    strategies=STRATEGIES,
    reference_modes=REFERENCE_MODES,
    chain_segments=20,
    chain_dt=2.5e-5,
    plot=True,
    outdir=None,
):
    """Run the study; print and write the tables (and plot). Returns a dict with the
    reference, its checks and ``rows[(strategy, m)] = {"err", "reduction", "simulation",
    ...}``; errors relative to the reference's peak midpoint deflection."""
    ref = run(craig_bampton(reference_modes), t_end, dt)
    peak = np.abs(ref["d"]).max()
    dev = lambda d: float(np.abs(d - ref["d"]).max() / peak)
    n_alt = ref["n_modes"] - 4
    alt = run(fm.StaticCorrection(n_alt, pin_forces()), t_end, dt)
    rigid = run(craig_bampton(reference_modes, "rigid"), t_end, dt)
    out = {
        "reference": ref,
        "peak": peak,
        "reference_check": dev(alt["d"]),
        "rigid_faces": dev(rigid["d"]),
        "rows": {},
    }
    if chain_segments:
        mc = sc.chain_model(chain_segments)
        res, _ = sc.simulate(mc, t_end, chain_dt)
        every = int(round(chain_dt / dt))
        out["chain"] = sc.chain_midpoint(mc, res)
        out["chain_check"] = float(np.abs(out["chain"] - ref["d"][::every]).max() / peak)
    for kind in strategies:
        for m in mode_counts:
            st = strategy(kind, m)
            if st is None:
                continue
            r = run(st, t_end, dt)
            own = rigid["d"] if kind == RIGID_CB else ref["d"]
            r["err"] = float(np.abs(r["d"] - own).max() / peak)
            out["rows"][(kind, m)] = r
    lines = [
        "# Mode-selection study: flexible slider-crank (Simeon), meshed rod",
        "",
        f"Midpoint deflection over {t_end} s (dt = {dt:g} s, generalized-alpha, geometric "
        "stiffening on, all bases in mean axes, joints on distributing end faces). Error = "
        f"largest deviation from the reference / its peak ({peak * 1e3:.4f} mm); "
        f"reference: Craig-Bampton with {reference_modes} fixed-interface modes "
        f"({ref['n_modes']} coordinates).",
        "",
        f"- reference vs static correction with {n_alt} normal modes + 4 static modes: "
        f"{out['reference_check']:.1e} of the peak",
        f"- Craig-Bampton with rigid end faces ({rigid['n_modes']} coordinates; a stiffer "
        f"rod): {out['rigid_faces']:.1e} of the peak; *its column is measured against "
        "this rigid-face limit",
    ]
    if chain_segments:
        lines.append(
            f"- reference vs the rigid-segment chain ({chain_segments} segments, "
            f"geometrically exact, dt = {chain_dt:g} s): {out['chain_check']:.3f} of "
            "the peak"
        )
    lines += [""] + _table(out["rows"], strategies, mode_counts, lambda r: f"{r['err']:.2e}")
    lines += ["", "CPU time [s], reduction + simulation:", ""]
    lines += _table(
        out["rows"],
        strategies,
        mode_counts,
        lambda r: f"{r['reduction']:.2f} + {r['simulation']:.2f}",
    )
    cpus = [r["simulation"] for r in out["rows"].values()]
    lines += [
        "",
        f"Simulation CPU spans {min(cpus):.2f}-{max(cpus):.2f} s over all bases: with "
        "so few modal coordinates the step cost is the mechanism's (joints, Newton "
        "iterations), so accuracy per coordinate decides the choice.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out["text"] = text
    outdir = Path(outdir or HERE / "out")
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "mode_selection.md").write_text(text)
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(1, 3, figsize=(15, 4.5))
        for kind in strategies:
            ms = [m for m in mode_counts if (kind, m) in out["rows"]]
            err = [out["rows"][(kind, m)]["err"] for m in ms]
            cpu = [out["rows"][(kind, m)]["simulation"] for m in ms]
            ax[0].semilogy(ms, err, "o-", label=kind)
            ax[1].semilogy(cpu, err, "o-", label=kind)
        ax[0].set_xlabel("modal coordinates")
        ax[0].set_ylabel("max midpoint-deflection error / peak")
        ax[1].set_xlabel("simulation CPU time [s]")
        ax[1].set_ylabel("max midpoint-deflection error / peak")
        t = ref["t"]
        ax[2].plot(t, ref["d"] * 1e3, "k", lw=2, label=f"reference ({ref['n_modes']} modes)")
        m_show = 6 if 6 in mode_counts else mode_counts[len(mode_counts) // 2]
        for kind in strategies:
            r = out["rows"].get((kind, m_show))
            if r is not None:
                ax[2].plot(t, r["d"] * 1e3, lw=1, label=f"{kind}, {m_show}")
        ax[2].set_xlabel("t [s]")
        ax[2].set_ylabel("midpoint deflection [mm]")
        for a in ax:
            a.legend(fontsize=7)
            a.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / "mode_selection.png", dpi=110)
        plt.close(fig)
    return out


# --quick: the small settings the tests use (seconds instead of minutes)
QUICK = dict(t_end=0.004, dt=1.25e-5, mode_counts=(4, 8), reference_modes=24, chain_segments=0)


def settings(argv=None):
    """Keyword arguments of ``main`` from the command line (``--quick``: QUICK)."""
    return quick_settings(__doc__, QUICK, argv)


if __name__ == "__main__":
    main(**settings())
