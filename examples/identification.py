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

import casrbd
from casrbd import identification, ocp
from casrbd.parameters import (
    log_cholesky_to_parameters,
    model_parameters,
    parameters_to_log_cholesky,
    pseudo_inertia,
)


def fourier_trajectory(limits, t, rng, harmonics=5, period=10.0, margin=0.8):
    """(q, v, a), each len(t) x n: q_i = q0_i + sum_l a_il sin(l w t) + b_il cos(l w t), w = 2 pi / period,
    scaled so that |q - q0| and |v| stay within ``margin`` of the half range and the velocity limit."""
    lo, hi = limits["lower"], limits["upper"]
    n, w = lo.size, 2 * np.pi / period
    l = np.arange(1, harmonics + 1)
    A, B = rng.normal(size=(2, n, harmonics)) / l
    arg = w * np.outer(t, l)  # len(t) x harmonics
    s, c = np.sin(arg), np.cos(arg)
    dq = s @ A.T + c @ B.T
    v = w * ((c * l) @ A.T - (s * l) @ B.T)
    a = -(w**2) * ((s * l**2) @ A.T + (c * l**2) @ B.T)
    scale = margin * np.minimum((hi - lo) / 2 / np.abs(dq).max(0), limits["velocity"] / np.abs(v).max(0))
    return (lo + hi) / 2 + dq * scale, v * scale, a * scale


def stacked(model, name, *columns):
    """A Function of the model evaluated at every row of the given arrays at once (casadi map)."""
    f = casrbd.function(model, name)
    out = f.map(len(columns[0]))(*[np.asarray(x).T for x in columns]).full()
    return (
        out.reshape(out.shape[0], len(columns[0]), -1).transpose(1, 0, 2).reshape(-1, out.shape[1] // len(columns[0]))
    )


def entropic_divergence(theta, J0):
    """D(J || J0) = tr(J0^-1 J) - log det J + log det J0 - 4 >= 0 for J = J(theta), one body; log det J =
    2 (4 alpha + d1 + d2 + d3) in log-Cholesky coordinates."""
    J = pseudo_inertia(log_cholesky_to_parameters(theta))
    logdet0 = np.linalg.slogdet(J0)[1]
    return (
        ca.trace(ca.mtimes(ca.DM(np.linalg.inv(J0)), J))
        - 2 * (4 * theta[0] + theta[1] + theta[2] + theta[3])
        + logdet0
        - 4
    )


def prior_perturbation(theta, error, rng):
    """A random change of log-Cholesky coordinates that changes masses and rotational inertias by about
    ``error`` (relative) and centres of mass by about ``error`` / 10 m (a CAD model's errors)."""
    scale = np.empty_like(theta)
    for j in range(0, theta.size, 10):
        d = np.exp(theta[j + 1 : j + 4])
        scale[j : j + 4] = error / 2  # alpha, d: relative changes of sqrt(m) and of U's diagonal
        scale[j + 4 : j + 7] = error / 2 * np.sqrt(d[[0, 1, 0]] * d[[1, 2, 2]])  # s12, s23, s13
        scale[j + 7 : j + 10] = error / 10  # t = c, in m
    return scale * rng.normal(size=theta.size)


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
    opti.solver("ipopt", ocp.solver_options(tol=1e-10))
    stats = ocp.solve(opti)
    return log_cholesky_to_parameters(opti.debug.value(theta)), stats


def run(samples=1000, sigma=0.1, candidates=10, prior_error=0.2, gamma=1.0, duration=10.0, seed=0):
    """Simulate, identify and validate; returns a dict of the figures (see ``report``)."""
    model, limits, _ = common.load_arm()
    rng = np.random.default_rng(seed)
    base = identification.base_parameters(model, seed=seed)
    t = np.linspace(0, duration, samples, endpoint=False)
    # 1. the exciting trajectory: the best conditioned of several random ones
    best = None
    for _ in range(candidates):
        q, v, a = fourier_trajectory(limits, t, rng, period=duration)
        W = stacked(model, "joint_torque_regressor", q, v, a)
        cond = np.linalg.cond(base.regressor(W))
        if best is None or cond < best[0]:
            best = (cond, q, v, a, W)
    cond, q, v, a, W = best
    tau_true = W @ model_parameters(model)
    tau = tau_true + sigma * rng.normal(size=tau_true.shape)
    # 2. base parameters by least squares, and their errors in units of their standard deviations
    Wb = base.regressor(W)
    pi_b = np.linalg.lstsq(Wb, tau, rcond=None)[0]
    pi_b_true = base.of(model_parameters(model))
    information = Wb.T @ Wb / sigma**2
    std = np.sqrt(np.diag(np.linalg.inv(information)))
    z = (pi_b - pi_b_true) / std
    # 3. all parameters, physically consistent, from a perturbed prior
    theta_true = parameters_to_log_cholesky(model, model_parameters(model))
    theta_prior = theta_true + prior_perturbation(theta_true, prior_error, rng)
    pi_prior = log_cholesky_to_parameters(theta_prior)
    pi_fit, stats = consistent_fit(model, base, pi_b, information, theta_prior, gamma)
    z_fit = (base.of(pi_fit) - pi_b_true) / std
    # 4. validation on another trajectory
    qv, vv, av = fourier_trajectory(limits, t, rng, period=duration)
    Wv = stacked(model, "joint_torque_regressor", qv, vv, av)
    tau_v = Wv @ model_parameters(model)

    def rms(e):
        return np.sqrt(np.mean(e.reshape(-1, model.nv) ** 2, axis=0))

    return {
        "model": model,
        "base": base,
        "sigma": sigma,
        "rows": W.shape[0],
        "cond": cond,
        "z": z,
        "chi2": float(np.sum(((Wb @ (pi_b - pi_b_true)) / sigma) ** 2)),
        "z_fit": z_fit,
        "pi_true": model_parameters(model),
        "pi_prior": pi_prior,
        "pi_fit": pi_fit,
        "min_eig": [
            np.linalg.eigvalsh(pseudo_inertia(pi_fit[10 * j : 10 * j + 10])).min() for j in range(model.njoints)
        ],
        "stats": stats,
        "validation": {
            "base LS": rms(Wv[:, list(base.independent)] @ pi_b - tau_v),
            "consistent": rms(Wv @ pi_fit - tau_v),
            "prior": rms(Wv @ pi_prior - tau_v),
        },
        "t": t,
        "tau_v": tau_v.reshape(-1, model.nv),
        "tau_v_fit": (Wv @ pi_fit).reshape(-1, model.nv),
    }


def body_errors(p, p_true):
    """(mass, com error in mm, relative error of the rotational inertia about the joint frame) of one body."""
    com_error = np.linalg.norm(p[1:4] / p[0] - p_true[1:4] / p_true[0])
    return p[0], 1e3 * com_error, np.linalg.norm(p[4:] - p_true[4:]) / np.linalg.norm(p_true[4:])


def report(r):
    m, base, s = r["model"], r["base"], r["stats"]
    nb = base.count
    print(f"{m.name}: {m.nv} joints, {10 * m.njoints} inertial parameters, {nb} base parameters")
    print(
        f"trajectory: {r['rows'] // m.nv} samples, base regressor condition number {r['cond']:.3g}, "
        f"noise sigma {r['sigma']} Nm"
    )
    print(
        f"base parameters by least squares: error / standard deviation: rms {np.sqrt(np.mean(r['z'] ** 2)):.2f}, "
        f"max {np.abs(r['z']).max():.2f} (a standard normal sample: rms ~ 1); chi^2 {r['chi2']:.1f} for {nb} "
        f"degrees of freedom (expected {nb} +- {np.sqrt(2 * nb):.1f})"
    )
    print(
        f"consistent fit (log-Cholesky, Opti/IPOPT: {s['status']}, {s['iterations']} iterations): base-parameter "
        f"error / standard deviation: rms {np.sqrt(np.mean(r['z_fit'] ** 2)):.2f}, max {np.abs(r['z_fit']).max():.2f}"
    )
    print(f"  smallest pseudo-inertia eigenvalue per body: {', '.join(f'{e:.2e}' for e in r['min_eig'])}")
    print(
        "  body          mass [kg]: true   prior     fit | com error [mm]: prior   fit | inertia rel. error: prior  fit"
    )
    for j, name in enumerate(m.names):
        p_true, p_prior, p_fit = (r[k][10 * j : 10 * j + 10] for k in ("pi_true", "pi_prior", "pi_fit"))
        (mp, cp, ip), (mf, cf, i_f) = body_errors(p_prior, p_true), body_errors(p_fit, p_true)
        print(f"  {name:<14s} {p_true[0]:14.3f} {mp:7.3f} {mf:7.3f} | {cp:21.1f} {cf:5.1f} | {ip:24.2f} {i_f:4.2f}")
    print("validation trajectory, rms torque prediction error per joint [Nm] (noise-free reference):")
    for label, e in r["validation"].items():
        print(f"  {label:<11s} {' '.join(f'{x:7.4f}' for x in e)}   (mean {e.mean():.4f})")


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
    r = run(args.samples, args.sigma, args.candidates, args.prior_error, args.gamma, seed=args.seed)
    report(r)
    if args.plot:
        plot(r, args.plot)
    return 0 if r["stats"]["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
