"""Many solves of one problem on a Dask cluster, written to a dataset as they finish.

A problem is plain data (``ProblemSpec``): a builder ``"package.module:function"``,
its JSON-able parameters and solver options. On a worker, the builder, called
as ``function(**parameters, solver=solver)``, returns an object whose
``solve(**variation)`` (and ``gains=True`` when asked) returns a dict of arrays
and scalars of the same shapes for every item (for ``casrbd.ocp.reach.build``:
states, controls, cost, constraint violation, status, iterations, CPU time, and
the feedback gains). Each worker process builds a spec once (cached by its
digest; the Functions and compiled libraries a builder uses come from casrbd's
disk cache, ``CASRBD_CACHE``, shared by the processes of a machine) and solves
each item in a child process forked from it, killed past the time limit, so
that a hung or crashing solve costs one item, recorded with its status
("timeout", "crashed", "error"), and not the run.

``solve_many`` runs on a ``distributed`` cluster: by default a LocalCluster
with one single-threaded worker process per core, or any scheduler by address
or ``Client``. Dask reruns the task of a worker that dies elsewhere (the tasks
are pure functions of spec and item); an item whose workers keep dying is
recorded as "worker died". Results go to a ``Dataset`` in shards as they
arrive, so an interrupted run resumes where it stopped.
"""

import ctypes
import hashlib
import importlib
import json
import os
import pickle
import select
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field

from .dataset import Dataset, row, table

SHARD_ITEMS = 64  # solutions per shard at most
SHARD_SECONDS = 10.0  # and a shard at least this often while results arrive
GRACE = 1.0  # seconds past the time limit before a solve is killed: the solver's own limit stops it first


@dataclass(frozen=True)
class ProblemSpec:
    """A problem as plain data: ``builder`` "package.module:function", its keyword ``parameters`` and the
    ``solver`` options passed to it as ``solver=``, all JSON-able; ``digest`` names it."""

    builder: str
    parameters: dict = field(default_factory=dict)
    solver: dict = field(default_factory=dict)

    def __post_init__(self):
        module, _, name = self.builder.partition(":")
        if not module or not name.isidentifier():
            raise ValueError(f"ProblemSpec builder must be 'package.module:function', got {self.builder!r}")
        for what in ("parameters", "solver"):
            value = getattr(self, what)
            if not isinstance(value, dict):
                raise TypeError(f"ProblemSpec {what} must be a dict, got {type(value).__name__}")
            try:
                text = json.dumps(value, sort_keys=True, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"ProblemSpec {what} must be JSON-able: {e}") from None
            object.__setattr__(self, what, json.loads(text))  # a private copy, as JSON reads it back

    def to_dict(self):
        return {"builder": self.builder, "parameters": self.parameters, "solver": self.solver}

    @classmethod
    def from_dict(cls, d):
        extra = set(d) - {"builder", "parameters", "solver"}
        if extra or "builder" not in d:
            raise ValueError(f"a problem spec has keys builder, parameters, solver; got {sorted(d)}")
        return cls(d["builder"], d.get("parameters", {}), d.get("solver", {}))

    @classmethod
    def load(cls, path):
        """The spec of a JSON file."""
        with open(path) as f:
            return cls.from_dict(json.load(f))

    @property
    def digest(self):
        """SHA-256 of the spec's canonical JSON."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    def build(self):
        """Import the builder and call it: the problem, with its ``solve``."""
        module, _, name = self.builder.partition(":")
        builder = getattr(importlib.import_module(module), name, None)
        if not callable(builder):
            raise ValueError(f"ProblemSpec builder {self.builder!r}: module {module!r} has no function {name!r}")
        problem = builder(**self.parameters, solver=self.solver)
        if not callable(getattr(problem, "solve", None)):
            raise TypeError(f"builder {self.builder!r} returned {type(problem).__name__}, which has no solve()")
        return problem


_BUILT = {}  # digest -> problem, per worker process


def built(spec):
    """The problem of ``spec``, built once per process."""
    if spec.digest not in _BUILT:
        _BUILT[spec.digest] = spec.build()
    return _BUILT[spec.digest]


def solve_item(spec, item, variation, gains, time_limit):
    """One item, on a worker: {"item", "result"} or {"item", "status", "message"}. Raises only when the
    problem cannot be built (the spec is wrong: no item can be solved)."""
    problem = built(spec)
    extra = {"gains": True} if gains else {}  # so that a problem without gains takes gains=False
    outcome = guarded(lambda: problem.solve(**variation, **extra), time_limit)
    return {"item": item, **outcome}


def guarded(call, time_limit):
    """``call()`` in a child process forked from this one, killed after ``time_limit`` + ``GRACE`` seconds:
    {"result": its value} or {"status": "timeout" | "crashed" | "error", "message": ...}."""
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()  # the worker's other threads do not run in the child, which only solves and exits
    if pid == 0:
        os.close(read)
        _die_with(parent)
        try:
            payload = pickle.dumps({"result": call()})
        except BaseException as e:  # the solve's error, recorded for its item
            text = "".join(traceback.format_exception_only(type(e), e)).strip()
            payload = pickle.dumps({"status": "error", "message": text})
        with os.fdopen(write, "wb") as f:
            f.write(payload)
        os._exit(0)
    os.close(write)
    chunks, deadline = [], time.monotonic() + time_limit + GRACE
    with os.fdopen(read, "rb", buffering=0) as f:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([f], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return {"status": "timeout", "message": f"killed after {time_limit + GRACE:g} s"}
            chunk = f.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, code = os.waitpid(pid, 0)
    if not chunks:
        how = f"signal {os.WTERMSIG(code)}" if os.WIFSIGNALED(code) else f"exit code {os.waitstatus_to_exitcode(code)}"
        return {"status": "crashed", "message": f"the solve's process died ({how})"}
    try:
        return pickle.loads(b"".join(chunks))
    except Exception as e:  # a result cut short: the child died writing it
        return {"status": "crashed", "message": f"the solve's process died writing its result ({e})"}


def _die_with(parent):
    """Have the kernel kill this child when its parent dies (Linux), so that no solve outlives its worker."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def solve_many(
    spec, variations, dataset, client=None, time_limit=60.0, gains=False, progress=True, workers=None, retry=()
):
    """Solve ``spec`` (a ``ProblemSpec`` or its dict) for every item of ``variations`` (a list of dicts, or a
    dict of equal-length arrays: the keyword arguments of the problem's ``solve`` per item) into the
    dataset directory ``dataset``, skipping the items it holds already; returns the ``Dataset``.

    ``client``: None (a LocalCluster of ``workers`` single-threaded processes, default one per core, closed
    at the end), a scheduler address ("tcp://127.0.0.1:8786") or a ``distributed.Client``. ``time_limit``:
    seconds per solve before its process is killed (set the solver's own limit in ``spec.solver`` a little
    below it to get the last iterate back instead). ``gains``: passed to each ``solve`` when true.
    ``progress``: a line on stderr with the rate and the time left. ``retry``: statuses of unsolved items
    ("timeout", "crashed", "error", "worker died") to solve again; the others stay as recorded."""
    try:
        from distributed import as_completed
        from distributed.scheduler import KilledWorker
    except ImportError as e:
        raise ImportError(f"solve_many runs on Dask: pip install 'casrbd[many]' ({e})") from None

    spec = spec if isinstance(spec, ProblemSpec) else ProblemSpec.from_dict(spec)
    if not time_limit > 0:
        raise ValueError(f"time_limit must be positive, got {time_limit!r}")
    columns, n = table(variations)
    store = Dataset.create(dataset, spec, columns)
    store.forget(retry)
    todo = sorted(set(range(n)) - store.done)
    if not todo:
        return store
    meter = Progress(len(todo), n - len(todo)) if progress else None
    client, close = _client(client, workers)
    pending = []  # results not stored yet: stored every shard, at the end, and when interrupted
    try:
        prefix = f"casrbd-solve-{spec.digest[:12]}-{store.index['variations_digest'][:12]}"
        futures = {
            client.submit(solve_item, spec, i, row(columns, i), gains, time_limit, key=f"{prefix}-{i}", retries=0): i
            for i in todo
        }
        flushed = time.monotonic()
        for future in as_completed(futures):
            item = futures.pop(future)
            try:
                record = future.result()
            except KilledWorker as e:
                record = {"item": item, "status": "worker died", "message": str(e)}
            except Exception as e:
                client.cancel(list(futures))
                raise RuntimeError(f"building {spec.builder} on a worker failed (item {item}): {e}") from e
            pending.append(record)
            if meter:
                meter.update(record)
            if sum("result" in r for r in pending) >= SHARD_ITEMS or time.monotonic() - flushed > SHARD_SECONDS:
                batch, pending, flushed = pending, [], time.monotonic()
                store.add(batch)
    finally:
        if pending:
            store.add(pending)
        close()
        if meter:
            meter.close()
    return store


def _client(client, workers):
    """(a distributed Client, how to close what was opened here)."""
    from distributed import Client, LocalCluster

    if isinstance(client, Client):
        return client, lambda: None
    if client is not None:
        opened = Client(client)
        return opened, opened.close
    cluster = LocalCluster(
        n_workers=workers or os.cpu_count(), threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    opened = Client(cluster)

    def close():
        opened.close()
        cluster.close()

    return opened, close


class Progress:
    """A line on stderr: items done of the total, unsolved, rate and time left, at most once a second."""

    def __init__(self, todo, done=0, stream=None):
        self.todo, self.done, self.count, self.unsolved = todo, done, 0, 0
        self.stream, self.start, self.shown = stream or sys.stderr, time.monotonic(), 0.0

    def update(self, record):
        self.count += 1
        self.unsolved += "result" not in record
        now = time.monotonic()
        if now - self.shown >= 1.0 or self.count == self.todo:
            self.shown = now
            rate = self.count / max(now - self.start, 1e-9)
            left = (self.todo - self.count) / rate
            self.stream.write(
                f"\rsolve-many: {self.done + self.count}/{self.done + self.todo} items "
                f"({self.unsolved} unsolved), {rate:.2f}/s, ETA {left:.0f} s   "
            )
            self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()
