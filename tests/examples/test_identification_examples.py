"""examples/identification.py and examples/codesign.py run, with small sizes, and their results hold up.

Identification: the base parameters' least-squares errors, in units of their standard deviations
sigma (W_b^T W_b)^-1/2 computed from the simulated noise, look like a standard normal sample (rms and
chi^2 of that size); the consistent fit's bodies have positive definite pseudo-inertias (built here
from the parameters by hand, as Wensing, Kim & Slotine define them) and it predicts the torques of a
validation trajectory within the noise level, better than its prior. Co-design: the torques respect
the motors' limits, the co-design needs lighter motors than the sequential design, and the optimised
torques replayed on the designed arm (a numeric model built from the design's parameters, aba) reach
the goal.
"""

import example_runner
import numpy as np
import pytest


def example(name):
    """The example's module namespace (its main() not run)."""
    return vars(example_runner.example(name))


def pseudo_inertia_by_hand(p):
    I = np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])
    J = np.zeros((4, 4))
    J[:3, :3] = np.trace(I) / 2 * np.eye(3) - I
    J[:3, 3] = J[3, :3] = p[1:4]
    J[3, 3] = p[0]
    return J


@pytest.fixture(scope="module")
def identification():
    ex = example("identification")
    return ex, ex["run"](samples=200, candidates=2)


def test_base_parameters_within_the_noise(identification):
    _, r = identification
    nb = r["base"].count
    assert np.sqrt(np.mean(r["z"] ** 2)) < 1.5 and np.abs(r["z"]).max() < 4.5
    assert abs(r["chi2"] - nb) < 4 * np.sqrt(2 * nb)


def test_consistent_fit_is_physical_and_predicts(identification):
    _, r = identification
    m, sigma = r["model"], r["sigma"]
    assert r["stats"]["success"]
    for j in range(m.njoints):
        assert np.linalg.eigvalsh(pseudo_inertia_by_hand(r["pi_fit"][10 * j : 10 * j + 10])).min() > 0
    assert np.sqrt(np.mean(r["z_fit"] ** 2)) < 2.0
    val = r["validation"]
    assert val["base LS"].max() < sigma / 2 and val["consistent"].max() < sigma / 2
    assert val["prior"].mean() > 10 * val["consistent"].mean()


def test_identification_report_prints_the_figures(identification, capsys):
    ex, r = identification
    ex["report"](r)
    out = capsys.readouterr().out
    assert "base parameters by least squares: error / standard deviation: rms" in out
    assert "smallest pseudo-inertia eigenvalue per body" in out
    assert all(f"  {name} " in out for name in r["model"].names)  # a row per body
    assert "validation trajectory, rms torque prediction error" in out


def test_codesign(capsys):
    ex = example("codesign")
    r = ex["run"](nodes=30)
    co, seq = r["codesign"], r["sequential"]
    assert co["stats"]["success"] and seq["stats"]["success"]
    assert np.all(np.abs(co["tau"]) <= ex["KAPPA"] * co["motors"] + 1e-6)
    assert np.all(co["motors"] >= ex["M_MIN"] - 1e-9)
    assert co["motors"].sum() < 0.9 * seq["motors"].sum()
    final = ex["simulate"](r["model"], co)
    assert np.abs(final - np.r_[ex["GOAL"], 0, 0]).max() < 1e-5
    ex["report"](r)
    assert "co-design (Solve_Succeeded" in capsys.readouterr().out
