"""Inertial parameter identification of the Panda arm from noisy joint torques.

1. An exciting trajectory: each joint follows a finite Fourier series (Swevers, Ganseman, Tukel,
   De Schutter & Van Brussel, "Optimal Robot Excitation and Identification", IEEE T-RA 1997) scaled
   into its position and velocity limits; of ``candidates`` random ones the one whose base regressor
   is best conditioned is kept. The measured torques are inverse dynamics along it (the URDF's
   parameters are the truth) plus white noise of standard deviation ``sigma``.
2. Base parameters by least squares: W_b pi_b = tau, W_b the stacked base regressor
   (``casrbd.identification``). The estimate's covariance is sigma^2 (W_b^T W_b)^-1, so each error
   divided by its standard deviation (a z-score) should look like a standard normal sample.
3. All 10 n parameters by a physically consistent fit: the log-Cholesky coordinates theta of every
   body (``casrbd.parameters``, Rucker & Wensing, RA-L 2022) as Opti variables, minimising
   |W pi(theta) - tau|^2 / (2 sigma^2) plus ``gamma`` times the entropic (log-det) divergence of each
   body's pseudo-inertia from a prior's (Lee, Wensing & Park, "Geometric Robot Dynamic Identification:
   A Convex Programming Approach", IEEE T-RO 2020), which fixes the directions the data cannot see.
   The prior plays a CAD model: the true bodies perturbed in log-Cholesky coordinates.
4. Validation: torques predicted on another trajectory against the noise-free ones.

    python examples/identification.py --samples 1000 [--plot validation.png]
"""

import argparse

import casadi as ca
import common
import numpy as np

from casrbd import identification
from casrbd.parameters import log_cholesky_to_parameters, model_parameters, parameters_to_log_cholesky, pseudo_inertia


def entropic_divergence(theta, J0):
    """D(J || J0) = tr(J0^-1 J) - log det J + log det J0 - 4 >= 0 for J = J(theta), one body; log det J =
    2 (4 alpha + d1 + d2 + d3) in log-Cholesky coordinates."""
    J = pseudo_inertia(log_cholesky_to_parameters(theta))
    logdet = 2 * (4 * theta[0] + theta[1] + theta[2] + theta[3])
    return ca.trace(ca.mtimes(ca.DM(np.linalg.inv(J0)), J)) - logdet + np.linalg.slogdet(J0)[1] - 4


def consistent_fit(model, base, pi_b, information, theta_prior, gamma):
    """Opti over the log-Cholesky coordinates of every body; returns (pi, stats).

    The data term |W pi - tau|^2 / (2 sigma^2) is, up to a constant, (B pi - pi_b)^T F (B pi - pi_b) / 2 with
    pi_b the least-squares base parameters and F = W_b^T W_b / sigma^2 their information matrix
    (W pi = W_b B pi): the same objective, without the long residual vector."""
    n = model.njoints
    opti = ca.Opti()
    theta = opti.variable(10 * n)
    e = ca.mtimes(ca.DM(base.B), log_cholesky_to_parameters(theta)) - pi_b
    J0 = [pseudo_inertia(log_cholesky_to_parameters(theta_prior[10 * j : 10 * j + 10])) for j in range(n)]
    prior = sum(entropic_divergence(theta[10 * j : 10 * j + 10], J0[j]) for j in range(n))
    opti.minimize(ca.bilin(ca.DM(information), e, e) / 2 + gamma * prior)
    opti.set_initial(theta, theta_prior)
    stats, value = common.solve_ipopt(opti, tol=1e-10)
    return log_cholesky_to_parameters(value(theta)), stats


def run(samples=1000, sigma=0.1, candidates=10, prior_error=0.2, gamma=1.0, duration=10.0, seed=0):
    """Simulate, identify and validate; returns a dict of the figures (``common.identification_report``)."""
    model, limits, _ = common.load_arm()
    rng = np.random.default_rng(seed)
    base = identification.base_parameters(model, seed=seed)
    pi_true = model_parameters(model)
    t = np.linspace(0, duration, samples, endpoint=False)
    # 1. the exciting trajectory: the best conditioned of several random ones (W: its stacked regressor)
    best = None
    for _ in range(candidates):
        W = identification.stacked_regressor(model, *common.fourier_trajectory(limits, t, rng, period=duration))
        cond = np.linalg.cond(base.regressor(W))
        if best is None or cond < best[0]:
            best = (cond, W)
    cond, W = best
    tau_true = W @ pi_true
    tau = tau_true + sigma * rng.normal(size=tau_true.shape)
    # 2. base parameters by least squares, and their errors in units of their standard deviations
    Wb = base.regressor(W)
    pi_b = np.linalg.lstsq(Wb, tau, rcond=None)[0]
    pi_b_true = base.of(pi_true)
    information = Wb.T @ Wb / sigma**2
    std = np.sqrt(np.diag(np.linalg.inv(information)))
    z = (pi_b - pi_b_true) / std
    chi2 = float(np.sum(((Wb @ (pi_b - pi_b_true)) / sigma) ** 2))
    # 3. all parameters, physically consistent, from a perturbed prior
    theta_true = parameters_to_log_cholesky(model, pi_true)
    theta_prior = theta_true + common.prior_perturbation(theta_true, prior_error, rng)
    pi_prior = log_cholesky_to_parameters(theta_prior)
    pi_fit, stats = consistent_fit(model, base, pi_b, information, theta_prior, gamma)
    z_fit = (base.of(pi_fit) - pi_b_true) / std
    # 4. validation on another trajectory: rms torque errors per joint of each estimate's predictions
    Wv = identification.stacked_regressor(model, *common.fourier_trajectory(limits, t, rng, period=duration))
    tau_v = (Wv @ pi_true).reshape(-1, model.nv)
    predicted = {"base LS": Wv[:, list(base.independent)] @ pi_b, "consistent": Wv @ pi_fit, "prior": Wv @ pi_prior}
    predicted = {label: y.reshape(-1, model.nv) for label, y in predicted.items()}
    validation = {label: np.sqrt(np.mean((y - tau_v) ** 2, axis=0)) for label, y in predicted.items()}
    r = {"model": model, "base": base, "sigma": sigma, "rows": W.shape[0], "cond": cond, "z": z, "chi2": chi2}
    r.update(pi_true=pi_true, pi_prior=pi_prior, pi_fit=pi_fit, z_fit=z_fit, stats=stats, validation=validation)
    return {**r, "t": t, "tau_v": tau_v, "tau_v_fit": predicted["consistent"]}


def plot(r, path):
    series = {
        f"tau{k + 1} [Nm]": np.column_stack([r["tau_v"][:, k], r["tau_v_fit"][:, k]]) for k in range(r["model"].nv)
    }
    common.plot_series(path, r["t"], series, title="validation: true torque and consistent fit's prediction")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=1000, help="torque samples along the trajectory (default 1000)")
    p.add_argument("--sigma", type=float, default=0.1, help="torque noise standard deviation in Nm (default 0.1)")
    p.add_argument("--candidates", type=int, default=10, help="random trajectories to choose from (default 10)")
    p.add_argument("--prior-error", type=float, default=0.2, help="prior's log-Cholesky perturbation (default 0.2)")
    p.add_argument("--gamma", type=float, default=1.0, help="weight of the prior's divergence (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", metavar="PATH.png", help="write the validation torques")
    args = p.parse_args(argv)
    r = run(**common.arguments(args, run))
    common.identification_report(r)
    if args.plot:
        plot(r, args.plot)
    return 0 if r["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
