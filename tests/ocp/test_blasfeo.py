"""casrbd.ocp.blasfeo: reading what the blasfeo behind fatrop was built for, installing another one (checked)
and restoring the wheel's, on a copy of the installed casadi's fatrop and blasfeo."""

import shutil
import subprocess

import pytest

from casrbd import codegen
from casrbd.cli import main
from casrbd.ocp import blasfeo

WHEEL = blasfeo.casadi_dir()
FATROP = sorted(p for p in WHEEL.glob("libfatrop.so*") if not p.is_symlink())


def wheel_blasfeo():
    try:
        return blasfeo.library()
    except ValueError:
        pytest.skip("this casadi has no fatrop linked against a blasfeo beside it")


@pytest.fixture
def casadi(tmp_path):
    """A directory holding copies of the installed casadi's fatrop and blasfeo, and the blasfeo's path."""
    original = wheel_blasfeo()
    directory = tmp_path / "casadi"
    directory.mkdir()
    for fatrop in FATROP:
        shutil.copy2(fatrop, directory / fatrop.name)
    shutil.copy2(original, directory / original.name)
    return directory, directory / original.name


def fake_blasfeo(tmp_path, features, symbols=(), name="fake"):
    """A shared library that says it was built for ``features`` (None: that says nothing) and defines
    ``symbols``."""
    source = tmp_path / f"{name}.c"
    body = "".join(f"void {s}(void) {{}}\n" for s in symbols)
    if features is not None:
        body += f'#include <string.h>\nvoid blasfeo_processor_library_string(char* s) {{ strcpy(s, "{features}"); }}\n'
    source.write_text(body)
    library = tmp_path / f"lib{name}.so"
    subprocess.run([codegen.find_compiler(), "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    return library


def test_install_and_restore(casadi, tmp_path):
    casadi, target = casadi
    backup = target.with_name(target.name + blasfeo.WHEEL)
    wheel_bytes = target.read_bytes()
    path, built, _, is_wheel = blasfeo.status(casadi)
    assert path == target and is_wheel
    assert built <= {"AVX", "AVX2", "FMA", "SSE3"}
    needed = blasfeo.needed_symbols(casadi)
    assert "blasfeo_dgemm_nt" in needed and all(s.startswith("blasfeo_") for s in needed)
    # another build with every symbol: the wheel's own, renamed (what a CPU-specific build exports)
    other = tmp_path / "libblasfeo.so"
    other.write_bytes(wheel_bytes)
    assert blasfeo.install(other, casadi) == target
    assert backup.read_bytes() == wheel_bytes
    assert not blasfeo.status(casadi)[3]
    blasfeo.install(other, casadi)  # again: the wheel's copy stays the wheel's
    assert backup.read_bytes() == wheel_bytes
    assert blasfeo.restore(casadi) == target
    assert target.read_bytes() == wheel_bytes
    assert not backup.exists() and blasfeo.status(casadi)[3]
    with pytest.raises(ValueError, match="its blasfeo is the wheel's"):
        blasfeo.restore(casadi)


def test_refusals(casadi, tmp_path, monkeypatch):
    casadi, target = casadi
    before = target.read_bytes()
    with pytest.raises(ValueError, match="does not exist"):
        blasfeo.install(tmp_path / "missing.so", casadi)
    with pytest.raises(ValueError, match="not a loadable blasfeo library"):
        blasfeo.install(fake_blasfeo(tmp_path, None, ["dgemm"], "other"), casadi)
    partial = fake_blasfeo(tmp_path, "", ["blasfeo_dgemm_nt"])
    assert blasfeo.features(partial) == set()
    with pytest.raises(ValueError, match=r"lacks \d+ blasfeo symbols that casadi's libraries import"):
        blasfeo.install(partial, casadi)
    native = fake_blasfeo(tmp_path, " AVX2 FMA", sorted(blasfeo.needed_symbols(casadi)), "native")
    assert blasfeo.features(native) == {"AVX2", "FMA"}
    monkeypatch.setattr(blasfeo, "cpu_features", lambda: {"SSE3"})
    with pytest.raises(ValueError, match=r"this CPU lacks \['AVX2', 'FMA'\]: fatrop would stop"):
        blasfeo.install(native, casadi)
    assert target.read_bytes() == before and not target.with_name(target.name + blasfeo.WHEEL).exists()
    monkeypatch.setattr(blasfeo, "cpu_features", lambda: {"SSE3", "AVX", "AVX2", "FMA"})
    blasfeo.install(native, casadi)
    assert blasfeo.status(casadi)[1] == {"AVX2", "FMA"}
    with pytest.raises(ValueError, match="holds no fatrop linked against a blasfeo"):
        blasfeo.status(tmp_path)


def test_command_line(capsys):
    original = wheel_blasfeo()
    assert main(["blasfeo"]) == 0
    assert str(original) in capsys.readouterr().out
    assert main(["blasfeo", "--install", "x.so", "--restore"]) == 2
    assert "give one" in capsys.readouterr().err
