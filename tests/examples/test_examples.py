"""The examples and the command line run as documented."""

import json
from pathlib import Path

import numpy as np
import pytest
from example_runner import example

import casrbd
from casrbd import cli
from casrbd.models import load_robot

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_runs(capsys):
    example("quickstart")  # runs as it is loaded
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


def method_tables(out):
    """{table title: rows (split lines)} of the method tables the CLI prints: a title line, a header
    starting with "method", then one row per method until a blank line."""
    lines = out.splitlines()
    tables = {}
    for k, line in enumerate(lines):
        if line.startswith("method"):
            rows = []
            for row in lines[k + 1 :]:
                if not row.strip():
                    break
                rows.append(row.split())
            tables[lines[k - 1].split(":")[0]] = rows
    return tables


def test_compare_reports_every_method_with_small_errors(capsys):
    """Every row of both tables, the defaults (idsva, idsva/ltdl) included."""
    assert cli.main(["compare", "--seed", "3"]) == 0
    tables = method_tables(capsys.readouterr().out)
    assert {title: [row[0] for row in rows] for title, rows in tables.items()} == {
        "rnea_derivatives": ["chain_rule", "idsva", "ad"],
        "aba_derivatives": ["chain_rule/dmm", "chain_rule/aza", "idsva/dmm", "idsva/aza", "idsva/ltdl", "ad"],
    }
    for rows in tables.values():
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


def test_the_code_and_docs_cite_papers_by_name():
    """Papers are cited by authors, title or venue, never by the seed numbers of the project's notes,
    which mean nothing to a reader: a grep for them over README.md, casrbd/, docs/ and tests/ finds nothing."""
    files = [ROOT / "README.md"] + [
        p
        for d in ("casrbd", "docs", "tests")
        for p in sorted((ROOT / d).rglob("*"))
        if p.is_file() and p.suffix in (".py", ".md", ".txt", ".rst", ".c", ".h")
    ]
    marker = "seed" + " 00"  # spelled apart so that this file does not match itself
    hits = [
        f"{p.relative_to(ROOT)}:{k}"
        for p in files
        for k, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if marker in line
    ]
    assert not hits, hits


def test_an_ocp_example_writes_its_motion_as_html(tmp_path, capsys):
    """`--html PATH` (every optimal-control example takes it): the swing-up's motion with the double
    pendulum's meshes where example-robot-data is installed, else its stick figure."""
    swingup = example("swingup")
    path, stats = tmp_path / "swingup.html", tmp_path / "stats.json"
    swingup.main(["--nodes", "12", "--html", str(path), "--stats", str(stats)])
    text = path.read_text()
    assert "wrote" in capsys.readouterr().out and '"joints":' in text and "<canvas" in text
    # --stats (what benchmarks/ocp.py reads): the solver's statistics and the wall time around them
    written = json.loads(stats.read_text())
    assert written["stats"]["success"] and written["seconds"] > written["stats"]["t_total"] > 0


# every flag of these command lines but --verbose, small sizes (the shared flags of the optimal-control
# examples are run in tests/ocp and above)
COMMAND_LINES = {
    "mpc_arm": "--steps 2 --nodes 3 --dt 0.04 --jacobian ad --second-order ad --hessian exact --no-compiled",
    "codesign": "--nodes 20 --duration 1.0",
    "identification": "--samples 100 --candidates 1 --sigma 0.2 --prior-error 0.1 --gamma 0.5 --seed 3",
}
SUMMARY = {
    "mpc_arm": "2 solves, 2 succeeded",
    "codesign": "co-design (Solve_Succeeded",
    "identification": "consistent fit (log-Cholesky, Opti/IPOPT: Solve_Succeeded",
}


@pytest.mark.parametrize("name", sorted(COMMAND_LINES))
def test_command_line_takes_its_flags_and_writes_the_plot(name, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    main = example(name).main
    path = tmp_path / f"{name}.png"
    assert main([*COMMAND_LINES[name].split(), "--plot", str(path)]) == 0
    assert SUMMARY[name] in capsys.readouterr().out
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
