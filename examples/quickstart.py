"""The README quickstart: load a robot, build aba as a casadi Function, evaluate it numerically and symbolically."""

import casadi as ca
import numpy as np

import casrbd

model = casrbd.load_robot("arm7")  # a name ("ur5", "solo12", ...), or a URDF or MJCF path
aba = casrbd.function(model, "aba")  # casadi Function (q, v, tau) -> a, built once, cached
q, v, tau = casrbd.neutral(model), np.zeros(model.nv), np.ones(model.nv)
print(aba(q, v, tau))  # numeric evaluation (DM)
Q, V, T = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("tau", model.nv)
a = aba(Q, V, T)  # symbolic: an SX expression of q, v, tau
print(casrbd.aba(model, q, v, tau))  # the algorithm on numbers -> numpy
da_dq, da_dv, da_dtau = casrbd.aba_derivatives(model, q, v, tau, method="idsva")
