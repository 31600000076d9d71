"""What the examples share beyond casrbd: the robots they load, the friction cones and contact
schedules, the command line, solving and collecting the solution, printing the results, and their plots
(stick figures of configurations and time series, with matplotlib), so that each example reads top to
bottom as its problem. Examples import it as ``common`` (run as ``python examples/NAME.py``, their folder
is on the path)."""

import argparse
import inspect
import warnings
import xml.etree.ElementTree as ET

import casadi as ca
import numpy as np

import casrbd
from casrbd import ocp, viewer
from casrbd.functions import function
from casrbd.models import load_robot, robot_path
from casrbd.parameters import pseudo_inertia
from casrbd.spatial import Inertia
from casrbd.spec import choice

# ---- the robots ----
ARM_TOOL = {"panda": "panda_hand_tcp", "arm7": "tool"}
SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
SOLO_LEGS = np.array([0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6])  # HAA, HFE, KFE per leg
TALOS_FEET = ("left_sole_link", "right_sole_link")
# talos's half-sitting legs (hip yaw, roll, pitch, knee, ankle pitch, roll): flat feet, knees bent
TALOS_LEG = np.array([0.0, 0.0, -0.411354, 0.859395, -0.448041, 0.0])


def load_arm():
    """(model, limits, tool frame) of the Panda arm (fingers fixed), else arm7; ``limits``:
    dict of the model's lower, upper, velocity and effort arrays over the joints (the URDF's)."""
    try:
        name, path = "panda", robot_path("panda")[0]
    except LookupError:  # example-robot-data is not installed
        name, path = "arm7", robot_path("arm7")[0]
    root = ET.parse(path).getroot()
    for joint in root.iter("joint"):
        if "finger" in joint.get("name"):
            joint.set("type", "fixed")
            for mimic in joint.findall("mimic"):
                joint.remove(mimic)
    model = casrbd.load_urdf(ET.tostring(root, encoding="unicode"))
    limits = {
        "lower": model.lower,
        "upper": model.upper,
        "velocity": model.velocity_limit,
        "effort": model.effort_limit,
    }
    return model, limits, ARM_TOOL[name]


def load_talos():
    """example-robot-data's talos_reduced (its loader's warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the grippers' mimic joints are loaded as independent joints
        return load_robot("talos_reduced")


def solo12_standing(model, x=0.0):
    """Solo12's standing configuration (knees bent) with the feet on the ground (z = 0), base at ``x``."""
    q = np.r_[0, 0, 0, 0, 0, 0, 1, SOLO_LEGS]
    q[2] = -min(casrbd.frame_placement(model, q, f)[2, 3] for f in SOLO_FEET)
    q[0] = x
    return q


def talos_standing(model):
    """Talos half-sitting, both soles flat on the ground (z = 0)."""
    q = np.array(casrbd.neutral(model), dtype=float)
    for side in ("left", "right"):
        for k in range(6):
            q[model.idx_q[model.joint_index(f"leg_{side}_{k + 1}_joint")]] = TALOS_LEG[k]
    q[2] = -min(casrbd.frame_placement(model, q, f)[2, 3] for f in TALOS_FEET)
    return q


def rod(mass, length):
    """A thin rod along x from the joint: com at length / 2, inertia m l^2 / 12 about y and z."""
    return Inertia.from_com(mass, [length / 2, 0, 0], np.diag([1e-5, 1, 1]) * mass * length**2 / 12)


def point_mass(mass, x):
    """A point mass on the x axis at ``x`` from the joint."""
    return Inertia.from_com(mass, [x, 0, 0], np.zeros((3, 3)))


# ---- contacts and their schedules ----
def schedule(nodes, phases):
    """The phase index of each of ``nodes`` equal intervals and their dt, for ``phases`` a sequence of
    (anything, seconds)."""
    duration = sum(s for _, s in phases)
    ends = np.cumsum([s for _, s in phases]) / duration * nodes
    return np.searchsorted(ends, np.arange(nodes) + 0.5), duration / nodes


def contact_forces(model, q, frames, forces):
    """rnea's ``f_ext`` (6 x njoints, each column in its joint's frame) of ``forces`` at ``frames``: a
    column per frame, in world axes, a force at the frame's origin (3 rows) or a wrench [f; tau] about
    it (6 rows); numbers (a DM) or casadi expressions.

    A wrench [f; tau] at the frame is, in the frame of the frame's joint i (rotation o_R_i from forward
    kinematics), [i_R_o f; i_R_o tau + r x i_R_o f], r the frame's fixed offset from the joint."""
    oMi = function(model, "forward_kinematics")(q)
    columns = [ca.DM.zeros(6, 1) for _ in range(model.njoints)]
    for k, name in enumerate(frames):
        frame = model.frames[model.frame_index(name)]
        i = frame.joint
        i_R_o = oMi[:3, 4 * i : 4 * i + 3].T
        f = ca.mtimes(i_R_o, forces[:3, k])
        tau = ca.cross(ca.DM(np.asarray(frame.placement.p).ravel()), f)
        if forces.shape[0] == 6:
            tau = ca.mtimes(i_R_o, forces[3:, k]) + tau
        columns[i] = columns[i] + ca.vertcat(f, tau)
    return ca.horzcat(*columns)


def friction_pyramid(opti, f, mu):
    """Forces ``f`` (3 x k, world axes, z up) pushing (f_z >= 0) inside the linearised friction cone
    |f_x|, |f_y| <= mu f_z."""
    opti.subject_to(f[2, :] >= 0)
    for k in (0, 1):
        opti.subject_to(opti.bounded(-mu * f[2, :], f[k, :], mu * f[2, :]))


# ---- trajectories, data and plants ----
def interpolate(start, goal, nodes):
    """``nodes`` + 1 columns from ``start`` to ``goal`` at constant speed (an initial guess)."""
    s = np.linspace(0, 1, nodes + 1)
    return np.outer(start, 1 - s) + np.outer(goal, s)


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


def simulate_aba(model, x, taus, dt, substeps):
    """A plant: from the state x = [q; v] (nq = nv), each torque of ``taus`` held in turn for ``dt``, in
    ``substeps`` RK4 steps of the numeric aba; the final state."""

    def ode(x, u):
        return np.r_[x[model.nq :], casrbd.aba(model, x[: model.nq], x[model.nq :], u)]

    for tau in taus:
        for _ in range(substeps):
            x = ocp.rk4(ode, x, tau, dt / substeps)
    return x


# ---- solving, and the solution per node ----
def solve_ipopt(opti, **options):
    """Solves ``opti`` with IPOPT and ``ocp.solver_options(**options)``: (stats, value), ``value`` giving
    the solution, or the last iterate if the solve failed (``opti.debug.value``)."""
    opti.solver("ipopt", ocp.solver_options(**options))
    return ocp.solve(opti), opti.debug.value


def trajectories(value, dt, **expressions):
    """A solution per node: the values of each Opti expression of ``expressions`` (one column per node) as
    rows, one per node, with the node times ``t`` (as many as the longest has nodes) and ``dt``."""
    out = {name: np.atleast_2d(value(x)).T for name, x in expressions.items()}
    out.update(t=np.arange(max(len(rows) for rows in out.values())) * dt, dt=dt)
    return out


# ---- Crocoddyl's gait problems (quadruped_gait, humanoid_walk, gap_crossing: built by casrbd.ocp.legged) ----
def knots_result(model, steps, problem, sol):
    """What a gait example returns: the model, the gait's steps (``knots``), states xs, controls us (a list,
    empty at impulses), contact forces, the stage Functions with their parameters, the solver's stats and
    the largest constraint violation."""
    stages = [(s.function, p) for s, p in zip(problem.stages, problem.parameters)]
    return {
        "model": model,
        "knots": steps,
        "xs": sol.xs,
        "us": sol.us,
        "forces": sol.forces,
        "stages": stages,
        "stats": sol.stats,
        "violation": sol.violation,
    }


def write_knots_html(path, model, knots, xs, robot):
    """The motion of a knot problem as an HTML animation; an impulse knot takes no time, so the state
    after it is shown."""
    t = np.concatenate([[0.0], np.cumsum([k.dt for k in knots[: len(xs) - 1]])])
    keep = np.r_[np.diff(t) > 0, True]
    write_html(path, model, t[keep], xs[keep, : model.nq], robot)


# ---- the command line ----
DERIVATIVE_FLAGS = ("jacobian", "hessian", "compiled", "second_order")  # "compiled_dynamics": --[no-]compiled


def parser(doc, nodes, nodes_help, plot_help, derivatives=DERIVATIVE_FLAGS):
    """The command line the optimal-control examples share (the README's flags): --nodes, the
    ``derivatives`` flags the example takes, --plot, --html, --verbose; the example adds its own.
    "compiled" is --compiled, the NLP as C (off by default); "compiled_dynamics" is --[no-]compiled, the
    dynamics as a C library (on by default)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--nodes", type=int, default=nodes, help=f"{nodes_help} (default {nodes})")
    if "jacobian" in derivatives:
        p.add_argument("--jacobian", choices=ocp.JACOBIANS, default="analytical")
    if "hessian" in derivatives:
        p.add_argument("--hessian", choices=ocp.HESSIANS, default="exact")
    if "compiled" in derivatives:
        p.add_argument("--compiled", action="store_true", help="the NLP's functions as C code (casadi's jit)")
    if "compiled_dynamics" in derivatives:
        text = "dynamics as C code through casrbd.codegen (default: yes)"
        p.add_argument("--compiled", action=argparse.BooleanOptionalAction, default=True, help=text)
    if "second_order" in derivatives:
        p.add_argument(
            "--second-order", choices=ocp.JACOBIANS, help="analytical (default with the analytical Jacobian) or ad"
        )
    p.add_argument("--plot", metavar="PATH.png", help=plot_help)
    p.add_argument("--html", metavar="PATH.html", help="write the motion as an HTML animation (offline, any browser)")
    p.add_argument("--verbose", action="store_true", help="IPOPT's iteration log")
    return p


def arguments(args, function):
    """The keyword arguments of ``function`` that the command line ``args`` holds (by name): what main()
    passes on to the example's solve or run."""
    names = inspect.signature(function).parameters
    return {name: value for name, value in vars(args).items() if name in names}


def modes(args):
    """The derivative modes an example's command line chose, for its summary line."""
    parts = [f"jacobian {args.jacobian}"]
    if hasattr(args, "second_order"):
        default = "analytical" if args.jacobian == "analytical" else "ad"
        parts.append(f"second order {args.second_order or default}")
    if hasattr(args, "hessian"):
        parts.append(f"hessian {args.hessian}")
    if getattr(args, "compiled", False):
        parts.append("compiled")
    return ", ".join(parts)


def finish(args, title, result, plot, robot=None, details=(), notes=()):
    """The end of an optimal-control example's main(): prints ``title``, the ``details`` and derivative
    modes in parentheses, the solver's statistics, then the lines ``notes``; writes what --plot and --html
    ask for (``outputs``); returns the exit status (0: solved)."""
    print(f"{title} ({', '.join([*details, modes(args)])}): {ocp.format_stats(result['stats'])}")
    for line in notes:
        print(line)
    outputs(args, result, plot, robot)
    return 0 if result["stats"]["success"] else 1


def outputs(args, result, plot, robot=None):
    """What --plot and --html ask for: ``plot(result, path)``, and the motion of ``result`` (model, t, q)
    with the visuals of ``robot``."""
    if args.plot:
        plot(result, args.plot)
    if args.html:
        write_html(args.html, result["model"], result["t"], result["q"], robot)


def write_html(path, model, t, q, robot=None):
    """An example's motion (times ``t``, configurations ``q``, one per row) as a self-contained HTML
    animation (``casrbd.viewer``) with the visuals of ``robot`` (a name or file; None: a stick figure)."""
    viewer.write_html(path, model, t, q, robot)
    print(f"wrote {path}: open it in a browser")


# ---- printing the results ----
def mpc_summary(result):
    """One line on a closed loop's solves (``result["solves"]``, the first cold, the others warm-started)
    and how close its last configuration came to ``result["q_goal"]``."""
    s = result["solves"]
    if len(s) == 1:
        return f"1 solve: {ocp.format_stats(s[0])}"
    iters = np.array([x["iterations"] for x in s])
    times = np.array([x["t_total"] for x in s])
    ok = sum(x["success"] for x in s)
    err = np.abs(result["q"][-1] - result["q_goal"]).max()
    return (
        f"{len(s)} solves, {ok} succeeded; iterations first {iters[0]}, then mean {iters[1:].mean():.1f} "
        f"max {iters[1:].max()}; solve time first {times[0]:.3f} s, then mean {1e3 * times[1:].mean():.1f} ms "
        f"max {1e3 * times[1:].max():.1f} ms; final |q - q_goal| {err:.2e} rad"
    )


def codesign_report(r):
    """Prints examples/codesign.py's results ``r``: each round of the sequential design, the co-design's
    motors, peak torques against their limits (``r["kappa"]`` times the motor masses), and the final state
    errors of its replays on the designed arm."""
    seq, co = r["sequential"], r["codesign"]
    print("sequential design (plan minimum effort, size motors for the peak torques, repeat):")
    for k, m in enumerate(r["history"]):
        print(f"  round {k + 1}: motors {m[0]:.3f} kg + {m[1]:.3f} kg = {m.sum():.3f} kg")
    print(f"co-design ({ocp.format_stats(co['stats'])}):")
    print(f"  motors {co['motors'][0]:.3f} kg + {co['motors'][1]:.3f} kg = {co['motors'].sum():.3f} kg")
    limits = (r["kappa"] * co["motors"]).round(3)
    print(
        f"  peak torques {np.abs(co['tau']).max(axis=0).round(3)} Nm, limits {limits} Nm; "
        f"total motor mass {co['motors'].sum() / seq['motors'].sum():.2f}x the sequential design's"
    )
    print(
        f"  replayed on the designed arm (numeric model): final state error {r['replay'][0]:.2e} (rad, rad/s) with "
        f"the same RK4 steps, {r['replay'][1]:.2e} with 10 steps per interval (the transcription's error)"
    )


def body_errors(p, p_true):
    """(mass, com error in mm, relative error of the rotational inertia about the joint frame) of one body."""
    com_error = np.linalg.norm(p[1:4] / p[0] - p_true[1:4] / p_true[0])
    return p[0], 1e3 * com_error, np.linalg.norm(p[4:] - p_true[4:]) / np.linalg.norm(p_true[4:])


def identification_report(r):
    """Prints examples/identification.py's results ``r``: the base parameters' errors in units of their
    standard deviations, the consistent fit's (and its bodies' smallest pseudo-inertia eigenvalues, all
    positive), each body's parameters against the truth, and the validation torques' errors."""
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
    bodies = [r["pi_fit"][10 * j : 10 * j + 10] for j in range(m.njoints)]
    min_eig = [np.linalg.eigvalsh(pseudo_inertia(p)).min() for p in bodies]
    print(f"  smallest pseudo-inertia eigenvalue per body: {', '.join(f'{e:.2e}' for e in min_eig)}")
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


# ---- plots ----
def skeleton(model, q, frames=()):
    """Line segments (pairs of world points) of a stick figure: parent joint to joint,
    and joint to each named frame (feet, tool); from ``forward_kinematics``/``frame_placement``."""
    oMi = function(model, "forward_kinematics")(q).full()
    origin = [oMi[:3, 4 * i + 3] for i in range(model.njoints)]
    # a fixed base hangs from the world origin; a floating base does not
    segments = [
        (origin[p] if p >= 0 else np.zeros(3), origin[i])
        for i, (p, j) in enumerate(zip(model.parents, model.joints))
        if p >= 0 or not j.full_motion
    ]
    for name in frames:
        frame = model.frames[model.frame_index(name)]
        p = function(model, "frame_placement", frame=name)(q).full()[:3, 3]
        segments.append((origin[frame.joint], p))
    return segments


def snapshot_path(path):
    """Where an example writes the snapshots of its plot ``PATH.png``: ``PATH_snapshots.png``."""
    path = str(path)
    return (path[:-4] if path.endswith(".png") else path) + "_snapshots.png"


def picks(n, count):
    """``count`` indices from 0 to ``n`` - 1, evenly spaced: which configurations a plot draws."""
    return np.linspace(0, n - 1, count).round().astype(int)


def plot_motion(path, result, series, title, snapshots, snapshots_title=None, **options):
    """``series`` over the times ``result["t"]`` at ``path`` (``plot_series`` with ``title``), and
    ``snapshots`` of the configurations ``result["q"]``, evenly spaced, as stick figures of
    ``result["model"]`` at ``PATH_snapshots.png`` (``plot_snapshots`` with ``snapshots_title`` and its
    ``options``)."""
    plot_series(path, result["t"], series, title)
    qs = result["q"][picks(len(result["q"]), snapshots)]
    plot_snapshots(result["model"], qs, snapshot_path(path), title=snapshots_title, **options)


def plot_snapshots(model, qs, path, frames=(), title=None, planes=("xz", "xy"), strip=False, labels=None):
    """Stick figures of the configurations ``qs`` in one figure, written as a PNG to ``path``.

    Overlaid (earlier ones lighter) in one panel per projection plane, or with
    ``strip=True`` one panel per configuration (titled by ``labels``), four to
    a row, on ``planes[0]``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for plane in planes:
        choice("planes entry", plane, ("xz", "yz", "xy"))
    figures = [skeleton(model, q, frames) for q in qs]
    panels = [(planes[0], [k]) for k in range(len(qs))] if strip else [(p, range(len(qs))) for p in planes]
    cols = min(4, len(panels)) if strip else len(panels)
    rows = -(-len(panels) // cols)
    size = (3.2, 2.4) if strip else (5, 4.5)
    fig, axs = plt.subplots(
        rows, cols, figsize=(size[0] * cols, size[1] * rows + 0.5), squeeze=False, sharex=strip, sharey=strip
    )
    for ax in axs.flat[len(panels) :]:
        ax.set_visible(False)
    for n, (ax, (plane, picks)) in enumerate(zip(axs.flat, panels)):
        i, j = "xyz".index(plane[0]), "xyz".index(plane[1])
        for k in picks:
            shade = plt.cm.viridis_r(0.15 + 0.85 * k / max(len(figures) - 1, 1))
            for p0, p1 in figures[k]:
                ax.plot([p0[i], p1[i]], [p0[j], p1[j]], "-o", color=shade, ms=2, lw=1.5)
        if plane[1] == "z":
            ax.axhline(0, color="0.6", lw=0.8)  # the ground
        if strip and labels is not None:
            ax.set_title(labels[n], fontsize=9)
        ax.set_aspect("equal", adjustable="box" if strip else "datalim")
        ax.set_xlabel(f"{plane[0]} [m]")
        ax.set_ylabel(f"{plane[1]} [m]")
        ax.grid(alpha=0.3)
    fig.suptitle(title or f"{model.name}: {len(qs)} snapshots")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_series(path, t, series, title=""):
    """One subplot per entry of ``series`` (label -> array of rows over time ``t``), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(len(series), 1, figsize=(7, 2.2 * len(series)), sharex=True, squeeze=False)
    for ax, (label, y) in zip(axs[:, 0], series.items()):
        y = np.asarray(y)
        ax.plot(t[: len(y)], y, lw=1)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axs[-1, 0].set_xlabel("t [s]")
    axs[0, 0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
