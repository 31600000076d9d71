"""Checks and diagnosis of an Opti problem, each culprit named: non-finite values at the guess, the
largest constraint violation of a failed solve and where it is, a rank-deficient constraint Jacobian and
the other causes recognised, uncompiled stage Functions, compiled libraries visible to a jitted NLP."""

import ctypes
import os
import re

import casadi as ca
import numpy as np

from ..codegen import is_external

# the rank check of a failed solve takes the equality constraints' Jacobian dense, up to this many entries
RANK_CHECK_MAX = 4_000_000
# singular values below this, relative to the largest (rows scaled to unit norm), count as rank deficiency
RANK_RTOL = 1e-8
# a constraint violated by more than this counts as violated; within it, as holding
FEASIBLE = 1e-6
# a violation's first-order change below this, relative to its terms' magnitude, counts as stationary
STATIONARY_RTOL = 1e-6
# fatrop's return flags (fatrop::IpSolverReturnFlag), and IPOPT's words for the same outcomes: fatrop 1.1
# (casadi 3.8) numbers them without StopAtTinyStep and the flags after it that it dropped
_FATROP_FLAGS_1_0 = (
    ("Success", "Solve_Succeeded"),
    ("MaxIterExceeded", "Maximum_Iterations_Exceeded"),
    ("StopAtTinyStep", "Search_Direction_Becomes_Too_Small"),
    ("StopAtAcceptablePoint", "Solved_To_Acceptable_Level"),
    ("LocalInfeasibility", "Infeasible_Problem_Detected"),
    ("FeasiblePointFound", "Feasible_Point_Found"),
    ("DivergingIterates", "Diverging_Iterates"),
    ("ErrorInStepComputation", "Error_In_Step_Computation"),
    ("InvalidOption", "Invalid_Option"),
    ("InternalError", "Internal_Error"),
    ("Unknown", "Unknown"),
)
_FATROP_FLAGS_1_1 = (
    ("Success", "Solve_Succeeded"),
    ("MaxIterExceeded", "Maximum_Iterations_Exceeded"),
    ("StopAtAcceptablePoint", "Solved_To_Acceptable_Level"),
    ("LocalInfeasibility", "Infeasible_Problem_Detected"),
    ("LineSearchFailed", "Restoration_Failed"),
    ("ErrorInStepComputation", "Error_In_Step_Computation"),
    ("Unknown", "Unknown"),
)
_CASADI = tuple(int(n) for n in re.findall(r"\d+", ca.__version__)[:2])
FATROP_FLAGS = _FATROP_FLAGS_1_1 if _CASADI >= (3, 8) else _FATROP_FLAGS_1_0
STALLED = {"Search_Direction_Becomes_Too_Small", "Solved_To_Acceptable_Level", "Restoration_Failed"}
INFEASIBLE = {"Infeasible_Problem_Detected", "Restoration_Failed"}


class Names:
    """Names of an Opti's variables (entries of ``opti.x``) and constraints (rows of ``opti.g``): those
    ``Stagewise`` recorded, ``rows`` (a constraint's node, ``hash(c)``, to its label and c) and
    ``variables`` (a variable's name to its label and size), else casadi's own descriptions (the line
    that declared it)."""

    def __init__(self, opti, rows=None, variables=None):
        self.opti, self.rows, self.variables = opti, rows or {}, variables or {}

    def label(self, i):
        """The label Stagewise gave the constraint of row i, or None."""
        return self.rows.get(hash(self.opti.debug.g_lookup(int(i))), (None,))[0]

    def row(self, i):
        i = int(i)
        key = hash(self.opti.debug.g_lookup(i))
        if key not in self.rows:
            return _described(self.opti.debug.g_describe(i))
        start = i
        while start > 0 and hash(self.opti.debug.g_lookup(start - 1)) == key:
            start -= 1
        return f"{self.rows[key][0]} [entry {i - start}]"

    def column(self, j):
        j = int(j)
        name = self.opti.debug.x_lookup(j).name()
        if name not in self.variables:
            return _described(self.opti.debug.x_describe(j))
        start = j
        while start > 0 and self.opti.debug.x_lookup(start - 1).name() == name:
            start -= 1
        return f"{self.variables[name][0]}[{j - start}]"


def _described(text):
    return " ".join(line.strip().rstrip(".") + "," for line in text.splitlines()).rstrip(",")


def _listed(items, limit=3, more=0):
    """items joined, the first ``limit`` of them (of ``more``, when items are the first few of more)."""
    items = list(items)
    total = max(len(items), more)
    return "; ".join(items[:limit]) + (f" and {total - limit} more" if total > limit else "")


def check_guess(opti, names, who):
    """The cost's gradient at the initial guess, after refusing non-finite values there: the guess, the
    parameters, the constraints, the cost, its gradient and the constraints' Jacobian, each culprit
    named (a ValueError: fatrop would iterate on NaN). The Jacobian J is checked through J 1 and
    J^T 1 (a non-finite entry makes its row's and its column's sum non-finite): two directional
    derivatives instead of the whole Jacobian."""
    guess = opti.initial() + opti.value_parameters()
    x0 = np.atleast_1d(np.asarray(opti.debug.value(opti.x, guess), dtype=float))
    p0 = np.atleast_1d(np.asarray(opti.debug.value(opti.p, guess), dtype=float)) if opti.np else np.zeros(0)
    ones_x, ones_g = ca.DM.ones(opti.x.sparsity()), ca.DM.ones(opti.g.sparsity())
    derivatives = [
        ca.gradient(opti.f, opti.x),
        ca.jtimes(opti.g, opti.x, ones_x),
        ca.jtimes(opti.g, opti.x, ones_g, True),
    ]
    try:
        at_guess = ca.Function("at_guess", [opti.x, opti.p], [opti.f, opti.g, *derivatives])
        f, g, gradient, rows, columns = (np.asarray(ca.densify(v), dtype=float).ravel() for v in at_guess(x0, p0))
    except RuntimeError as e:
        raise missing_derivatives(e) or e from None

    def bad(values, name):
        """The first few non-finite entries of values, named, and how many more."""
        return _listed([name(i) for i in np.flatnonzero(~np.isfinite(values))[:4]], more=(~np.isfinite(values)).sum())

    culprits = [
        ("the guess", bad(x0, lambda j: f"{names.column(j)} = {x0[j]}")),
        ("the parameters", bad(p0, lambda i: f"opti.p[{i}] = {p0[i]}")),
        ("the constraints", bad(g, lambda i: f"{names.row(i)} = {g[i]}")),
        ("the cost", bad(f, lambda _: f"the objective = {f[0]}")),
        ("the cost's gradient", bad(gradient, lambda j: f"by {names.column(j)}: {gradient[j]}")),
        (
            "the constraints' Jacobian",
            bad(rows, names.row) and f"{bad(rows, names.row)} by {bad(columns, names.column)}",
        ),
    ]
    for what, items in culprits:
        if items:
            raise ValueError(
                f"{who}: {what} at the initial guess not finite: {items} (the solver would iterate "
                f"on NaN; a norm_2 or sqrt of zero has no derivative: set a guess where the problem is "
                f"defined with opti.set_initial, or write the term differently)"
            )
    return gradient


def missing_derivatives(e):
    """The error to raise for casadi's error ``e`` when it is a compiled Function without derivatives."""
    missing = re.search(r"Derivatives cannot be calculated for (\S+)", str(e))
    if not missing:
        return None
    return RuntimeError(
        f"the compiled Function {missing.group(1)!r} carries no derivatives for this solver: build it "
        f"with casrbd.compiled(model, name, ...) (its library ships the Jacobian, adjoint and Hessian), "
        f"or hessian='limited-memory' in casrbd.compiled and solver_options when there is no exact "
        f"Hessian\n(casadi: {str(e).splitlines()[-1]})"
    )


def uncompiled_calls(opti):
    """The names of the Functions the NLP of ``opti`` calls that casadi's VM evaluates: not compiled
    (``External``) nor a graph of calls to compiled ones only (``compile_stages``' wrappers)."""
    nlp = ca.Function("nlp", [opti.x, opti.p], [opti.f, opti.g])
    memo = {}
    return sorted({f.name() for f in _calls(nlp) if not _compiled(f, memo)})


def externals(opti):
    """The compiled (``External``) Functions the NLP of ``opti`` calls, at any depth."""
    nlp = ca.Function("nlp", [opti.x, opti.p], [opti.f, opti.g])
    return [f for f in nlp.find_functions() if is_external(f)]


def _calls(f):
    if not f.is_a("MXFunction"):
        return []
    calls = [k for k in range(f.n_instructions()) if f.instruction_id(k) == ca.OP_CALL]
    return list({g.name(): g for g in (f.instruction_MX(k).which_function() for k in calls)}.values())


def _compiled(f, memo):
    if f.name() not in memo:
        inner = _calls(f)
        memo[f.name()] = is_external(f) or (bool(inner) and all(_compiled(g, memo) for g in inner))
    return memo[f.name()]


def diagnose(opti, names, raw, status):
    """After a failed solve: the largest constraint violation at the last iterate (``violation``), where
    it is (``violation_at``) and the causes recognised (``hint``, None when none is)."""
    x = np.atleast_1d(np.asarray(opti.debug.value(opti.x), dtype=float))
    guess = opti.initial() + opti.value_parameters()
    x0 = np.atleast_1d(np.asarray(opti.debug.value(opti.x, guess), dtype=float))
    p = np.atleast_1d(np.asarray(opti.debug.value(opti.p, guess), dtype=float)) if opti.np else np.zeros(0)
    lbg, ubg = (np.atleast_1d(np.asarray(opti.debug.value(b, guess), dtype=float)) for b in (opti.lbg, opti.ubg))
    at = ca.Function("at", [opti.x, opti.p], [opti.g, ca.jacobian(opti.g, opti.x)])
    g, J = at(x, p)
    g, g0 = np.asarray(g).ravel(), np.asarray(at(x0, p)[0]).ravel()
    viol = _violation(g, lbg, ubg)
    hints = []
    if not len(g):
        violation, where = 0.0, "no constraint"
    elif not np.all(np.isfinite(g)):
        i = int(np.flatnonzero(~np.isfinite(g))[0])
        violation, where = float("nan"), names.row(i)
        hints.append(f"{where} is {g[i]} at the last iterate: the iterates left the region where it is defined")
    else:
        i = int(np.argmax(viol))
        violation, where = float(viol[i]), names.row(i)
        columns = J[i, :].sparsity().get_col()
        if len(columns) == 1:  # a constraint on one variable
            where += f" (a bound on {names.column(columns[0])})"
    hints += _rank_deficiency(J, lbg == ubg, names)
    iterations = raw.get("iter_count", 0)
    # from the iterate, not only the solver's word: casadi 3.7's fatrop stops at such points with MaxIterExceeded
    infeasible = not violation <= FEASIBLE and (status in INFEASIBLE or _stuck(np.asarray(ca.densify(J)), g, lbg, ubg))
    if status == "Maximum_Iterations_Exceeded" and not infeasible:
        hints.append(
            f"iteration limit: it stopped after {iterations} iterations (max_iter), still moving: raise "
            f"max_iter (ocp.solver_options(max_iter=...)) or start nearer to a solution"
        )
    if status in STALLED and not infeasible:
        history = raw.get("iterations") or {}
        dual = f", dual infeasibility {history['inf_du'][-1]:.1e}" if history.get("inf_du") else ""
        hints.append(
            f"stall at tolerance: progress stopped above the tolerance (tol) at constraint violation "
            f"{violation:.1e}{dual}: the steps became too small to reduce the error further, so tol is below "
            f"what rounding allows at this problem's scale (loosen tol, or scale the problem) or the problem is "
            f"degenerate at this point"
        )
    if infeasible:
        at_guess = _violation(g0[i : i + 1], lbg[i : i + 1], ubg[i : i + 1])[0] if len(g) else 0.0
        start = f", or an infeasible start (the guess violates it by {at_guess:.3g}: start nearer to feasible)"
        start *= bool(at_guess)
        hints.append(
            f"locally infeasible: the solver could not bring the constraint violation below {violation:.3g} "
            f"(at {where}): constraints that contradict each other{start}"
        )
    if status == "Error_In_Step_Computation":
        hints.append("the step could not be computed: the KKT system is singular at the last iterate")
    if status in ("Invalid_Number_Detected", "Diverging_Iterates"):
        hints.append("a function returned NaN or inf, or the iterates diverged: bound the variables")
    return {"violation": violation, "violation_at": where, "hint": "; ".join(hints) or None}


def _violation(g, lbg, ubg):
    with np.errstate(invalid="ignore"):
        return np.maximum(np.maximum(lbg - g, g - ubg), 0.0)


def _stuck(J, g, lbg, ubg):
    """Whether x is a stationary point of the constraint violation: no first-order step reduces the violated
    rows' violation, in the l1 or the l2 measure, while the rows that hold (within FEASIBLE) keep holding;
    i.e. J_v^T w + J_a^T mu = 0 for some mu, w the violations' signs or the violations themselves."""
    if J.size > RANK_CHECK_MAX or not np.all(np.isfinite(J)):
        return False
    low, high = lbg - g, g - ubg
    violated = np.maximum(low, high) > FEASIBLE
    held = ~violated & (np.minimum(np.abs(low), np.abs(high)) <= FEASIBLE)
    if not violated.any():
        return False
    r = np.where(high > 0, high, -low)[violated]
    Jv, Ja = J[violated], J[held]
    for w in (np.sign(r), r / np.abs(r).max()):
        scale = (np.abs(Jv).T @ np.abs(w)).max(initial=0.0)
        if not scale > RANK_RTOL * np.abs(J).max(initial=0.0):
            continue  # the violated rows have no slope: the singular-Jacobian hint names them
        target = Jv.T @ w
        mu = np.linalg.lstsq(Ja.T, -target, rcond=None)[0] if len(Ja) else np.zeros(0)
        if np.abs(target + Ja.T @ mu).max() <= STATIONARY_RTOL * scale:
            return True
    return False


def _rank_deficiency(J, equality, names):
    """Hints naming the equality constraints whose Jacobian rows are zero or linearly dependent."""
    rows = np.flatnonzero(equality)
    if not len(rows) or len(rows) * J.size2() > RANK_CHECK_MAX:
        return []
    A = np.asarray(ca.densify(J[rows.tolist(), :]))
    if not np.all(np.isfinite(A)):
        return []
    norms = np.linalg.norm(A, axis=1)
    zero = norms <= RANK_RTOL * norms.max()
    hints = []
    if zero.any():
        hints.append(
            f"singular constraint Jacobian: the Jacobian of {_listed(names.row(r) for r in rows[zero])} is zero "
            f"(below {RANK_RTOL:g} times the largest row) at the last iterate (a constraint such as "
            f"(x - a)**2 == 0 has no slope at its solution: write x - a == 0)"
        )
    kept = rows[~zero]
    A = A[~zero] / norms[~zero, None]
    if len(kept) < 2:
        return hints
    U, s, _ = np.linalg.svd(A, full_matrices=True)
    s = np.r_[s, np.zeros(len(kept) - len(s))]
    for k in np.flatnonzero(s <= RANK_RTOL * s[0]):
        u = np.abs(U[:, k])
        involved = kept[np.argsort(-u)[: int((u > 0.1 * u.max()).sum())]]
        hints.append(
            f"singular (rank-deficient) constraint Jacobian: {_listed((names.row(r) for r in involved), 4)} "
            f"are linearly dependent at the last iterate (a constraint that duplicates others: remove it, "
            f"or make it an inequality)"
        )
        if len(hints) >= 3:
            break
    return hints


class SolveError(RuntimeError):
    """A failed solve (``solve(..., raise_on_failure=True)``): the message says why; ``stats`` holds the
    statistics ``solve`` returns."""

    def __init__(self, message, stats=None):
        super().__init__(message)
        self.stats = stats


def overfull_error(opti, names, fatrop=None):
    """The SolveError for stages with more equality constraints than fatrop takes (None when there are
    none): named from Stagewise's records, else by fatrop's own message ``fatrop``."""
    stages = "; ".join(overfull_stages(opti, names)) or (fatrop and "fatrop: " + fatrop.splitlines()[-1])
    if not stages:
        return None
    return SolveError(
        "fatrop: a stage has more equality constraints than state and control entries, so its constraint "
        "Jacobian is singular (rank-deficient: a constraint that duplicates others, e.g. a terminal "
        f"constraint on more entries than the state has): {stages}"
    )


PATH = re.compile(r"stage (\d+)(?: \(last\))?, path")  # Stagewise's label of a path constraint


def overfull_stages(opti, names):
    """Stages (by Stagewise's records) with more equality path constraints than state and control entries."""
    size, rows = {}, {}
    for label, n in names.variables.values():
        size[int(label[2:])] = size.get(int(label[2:]), 0) + n
    for label, c in names.rows.values():
        k = PATH.match(label)
        if k:
            rows[int(k.group(1))] = rows.get(int(k.group(1)), 0) + c.numel()
    if all(n <= size.get(k, 0) for k, n in rows.items()):
        return []  # not even every path row an equality would be too many: no row looked up (each lookup is slow)
    bounds = [opti.debug.value(b, opti.value_parameters()) for b in (opti.lbg, opti.ubg)]
    lbg, ubg = (np.atleast_1d(np.asarray(b, dtype=float)) for b in bounds)
    count = {}
    for i in np.flatnonzero(lbg == ubg):
        k = PATH.match(names.label(i) or "")
        if k:
            count[int(k.group(1))] = count.get(int(k.group(1)), 0) + 1
    over = [(k, n) for k, n in sorted(count.items()) if n > size.get(k, 0)]
    return [f"stage {k}: {n} equalities on {size.get(k, 0)} variables" for k, n in over]


class _DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p)]
    _fields_ += [("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]


def share_libraries(opti):
    """Make the libraries of the compiled Functions the NLP of ``opti`` calls global (RTLD_GLOBAL), so
    that a jitted NLP, whose C calls them by name, finds their symbols: casadi.external loads them
    privately, and the jitted library's undefined symbols would end the process when it is loaded.
    Returns the names of those whose library was not found (without /proc/self/maps: not Linux)."""
    functions = externals(opti)
    if not functions:
        return []
    try:
        with open("/proc/self/maps") as f:
            paths = list(dict.fromkeys(p for line in f if len(p := line.split(maxsplit=5)[-1].strip()) and ".so" in p))
    except OSError:
        paths = []
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    return [f.name() for f in functions if not _share(f.name(), paths, dladdr)]


def _share(name, paths, dladdr):
    for path in paths:
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            address = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except (OSError, AttributeError):
            continue
        info = _DlInfo()
        if dladdr(address, ctypes.byref(info)) and info.fname:
            ctypes.CDLL(info.fname.decode(), mode=os.RTLD_NOLOAD | os.RTLD_LAZY | os.RTLD_GLOBAL)
            return True
    return False
