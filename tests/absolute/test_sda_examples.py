"""The seed paper's examples at small settings: the trends it reports must hold."""

import os
import sys

import numpy as np

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
sys.path.insert(0, os.path.abspath(EXAMPLES))


def test_slider_crank_iterations_trend(tmp_path):
    import sda_slider_crank as ex

    out = ex.main(
        out_dir=str(tmp_path),
        k_values=(1e2, 1e4, 1e6),
        c_values=(1e1, 1e4),
        steps=15,
        static_k=(2e4,),
        plot=True,
    )
    assert (tmp_path / "sda_slider_crank.md").exists()
    assert (tmp_path / "sda_slider_crank.png").exists()
    exact = [a for a, _ in out["k"]] + [a for a, _ in out["c"]]
    without_k = [b for _, b in out["k"]]
    without_c = [b for _, b in out["c"]]
    for r in exact:  # exact Jacobian: about 2 corrections (3 residual evaluations), flat
        assert r["failed_at"] is None and r["mean"] <= 3.0
    means = [r["mean"] for r in exact]
    assert max(means) - min(means) <= 0.5
    # without the SDA Jacobian the count grows with k and with c
    assert without_k[0]["mean"] < without_k[1]["mean"] < without_k[2]["mean"]
    assert without_k[2]["mean"] > 3 * exact[2]["mean"]
    assert without_c[0]["mean"] < without_c[1]["mean"]
    assert without_c[1]["mean"] > 3 * out["c"][1][0]["mean"]
    # static equilibrium: converges with the Jacobian (to l0 + 2F/k), not without it
    a, b = out["static"][0]
    assert a["converged"] and abs(a["length"] - a["theory"]) < 1e-9
    assert not b["converged"]


def test_tensegrity_form_finding(tmp_path):
    import tensegrity as ex

    out = ex.main(out_dir=str(tmp_path), t_end=1.0, table_steps=5, plot=True)
    assert (tmp_path / "tensegrity.md").exists() and (tmp_path / "tensegrity.png").exists()
    assert out["residual"] <= 1e-8
    assert np.all(out["tension"] > 0.1)  # every cable in tension
    assert np.all(out["compression"] > 0.1)  # every bar in compression
    assert out["centroid_drift"] < 1e-10
    e = out["results"].energy
    assert e["damper_work"][-1] > 0 and e["numerical_dissipation"][-1] > 0
    # the dampers dissipate more than the algorithm
    assert e["numerical_dissipation"][-1] < e["damper_work"][-1]
    assert out["iterations"][True][2] is None and out["iterations"][True][0] <= 3
