"""Many solves on a real Dask cluster (casrbd.ocp.many), the dataset they write, and reach's gains."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from casrbd import cli
from casrbd.ocp import reach
from casrbd.ocp.dataset import Dataset, DatasetError
from casrbd.ocp.many import GRACE, ProblemSpec, guarded, solve_many

distributed = pytest.importorskip("distributed")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PARAMETERS = {"nodes": 6, "duration": 0.3, "integrator": "euler"}
SOLVER = {"tol": 1e-10}
TIME_LIMIT = 4.0  # seconds per solve: each takes a tenth of that, even on a busy machine
MEASURED = {"cpu_time"}  # fields that are measured, not computed


@pytest.fixture(autouse=True)
def _builders_importable(monkeypatch):
    """many_faults (beside this file) importable here and on local workers (spawned with this sys.path)."""
    monkeypatch.syspath_prepend(str(HERE))


@pytest.fixture(scope="module")
def problem():
    return reach.build(solver=SOLVER, **PARAMETERS)


def initial_states(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.r_[reach.REST, np.zeros(7)] + rng.normal(scale=0.05, size=(n, 14))


def assert_in_process(problem, data, x0, gains):
    """Every stored solution is the one a plain solve in this process gives: statuses and iterations
    equal, numbers to round-off (the workers' BLAS may run on other threads)."""
    for k, item in enumerate(data["item"]):
        expected = problem.solve(x0=x0[item], gains=gains)
        assert set(data) == set(expected) | {"item"}
        for name, value in expected.items():
            value, message = np.asarray(value), f"item {item}, {name}"
            if name in MEASURED:
                continue
            if value.dtype.kind == "f":
                scale = max(1.0, np.abs(value).max())
                np.testing.assert_allclose(data[name][k], value, rtol=0, atol=1e-9 * scale, err_msg=message)
            else:
                np.testing.assert_array_equal(data[name][k], value, err_msg=message)


def test_a_killed_worker_and_a_hung_solve_lose_nothing(tmp_path, problem):
    """Two local worker processes; item 2 kills its worker once, item 5 sleeps past the time limit: every
    other item is stored once, equal to an in-process solve; item 5 as timed out; a rerun adds nothing."""
    marker, path = tmp_path / "died", tmp_path / "dataset"
    spec = ProblemSpec("many_faults:build", {**PARAMETERS, "marker": str(marker)}, SOLVER)
    n = 8
    x0 = initial_states(n)
    die, sleep = np.zeros(n, bool), np.zeros(n)
    die[2], sleep[5] = True, 60.0
    variations = {"x0": x0, "die": die, "sleep": sleep}
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
        distributed.Client(cluster) as client,
    ):
        store = solve_many(spec, variations, path, client=client, time_limit=TIME_LIMIT, gains=True, progress=False)
    assert marker.exists()  # item 2 killed its worker, and was solved again elsewhere
    assert {i: r["status"] for i, r in store.unsolved.items()} == {5: "timeout"}
    data = Dataset.open(path).load()
    assert list(data["item"]) == [0, 1, 2, 3, 4, 6, 7]
    assert data["gains"].shape == (7, PARAMETERS["nodes"], 7, 14)
    assert_in_process(problem, data, x0, gains=True)
    index = (path / "index.json").read_text()
    files = sorted(p.name for p in path.iterdir())
    start = time.monotonic()
    again = solve_many(spec, variations, path, time_limit=TIME_LIMIT, gains=True, progress=False)
    assert time.monotonic() - start < 5  # nothing to do: no cluster started
    assert (path / "index.json").read_text() == index and sorted(p.name for p in path.iterdir()) == files
    assert again.done == set(range(n))


def _start(args, env, log):
    return subprocess.Popen([sys.executable, "-m", "dask", *args], env=env, cwd=ROOT, stdout=log, stderr=log)


def _stop(processes):
    for p in reversed(processes):
        p.terminate()
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=15)


def test_a_scheduler_and_workers_started_apart_through_the_command_line(tmp_path, problem):
    """``casrbd solve-many --scheduler ADDR`` against `dask scheduler` and `dask worker` processes on
    loopback, into a dataset that an interrupted run left with two items solved and one timed out: it
    adds the others, once, and solves the timed-out one again (``--retry timeout``); a rerun adds nothing."""
    n, path = 6, tmp_path / "dataset"
    x0 = initial_states(n, seed=1)
    spec = ProblemSpec("casrbd.ocp.reach:build", PARAMETERS, SOLVER)
    (tmp_path / "spec.json").write_text(json.dumps(spec.to_dict()))
    np.savez(tmp_path / "variations.npz", x0=x0)
    store = Dataset.create(path, spec, {"x0": x0})
    store.add([{"item": i, "result": problem.solve(x0=x0[i])} for i in (0, 3)])
    store.add([{"item": 5, "status": "timeout", "message": "killed after 1 s"}])  # retried below

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    file, processes = tmp_path / "scheduler.json", []
    with open(tmp_path / "dask.log", "w") as log:
        try:
            scheduler = ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
            processes.append(_start([*scheduler, "--scheduler-file", str(file)], env, log))
            deadline = time.monotonic() + 60
            while not file.exists() and time.monotonic() < deadline and processes[0].poll() is None:
                time.sleep(0.2)
            assert file.exists(), (tmp_path / "dask.log").read_text()
            address = json.loads(file.read_text())["address"]
            assert address.startswith("tcp://127.0.0.1:")
            worker = ["worker", address, "--nthreads", "1", "--nworkers", "1", "--host", "127.0.0.1"]
            processes.append(_start([*worker, "--no-dashboard"], env, log))
            arguments = ["solve-many", str(tmp_path / "spec.json"), "--variations", str(tmp_path / "variations.npz")]
            arguments += ["--dataset", str(path), "--scheduler", address, "--time-limit", str(TIME_LIMIT)]
            arguments += ["--retry", "timeout", "--quiet"]
            assert cli.main(arguments) == 0
            broken = ProblemSpec("casrbd.ocp.reach:build", {"nodes": 0})
            with pytest.raises(RuntimeError, match="building casrbd.ocp.reach:build on a worker failed"):
                solve_many(broken, {"x0": x0}, tmp_path / "broken", client=address, progress=False)
        finally:
            _stop(processes)
    store = Dataset.open(path)
    shards = [s["items"] for s in store.index["shards"]]  # how the new items fall into shards depends on timing
    assert shards[0] == [0, 3] and sorted(i for s in shards[1:] for i in s) == [1, 2, 4, 5], shards
    assert not store.unsolved
    data = store.load()
    assert list(data["item"]) == list(range(n))
    assert_in_process(problem, data, x0, gains=False)
    index = (path / "index.json").read_text()
    again = solve_many(spec, {"x0": x0}, path, time_limit=TIME_LIMIT, progress=False, retry=("timeout",))
    assert again.done == set(range(n)) and (path / "index.json").read_text() == index  # nothing to add


def test_gains_match_finite_differences_of_re_solves():
    """dx_k/dx0 and du_k/dx0 against central differences of solves from perturbed x0 (half the
    directions), two torque bounds active; K_0 = du_0/dx0, and K_k dx_k/dx0 = du_k/dx0 at every stage."""
    problem = reach.build(nodes=6, duration=0.2, integrator="euler", solver={"tol": 1e-12})
    target = (0.5, 0.6, 0.8)
    x0 = np.r_[reach.REST, np.zeros(7)]
    r = problem.solve(x0, target=target, gains=True)
    active = np.abs(r["controls"]) >= problem.model.effort_limit * (1 - 1e-6)
    assert r["success"] and active.sum() == 2
    h = 1e-6
    for j in (0, 1, 3, 6, 7, 8, 12):  # q and v of the shoulder, elbow and wrist
        e = np.zeros(14)
        e[j] = h
        plus, minus = problem.solve(x0 + e, target=target), problem.solve(x0 - e, target=target)
        assert not (np.abs(plus["controls"]) >= problem.model.effort_limit * (1 - 1e-6))[~active].any()
        du = (plus["controls"] - minus["controls"]) / (2 * h)
        dx = (plus["states"] - minus["states"]) / (2 * h)
        assert np.abs(du - r["du_dx0"][:, :, j]).max() <= 1e-6 * max(1.0, np.abs(du).max()), j
        assert np.abs(dx - r["dx_dx0"][:, :, j]).max() <= 1e-6 * max(1.0, np.abs(dx).max()), j
    assert np.all(r["du_dx0"][active] == 0)
    np.testing.assert_allclose(r["gains"][0], r["du_dx0"][0], rtol=0, atol=1e-9 * np.abs(r["du_dx0"]).max())
    for k in range(6):
        np.testing.assert_allclose(
            r["gains"][k] @ r["dx_dx0"][k], r["du_dx0"][k], rtol=0, atol=1e-9 * np.abs(r["du_dx0"]).max()
        )


def test_the_guard_records_errors_crashes_and_timeouts():
    """Each solve runs in a child process: its value comes back; its error, its death and its hang are
    recorded, and the hang is killed."""
    assert guarded(lambda: {"x": np.arange(3.0)}, 10)["result"]["x"].tolist() == [0.0, 1.0, 2.0]
    error = guarded(lambda: 1 / 0, 10)
    assert error["status"] == "error" and "ZeroDivisionError" in error["message"]
    died = guarded(lambda: os._exit(3), 10)
    assert died == {"status": "crashed", "message": "the solve's process died (exit code 3)"}
    killed = guarded(lambda: os.kill(os.getpid(), signal.SIGKILL), 10)  # as the kernel's out-of-memory killer
    assert killed == {"status": "crashed", "message": f"the solve's process died (signal {int(signal.SIGKILL)})"}
    start = time.monotonic()
    assert guarded(lambda: time.sleep(60), 0.5)["status"] == "timeout"
    assert time.monotonic() - start < 0.5 + GRACE + 20


def test_fatrop_and_ipopt_find_the_same_solution_and_gains():
    x0 = np.r_[reach.REST, np.zeros(7)]
    ipopt, fatrop = (
        reach.build(**PARAMETERS, solver={"name": name, "tol": 1e-10}).solve(x0, gains=True)
        for name in ("ipopt", "fatrop")
    )
    assert ipopt["success"] and fatrop["success"]
    for name in ("states", "controls", "cost", "gains"):
        scale = max(1.0, np.abs(ipopt[name]).max())
        np.testing.assert_allclose(fatrop[name], ipopt[name], rtol=0, atol=1e-6 * scale, err_msg=name)


@pytest.mark.parametrize(
    "variations, message",
    [
        ([{"x0": 1.0}, {"target": 2.0}], "row 1 has keys"),
        ({"x0": np.zeros((3, 14)), "seed": np.arange(2)}, "columns of equal length"),
        ([], "non-empty table"),
        ({"x0": np.array([None, 1])}, "column 'x0' has dtype object"),
    ],
)
def test_a_bad_variations_table_is_a_clear_error(tmp_path, variations, message):
    with pytest.raises(DatasetError, match=message):
        solve_many(ProblemSpec("casrbd.ocp.reach:build"), variations, tmp_path)


def test_a_dataset_read_back_is_checked(tmp_path, problem):
    """A changed shard, an item stored twice, another problem in the same directory: clear errors."""
    spec = ProblemSpec("casrbd.ocp.reach:build", PARAMETERS, SOLVER)
    x0 = initial_states(3)
    store = Dataset.create(tmp_path, spec, {"x0": x0})
    store.add([{"item": 0, "result": problem.solve(x0=x0[0])}, {"item": 1, "status": "timeout", "message": "m"}])
    with pytest.raises(DatasetError, match="item 1 is stored already"):
        store.add([{"item": 1, "result": problem.solve(x0=x0[1])}])
    with pytest.raises(DatasetError, match="another problem"):
        Dataset.create(tmp_path, ProblemSpec("casrbd.ocp.reach:build", {"nodes": 5}), {"x0": x0})
    with pytest.raises(DatasetError, match="another problem"):
        Dataset.create(tmp_path, spec, {"x0": x0[:2]})
    np.testing.assert_array_equal(Dataset.open(tmp_path).variations()["x0"], x0)
    shard = tmp_path / store.index["shards"][0]["file"]
    data = bytearray(shard.read_bytes())
    data[-10] ^= 1
    shard.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match=f"{shard.name} does not match the index"):
        Dataset.open(tmp_path).load()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a dataset")
    with pytest.raises(DatasetError, match="not empty and holds no index.json"):
        Dataset.create(other, spec, {"x0": x0})
    (tmp_path / "index.json").write_text('{"version": 1}')
    with pytest.raises(DatasetError, match="not a casrbd dataset index"):
        Dataset.open(tmp_path)
    (tmp_path / "index.json").write_text("{")
    with pytest.raises(DatasetError, match="no readable index.json"):
        Dataset.open(tmp_path)


@pytest.mark.parametrize(
    "builder, parameters, message",
    [
        ("casrbd.ocp.reach", {}, "'package.module:function'"),
        ("casrbd.ocp.reach:build", {"rest": np.zeros(7)}, "parameters must be JSON-able"),
        ("casrbd.ocp.reach:nothing", {}, "has no function 'nothing'"),
    ],
)
def test_a_bad_spec_is_a_clear_error(builder, parameters, message):
    with pytest.raises((ValueError, TypeError), match=message):
        ProblemSpec(builder, parameters).build()


def test_a_spec_is_plain_data():
    spec = ProblemSpec("casrbd.ocp.reach:build", {"nodes": 4, "rest": [0.0] * 7}, {"name": "ipopt"})
    assert ProblemSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert spec.digest == ProblemSpec.from_dict(spec.to_dict()).digest
    assert spec.digest != ProblemSpec("casrbd.ocp.reach:build", {"nodes": 5}).digest
