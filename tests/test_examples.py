"""The examples and the command line run as documented."""
import runpy
from pathlib import Path

import numpy as np
import pytest

import casrbd
from casrbd import cli
from casrbd.models import load_robot

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    printed = capsys.readouterr().out
    model = load_robot("arm7")
    a = casrbd.aba(model, casrbd.neutral(model), np.zeros(7), np.ones(7))
    # the quickstart prints aba at the neutral configuration; it must undo rnea
    tau = casrbd.rnea(model, casrbd.neutral(model), np.zeros(7), a)
    np.testing.assert_allclose(tau, np.ones(7), atol=1e-10)
    assert "[" in printed


def test_info_prints_the_model_and_sizes(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "model arm7: nq = 7, nv = 7" in out
    for name in cli.CORE_FUNCTIONS:
        assert name in out
    assert "joint7" in out


def test_compare_reports_every_method_with_small_errors(capsys):
    assert cli.main(["compare", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split() and line.split()[0] in
            {"chain_rule", "idsva", "ad", "chain_rule/dmm", "chain_rule/aza", "idsva/dmm", "idsva/aza"}]
    assert len(rows) == 8
    for row in rows:
        err_ad, err_fd = float(row[-2]), float(row[-1])
        assert err_ad < 1e-10 and err_fd < 1e-6, row


def test_unknown_robot_is_a_clear_error(capsys):
    assert cli.main(["info", "no_such_robot"]) == 2
    assert "unknown robot 'no_such_robot'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["arm7"])
def test_shipped_model_loads_without_warnings(name, recwarn):
    model = load_robot(name)
    assert model.nv == 7 and not [w for w in recwarn if issubclass(w.category, casrbd.URDFWarning)]
