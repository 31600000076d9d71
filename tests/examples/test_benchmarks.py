"""The benchmark suite's quick mode runs end to end and its own correctness checks pass.

The benchmarks check every compiled output against casadi's VM and
Pinocchio; this test checks that those checks ran and found no mismatch,
and that the report and plots are written. Compiled objects go to a
temporary cache (``CASRBD_CACHE``), never the user's.
"""

import json

import pytest

from casrbd.models import example_robot_data_dir

pytest.importorskip("pinocchio")
pytest.importorskip("matplotlib")
if example_robot_data_dir() is None:
    pytest.skip("example-robot-data is not installed", allow_module_level=True)

from benchmarks.__main__ import main  # noqa: E402  (needs pinocchio and matplotlib)

SECTIONS = ("## Runs", "## Correctness", "## Targets", "## Table I", "## Scaling", "## Accuracy")
PLOTS = ("table1_ratios.png", "scaling_instructions.png", "scaling_time.png", "dmm_vs_aza.png", "accuracy.png")


def test_quick_mode_writes_a_report_without_mismatches(tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results"
    assert main(["--quick", "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    for section in SECTIONS:
        assert section in report
    assert "no mismatch" in report and "MISMATCH" not in report
    for plot in PLOTS:
        assert (out / plot).stat().st_size > 0

    results = json.loads((out / "results.json").read_text())
    entries = [e for rec in results["table1"].values() for e in rec["entries"].values()]
    entries += [e for rec in results["scaling"].values() for e in rec["methods"].values()]
    assert len(results["table1"]) == 2 and len(entries) > 30
    for e in entries:  # every graph of the quick mode is under its cap: all compiled and checked
        assert e["ok"] and "c_min" in e and e["err_c_vs_vm"] <= 1e-6, e
    # the rest state of Carpentier & Mansard (RSS 2018), Fig. 3: the analytical d/dv vanish (up to rounding)
    rest = results["accuracy"]["double_pendulum"]["states"]["rest"]["rnea"]
    assert all(e["max_abs_dv"] < 1e-12 for e in rest["analytical"].values())
