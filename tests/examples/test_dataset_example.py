"""examples/dataset.py at a tiny size: a dataset of reaching motions with their gains, and its plot."""

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_dataset_example_solves_resumes_and_plots(tmp_path, capsys):
    pytest.importorskip("distributed")
    pytest.importorskip("matplotlib")
    if str(ROOT / "examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "examples"))  # the examples import common
    example = runpy.run_path(str(ROOT / "examples" / "dataset.py"), run_name="dataset")
    path, plot = tmp_path / "data", tmp_path / "spread.png"
    arguments = ["--dataset", str(path), "--items", "3", "--workers", "1", "--plot", str(plot)]
    assert example["main"](arguments) == 0
    out = capsys.readouterr().out
    assert "3 solved, 0 unsolved (none) of 3 items" in out and "|K_0|" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data, store = example["run"](path, items=3, workers=1)  # resumed: nothing left to solve
    assert len(store.index["shards"]) == 1 and data["success"].all()
    np.testing.assert_allclose(data["states"][:, 0], example["variations"](3, 0.05, 0)["x0"], rtol=0, atol=1e-10)
