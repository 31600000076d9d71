"""examples/dataset.py at a tiny size: a dataset of reaching motions with their gains, and its plot."""

import numpy as np
import pytest
from example_runner import example as load_example


def test_the_dataset_example_solves_resumes_and_plots(tmp_path, capsys):
    pytest.importorskip("distributed")
    pytest.importorskip("matplotlib")
    example = vars(load_example("dataset"))
    path, plot = tmp_path / "data", tmp_path / "spread.png"
    arguments = ["--dataset", str(path), "--items", "3", "--workers", "1", "--plot", str(plot)]
    assert example["main"](arguments) == 0
    out = capsys.readouterr().out
    assert "3 solved, 0 unsolved (none) of 3 items" in out and "|K_0|" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shards = sorted(path.glob("shard-*.npz"))  # how many: as the time between flushes allowed
    data, store = example["run"](path, items=3, workers=1)  # resumed: nothing left to solve
    assert sorted(path.glob("shard-*.npz")) == shards and len(store.index["shards"]) == len(shards)
    assert data["success"].all()
    np.testing.assert_allclose(data["states"][:, 0], example["variations"](3, 0.05, 0)["x0"], rtol=0, atol=1e-10)
