"""The blasfeo library behind casadi's fatrop: which instruction set it was built for, and swapping in
one built for this CPU.

fatrop's Riccati recursion runs in blasfeo. casadi's wheels ship blasfeo built for any x86-64 (SSE2, no
AVX, no FMA); built for this CPU, it makes the recursion several times faster (figures:
benchmarks/README.md, Crocoddyl's legged problems). blasfeo builds in a minute (its ``make
shared_library``, for the default target ``X64_INTEL_HASWELL``: AVX2 and FMA); ``install`` puts the
result where fatrop loads it from and ``restore`` puts the wheel's back.

``install`` resolves the path it is given once (symlinks followed; a FIFO, a device or a directory
refused) and copies that file into casadi's folder; the copy is what it checks and what it installs.
It refuses a library that does not load, lacks a blasfeo symbol casadi's libraries import or defines
one as data, or whose machine code uses an instruction this CPU lacks (read from the code by
``objdump``, not from what the library says of itself: blasfeo's own string names no AVX-512). A stub
that passes these (empty functions, wrong signatures) is caught by the last check: with the library in
place, a tiny fatrop solve (cheap beside the install) in a fresh process must load that very file and
agree with numpy's least-norm solution; otherwise, or if it crashes, the previous library is put back.
The wheel's library is kept beside it once, with its SHA-256 (checked against the wheel's RECORD where
the installation has one); ``restore`` puts it back only when it still hashes to that.
Command line: ``casrbd blasfeo [--install LIB | --restore]``.
"""

import base64
import contextlib
import importlib.metadata as metadata
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import casadi as ca

from ..cache import sha256

WHEEL = ".wheel"  # suffix of the wheel's own library, kept by install for restore
RECORDED = ".sha256"  # suffix of the file beside it holding its SHA-256, written when it was kept
SOLVE_SECONDS = 60  # far beyond what the check solve takes: a library that hangs fatrop is refused
# /proc/cpuinfo's names of the instruction-set extensions a library may need -> blasfeo's (and ours)
CPU_NAMES = {
    "avx": "AVX",
    "avx2": "AVX2",
    "fma": "FMA",
    "sse3": "SSE3",
    "pni": "SSE3",
    "avx512f": "AVX512F",
    "fma4": "FMA4",
    "f16c": "F16C",
    "bmi1": "BMI1",
    "bmi2": "BMI2",
}


def casadi_dir():
    return Path(ca.__file__).resolve().parent


_FEATURES = """
import ctypes, sys
text = ctypes.create_string_buffer(256)
ctypes.CDLL(sys.argv[1]).blasfeo_processor_library_string(text)
print(text.value.decode())
"""


def features(path):
    """The instruction-set features a blasfeo library says it was built for (e.g. {"AVX2", "FMA"}; empty
    for the generic target), from its ``blasfeo_processor_library_string``, in a fresh process: this one
    may hold another library of the same path, and a library that fails to load stays out of it. It
    names AVX, AVX2, FMA and SSE3 only: ``instruction_sets`` reads what the code uses."""
    run = subprocess.run([sys.executable, "-c", _FEATURES, str(path)], capture_output=True, text=True)
    if run.returncode:
        reason = (run.stderr.strip().splitlines() or ["it exited with " + str(run.returncode)])[-1]
        raise ValueError(f"{path} is not a loadable blasfeo library ({reason})")
    return set(run.stdout.split())


def cpu_features():
    """The features of this CPU, as ``CPU_NAMES`` names them, from /proc/cpuinfo (None where it is absent)."""
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return None
    return {CPU_NAMES[f] for f in flags.split(":", 1)[1].split() if f in CPU_NAMES}


# an instruction of objdump -d -w whose opcode (after legacy prefixes) starts with EVEX (62: AVX-512) or
# VEX (c4, c5: AVX and the extensions encoded like it); every other instruction is SSE2-era or needs an
# SSE level every CPU with AVX has
_VEX = re.compile(r"^ *[0-9a-f]+:\t(?:(?:f0|f2|f3|2e|36|3e|26|64|65|66|67) )*(62|c4|c5) [^\t]*\t(\S+) *(.*)$", re.M)
_FUNCTION = re.compile(r"^[0-9a-f]+ <([^>]*)>:$", re.M)
_FMA = re.compile(r"vfn?m(add|sub)|vfmaddsub|vfmsubadd")
_AVX2 = re.compile(
    r"v(pbroadcast|broadcasti128|inserti128|extracti128|perm2i128|perm[dq]$|permp[sd]$|ps(ll|rl|ra)v|p?gather|pmaskmov|pblendd)"
)
_AVX1_P = ("vpermilps", "vpermilpd", "vperm2f128", "vptest")  # AVX's own vp- instructions on ymm
_BMI = dict.fromkeys(("andn", "bextr", "blsi", "blsmsk", "blsr"), "BMI1")
_BMI.update(dict.fromkeys(("bzhi", "mulx", "pdep", "pext", "rorx", "sarx", "shlx", "shrx"), "BMI2"))


def _extension(prefix, mnemonic, operands):
    """The extension (``CPU_NAMES``' name) a VEX or EVEX instruction needs."""
    if prefix == "62" or mnemonic.startswith("k"):  # EVEX, or the VEX-encoded mask instructions
        return "AVX512F"
    if _FMA.match(mnemonic):
        return "FMA" if re.search(r"\d{3}", mnemonic) else "FMA4"  # vfmadd231pd; AMD's 4-operand vfmaddpd
    if mnemonic in ("vcvtph2ps", "vcvtps2ph"):
        return "F16C"
    ymm = "%ymm" in operands
    if (
        _AVX2.match(mnemonic)
        or (mnemonic.startswith("vp") and ymm and mnemonic not in _AVX1_P)  # integer operations on ymm
        or (mnemonic.startswith("vbroadcasts") and operands.startswith("%xmm"))  # from a register
        or (mnemonic in ("vmovntdqa", "vmpsadbw") and ymm)
    ):
        return "AVX2"
    if mnemonic.startswith("v"):
        return "AVX"
    return _BMI.get(mnemonic, mnemonic.upper())  # an unknown VEX instruction is named, never assumed present


def instruction_sets(path):
    """The extensions of SSE2 (AVX, AVX2, FMA, FMA4, F16C, AVX512F, BMI1, BMI2) the machine code of a
    library uses, each with an instance (``"vfmadd231pd in blasfeo_dgemm_nt"``), from ``objdump -d``:
    blasfeo is built for one target, without runtime dispatch, so each is needed. AVX-512's subsets
    beyond AVX512F are not told apart."""
    try:
        text = subprocess.run(["objdump", "-d", "-w", str(path)], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise ValueError(f"cannot disassemble {path} with objdump (binutils): {e}") from None
    starts = [(m.start(), m.group(1)) for m in _FUNCTION.finditer(text)]
    found = {}
    for m in _VEX.finditer(text):
        name = _extension(*m.group(1, 2, 3))
        if name not in found:
            function = next((f for start, f in reversed(starts) if start < m.start()), "?")
            found[name] = f"{m.group(2)} in {function}"
    return found


def _symbols(path):
    """({defined dynamic symbol: ELF type}, {undefined one: ELF type}) of a library, by ``readelf``."""
    try:
        out = subprocess.run(["readelf", "--dyn-syms", "-W", str(path)], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise ValueError(f"cannot list the symbols of {path} with readelf (binutils): {e}") from None
    defined, undefined = {}, {}
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0].endswith(":") and fields[0][:-1].isdigit():
            (undefined if fields[6] == "UND" else defined)[fields[7].split("@")[0]] = fields[3]
    return defined, undefined


def needed_symbols(directory):
    """The blasfeo symbols the libraries of the casadi in ``directory`` import, with the ELF type they
    expect (FUNC: every one casadi 3.8 imports)."""
    needed = {}
    for shared in sorted(Path(directory).glob("*.so*")):
        if shared.name.startswith("libblasfeo") or shared.is_symlink():
            continue
        if b"libblasfeo" not in shared.read_bytes():  # not linked against it
            continue
        needed.update({s: t for s, t in _symbols(shared)[1].items() if s.startswith("blasfeo_")})
    return needed


def library(directory=None):
    """The blasfeo fatrop loads in the casadi of ``directory`` (default: the imported one): the file of
    the name fatrop is linked against (casadi 3.8's wheels: libblasfeo.so.0, 3.7's: libblasfeo.so)."""
    directory = Path(directory) if directory else casadi_dir()
    for fatrop in sorted(directory.glob("libfatrop.so*")):
        name = re.search(rb"libblasfeo\.so[.0-9]*", fatrop.read_bytes())
        if name and (directory / name.group().decode()).is_file():
            return directory / name.group().decode()
    raise ValueError(f"{directory} holds no fatrop linked against a blasfeo beside it (a Linux casadi wheel does)")


def status(directory=None):
    """(path of the blasfeo fatrop loads, the features it was built for, this CPU's features, whether
    it is the wheel's: no copy of the wheel's kept beside it)."""
    path = library(directory)
    return path, features(path), cpu_features(), not os.path.lexists(path.with_name(path.name + WHEEL))


def _snapshot(path, folder, what):
    """A private copy in ``folder`` of the regular file ``path`` resolves to (read once, without following
    a symlink swapped in meanwhile nor blocking on a FIFO); a ValueError naming ``path`` otherwise."""
    try:
        source = os.open(Path(path).resolve(strict=True), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop (Python < 3.13)
        raise ValueError(f"{what} {path} cannot be read ({e})") from None
    mode = os.fstat(source).st_mode
    if not stat.S_ISREG(mode):
        os.close(source)
        raise ValueError(f"{what} {path} is not a regular file (mode {stat.filemode(mode)})")
    with os.fdopen(source, "rb") as src:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".blasfeo-")
        with os.fdopen(fd, "wb") as copy:
            shutil.copyfileobj(src, copy)
    os.chmod(name, 0o644)
    return Path(name)


def _wheel_hash(target):
    """The SHA-256 (hex) the RECORD of the casadi installation holding ``target`` lists for it, or None
    (no RECORD: a copy of the folder, a conda or source build)."""
    for dist in metadata.distributions(name="casadi", path=[str(target.parent.parent)]):
        for f in dist.files or ():
            if f.hash and f.hash.mode == "sha256" and Path(dist.locate_file(f)).absolute() == target.absolute():
                return base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4)).hex()
    return None


def _check(built, directory, cpu):
    """Refuse (ValueError) a library that does not load, needs an instruction the CPU lacks, or lacks or
    misdefines a blasfeo symbol casadi's libraries import."""
    said, used = features(built), instruction_sets(built)
    needs = said | set(used)
    if needs and cpu is None:
        raise ValueError(f"{built} needs {sorted(needs)}, and this CPU's features cannot be read (/proc/cpuinfo)")
    if needs - (cpu or set()):
        lacking = sorted(needs - cpu)
        uses = "; ".join(f"{n}: {used[n]}" if n in used else f"{n}: as it says" for n in lacking)
        raise ValueError(
            f"{built} needs {lacking} ({uses}), which this CPU lacks: fatrop would stop on an illegal "
            f"instruction; build blasfeo for another TARGET"
        )
    needed, defined = needed_symbols(directory), _symbols(built)[0]
    missing = sorted(set(needed) - set(defined))
    if missing:
        raise ValueError(
            f"{built} lacks {len(missing)} blasfeo symbols that casadi's libraries import, e.g. "
            f"{missing[:5]}: build the blasfeo version casadi ships"
        )
    wrong = sorted(s for s, t in needed.items() if t != "NOTYPE" and defined[s] not in (t, "I" + t))
    if wrong:
        raise ValueError(
            f"{built} defines {len(wrong)} blasfeo symbols as another kind than casadi's libraries use, e.g. "
            f"{wrong[0]} ({defined[wrong[0]]}, not {needed[wrong[0]]}): a stub, not blasfeo"
        )


_SOLVE = """
import json, sys
import casadi as ca
import numpy as np

ca.GlobalOptions.setCasadiPath(sys.argv[1])
rng = np.random.default_rng(0)
nx, nu, N = 4, 2, 6
A, B, x0 = np.eye(nx) + 0.2 * rng.standard_normal((nx, nx)), rng.standard_normal((nx, nu)), rng.standard_normal(nx)
opti, z = ca.Opti(), []
for k in range(N + 1):  # stage by stage, as fatrop's structure detection reads them
    z += [opti.variable(nx)] + ([opti.variable(nu)] if k < N else [])
xs, us = z[0::2], z[1::2]
opti.subject_to(xs[0] == x0)
for k in range(N):
    opti.subject_to(xs[k + 1] == A @ xs[k] + B @ us[k])
opti.minimize(sum(ca.sumsqr(v) for v in z))
opti.solver("fatrop", {"structure_detection": "auto", "fatrop.print_level": 0, "print_time": False})
solution = opti.solve()
got = np.concatenate([np.atleast_1d(solution.value(v)) for v in z])
# min |z|^2 subject to C z = d: the least-norm solution of C z = d
n = len(got)
C, d = np.zeros((nx * (N + 1), n)), np.concatenate([x0, np.zeros(nx * N)])
C[:nx, :nx] = np.eye(nx)
for k in range(N):
    row, col = nx * (k + 1), k * (nx + nu)
    C[row : row + nx, col : col + nx], C[row : row + nx, col + nx : col + nx + nu] = -A, -B
    C[row : row + nx, col + nx + nu : col + 2 * nx + nu] = np.eye(nx)
want = np.linalg.lstsq(C, d, rcond=None)[0]
maps = [line.split(None, 5)[-1].strip() for line in open("/proc/self/maps") if "/libblasfeo" in line]
print(json.dumps({"error": float(np.max(np.abs(got - want)) / np.max(np.abs(want))), "loaded": sorted(set(maps))}))
"""


def solve_check(directory=None):
    """Solve a small linear-quadratic problem with fatrop in a fresh process, loading the blasfeo of the
    casadi in ``directory``, against numpy's least-norm solution; a ValueError says what went wrong (a
    crash, a failed solve, another answer, another library loaded)."""
    target = library(directory)
    try:
        run = subprocess.run(
            [sys.executable, "-c", _SOLVE, str(target.parent)], capture_output=True, text=True, timeout=SOLVE_SECONDS
        )
    except subprocess.TimeoutExpired:
        raise ValueError(f"fatrop with {target} did not finish a tiny solve in {SOLVE_SECONDS} s") from None
    if run.returncode < 0:
        raise ValueError(f"fatrop with {target} crashed ({signal.Signals(-run.returncode).name}) in a tiny solve")
    if run.returncode:
        reason = (run.stderr.strip().splitlines() or ["no message"])[-1]
        raise ValueError(f"fatrop with {target} failed a tiny solve ({reason})")
    record = json.loads(run.stdout.splitlines()[-1])
    if record["loaded"] != [str(target.resolve())]:
        raise ValueError(f"the check solve loaded {record['loaded']}, not {target}: nothing was checked")
    if not record["error"] < 1e-6:
        raise ValueError(f"fatrop with {target} solved a tiny problem wrongly (relative error {record['error']:.1e})")


def install(built, directory=None):
    """Put the blasfeo library ``built`` (a path) where the casadi in ``directory`` (default: the imported
    one) loads it from, after the checks of the module docstring; the wheel's copy is kept once, with its
    SHA-256, for ``restore``. Processes started afterwards load it. Returns the path written."""
    directory = Path(directory).absolute() if directory else casadi_dir()
    target = library(directory)
    backup, wheel_hash = target.with_name(target.name + WHEEL), _wheel_hash(target)
    wheel = not os.path.lexists(backup)
    if wheel and wheel_hash not in (None, sha256(target)):
        raise ValueError(
            f"{target} is not the library casadi's wheel installed (its RECORD's SHA-256), so it could not be "
            f"restored: reinstall casadi (pip install --force-reinstall casadi=={ca.__version__}) first"
        )
    candidate = _snapshot(built, directory, "blasfeo library")
    previous = None
    try:
        try:
            _check(candidate, directory, cpu_features())
        except ValueError as e:  # named as it was given
            raise ValueError(str(e).replace(str(candidate), str(built))) from None
        previous = _snapshot(target, directory, "installed blasfeo")
        os.replace(candidate, target)
        try:
            solve_check(directory)
        except BaseException as e:  # an interrupt too: a library not checked does not stay
            os.replace(previous, target)
            if isinstance(e, ValueError):
                raise ValueError(f"{built}: {e}; the previous blasfeo is back") from None
            raise
        if wheel:  # its hash first: a backup is never without it
            fd, record = tempfile.mkstemp(dir=directory, prefix=".blasfeo-")
            with os.fdopen(fd, "w") as fh:
                fh.write(sha256(previous) + "\n")
            os.replace(record, backup.with_name(backup.name + RECORDED))
            os.replace(previous, backup)
    finally:
        for path in (candidate, previous):
            if path is not None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
    return target


def restore(directory=None):
    """Put the wheel's blasfeo back (after ``install``), once it hashes to the SHA-256 recorded when it
    was kept (and to the wheel's RECORD where there is one); returns its path."""
    directory = Path(directory).absolute() if directory else casadi_dir()
    target = library(directory)
    backup = target.with_name(target.name + WHEEL)
    record = backup.with_name(backup.name + RECORDED)
    if not os.path.lexists(backup):
        raise ValueError(f"{target.parent} holds no {backup.name}: its blasfeo is the wheel's")
    try:
        recorded = record.read_text().strip() if record.is_file() and not record.is_symlink() else None
    except (OSError, UnicodeDecodeError):
        recorded = None
    expected = {h for h in (recorded, _wheel_hash(target)) if h is not None}
    if not expected:
        raise ValueError(
            f"{backup} has no SHA-256 recorded beside it ({record.name}) and casadi no RECORD: it cannot be shown "
            f"to be the wheel's blasfeo; nothing was changed: reinstall casadi to get the wheel's back"
        )
    copy = _snapshot(backup, directory, "the kept blasfeo")
    try:
        if {sha256(copy)} != expected:
            raise ValueError(
                f"{backup} is not the wheel's blasfeo any more: its SHA-256 differs from the one recorded when it "
                f"was kept; nothing was changed: reinstall casadi (pip install --force-reinstall "
                f"casadi=={ca.__version__}) to get the wheel's back"
            )
        os.replace(copy, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            copy.unlink()
    backup.unlink()
    with contextlib.suppress(FileNotFoundError):
        record.unlink()
    return target
