"""casrbd.cache against hostile disks: it deletes nothing it did not write, loads nothing unchecked, never
blocks on a special file, and a cache that cannot be written costs one warning, not a failure.

Every entry kind the library writes (a Function, a compiled library, a GPU kernel build through the
host-compiled ``casrbd.gpu.host_function``, no GPU needed, a benchmark build of benchmarks/harness.py)
is damaged the way a crash, a copy or a hand edit would, and must come back rebuilt with a
``CacheWarning``, answering as casadi's VM evaluation of the Function it was built from. Tiny Functions
at -O0: fast.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import warnings

import casadi as ca
import numpy as np
import pytest

import casrbd
from benchmarks import harness, pinocchio_cpp
from casrbd import cache as store
from casrbd import codegen, functions, gpu
from casrbd.cli import main
from casrbd.models import load_robot

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("g++") is None, reason="no gcc/g++")

FLAGS = ("-O0",)


@pytest.fixture(autouse=True)
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(functions, "DISK_MIN_SECONDS", 0.0)  # every Function stored, however quick
    monkeypatch.setattr(store, "_unwritable", set())  # the one warning per root, counted per test
    return tmp_path / "cache"


@pytest.fixture(autouse=True)
def never_hang():
    """A read that blocks (a FIFO opened for reading) fails the test instead of hanging it."""

    def hung(*_):
        raise TimeoutError("blocked on the cache")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def tiny(n=2, scale=2.0, name="tiny"):
    x = ca.SX.sym("x", n)
    return ca.Function(name, [x], [scale * ca.sin(x) * x[0]], ["x"], ["y"])


def x_of(n=2):
    return np.linspace(0.3, 0.9, n)


def build(kind):
    """(entry directory, a check that a fresh object of that kind answers right) for one kind."""
    if kind == "function":
        model = load_robot("arm7")
        casrbd.function(model, "rnea")
        (entry,) = (store.cache_dir() / "functions").iterdir()

        def check():
            f = casrbd.function(load_robot("arm7"), "rnea")
            q, v, a = (np.linspace(-1, 1, 7) * k for k in (0.5, 0.7, 0.9))
            assert np.allclose(np.array(f(q, v, a)).ravel(), casrbd.rnea(model, q, v, a), rtol=1e-12, atol=1e-12)

    elif kind == "library":
        entry = codegen.compile_functions(tiny(), flags=FLAGS).path.parent

        def check():
            lib = codegen.compile_functions(tiny(), flags=FLAGS)
            assert np.allclose(np.array(lib["tiny"](x_of())), np.array(tiny()(x_of())), rtol=1e-14, atol=0)

    elif kind == "benchmark":
        entry = harness.compile_object(tiny(), FLAGS)[0]

        def check():
            outputs = harness.time_c(tiny(), [x_of()], FLAGS, repeat=1, batch_seconds=1e-4).outputs
            assert np.allclose(outputs[0], np.array(tiny()(x_of())).ravel(), rtol=1e-14, atol=0)

    else:
        entry = gpu.host_function(tiny()).path.parent

        def check():
            X = np.vstack([x_of(), x_of()[::-1]])
            want = np.hstack([np.array(tiny()(x)) for x in X]).T
            assert np.allclose(gpu.host_function(tiny())(X), want, rtol=1e-14, atol=0)

    return entry, check


KINDS = ("function", "library", "gpu", "benchmark")


def payload(entry):
    """The entry's largest file: the serialized Functions or the shared library."""
    return max((p for p in entry.iterdir() if p.name != store.MANIFEST), key=lambda p: p.stat().st_size)


def replace(path, data):
    """A new inode: this process may have the library mapped, and changing it in place would crash it."""
    tmp = path.with_name(".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def truncate(entry, _):
    path = payload(entry)
    replace(path, path.read_bytes()[: path.stat().st_size // 3])
    return path


def corrupt(entry, _):
    path = payload(entry)
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = os.urandom(64)
    replace(path, bytes(data))
    return path


def foreign(entry, kind):
    """Another entry of the same kind copied over this one, manifest and all."""
    other = {
        "function": lambda: casrbd.function(load_robot("arm7"), "aba"),
        "library": lambda: codegen.compile_functions(tiny(3, 5.0), flags=FLAGS),
        "gpu": lambda: gpu.host_function(tiny(3, 5.0)),
        "benchmark": lambda: harness.compile_object(tiny(3, 5.0), FLAGS),
    }[kind]
    before = set(entry.parent.iterdir())
    other()
    (source,) = set(entry.parent.iterdir()) - before
    shutil.rmtree(entry)
    shutil.copytree(source, entry)
    return entry / store.MANIFEST


def fifo(entry, _):
    """The payload a FIFO: opening it for reading would block for ever."""
    path = payload(entry)
    path.unlink()
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("damage", [truncate, corrupt, foreign, fifo])
@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_entry_of_every_kind_is_rebuilt_with_a_warning_never_loaded(kind, damage):
    entry, check = build(kind)
    culprit = damage(entry, kind)
    with pytest.warns(store.CacheWarning, match=re.escape(str(culprit))):
        check()  # a new model, or a library or kernel build not loaded before: read from disk
    with warnings.catch_warnings():
        warnings.simplefilter("error", store.CacheWarning)  # rebuilt and stored again
        check()


def test_a_fifo_manifest_in_the_functions_cache_does_not_block():
    entry, check = build("function")
    (entry / store.MANIFEST).unlink()
    os.mkfifo(entry / store.MANIFEST)
    with pytest.warns(store.CacheWarning, match="not a regular file"):
        check()


def test_the_cache_command_lists_every_kind_the_library_writes(root, capsys):
    for kind in KINDS:
        build(kind)
    assert sorted({e.kind for e in store.entries()}) == sorted(KINDS)
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    for kind in KINDS:
        assert re.search(rf"^\s+{kind}\s+1\b", out, re.M), out
    # another process lists every kind too: the benchmarks' kind is registered without importing them
    listing = [sys.executable, "-c", "import sys; from casrbd.cli import main; sys.exit(main(['cache']))"]
    out = subprocess.run(listing, capture_output=True, text=True, check=True).stdout
    for kind in KINDS:
        assert re.search(rf"^\s+{kind}\s+1\b", out, re.M), out
    assert main(["cache", "--clear"]) == 0
    assert f"removed {len(KINDS)} entries" in capsys.readouterr().out
    assert store.entries() == []


def test_pinocchio_cpp_stores_its_program_as_a_checked_benchmark_entry(tmp_path, monkeypatch):
    """The program is stored, listed, loaded checked and rebuilt when damaged: here a tiny stand-in for
    timing.cpp, whose real build takes minutes."""
    source = tmp_path / "timing.cpp"
    source.write_text('#include <cstdio>\nint main() { std::puts("{}"); return 0; }\n')
    compiler = shutil.which("g++")
    monkeypatch.setattr(pinocchio_cpp, "compile_command", lambda out, c: [c, str(source), "-o", out])
    assert pinocchio_cpp.built(compiler) is None
    exe = pinocchio_cpp.build(compiler)
    assert pinocchio_cpp.built(compiler) == exe
    assert subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip() == "{}"
    (entry,) = store.entries()
    assert entry.kind == "benchmark" and entry.path == exe.parent
    corrupt(exe.parent, "benchmark")
    with pytest.warns(store.CacheWarning, match=re.escape(str(exe))):
        assert pinocchio_cpp.built(compiler) is None
    assert pinocchio_cpp.build(compiler) == exe and pinocchio_cpp.built(compiler) == exe


def user_files(root):
    """What a user or another program keeps where a cache root was set by mistake."""
    (root / ".ssh").mkdir(parents=True)
    (root / ".ssh" / "id_ed25519").write_text("secret")
    (root / ".git").mkdir()
    (root / "data" / "run1").mkdir(parents=True)
    (root / "data" / "run1" / "log.csv").write_text("1,2")
    (root / "notes.txt").write_text("mine")
    # in casrbd's own folders: a dot-directory that is no partial build of ours, a directory named like an
    # entry without a manifest, one with another program's manifest, one of another kind's manifest
    (root / "libraries" / ".keep").mkdir(parents=True)
    (root / "libraries" / f"mine-{'0' * 20}").mkdir()
    (root / "libraries" / f"theirs-{'1' * 20}").mkdir()
    (root / "libraries" / f"theirs-{'1' * 20}" / store.MANIFEST).write_text('{"format": "other", "files": {}}')
    return sorted(p.relative_to(root) for p in root.rglob("*"))


def test_clear_refuses_a_root_without_the_marker_and_deletes_nothing(root, capsys):
    before = user_files(root)
    build("library")  # an entry of ours in a folder that is not ours
    assert not store.is_marked(root)  # a non-empty root that casrbd did not create gets no marker
    with pytest.raises(ValueError, match=r"has no casrbd CACHEDIR.TAG.*nothing was removed"):
        store.prune()
    assert main(["cache", "--clear"]) == 2
    assert "CACHEDIR.TAG" in capsys.readouterr().err
    # another program's cache tag (the standard line without casrbd's), or a FIFO in its place: not casrbd's
    (root / store.MARKER).write_text(store.MARKER_TEXT.splitlines()[0] + "\n")
    with pytest.raises(ValueError, match="has no casrbd CACHEDIR.TAG"):
        store.prune()
    (root / store.MARKER).unlink()
    os.mkfifo(root / store.MARKER)
    with pytest.raises(ValueError, match="has no casrbd CACHEDIR.TAG"):
        store.prune()
    assert set(before) <= {p.relative_to(root) for p in root.rglob("*")}


def test_clear_removes_only_its_entries_and_follows_no_symlink(root, tmp_path):
    ours, _ = build("library")  # a new root: marked
    assert store.is_marked(root)
    before = [p for p in user_files(root) if not (root / p).is_relative_to(ours)]
    elsewhere = tmp_path / "elsewhere"
    build("library")
    # a valid-looking entry and a whole kind folder reached through symlinks: never listed nor touched
    (elsewhere / "functions").mkdir(parents=True)
    theirs = codegen.compile_functions(tiny(4), flags=FLAGS).path.parent
    shutil.copytree(theirs, elsewhere / "functions" / theirs.name)
    target = elsewhere / "lib" / theirs.name
    shutil.copytree(theirs, target)
    (root / "libraries" / f"linked-{'2' * 20}").symlink_to(target, target_is_directory=True)
    shutil.rmtree(root / "functions", ignore_errors=True)
    (root / "functions").symlink_to(elsewhere / "functions", target_is_directory=True)
    kept_outside = sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*"))
    with pytest.warns(store.CacheWarning, match="is a symlink"):  # neither read nor written through
        casrbd.function(load_robot("arm7"), "rnea")
    assert sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*")) == kept_outside
    listed = store.entries()
    assert {e.kind for e in listed} == {"library"} and all(not e.path.is_symlink() for e in listed)
    assert len(store.prune()) == len(listed) == 2
    assert store.entries() == []
    assert sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*")) == kept_outside
    left = {p.relative_to(root) for p in root.rglob("*")}
    assert set(before) <= left


def test_an_unwritable_cache_costs_one_warning_not_a_failure(root, monkeypatch):
    """A cache path that is a file: the numeric API and the compilers still answer (in memory, in a
    temporary directory), with one CacheWarning for the root."""
    root.write_text("not a directory")
    with pytest.warns(store.CacheWarning, match="cannot be written") as caught:
        model = load_robot("arm7")
        q = np.linspace(-1, 1, 7)
        assert np.allclose(casrbd.rnea(model, q, q, q), np.array(casrbd.function(model, "rnea")(q, q, q)).ravel())
        casrbd.function(model, "crba")
        lib = codegen.compile_functions(tiny(), flags=FLAGS)
        assert np.allclose(np.array(lib["tiny"](x_of())), np.array(tiny()(x_of())))
        assert np.allclose(gpu.host_function(tiny())(x_of()[None]), np.array(tiny()(x_of())).T)
    assert len([w for w in caught if issubclass(w.category, store.CacheWarning)]) == 1
    assert root.read_text() == "not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_cache_loads_what_it_holds_and_builds_the_rest_in_memory(root):
    build("library")
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o555)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", store.CacheWarning)
            assert codegen.compile_functions(tiny(), flags=FLAGS).compile_seconds is None
        with pytest.warns(store.CacheWarning, match="cannot be written"):
            codegen.compile_functions(tiny(3), flags=FLAGS)
    finally:
        for path in [root, *root.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)


def test_a_manifest_is_checked_before_anything_is_read(root):
    """A manifest naming a file outside the entry, or a huge one, is refused by name."""
    entry, check = build("library")
    manifest = entry / store.MANIFEST
    record = json.loads(manifest.read_text())
    record["files"]["../../../etc/passwd"] = "0" * 64
    manifest.write_text(json.dumps(record))
    with pytest.warns(store.CacheWarning, match="not a casrbd manifest"):
        check()
    entry, _ = build("library")
    (entry / store.MANIFEST).write_bytes(b" " * (store.MANIFEST_BYTES + 10))
    with pytest.warns(store.CacheWarning, match="larger than"):
        check()
