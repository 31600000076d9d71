"""casrbd.ocp.blasfeo: reading what the blasfeo behind fatrop was built for and what its code uses, installing
another one (checked, and rolled back when fatrop fails with it) and restoring the wheel's (checked), on a copy
of the installed casadi's fatrop plugin, fatrop and blasfeo. Hostile libraries are built here with the C
compiler: stubs, data where functions are expected, instructions the CPU is said to lack, special files."""

import base64
import hashlib
import os
import shutil
import subprocess

import pytest

from casrbd import codegen
from casrbd.cli import main
from casrbd.ocp import blasfeo

WHEEL = blasfeo.casadi_dir()
FATROP = sorted(p for p in (*WHEEL.glob("libfatrop.so*"), *WHEEL.glob("libcasadi_nlpsol_fatrop.so*")))
HASWELL = {"SSE3", "AVX", "AVX2", "FMA"}


def wheel_blasfeo():
    try:
        return blasfeo.library()
    except ValueError:
        pytest.skip("this casadi has no fatrop linked against a blasfeo beside it")


@pytest.fixture
def casadi(tmp_path):
    """A directory holding copies of the installed casadi's fatrop plugin, fatrop and blasfeo, and the
    blasfeo's path."""
    original = wheel_blasfeo()
    directory = tmp_path / "casadi"
    directory.mkdir()
    for fatrop in FATROP:
        shutil.copy2(fatrop, directory / fatrop.name, follow_symlinks=True)
    shutil.copy2(original, directory / original.name)
    return directory, directory / original.name


def compiled(tmp_path, name, source):
    """A shared library built from C ``source``."""
    (tmp_path / f"{name}.c").write_text(source)
    library = tmp_path / f"lib{name}.so"
    command = [codegen.find_compiler(), "-shared", "-fPIC", str(tmp_path / f"{name}.c"), "-o", str(library)]
    subprocess.run(command, check=True)
    return library


def fake_blasfeo(tmp_path, features, symbols=(), name="fake", data=False, code=""):
    """A shared library that says it was built for ``features`` (None: that says nothing) and defines
    ``symbols`` as empty functions (``data``: as ints), plus the C ``code``."""
    body = "".join(f"int {s} = 1;\n" if data else f"void {s}(void) {{}}\n" for s in symbols) + code
    if features is not None:
        body += f'#include <string.h>\nvoid blasfeo_processor_library_string(char* s) {{ strcpy(s, "{features}"); }}\n'
    return compiled(tmp_path, name, body)


def untouched(directory, target, before):
    """The library fatrop loads is as it was, with no copy kept and no private file left."""
    backup = target.with_name(target.name + blasfeo.WHEEL)
    assert target.read_bytes() == before and not os.path.lexists(backup)
    assert not list(directory.glob(".blasfeo-*"))


def test_install_and_restore(casadi, tmp_path, monkeypatch, capsys):
    casadi, target = casadi
    backup = target.with_name(target.name + blasfeo.WHEEL)
    record = backup.with_name(backup.name + blasfeo.RECORDED)
    wheel_bytes = target.read_bytes()
    path, built, _, is_wheel = blasfeo.status(casadi)
    assert path == target and is_wheel
    assert built <= HASWELL
    needed = blasfeo.needed_symbols(casadi)
    assert needed["blasfeo_dgemm_nt"] == "FUNC" and all(s.startswith("blasfeo_") for s in needed)
    # another build with every symbol: the wheel's own with bytes appended (still a valid library), given by
    # a relative path through a symlink; the symlink then points at a stub once the library is checked
    other_bytes = wheel_bytes + b"another build"
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "libblasfeo.so").write_bytes(other_bytes)
    stub = fake_blasfeo(tmp_path, "", sorted(needed), "stub")
    (tmp_path / "link.so").symlink_to(tmp_path / "build" / "libblasfeo.so")
    monkeypatch.chdir(tmp_path)
    check = blasfeo._check

    def check_then_swap(*args):
        check(*args)
        (tmp_path / "link.so").unlink()
        (tmp_path / "link.so").symlink_to(stub)

    monkeypatch.setattr(blasfeo, "_check", check_then_swap)
    monkeypatch.setattr(blasfeo, "casadi_dir", lambda: casadi)  # the command line's casadi: the copy
    assert main(["blasfeo", "--install", "link.so"]) == 0
    assert f"installed link.so as {target}" in capsys.readouterr().out
    monkeypatch.setattr(blasfeo, "_check", check)
    assert target.read_bytes() == other_bytes and not target.is_symlink()
    assert backup.read_bytes() == wheel_bytes
    assert record.read_text().split() == [hashlib.sha256(wheel_bytes).hexdigest()]
    assert not blasfeo.status(casadi)[3] and not list(casadi.glob(".blasfeo-*"))
    # a stub passes the static checks (every symbol a function, no instruction beyond SSE2): fatrop's solve
    # fails or crashes with it, and the library installed before is put back; the wheel's copy stays
    with pytest.raises(ValueError, match="fatrop with .* (crashed|failed|solved).*the previous blasfeo is back"):
        blasfeo.install(stub, casadi)
    assert target.read_bytes() == other_bytes and backup.read_bytes() == wheel_bytes
    assert not list(casadi.glob(".blasfeo-*"))
    assert main(["blasfeo", "--restore"]) == 0
    assert f"restored the wheel's blasfeo: {target}" in capsys.readouterr().out
    assert target.read_bytes() == wheel_bytes
    assert not backup.exists() and not record.exists() and blasfeo.status(casadi)[3]
    with pytest.raises(ValueError, match="its blasfeo is the wheel's"):
        blasfeo.restore(casadi)


def test_refusals(casadi, tmp_path, monkeypatch):
    casadi, target = casadi
    before = target.read_bytes()
    needed = sorted(blasfeo.needed_symbols(casadi))
    os.mkfifo(tmp_path / "fifo.so")  # opened for reading, it would block until a writer comes
    (tmp_path / "empty.so").write_bytes(b"")
    (tmp_path / "loop.so").symlink_to(tmp_path / "loop.so")
    refused = [
        (tmp_path / "missing.so", "cannot be read"),
        (tmp_path / "loop.so", "cannot be read"),
        (tmp_path / "fifo.so", r"is not a regular file \(mode p"),
        (tmp_path, r"is not a regular file \(mode d"),
        ("/dev/null", r"is not a regular file \(mode c"),
        (tmp_path / "empty.so", "not a loadable blasfeo library"),
        (compiled(tmp_path, "nothing", ""), "not a loadable blasfeo library"),
        (fake_blasfeo(tmp_path, None, ["dgemm"], "other"), "not a loadable blasfeo library"),
        (fake_blasfeo(tmp_path, "", ["blasfeo_dgemm_nt"]), r"lacks \d+ blasfeo symbols that casadi's libraries"),
        (fake_blasfeo(tmp_path, "", needed, "data", data=True), r"as another kind .*\(OBJECT, not FUNC\): a stub"),
    ]
    for library, message in refused:
        with pytest.raises(ValueError, match=message) as caught:
            blasfeo.install(library, casadi)
        assert str(library) in str(caught.value) and ".blasfeo-" not in str(caught.value)  # named as given
        untouched(casadi, target, before)
    native = fake_blasfeo(tmp_path, " AVX2 FMA", needed, "native")
    assert blasfeo.features(native) == {"AVX2", "FMA"}
    monkeypatch.setattr(blasfeo, "cpu_features", lambda: {"SSE3"})
    with pytest.raises(ValueError, match=r"needs \['AVX2', 'FMA'\] \(AVX2: as it says.*this CPU lacks"):
        blasfeo.install(native, casadi)
    monkeypatch.setattr(blasfeo, "cpu_features", lambda: None)
    with pytest.raises(ValueError, match=r"this CPU's features cannot be read"):
        blasfeo.install(native, casadi)
    # a build for AVX-512 says AVX2 and FMA only (blasfeo's string has no name for it): its code tells
    wide = ASM.format("wide", "vaddpd %zmm1, %zmm2, %zmm3")
    avx512 = fake_blasfeo(tmp_path, " AVX2 FMA", needed, "avx512", code=wide)
    monkeypatch.setattr(blasfeo, "cpu_features", lambda: HASWELL)
    with pytest.raises(ValueError, match=r"needs \['AVX512F'\] \(AVX512F: vaddpd in wide\)"):
        blasfeo.install(avx512, casadi)
    untouched(casadi, target, before)
    with pytest.raises(ValueError, match="holds no fatrop linked against a blasfeo"):
        blasfeo.status(tmp_path)


ASM = 'void {}(void) {{ __asm__ volatile("{}"); }}\n'


def test_instruction_sets_read_from_the_code(tmp_path):
    """Each instruction written is found, under the extension its manual names, in the function holding it."""
    code = {
        "avx": "vaddpd %ymm1, %ymm2, %ymm3",
        "avx2": "vpaddd %ymm1, %ymm2, %ymm3",
        "fma": "vfmadd231pd %ymm1, %ymm2, %ymm3",
        "bmi2": "shlx %rax, %rbx, %rcx",
        "f16c": "vcvtph2ps %xmm1, %ymm2",
        "evex": "vaddpd %xmm17, %xmm2, %xmm3",  # AVX-512 on xmm registers: EVEX-encoded all the same
        "sse2": "addpd %xmm1, %xmm2",
    }
    library = compiled(tmp_path, "asm", "".join(ASM.format(*item) for item in code.items()))
    assert blasfeo.instruction_sets(library) == {
        "AVX": "vaddpd in avx",
        "AVX2": "vpaddd in avx2",
        "FMA": "vfmadd231pd in fma",
        "BMI2": "shlx in bmi2",
        "F16C": "vcvtph2ps in f16c",
        "AVX512F": "vaddpd in evex",
    }
    avx = ASM.format("ymm", "vpermilps $1, %ymm1, %ymm2")  # a vp- instruction of AVX's on ymm
    mask = compiled(tmp_path, "mask", ASM.format("mask", "kmovw %k1, %k2") + avx)
    assert blasfeo.instruction_sets(mask) == {"AVX512F": "kmovw in mask", "AVX": "vpermilps in ymm"}
    assert blasfeo.instruction_sets(compiled(tmp_path, "plain", ASM.format("plain", code["sse2"]))) == {}
    with pytest.raises(ValueError, match="cannot disassemble"):
        blasfeo.instruction_sets(tmp_path / "missing.so")


def kept(target, wheel_bytes, installed_bytes, recorded=True):
    """The state install leaves: another library in place, the wheel's kept beside it with its hash."""
    backup = target.with_name(target.name + blasfeo.WHEEL)
    target.write_bytes(installed_bytes)
    backup.write_bytes(wheel_bytes)
    record = backup.with_name(backup.name + blasfeo.RECORDED)
    record.unlink(missing_ok=True)
    if recorded:
        record.write_text(hashlib.sha256(wheel_bytes).hexdigest() + "\n")
    return backup


def wheel_record(directory, target, data):
    """A casadi dist-info beside ``directory`` whose RECORD lists ``target`` with the SHA-256 of ``data``."""
    info = directory.parent / "casadi-0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: casadi\nVersion: 0\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(f"{directory.name}/{target.name},sha256={digest},{len(data)}\n")


def test_restore_puts_back_only_the_wheels_library(casadi):
    casadi, target = casadi
    wheel_bytes = target.read_bytes()
    other = wheel_bytes + b"another build"
    backup = kept(target, wheel_bytes, other)
    damaged = bytearray(wheel_bytes)
    damaged[len(damaged) // 2] ^= 0xFF
    backup.write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="is not the wheel's blasfeo any more.*nothing was changed"):
        blasfeo.restore(casadi)
    assert target.read_bytes() == other and backup.read_bytes() == damaged
    kept(target, wheel_bytes, other, recorded=False)  # a backup without its hash (an older casrbd's)
    with pytest.raises(ValueError, match="has no SHA-256 recorded beside it"):
        blasfeo.restore(casadi)
    kept(target, wheel_bytes, other)  # its hash recorded, and the backup then a FIFO
    backup.unlink()
    os.mkfifo(backup)
    with pytest.raises(ValueError, match="not a regular file"):
        blasfeo.restore(casadi)
    assert target.read_bytes() == other
    # the wheel's RECORD is the reference where there is one: it must agree with the hash recorded
    backup.unlink()
    kept(target, wheel_bytes, other, recorded=False)
    wheel_record(casadi, target, wheel_bytes)
    assert blasfeo.restore(casadi) == target and target.read_bytes() == wheel_bytes
    kept(target, wheel_bytes, other)
    wheel_record(casadi, target, other)
    with pytest.raises(ValueError, match="is not the wheel's blasfeo any more"):
        blasfeo.restore(casadi)


def test_install_refuses_to_keep_a_library_that_is_not_the_wheels(casadi):
    casadi, target = casadi
    before = target.read_bytes()
    wheel_record(casadi, target, before + b"the wheel's were other bytes")
    with pytest.raises(ValueError, match="is not the library casadi's wheel installed"):
        blasfeo.install(target, casadi)
    untouched(casadi, target, before)


def test_the_check_solve_must_load_the_library_it_checks(casadi):
    casadi, _ = casadi
    for plugin in casadi.glob("libcasadi_nlpsol_fatrop.so*"):
        plugin.unlink()  # casadi then finds its own plugin, which loads its own blasfeo
    with pytest.raises(ValueError, match="nothing was checked"):
        blasfeo.solve_check(casadi)


def test_command_line(casadi, tmp_path, capsys, monkeypatch):
    original = wheel_blasfeo()
    assert main(["blasfeo"]) == 0
    assert str(original) in capsys.readouterr().out
    assert main(["blasfeo", "--install", "x.so", "--restore"]) == 2
    assert "give one" in capsys.readouterr().err
    directory, target = casadi
    monkeypatch.setattr(blasfeo, "casadi_dir", lambda: directory)
    os.mkfifo(tmp_path / "fifo.so")
    assert main(["blasfeo", "--install", str(tmp_path / "fifo.so")]) == 2
    assert "fifo.so is not a regular file" in capsys.readouterr().err
    assert main(["blasfeo", "--restore"]) == 2
    assert "its blasfeo is the wheel's" in capsys.readouterr().err
