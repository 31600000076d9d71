casadi_real casadi_sq(casadi_real x) { return x * x; }
casadi_real casadi_sign(casadi_real x) { return x < 0 ? -1 : x > 0 ? 1 : x; }
casadi_real casadi_fabs(casadi_real x) { return fabs(x); }
casadi_real casadi_fmax(casadi_real x, casadi_real y) { return fmax(x, y); }
casadi_real casadi_fmin(casadi_real x, casadi_real y) { return fmin(x, y); }
casadi_real casadi_log1p(casadi_real x) { return log1p(x); }
casadi_real casadi_expm1(casadi_real x) { return expm1(x); }
casadi_real casadi_hypot(casadi_real x, casadi_real y) { return hypot(x, y); }
