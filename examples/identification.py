"""Inertial parameter identification of the Panda arm from noisy joint torques.

1. An exciting trajectory: a finite Fourier series per joint (Swevers et al., IEEE T-RA 1997) within its
   limits, the best conditioned of ``candidates`` random ones (``identification.exciting_regressor``).
   The measured torques: inverse dynamics along it (the URDF's parameters are the truth) plus white
   noise of standard deviation ``sigma``.
2. Base parameters by least squares: W_b pi_b = tau. Their covariance is sigma^2 (W_b^T W_b)^-1, so each
   error over its standard deviation (a z-score) should look like a standard normal sample.
3. All 10 n parameters, physically consistent (``identification.consistent_fit``: log-Cholesky
   coordinates, Rucker & Wensing, RA-L 2022; the entropic divergence from a prior, Lee, Wensing & Park,
   IEEE T-RO 2020, fixes what the data cannot see). The prior plays a CAD model: the true bodies
   perturbed in log-Cholesky coordinates.
4. Validation: torques predicted on another trajectory against the noise-free ones.

    python examples/identification.py --samples 1000 [--plot validation.png]
"""

import argparse

import common
import numpy as np

from casrbd import identification
from casrbd.identification import consistent_fit, fourier_trajectory, log_cholesky_perturbation
from casrbd.models import load_arm
from casrbd.parameters import log_cholesky_to_parameters, model_parameters, parameters_to_log_cholesky, pseudo_inertia


def run(samples=1000, sigma=0.1, candidates=10, prior_error=0.2, gamma=1.0, duration=10.0, seed=0):
    """Simulate, identify and validate; returns a dict of the figures (``report``)."""
    model, _ = load_arm()
    rng = np.random.default_rng(seed)
    base = identification.base_parameters(model, seed=seed)
    pi_true = model_parameters(model)
    t = np.linspace(0, duration, samples, endpoint=False)
    # 1. the exciting trajectory: the best conditioned of several random ones (W: its stacked regressor)
    cond, W = identification.exciting_regressor(model, base, t, rng, candidates, period=duration)
    tau = W @ pi_true + sigma * rng.normal(size=W.shape[0])
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
    theta_prior = theta_true + log_cholesky_perturbation(theta_true, prior_error, rng)
    pi_prior = log_cholesky_to_parameters(theta_prior)
    pi_fit, stats = consistent_fit(model, base, pi_b, information, theta_prior, gamma)
    z_fit = (base.of(pi_fit) - pi_b_true) / std
    # 4. validation on another trajectory: rms torque errors per joint of each estimate's predictions
    Wv = identification.stacked_regressor(model, *fourier_trajectory(model, t, rng, period=duration))
    tau_v = (Wv @ pi_true).reshape(-1, model.nv)
    predicted = {"base LS": Wv[:, list(base.independent)] @ pi_b, "consistent": Wv @ pi_fit, "prior": Wv @ pi_prior}
    predicted = {label: y.reshape(-1, model.nv) for label, y in predicted.items()}
    validation = {label: np.sqrt(np.mean((y - tau_v) ** 2, axis=0)) for label, y in predicted.items()}
    r = {"model": model, "base": base, "sigma": sigma, "rows": W.shape[0], "cond": cond, "z": z, "chi2": chi2}
    r.update(pi_true=pi_true, pi_prior=pi_prior, pi_fit=pi_fit, z_fit=z_fit, stats=stats, validation=validation)
    return {**r, "t": t, "tau_v": tau_v, "tau_v_fit": predicted["consistent"]}


def body_errors(p, p_true):
    """(mass, com error in mm, relative error of the rotational inertia about the joint frame) of one body."""
    com_error = np.linalg.norm(p[1:4] / p[0] - p_true[1:4] / p_true[0])
    return p[0], 1e3 * com_error, np.linalg.norm(p[4:] - p_true[4:]) / np.linalg.norm(p_true[4:])


def report(r):
    """Prints the base parameters' errors in units of their standard deviations, the consistent fit's (and its
    bodies' smallest pseudo-inertia eigenvalues), each body against the truth, the validation torques' errors."""
    m, nb, s, z, zf = r["model"], r["base"].count, r["stats"], r["z"], r["z_fit"]
    print(f"{m.name}: {m.nv} joints, {10 * m.njoints} inertial parameters, {nb} base parameters")
    print(f"trajectory: {r['rows'] // m.nv} samples, base regressor condition number {r['cond']:.3g}, ", end="")
    print(f"noise sigma {r['sigma']} Nm")
    print(
        f"base parameters by least squares: error / standard deviation: rms {np.sqrt(np.mean(z**2)):.2f}, max "
        f"{np.abs(z).max():.2f} (a standard normal sample: rms ~ 1); chi^2 {r['chi2']:.1f} for {nb} degrees of "
        f"freedom (expected {nb} +- {np.sqrt(2 * nb):.1f})"
    )
    print(
        f"consistent fit (log-Cholesky, Opti/IPOPT: {s['status']}, {s['iterations']} iterations): base-parameter "
        f"error / standard deviation: rms {np.sqrt(np.mean(zf**2)):.2f}, max {np.abs(zf).max():.2f}"
    )
    eig = [np.linalg.eigvalsh(pseudo_inertia(r["pi_fit"][10 * j : 10 * j + 10])).min() for j in range(m.njoints)]
    print(f"  smallest pseudo-inertia eigenvalue per body: {', '.join(f'{e:.2e}' for e in eig)}")
    print("  body          mass [kg]: true   prior     fit | com error [mm]: prior   fit | ", end="")
    print("inertia rel. error: prior  fit")
    for j, name in enumerate(m.names):
        p_true, p_prior, p_fit = (r[k][10 * j : 10 * j + 10] for k in ("pi_true", "pi_prior", "pi_fit"))
        (mp, cp, ip), (mf, cf, i_f) = body_errors(p_prior, p_true), body_errors(p_fit, p_true)
        print(f"  {name:<14s} {p_true[0]:14.3f} {mp:7.3f} {mf:7.3f} | {cp:21.1f} {cf:5.1f} | {ip:24.2f} {i_f:4.2f}")
    print("validation trajectory, rms torque prediction error per joint [Nm] (noise-free reference):")
    for label, e in r["validation"].items():
        print(f"  {label:<11s} {' '.join(f'{x:7.4f}' for x in e)}   (mean {e.mean():.4f})")


def plot(r, path):
    series = {f"tau{k + 1} [Nm]": np.c_[r["tau_v"][:, k], r["tau_v_fit"][:, k]] for k in range(r["model"].nv)}
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
    report(r)
    if args.plot:
        plot(r, args.plot)
    return 0 if r["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
