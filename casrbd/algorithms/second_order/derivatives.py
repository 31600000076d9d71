"""The public second-order functions: ``method=`` dispatches to the analytical modules or to casadi's
AD, and their specs.

- ``rnea_hessian``, ``aba_hessian``: the Hessian of lam^T rnea(q, v, a, f_ext) by (q, v, a) and of
  lam^T aba(q, v, tau, f_ext) by (q, v, tau), q on the tangent space (phi(q (+) delta) at
  delta = 0), as blocks H_qq, H_qv, H_vv, H_qa (H_qtau) and H_qf (by f_ext, vectorised column by
  column; nv x 0 without f_ext). The a-a, a-v (tau-tau, tau-v) and v-f, a-f, f-f blocks vanish.
  "analytical": ``hessians.py``; "ad": casadi's forward-over-reverse Hessian of the graph in raw
  coordinates, carried to the tangent chart by the chain rule with the first and second
  derivatives of the joints' integrate (casadi's forward mode: its reverse mode through the exp
  map's sqrt(|w|^2) gives 0 * inf at delta = 0).
- ``rnea_second_order_derivatives``: Pinocchio's four tensors (layout in
  ``tensors.py``), "idsva" or "ad" (casadi's Jacobian of its Jacobian of the rnea
  graph in raw coordinates, composed with the tangent map of integrate).
"""

import casadi as ca

from ...spec import Option, Out, Spec, configuration, tangent
from ..aba import aba
from ..passes.tree import require_constant_subspaces
from ..rnea import rnea
from . import hessians, tensors

NAME = "the analytical second-order derivatives"


def integrate_derivatives(model, q, g):
    """(E, C): E = d(q (+) delta)/d delta at 0 (nq x nv) and C = d^2 (g^T (q (+) delta)) / d delta^2
    at 0 (nv x nv), joint by joint, by casadi's forward mode."""
    E, C = [], []
    for i, joint in enumerate(model.joints):
        qi, gi, d = ca.SX.sym("q", joint.nq), ca.SX.sym("g", joint.nq), ca.SX.sym("d", joint.nv)
        eye, zero = ca.DM.eye(joint.nv), ca.DM.zeros(joint.nv)
        x = joint.integrate(qi, d)
        Ei = ca.substitute(ca.jtimes(x, d, eye), d, zero)
        Ci = ca.substitute(ca.jtimes(ca.jtimes(ca.dot(gi, x), d, eye).T, d, eye), d, zero)
        Ei, Ci = ca.Function("chart", [qi, gi], [Ei, Ci])(q[model.q_slice(i)], g[model.q_slice(i)])
        E.append(Ei)
        C.append(Ci)
    return ca.diagcat(*E), ca.diagcat(*C)


def ad_hessian(model, fun, q, v, x, lam, f_ext=None):
    """(H_qq, H_qv, H_vv, H_qx, H_qf) of lam^T fun(model, q, v, x, f_ext) by casadi's AD (see the
    module docstring)."""
    Q, V, X, L = (ca.SX.sym(n, model.nq if n == "q" else model.nv) for n in ("q", "v", "x", "lam"))
    F = None if f_ext is None else ca.SX.sym("f_ext", 6, model.njoints)
    z = ca.vertcat(Q, V, X, *([] if F is None else [ca.vec(F)]))
    H, g = ca.hessian(ca.dot(L, fun(model, Q, V, X, F)), z)
    E, C = integrate_derivatives(model, Q, g[: model.nq])
    nq, nv = model.nq, model.nv
    H_q = ca.mtimes(E.T, H[:nq, :])
    outs = [
        ca.mtimes(H_q[:, :nq], E) + C,
        H_q[:, nq : nq + nv],
        H[nq : nq + nv, nq : nq + nv],
        H_q[:, nq + nv : nq + 2 * nv],
        ca.DM(nv, 0) if F is None else H_q[:, nq + 2 * nv :],
    ]
    ins = [Q, V, X, L] + ([] if F is None else [F])
    return tuple(ca.Function("ad_hessian", ins, outs)(q, v, x, lam, *([] if F is None else [f_ext])))


def ad_second_order(model, q, v, a, f_ext=None):
    """Pinocchio's four tensors (nv x nv^2 each) by casadi's Jacobians of its Jacobians."""
    Q, V, A = (ca.SX.sym(n, model.nq if n == "q" else model.nv) for n in ("q", "v", "a"))
    F = None if f_ext is None else ca.SX.sym("f_ext", 6, model.njoints)
    tau = rnea(model, Q, V, A, F)
    E, _ = integrate_derivatives(model, Q, ca.DM.zeros(model.nq))
    dtau_dq = ca.mtimes(ca.jacobian(tau, Q), E)
    M = ca.jacobian(tau, A)
    nv = model.nv

    def tensor(T):  # d vec(T) / d x (nv^2 x nv) holds T[i, j, k] at row i + nv j, column k
        return ca.reshape(T, nv, nv * nv)

    outs = [
        tensor(ca.mtimes(ca.jacobian(ca.vec(dtau_dq), Q), E)),
        tensor(ca.jacobian(ca.vec(ca.jacobian(tau, V)), V)),
        tensor(ca.jacobian(ca.vec(dtau_dq), V)),
        tensor(ca.mtimes(ca.jacobian(ca.vec(M), Q), E)),
    ]
    ins = [Q, V, A] + ([] if F is None else [F])
    return tuple(ca.Function("ad_second_order", ins, outs)(q, v, a, *([] if F is None else [f_ext])))


def rnea_hessian(model, q, v, a, lam, f_ext=None, method="second_order_adjoint"):
    """(H_qq, H_qv, H_vv, H_qa, H_qf) of lam^T rnea(q, v, a, f_ext); see the module docstring."""
    if method == "ad":
        return ad_hessian(model, rnea, q, v, a, lam, f_ext)
    require_constant_subspaces(model, NAME)
    return hessians.rnea_hessian(model, q, v, a, lam, f_ext)


def aba_hessian(model, q, v, tau, lam, f_ext=None, method="second_order_adjoint"):
    """(H_qq, H_qv, H_vv, H_qtau, H_qf) of lam^T aba(q, v, tau, f_ext); see the module docstring."""
    if method == "ad":
        return ad_hessian(model, aba, q, v, tau, lam, f_ext)
    require_constant_subspaces(model, NAME)
    return hessians.aba_hessian(model, q, v, tau, lam, f_ext)


def rnea_second_order_derivatives(model, q, v, a, f_ext=None, method="idsva"):
    """(d2tau_dqdq, d2tau_dvdv, d2tau_dqdv, dtau_dadq), nv x nv^2 each (``tensors.py``)."""
    if method == "ad":
        return ad_second_order(model, q, v, a, f_ext)
    return tensors.rnea_second_order_derivatives(model, q, v, a, f_ext)


# the method names the algorithm, as every method= does; "analytical" was its name before 0.2
HESSIAN_METHOD = Option(
    "second_order_adjoint", ("second_order_adjoint", "ad"), deprecated={"analytical": "second_order_adjoint"}
)
STATE = (configuration(), tangent("v"))
SPECS = (
    Spec(
        "rnea_hessian",
        rnea_hessian,
        STATE + (tangent("a"), tangent("lam")),
        (*(Out(n) for n in ("H_qq", "H_qv", "H_vv", "H_qa")), Out("H_qf", with_f_ext=True)),
        f_ext=True,
        options={"method": HESSIAN_METHOD},
    ),
    Spec(
        "aba_hessian",
        aba_hessian,
        STATE + (tangent("tau"), tangent("lam")),
        (*(Out(n) for n in ("H_qq", "H_qv", "H_vv", "H_qtau")), Out("H_qf", with_f_ext=True)),
        f_ext=True,
        options={"method": HESSIAN_METHOD},
        regular_mass=True,
    ),
    Spec(
        "rnea_second_order_derivatives",
        rnea_second_order_derivatives,
        STATE + (tangent("a"),),
        tuple(Out(n, "tensor") for n in ("d2tau_dqdq", "d2tau_dvdv", "d2tau_dqdv", "dtau_dadq")),
        f_ext=True,
        options={"method": Option("idsva", ("idsva", "ad"))},
    ),
)
