"""The operational-space recursion that ``benchmarks/bench_loops.py --stages`` times
against the loop's five ``M^-1`` columns (round ring-osi): it must compute the inverse
operational-space inertia of the chain's tip, or the timing compares nothing."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_loops.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_loops_osim", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("N", [1, 2, 7, 20])
def test_osim_tip_is_the_dense_inverse_operational_space_inertia(bench, N):
    # J M^-1 J^T of the tip from the dense mass matrix of the same random chain
    assert bench.osim_check(N) < 1e-13


def test_osim_tip_of_one_body_is_its_hinge_inverse_inertia(bench):
    # one body on a fixed hinge about its z axis: a unit moment about z gives
    # the angular acceleration 1 / I_zz about z and nothing else
    X, Ib, (IA, T, Om, Om2, w) = bench.osim_chain(1)
    bench._osim_tip(X, Ib, IA, T, Om, Om2, w)
    S = np.eye(6)[2]
    np.testing.assert_allclose(Om, np.outer(S, S) / Ib[0, 2, 2], rtol=0, atol=1e-15)
