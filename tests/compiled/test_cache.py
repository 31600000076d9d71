"""The build cache never hands a bad library to the dynamic loader, never answers wrong, and rebuilds.

Every test damages an entry of a temporary cache (``CASRBD_CACHE``) the way a full disk, a crash, a
copy or a hand edit would, and checks that the next call warns naming the file, rebuilds, and answers
as casadi's VM evaluation of the original Function. Tiny Functions, compiled at -O0: fast.
"""

import ctypes
import json
import os
import re
import shutil
import stat

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd import codegen, functions
from casrbd.cache import sha256
from casrbd.cli import main
from casrbd.models import load_robot

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

FLAGS = ("-O0",)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def tiny(n=2, scale=2.0):
    x = ca.SX.sym("x", n)
    return ca.Function("tiny", [x], [scale * ca.sin(x) * x[0]], ["x"], ["y"])


def assert_answers_as(f, reference):
    x = np.linspace(0.3, 0.9, reference.size1_in(0))
    assert np.allclose(np.array(f(x)), np.array(reference(x)), rtol=1e-14, atol=0)


def overwrite(path, data):
    """Replace the file (a new inode): this process has the library loaded, and changing a mapped file in
    place would crash it when it unloads the library, whatever the cache does."""
    tmp = path.with_suffix(".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def truncate(path):
    overwrite(path, path.read_bytes()[: path.stat().st_size // 3])


def corrupt(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = os.urandom(64)
    overwrite(path, bytes(data))


def empty(path):
    overwrite(path, b"")


def foreign(path):
    """Another Function's library (same Function name, another signature and values) over this one."""
    other = codegen.compile_functions(tiny(3, scale=5.0), name="other", flags=FLAGS)
    overwrite(path, other.path.read_bytes())


def foreign_entry(path):
    """Another build's whole entry (library and manifest) copied under this entry's name."""
    other = codegen.compile_functions(tiny(3, scale=5.0), flags=FLAGS)
    for p in path.parent.iterdir():
        p.unlink()
    for p in other.path.parent.iterdir():
        shutil.copy(p, path.parent / p.name)


def no_manifest(path):
    (path.parent / codegen.MANIFEST).unlink()


@pytest.mark.parametrize("damage", [truncate, corrupt, empty, foreign, foreign_entry, no_manifest])
def test_a_damaged_entry_is_rebuilt_with_a_warning_naming_it(damage):
    f = tiny()
    first = codegen.compile_functions(f, flags=FLAGS)
    damage(first.path)
    culprit = first.path.parent / codegen.MANIFEST if damage in (foreign_entry, no_manifest) else first.path
    with pytest.warns(codegen.CacheWarning, match=re.escape(str(culprit))):
        rebuilt = codegen.compile_functions(f, flags=FLAGS)
    assert rebuilt.compile_seconds is not None
    assert_answers_as(rebuilt["tiny"], f)
    again = codegen.compile_functions(f, flags=FLAGS)  # no warning: the rebuilt entry is good
    assert again.compile_seconds is None and again.path == rebuilt.path
    assert_answers_as(again["tiny"], f)


def test_a_forged_manifest_is_caught_by_the_signature_check_after_loading():
    """A foreign library with a manifest edited to match it (key, hash and file name) passes the checks
    before loading; the signature check after loading refuses it before any call."""
    f = tiny()
    first = codegen.compile_functions(f, flags=FLAGS)
    other = codegen.compile_functions(tiny(3, scale=5.0), name="tiny", flags=("-O1",))
    manifest = first.path.parent / codegen.MANIFEST
    record = json.loads(manifest.read_text())
    forged = first.path.parent / "forged.so"
    shutil.copy(other.path, forged)
    record["files"][forged.name] = sha256(forged)
    record["info"]["library"] = forged.name
    manifest.write_text(json.dumps(record))
    with pytest.warns(codegen.CacheWarning, match=re.escape(str(forged)) + ".*another signature"):
        rebuilt = codegen.compile_functions(f, flags=FLAGS)
    assert rebuilt.compile_seconds is not None
    assert_answers_as(rebuilt["tiny"], f)


def fake_compiler(tmp_path, body):
    path = tmp_path / "fakecc"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_compiler_that_writes_nothing_is_a_compile_error_naming_it(tmp_path, cache):
    cc = fake_compiler(tmp_path, "echo 'all fine, says the fake'\nexit 0\n")
    with pytest.raises(codegen.CompileError, match=rf"(?s){re.escape(cc)} .*wrote no library.*all fine, says the fake"):
        codegen.compile_functions(tiny(), flags=FLAGS, compiler=cc)
    assert not [p for p in (cache / "libraries").iterdir() if not p.name.startswith(".")]


def test_a_compiler_that_writes_garbage_is_a_compile_error_and_leaves_no_entry(tmp_path, cache):
    # writes text where the library should be (the argument after -o), says nothing
    cc = fake_compiler(tmp_path, 'while [ "$1" != "-o" ]; do shift; done\necho garbage > "$2"\n')
    for _ in range(2):  # the failed build is not left to be found (and warned about) next time
        with pytest.raises(codegen.CompileError, match=rf"(?s){re.escape(cc)} .*fails its checks.*does not load tiny"):
            codegen.compile_functions(tiny(), flags=FLAGS, compiler=cc)
    assert list((cache / "libraries").iterdir()) == []


def test_libraries_compiled_side_by_side_load_in_order_and_from_the_cache(cache):
    """compile_libraries: each library holds its own Functions, answers as the VM, comes back in the
    order asked; a second call compiles nothing; a Function with a custom Jacobian ships it."""
    x = ca.SX.sym("x", 2)
    jac = ca.Function("jac_g", [x, ca.SX.sym("out_y", 2)], [ca.diag(3 * ca.cos(x))])
    g = ca.Function("g", [x], [3 * ca.sin(x)], ["x"], ["y"], {"custom_jacobian": jac, "jac_penalty": 0})
    asked = {"lib_b": [tiny(3)], "lib_a": [g]}
    b, a = codegen.compile_libraries(asked, flags=FLAGS, jobs=2)
    assert b.compile_seconds is not None and a.compile_seconds is not None
    assert_answers_as(b["tiny"], tiny(3))
    assert_answers_as(a["g"], g)
    with pytest.raises(KeyError, match="holds no Function 'g'"):
        b["g"]
    assert "jac_g" in (a.source.read_text())
    again = codegen.compile_libraries(asked, flags=FLAGS)
    assert [lib.compile_seconds for lib in again] == [None, None]
    assert [lib.path for lib in again] == [b.path, a.path]


def test_memoized_dependency_answers_as_the_vm_whatever_the_order_and_collisions(monkeypatch):
    """memo: two Functions calling one linearisation answer bit for bit as casadi's VM when called at
    interleaved points, points revisited, and with a table of one or two slots (every other call
    displaces another point's entry); a Function that no one calls cannot be kept."""
    x, u = ca.SX.sym("x", 3), ca.SX.sym("u", 2)
    y = ca.sin(x) * u[0] + ca.exp(u[1])
    lin = ca.Function("st_linearised", [x, u], [y, ca.jacobian(y, ca.vertcat(x, u))], ["x", "u"], ["y", "J"])
    X, U = ca.MX.sym("x", 3), ca.MX.sym("u", 2)
    Y, J = lin(X, U)
    callers = [ca.Function("jac_st", [X, U], [ca.mtimes(J.T, Y)]), ca.Function("hess_st", [X, U], [J * 2])]
    callers = [ca.Function(f.name(), f.mx_in(), f.call(f.mx_in(), True, False)) for f in callers]  # lin not inlined
    points = [(np.r_[0.1 * k, -0.2, 0.3 * k], np.r_[0.5 - k, 0.25]) for k in range(4)]
    for slots in (1, 2, codegen.MEMO_SLOTS):
        monkeypatch.setattr(codegen, "MEMO_SLOTS", slots)
        (lib,) = codegen.compile_libraries({f"memo{slots}": callers}, flags=FLAGS, memo={f"memo{slots}": [lin.name()]})
        assert lib.source.read_text().count("casrbd.codegen.memoize: st_linearised") == 1
        for k in (0, 1, 0, 2, 3, 3, 1, 0):
            for f in callers:
                got, want = np.array(lib[f.name()](*points[k])), np.array(f(*points[k]))
                assert np.array_equal(got, want), (slots, k, f.name())
    with pytest.raises(ValueError, match="calls a Function named 'nobody'"):
        codegen.compile_libraries({"memo_none": callers}, flags=FLAGS, memo={"memo_none": ["nobody"]})


def test_memoized_dependency_written_from_its_common_subexpressions():
    """A memoized SX Function whose graph computes sin(x) twice (two expressions built apart) is written
    with each sine once (codegen.eliminate_common), and answers bit for bit as casadi's VM; an MX
    Function is left as casadi wrote it."""
    x, u = ca.SX.sym("x", 3), ca.SX.sym("u")
    lin = ca.Function(
        "twice_linearised", [x, u], [ca.sin(x) * u, ca.sin(x) * u + ca.cos(x), ca.sin(x)], ["x", "u"], ["a", "b", "c"]
    )
    X, U = ca.MX.sym("x", 3), ca.MX.sym("u")
    a, b, c = lin.call([X, U], False, True)
    caller = ca.Function("twice", [X, U], [a + b * c])
    (lib,) = codegen.compile_libraries({"memo_cse": [caller]}, flags=FLAGS, memo={"memo_cse": [lin.name()]})
    source = lib.source.read_text()
    body = source[source.index("_evaluate" + codegen.SIGNATURE) :]
    assert body[: body.index("\n}\n")].count("=sin(") == 3
    for k in range(4):
        point = (np.r_[0.3 * k, -1.2, 2.0 + k], 0.7 - k)
        assert np.array_equal(np.array(lib["twice"](*point)), np.array(caller(*point))), k
    outer = ca.Function("outer", [X, U], [caller(X, U)])
    text = "/* outer:(i0[3],i1)->(o0[3]) */\nstatic int casadi_f1" + codegen.SIGNATURE + "\n  body\n}\n"
    assert codegen.eliminate_common(text, outer) == text  # an MX Function


def test_flags_per_library_and_the_largest_generated_first(capfd):
    """compile_libraries with flags per library compiles each with its own (as it says) and generates the
    largest first; flags that do not name exactly the libraries are refused."""
    small, large = tiny(2), tiny(40, 3.0)
    asked = {"per_small": [small], "per_large": [large]}
    flags = {"per_small": ("-O0",), "per_large": ("-O1",)}
    a, b = codegen.compile_libraries(asked, flags=flags, verbose=True, jobs=1)  # one compiler: in order
    err = capfd.readouterr().err
    said = re.findall(r"compiling (per_\w+) \(tiny\) with \S+ (-O\d)", err)
    assert said == [("per_large", "-O1"), ("per_small", "-O0")], err
    assert_answers_as(a["tiny"], small)
    assert_answers_as(b["tiny"], large)
    with pytest.raises(ValueError, match="flags for \\['per_small'\\], libraries"):
        codegen.compile_libraries(asked, flags={"per_small": ("-O0",)})


def test_scalar_helpers_are_inlined_and_answer_as_libm():
    """casadi's scalar helpers are written static inline, fmin and fmax without libm's call
    (codegen.inline_helpers): the library's fmin, fmax, sq and sign answer as numpy's IEEE fmin and fmax
    (the other operand where one is NaN) and as casadi's VM at NaNs, infinities, signed zeros and equal
    operands; bit for bit except the sign of a zero chosen between two zeros, which IEEE 754 leaves open
    and casadi's VM answers differently between versions (3.7.2: +0 for fmin(-0, 0))."""
    x, y = ca.SX.sym("x"), ca.SX.sym("y")
    f = ca.Function("minmax", [x, y], [ca.fmin(x, y), ca.fmax(x, y), ca.sign(x) * x**2], ["x", "y"], ["lo", "hi", "s"])
    (lib,) = codegen.compile_libraries({"minmax": [f]}, flags=("-O1",))
    source = lib.source.read_text()
    for helper in ("fmin", "fmax", "sq", "sign"):
        assert f"static inline casadi_real casadi_{helper}(" in source, helper
    assert "fmin(x, y)" not in source and "fmax(x, y)" not in source
    values = [np.nan, -np.inf, -2.0, -0.0, 0.0, 1.5, np.inf]
    for a in values:
        for b in values:
            got = np.array([float(v) for v in lib["minmax"](a, b)])
            vm, ieee = np.array([float(v) for v in f(a, b)]), np.array([np.fmin(a, b), np.fmax(a, b)])
            zeros = a == 0 and b == 0  # which zero comes out is open
            for want in (vm, ieee):
                n = len(want)
                assert np.array_equal(got[:n], want, equal_nan=True), (a, b, got, want)
                assert zeros or np.array_equal(got[:n].view(np.int64), want.view(np.int64)), (a, b, got, want)
    assert (
        codegen.inline_helpers("static int casadi_f0(void) { return 0; }\n")
        == "static int casadi_f0(void) { return 0; }\n"
    )


def test_arguments_read_once_and_null_ones_answer_as_zeros():
    """casadi's SX C with each input and output pointer read once (codegen.hoist_arguments): called
    directly, an input passed as NULL reads as zeros and an output passed as NULL is not written, as in
    casadi's own C; the values equal casadi's VM with that input zero, bit for bit."""
    x, y = ca.SX.sym("x", 3), ca.SX.sym("y", 2)
    f = ca.Function("nulls", [x, y], [ca.sin(x) * y[0] + y[1] + x[2], x[0] * y + 1], ["x", "y"], ["a", "b"])
    (lib,) = codegen.compile_libraries({"nulls": [f]}, flags=("-O1",))
    source = lib.source.read_text()
    assert "arg[0]? arg[0][" not in source and "if (res[0]!=0)" not in source
    assert f"*arg_1 = arg[1] ? arg[1] : {codegen.ZERO_INPUTS}" in source
    c = ctypes.CDLL(str(lib.path))
    sizes = [ctypes.c_longlong() for _ in range(4)]
    assert c.nulls_work(*[ctypes.byref(n) for n in sizes]) == 0
    iw, w = (ctypes.c_longlong * max(1, sizes[2].value))(), (ctypes.c_double * max(1, sizes[3].value))()

    def pointers(arrays, n):  # an array of n double pointers, NULL for None
        double = ctypes.POINTER(ctypes.c_double)
        return (double * n)(*[None if v is None else ctypes.cast(v, double) for v in arrays])

    def doubles(values):
        return None if values is None else (ctypes.c_double * len(values))(*values)

    point = (np.array([0.3, -1.2, 2.5]), np.array([0.7, -0.4]))
    for given in (point, (point[0], None), (None, point[1])):
        want = [v.full().ravel() for v in f(*[np.zeros(len(p)) if v is None else v for v, p in zip(given, point)])]
        for written in ((True, True), (True, False)):
            outputs = [doubles([np.nan] * len(v)) if keep else None for v, keep in zip(want, written)]
            arg = pointers([doubles(v) for v in given], max(2, sizes[0].value))
            assert c.nulls(arg, pointers(outputs, max(2, sizes[1].value)), iw, w, 0) == 0
            for out, ref in zip(outputs, want):
                if out is not None:
                    assert np.array_equal(np.array(out[:]).view(np.int64), ref.view(np.int64)), (given, written)


def age(path, days):
    """Set the file's last use ``days`` ago."""
    stamp = path.stat().st_mtime - 86400 * days
    os.utime(path, (stamp, stamp))


def kinds(entries):
    return sorted(e.kind for e in entries)


def test_pruning_removes_what_was_not_used_and_keeps_what_was(cache, monkeypatch):
    """prune_cache(days) removes the libraries and Function entries not written or loaded for that long,
    and old partial builds; loading an entry counts as a use; files that are no entries stay; a removed
    library is rebuilt when asked for."""
    monkeypatch.setattr(functions, "DISK_MIN_SECONDS", 0.0)
    casrbd.function(load_robot("arm7"), "rnea")
    old, used = codegen.compile_functions(tiny(), flags=FLAGS), codegen.compile_functions(tiny(3), flags=FLAGS)
    (stale := cache / "libraries" / ".partial-crashed").mkdir()
    (cache / "libraries" / ".partial-building").mkdir()
    (cache / "notes.txt").write_text("mine")
    age(stale, 1 / 12)
    assert kinds(codegen.cache_entries()) == ["function", "library", "library", "partial", "partial"]
    (entry,) = cache.glob("functions/*/" + codegen.MANIFEST)
    for path in (entry, old.path.parent / codegen.MANIFEST, used.path.parent / codegen.MANIFEST):
        age(path, 3)
    assert codegen.compile_functions(tiny(3), flags=FLAGS).compile_seconds is None  # a use
    removed = codegen.prune_cache(2)
    assert sorted(e.path for e in removed) == sorted([stale, entry.parent, old.path.parent])
    assert kinds(codegen.cache_entries()) == ["library", "partial"]
    assert (cache / "notes.txt").read_text() == "mine"
    rebuilt = codegen.compile_functions(tiny(), flags=FLAGS)
    assert rebuilt.compile_seconds is not None
    assert_answers_as(rebuilt["tiny"], tiny())
    assert kinds(codegen.prune_cache()) == ["library", "library"]  # a fresh partial build is someone's
    with pytest.raises(ValueError, match="unused_days"):
        codegen.prune_cache(-1)


def test_the_cache_command_shows_and_clears(cache, capsys):
    codegen.compile_functions(tiny(), flags=FLAGS)
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert str(cache) in out and re.search(r"library\s+1\b", out)
    assert main(["cache", "--unused-days", "1"]) == 2
    assert "--clear" in capsys.readouterr().err
    assert main(["cache", "--clear", "--unused-days", "1"]) == 0
    assert "removed 0 entries" in capsys.readouterr().out
    assert main(["cache", "--clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert codegen.cache_entries() == []
