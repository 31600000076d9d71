"""The performance targets of issue 4, checked on the Table I records.

Each check compares figures of one robot's record (one run). Times are the
minimum over batches; Pinocchio's time is taken minus its binding overhead
(the stricter comparison; the raw ratio is printed beside it).
"""

from .pinocchio_timing import net_time
from .table1 import ROBOTS

HUMANOIDS = ("talos_reduced", "talos_full_v2")
ID_ANALYTICAL = ("dID chain_rule", "dID idsva")
FD_ANALYTICAL = ("dFD chain_rule/dmm", "dFD chain_rule/aza", "dFD idsva/dmm", "dFD idsva/aza", "dFD idsva/ltdl")
DEFAULT_FD = "dFD idsva/ltdl"  # casrbd's default aba_derivatives (method="idsva", minv_product="ltdl")


class Check:
    """One target on one robot: met, missed or not measured, with the measured value and the margin."""

    def __init__(self, target, robot, value=None, bound=None, detail="", unit="×", missing=None):
        self.target, self.robot, self.value, self.bound = target, robot, value, bound
        self.detail, self.unit, self.missing = detail, unit, missing

    @property
    def status(self):
        if self.missing:
            return "not measured"
        return "met" if self.value <= self.bound else "missed"

    def row(self):
        if self.missing:
            return [self.target, self.robot, "not measured", "", self.missing]
        margin = self.bound - self.value
        return [
            self.target,
            self.robot,
            f"**{self.status}**",
            f"{self.value:.3g}{self.unit} (bound {self.bound:.3g}{self.unit}, margin {margin:+.3g}{self.unit})",
            self.detail,
        ]


def _fastest(rec, keys):
    """(key, compiled min time) of the fastest compiled entry among ``keys``, or None."""
    timed = [(rec["entries"][k]["c_min"], k) for k in keys if "c_min" in rec["entries"].get(k, {})]
    return min(timed)[::-1] if timed else None


def _speed(target, rec, keys, kind, bound):
    robot = rec["robot"]
    fastest = _fastest(rec, keys)
    if fastest is None:
        return Check(target, robot, missing="no compiled " + " / ".join(keys))
    key, t = fastest
    pin_raw, pin_net = rec["pinocchio"][kind]["min"], net_time(rec["pinocchio"][kind])
    if pin_net is None:
        return Check(target, robot, missing=f"Pinocchio's {kind} is within its binding overhead")
    return Check(
        target,
        robot,
        t / pin_net,
        bound,
        f"{key}: {t * 1e6:.3g} µs vs Pinocchio {pin_net * 1e6:.3g} µs "
        f"net of binding overhead ({pin_raw * 1e6:.3g} µs raw: {t / pin_raw:.2f}×)",
    )


def checks(table):
    """Every target's checks on the Table I records ``table`` (robot -> record)."""
    out = []
    for robot in ROBOTS:
        rec = table.get(robot)
        if rec is None:
            out.append(Check("all targets", robot, missing="robot not in the results"))
            continue
        out.append(
            _speed("compiled analytical ∂ID ≤ 0.5× computeRNEADerivatives", rec, ID_ANALYTICAL, "rnea_derivatives", 0.5)
        )
        out.append(
            _speed("compiled analytical ∂FD ≤ 0.7× computeABADerivatives", rec, FD_ANALYTICAL, "aba_derivatives", 0.7)
        )
        out.append(_speed("compiled ID ≤ 0.35× rnea", rec, ("ID",), "rnea", 0.35))
        out.append(_speed("compiled FD ≤ 0.35× aba", rec, ("FD",), "aba", 0.35))
        entries = rec["entries"]
        if rec["nv"] >= 12:
            ad = entries.get("dID ad", {}).get("instructions")
            for key in ID_ANALYTICAL:
                target = f"{key} graph smaller than AD's (≥ 12 dof)"
                n = entries.get(key, {}).get("instructions")
                if ad is None or n is None:
                    out.append(Check(target, robot, missing="graph not built"))
                else:
                    out.append(Check(target, robot, n / ad, 1, f"{n} vs {ad} instructions"))
            if robot in HUMANOIDS and ad is not None and all(k in entries for k in ID_ANALYTICAL):
                n, key = min((entries[k]["instructions"], k) for k in ID_ANALYTICAL)
                out.append(
                    Check(
                        "analytical ∂ID graph ≤ ⅓ of AD's (humanoids)",
                        robot,
                        n / ad,
                        1 / 3,
                        f"{key}: {n} vs {ad} instructions",
                    )
                )
        if robot == "talos_full_v2":
            target = "analytical ∂FD compiles with gcc -O3 in < 20 s"
            e = entries.get(DEFAULT_FD, {})
            if not e.get("flags", "").startswith("-O3"):
                out.append(Check(target, robot, missing=e.get("not_compiled", f"{DEFAULT_FD} not compiled at -O3")))
            else:
                others = ", ".join(
                    f"{k} {entries[k]['gcc_seconds']:.0f} s ({entries[k]['flags']})"
                    for k in FD_ANALYTICAL
                    if k != DEFAULT_FD and "gcc_seconds" in entries.get(k, {})
                )
                out.append(
                    Check(
                        target,
                        robot,
                        e["gcc_seconds"],
                        20,
                        f"{DEFAULT_FD} ({e['instructions']} instructions); others: {others or 'not compiled'}",
                        unit=" s",
                    )
                )
    return out
