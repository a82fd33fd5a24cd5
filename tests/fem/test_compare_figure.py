"""The compare-modes figure: every panel has a legend naming each strategy."""

import pytest

import flexmbd as fm
from flexmbd.fem.compare import LoadCase


def test_every_panel_of_the_compare_modes_figure_has_a_legend():
    pytest.importorskip("matplotlib")
    F = fm.fem
    load = F.PointLoad("B", (0.0, 1000.0, 0.0))
    strategies = {
        "normal(6)": F.NormalModes(6, fixed="A"),
        "ritz(6)": F.RitzVectors(6, load, fixed="A"),
    }
    lc = LoadCase(fixed="A", load=load, n_steps=10)
    table, fig = F.compare_modes(
        fm.data.mesh("beam_hex"),
        fm.Material(E=2.1e11, nu=0.3, rho=7850.0),
        strategies,
        lc,
        n_freq=3,
        figure=True,
    )
    assert len(fig.axes) == 2
    for ax in fig.axes:
        legend = ax.get_legend()
        assert legend is not None
        texts = [t.get_text() for t in legend.get_texts()]
        assert len(texts) == 2 and all("(6)" in t for t in texts)
    # the load's own Ritz vector represents the static load exactly
    ritz = (
        table[table["strategy"] == "ritz(6)"].iloc[0]
        if hasattr(table, "iloc")
        else [r for r in table if r["strategy"] == "ritz(6)"][0]
    )
    assert ritz["static_err"] < 1e-6
