"""Contracted Hessians of the contact and impulse dynamics (second-order adjoints), q on the tangent space.

Implicit-function second-order adjoint. ``constraint_dynamics`` returns y = (ddq, lambda) solving
g(x, y) = 0 for x = (q, v, tau), with (``dynamics.py``; lambda local, K = J M^-1 J^T + mu I)
    g1 = rnea(q, v, ddq, f_ext(lambda)) - tau = M ddq + b - J^T lambda - tau,
    g2 = c(q, v, ddq) + mu lambda,   c = J ddq + gamma - a_BG (the contact acceleration error),
f_ext(lambda) the contact forces placed on the contact bodies (a constant linear map P). The
outputs are F = (ddq, R(q) lambda) (R the contact frames' rotations for "local_world_aligned",
I for "local"). For phi(x) = w1^T ddq + w2^T R lambda, the Lagrangian L = w^T F + nu^T g with
the adjoint KKT system g_y^T nu = -F_y, solved once with the multipliers w:
    nu2 = -K^-1 (R^T w2 + J M^-1 w1),   nu1 = -M^-1 (w1 + J^T nu2)
(the same sparse LTDL factors of M and LDL of K as the first order), and y_x the first-order
solution derivatives (``derivatives.py``, at the nominal (ddq, lambda) that casadi hands
the adjoint Functions: the KKT system is not solved again), the Hessian is
    H = Z^T Hess_(x, y) L Z,  Z = [I; y_x],  i.e.  H = L_xx + L_xy y_x + y_x^T L_yx,
since g and F are linear in y (L_yy = 0). The gradient (the adjoint adj1) is L_x = F_x + nu^T g_x,
O(n) past the solve for nu: rnea's adjoint (``second_order/hessians.rnea_adjoint``) at (ddq,
f_ext(lambda)) with nu1, -nu1 for tau, and the gradient of the kinematic term below. The Hessian's
pieces:
- nu1^T rnea: the second-order adjoint of rnea with external forces (``second_order/hessians.rnea_hessian``,
  the closed forms of ``second_order/adjoint.py``): the q-q, q-v, v-v and q-ddq blocks, and the q-lambda
  block H_qf P through the contact forces;
- nu2^T c + w2^T R lambda (the contact frames' classical or spatial accelerations with the
  Baumgarte terms, and the turn of the forces into world axes): casadi's AD (forward over
  reverse, ``ca.hessian``) of that small kinematic sub-graph along q (+) delta at delta = 0, built
  once per contact set in SX; only the bodies supporting the contacts enter it (O(depth) per
  contact). An analytical form of these second derivatives of the frame kinematics is not
  derived here.
``impulse_dynamics`` the same way with y = (v+, P), x = (q, v): g1 = M (v+ - v) - J^T P (rnea
without gravity at zero velocity and acceleration v+ - v), g2 = J (v+ + r v) + mu P.
casadi's cache takes D = H + sum_m g_m C_m for the q-q block (``hessians.chart_term``: the
Jacobian of the tangent gradient g along q (+) delta'), and the first-order Jacobians transposed
for the multipliers' blocks. Glossary: w1, w2 (lam) the outputs' multipliers, nu1, nu2, X_x =
L_(x, y) (the rows of L_xy for input x), Y_x = y_x (local forces), K_* the kinematic blocks.
"""

import casadi as ca

from ...model import per_model
from ...spatial import symmetric
from ...spec import SecondOrderAdjoint
from ..configuration import integrate
from ..passes import ltdl
from ..second_order.hessians import chart_term, rnea_adjoint, rnea_hessian
from . import derivatives, dynamics

LWA = "local_world_aligned"

# ---------------------------------------------------------------- the kinematic row, by AD


@per_model
def kinematic_derivatives(model, contacts, reference, kp, kd, impulse):
    """SX Functions (q, v, a, lam, nu, w) -> the gradient, and the Hessian, of nu^T c(q (+) delta, v,
    a) + w^T R(q (+) delta) lam in (delta, v, a, lam) at delta = 0: c the contact acceleration
    error (for impulses the contact velocity J v, and a unused); the R term only for world axes.
    Two Functions, so that a caller of the gradient alone does not evaluate the Hessian."""
    nc = sum(c.rows for c in contacts)
    q, d = ca.SX.sym("q", model.nq), ca.SX.sym("d", model.nv)
    v, a = ca.SX.sym("v", model.nv), ca.SX.sym("a", model.nv)
    lam, nu, w = ca.SX.sym("lam", nc), ca.SX.sym("nu", nc), ca.SX.sym("w", nc)
    qd = integrate(model, q, d)
    if impulse:
        kin = dynamics.contact_kinematics(model, qd, v, None, contacts)
        c = ca.vertcat(*[c.select(fm.v) for c, fm in zip(contacts, kin.fm)])
    else:
        kin = dynamics.contact_kinematics(model, qd, v, a, contacts)
        c = ca.vertcat(*[dynamics.contact_acceleration(c, fm) for c, fm in zip(contacts, kin.fm)])
        a_bg = dynamics.baumgarte(contacts, kin, kp, kd)
        c = c if a_bg is None else c - a_bg
    s = ca.dot(nu, c)
    if reference == LWA:
        s = s + ca.dot(w, dynamics.in_reference(contacts, kin.fm, lam, reference))
    H, g = ca.hessian(s, ca.vertcat(d, v, a, lam))
    at_zero = ca.Function("at_zero", [q, d, v, a, lam, nu, w], [g, H])(q, ca.DM.zeros(model.nv), v, a, lam, nu, w)
    args = [q, v, a, lam, nu, w]
    return tuple(ca.Function(f"contact_kinematics_{n}", args, [x]) for n, x in zip(("gradient", "hessian"), at_zero))


def _cut(model, nc):
    n = model.nv
    return {"q": slice(0, n), "v": slice(n, 2 * n), "a": slice(2 * n, 3 * n), "lam": slice(3 * n, 3 * n + nc)}


def kinematic_terms(model, options, impulse, q, v, a, lam, nu, w):
    """({row: gradient part}, {(row, column): Hessian block}) of ``kinematic_derivatives``, for row,
    column in "q", "v", "a", "lam"; ``options`` (contacts, reference, kp, kd)."""
    gradient, hessian = kinematic_derivatives(model, *options, impulse)
    g, H = gradient(q, v, a, lam, nu, w), hessian(q, v, a, lam, nu, w)
    cuts = _cut(model, lam.shape[0])
    return {r: g[cuts[r]] for r in cuts}, {(r, s): H[cuts[r], cuts[s]] for r in cuts for s in cuts}


# ---------------------------------------------------------------- the adjoint KKT system


def adjoint_multipliers(model, dl, w1, w_local):
    """(nu1, nu2) solving [M J^T; -J mu] [nu1; nu2] = -[w1; w_local] (g_y^T nu = -F_y)."""
    z = ltdl.lt_solve(model, dl.f, w1)
    nu2 = -dl.K.solve(w_local + ca.mtimes(dl.DY.T, z))
    nu1 = -dynamics.l_solve(model, dl.f, ltdl.scaled(dl.f, z + ca.mtimes(dl.Y, nu2)))
    return nu1, nu2


def force_map(model, contacts, nc):
    """P (6 njoints x nc): vec(f_ext) = P lambda, the contact forces on the contact bodies."""
    eye = ca.DM.eye(nc)
    return ca.horzcat(
        ca.DM(6 * model.njoints, 0),
        *[ca.vec(derivatives.contact_forces(model, contacts, eye[:, i])) for i in range(nc)],
    )


def assemble(model, names, L, X, Y, g_q):
    """The contracted Hessian blocks {(x1, x2): H} from L_xx (dict), X_x = L_(x, y) and Y_x = y_x
    (dicts, absent where zero): H = L_x1x2 + X_x1 Y_x2 + Y_x1^T X_x2^T, and D = H + chart term
    for q-q (what casadi's cache composes with the raw-q maps)."""
    out = {}
    for i, x1 in enumerate(names):
        for x2 in names[i:]:
            terms = [L[x1, x2]] if (x1, x2) in L else []
            if x1 in X:
                terms.append(ca.mtimes(X[x1], Y[x2]))
            if x2 in X:
                terms.append(ca.mtimes(Y[x1].T, X[x2].T))
            if not terms:
                continue
            H = sum(terms[1:], terms[0])
            if x1 == x2:
                H = symmetric(H)
            out[x1, x2] = H
            if x1 != x2:
                out[x2, x1] = H.T
    out["q", "q"] = out["q", "q"] + chart_term(model, g_q)
    return out


def multiplier_blocks(names, lam_keys, jacobians):
    """{(x, lam_k): y_k,x^T}: the adjoint's derivatives by the multipliers, the first order transposed."""
    return {(x, k): jacobians[k, x].T for x in names for k in lam_keys}


def world_jacobians(contacts, kin, lam, local, out_name, names, reference):
    """The first-order Jacobians of the outputs: ``local`` with the forces ``out_name`` in ``reference``."""
    out = dict(local)
    if reference == LWA and contacts:
        turned = derivatives.world_aligned(
            contacts, kin, lam, local[out_name, "q"], [local[out_name, x] for x in names[1:]]
        )
        out.update({(out_name, x): m for x, m in zip(names, turned)})
    return out


# ---------------------------------------------------------------- constraint dynamics


def constraint_dynamics_second_order_adjoint(
    model, q, v, tau, lam, contacts, reference="local", kp=0.0, kd=0.0, damping=0.0, out=None
):
    """(gradient, jacobian) of w1^T ddq + w2^T lambda_c, ``spec.SecondOrderAdjoint``'s, at the nominal
    (ddq, lambda_c); lam = (w1, w2). The gradient is L_x = F_x + nu^T g_x, O(n) past the solve for nu."""
    (w1, w2), (ddq, lam_out) = lam, (out["ddq"], out["lambda_c"])
    sol = derivatives.nominal_solution(model, q, v, ddq, lam_out, contacts, reference, damping)
    kin0, dl, lam_c = sol.kin, sol.dl, sol.lam
    nu1, nu2 = adjoint_multipliers(model, dl, w1, dynamics.local_forces(contacts, kin0.fm, w2, reference))
    f_ext = derivatives.contact_forces(model, contacts, lam_c)
    options = (contacts, reference, kp, kd)
    Kg, K = kinematic_terms(model, options, False, q, v, ddq, lam_c, nu2, w2)
    r_q, r_v, _, _ = rnea_adjoint(model, q, v, ddq, nu1, f_ext)
    gradient = {"q": r_q + Kg["q"], "v": r_v + Kg["v"], "tau": -nu1}
    # the first-order solution derivatives y_x at the nominal solution
    names, outs = ("q", "v", "tau"), ("ddq", "lambda_c")
    kin, d = derivatives.local_constraint_derivatives(model, q, v, sol, contacts, kp, kd)
    local = dict(zip([(y, x) for y in outs for x in names], d))
    jacobians = world_jacobians(contacts, kin, lam_c, local, "lambda_c", names, reference)
    lam_keys = tuple("lam_" + y for y in outs)
    blocks = multiplier_blocks(
        names, lam_keys, {(k, x): jacobians[y, x] for k, y in zip(lam_keys, outs) for x in names}
    )
    H_qq, H_qv, H_vv, H_qa, H_qf = rnea_hessian(model, q, v, ddq, nu1, f_ext)
    P = force_map(model, contacts, lam_c.shape[0])
    L = {("q", "q"): H_qq + K["q", "q"], ("q", "v"): H_qv + K["q", "v"], ("v", "v"): H_vv + K["v", "v"]}
    X = {
        "q": ca.horzcat(H_qa + K["q", "a"], ca.mtimes(H_qf, P) + K["q", "lam"]),
        "v": ca.horzcat(K["v", "a"], K["v", "lam"]),
    }
    Y = {x: ca.vertcat(local["ddq", x], local["lambda_c", x]) for x in names}
    blocks.update(assemble(model, names, L, X, Y, gradient["q"]))
    return gradient, blocks


# ---------------------------------------------------------------- impulse dynamics


def impulse_dynamics_second_order_adjoint(
    model, q, v, lam, contacts, reference="local", restitution=0.0, damping=0.0, out=None
):
    """(gradient, jacobian) of w1^T v+ + w2^T P, ``spec.SecondOrderAdjoint``'s, at the nominal (v+, P);
    lam = (w1, w2)."""
    (w1, w2), (v_plus, P_out) = lam, (out["dq_after"], out["impulse_c"])
    kin0 = dynamics.contact_kinematics(model, q, v, None, contacts)
    P_c = dynamics.local_forces(contacts, kin0.fm, P_out, reference)
    dl = dynamics.delassus(model, q, kin0.J, damping)
    nu1, nu2 = adjoint_multipliers(model, dl, w1, dynamics.local_forces(contacts, kin0.fm, w2, reference))
    zero, weightless = ca.DM.zeros(model.nv), derivatives.weightless(model)
    f_ext = derivatives.contact_forces(model, contacts, P_c)
    w = v_plus + restitution * v  # J w + mu P = 0
    Kg, K = kinematic_terms(model, (contacts, reference, 0.0, 0.0), True, q, w, zero, P_c, nu2, w2)
    r_q, _, r_a, _ = rnea_adjoint(weightless, q, zero, v_plus - v, nu1, f_ext)
    gradient = {"q": r_q + Kg["q"], "v": -r_a + restitution * Kg["v"]}
    names, outs = ("q", "v"), ("dq_after", "impulse_c")
    kin, d = derivatives.local_impulse_derivatives(
        model, q, v, dynamics.Impulse(kin0, dl, v_plus, P_c), contacts, restitution
    )
    local = dict(zip([(y, x) for y in outs for x in names], d))
    jacobians = world_jacobians(contacts, kin, P_c, local, "impulse_c", names, reference)
    lam_keys = tuple("lam_" + y for y in outs)
    blocks = multiplier_blocks(
        names, lam_keys, {(k, x): jacobians[y, x] for k, y in zip(lam_keys, outs) for x in names}
    )
    H_qq, _, _, H_qa, H_qf = rnea_hessian(weightless, q, zero, v_plus - v, nu1, f_ext)
    P = force_map(model, contacts, P_c.shape[0])
    L = {("q", "q"): H_qq + K["q", "q"], ("q", "v"): -H_qa + restitution * K["q", "v"]}
    X = {"q": ca.horzcat(H_qa + K["q", "v"], ca.mtimes(H_qf, P) + K["q", "lam"])}
    Y = {x: ca.vertcat(local["dq_after", x], local["impulse_c", x]) for x in names}
    blocks.update(assemble(model, names, L, X, Y, gradient["q"]))
    return gradient, blocks


SECOND_ORDER = (
    SecondOrderAdjoint("constraint_dynamics", constraint_dynamics_second_order_adjoint),
    SecondOrderAdjoint("impulse_dynamics", impulse_dynamics_second_order_adjoint),
)
