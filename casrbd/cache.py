"""The one store of everything casrbd writes to disk, checked before anything is read back.

An owner registers a kind of entry (``register("library", "libraries", "compiled library")``: its
name, its folder under the root, what it is) and writes entries with ``store`` or ``begin``/``commit``;
``load`` hands an entry back only after checking it. An entry is a directory
``<root>/<folder>/<stem>-<key[:20]>`` holding the owner's files and ``manifest.json``, which records
the manifest format, the kind, the whole key, the SHA-256 of every file and the owner's ``info``. It is
written in a private directory (``.partial-*``) and renamed into place in one step: no process ever
sees half an entry. ``load`` reads nothing of an entry that is not a regular file (a symlink, a FIFO,
a device: never opened, so never followed and never blocking) and returns it only when the manifest
names this kind and key and every file hashes to what it recorded: a truncated, corrupted, empty or
foreign file is never deserialised nor handed to the dynamic loader. An entry that fails is removed
and reported with a ``CacheWarning`` naming the file; the owner rebuilds it.

The root (``cache_dir()``) gets a ``CACHEDIR.TAG`` marker with casrbd's line when casrbd creates it
(or finds it empty, or it is the default root). ``entries`` lists and ``prune`` removes only
directories of a registered kind's folder that carry a valid manifest of that kind, and casrbd's own
partial builds; nothing is followed through a symlink, and ``prune`` refuses a root without the marker,
so that a mistyped ``CASRBD_CACHE`` never loses a file that casrbd did not write.

A cache that cannot be written (read-only, full, or a path that is a file) costs one ``CacheWarning``:
entries are then built in a temporary directory of this process, removed when it exits.

This module imports nothing of casrbd: every other module may store through it.
"""

import atexit
import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
import warnings
from pathlib import Path
from typing import NamedTuple

FORMAT = "casrbd-cache-5"  # the manifest's format: entries of older layouts are never looked at
MANIFEST = "manifest.json"
MARKER = "CACHEDIR.TAG"
MARKER_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by casrbd: its Functions, compiled libraries and kernels.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
PARTIAL, TRASH = ".partial-", ".trash-"
STALE_SECONDS = 3600  # a private build directory this old belongs to no running process
MANIFEST_BYTES = 1 << 20
_ENTRY_NAME = re.compile(r"[A-Za-z0-9_+.-]+-[0-9a-f]{20}\Z")
_FILE_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_+.-]*\Z")


class CacheWarning(UserWarning):
    """A cache entry failed its checks and is rebuilt, or the cache cannot be written."""


class BadEntry(Exception):
    """An entry that must not be used: ``path`` is the culprit file, ``reason`` says why."""

    def __init__(self, path, reason):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = Path(path), reason


class Kind(NamedTuple):
    """A kind of entry: its ``name`` (as listed), its ``folder`` under the root, what it is (``about``)."""

    name: str
    folder: str
    about: str


KINDS = {}


@functools.cache
def source_digest():
    """SHA-256 of casrbd's Python source: an entry built from code (a Function, a compiled stage keyed by
    its description) is only as current as the code that built it."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.digest()


def register(name, folder, about):
    """The Kind of that name, registered once by the module that owns its entries."""
    kind = Kind(name, folder, about)
    for other in KINDS.values():
        if other != kind and (other.name == name or other.folder == folder):
            raise ValueError(f"cache kind {kind} clashes with the registered {other}")
    return KINDS.setdefault(name, kind)


def cache_dir():
    """Root of the cache: $CASRBD_CACHE, else $XDG_CACHE_HOME/casrbd, else ~/.cache/casrbd."""
    if os.environ.get("CASRBD_CACHE"):
        return Path(os.environ["CASRBD_CACHE"])
    return _default_root()


def _default_root():
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "casrbd"


def is_marked(root):
    """Whether ``root`` carries casrbd's cache marker (a regular file with the tag and casrbd's line)."""
    try:
        return _read_regular(Path(root) / MARKER, len(MARKER_TEXT)) == MARKER_TEXT.encode()
    except (OSError, BadEntry):
        return False


def _mark(root):
    """Create the root and its marker, where the root is new, empty or the default one."""
    if not root.is_dir():
        root.mkdir(parents=True, exist_ok=True)
    if not is_marked(root) and (not any(root.iterdir()) or root == _default_root()):
        _write_atomic(root / MARKER, MARKER_TEXT.encode())


def _write_atomic(path, data):
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=PARTIAL, delete=False) as fh:
        fh.write(data)
    os.replace(fh.name, path)


def _open_regular(path):
    """A regular file opened for reading, without following a symlink nor waiting on a FIFO (whose open
    would block until a writer comes); anything else is a BadEntry."""
    fh = os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb")
    mode = os.fstat(fh.fileno()).st_mode
    if not stat.S_ISREG(mode):
        fh.close()
        raise BadEntry(path, f"is not a regular file (mode {stat.filemode(mode)})")
    return fh


def _read_regular(path, limit=None):
    """The bytes of a regular file (``_open_regular``), at most ``limit`` of them (else a BadEntry)."""
    with _open_regular(path) as fh:
        data = fh.read(-1 if limit is None else limit + 1)
    if limit is not None and len(data) > limit:
        raise BadEntry(path, f"is larger than {limit} bytes")
    return data


def sha256(path):
    """SHA-256 of a regular file (hex; ``_open_regular``)."""
    digest = hashlib.sha256()
    with _open_regular(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Entry(NamedTuple):
    """A checked entry: its ``kind``, directory ``path``, whole ``key`` and the owner's ``info``."""

    kind: Kind
    path: Path
    key: str
    info: dict
    hashes: dict

    def file(self, name):
        """The path of one of its files (checked when the entry was loaded)."""
        if name not in self.hashes:
            raise BadEntry(self.path / MANIFEST, f"lists no file {name!r}")
        return self.path / name

    def read(self, name):
        """The bytes of one of its files, hashed again as read (what is returned is what was recorded)."""
        data = _read_regular(self.file(name))
        if hashlib.sha256(data).hexdigest() != self.hashes[name]:
            raise BadEntry(
                self.path / name, "differs from the file stored (its hash): truncated, corrupted or replaced"
            )
        return data


def _manifest(path, kind=None):
    """The record of an entry's manifest, checked for its format (and kind); BadEntry otherwise."""
    manifest = path / MANIFEST
    try:
        record = json.loads(_read_regular(manifest, MANIFEST_BYTES))
        files, info, key = record["files"], record.get("info", {}), record["key"]
        fine = record["format"] == FORMAT and isinstance(files, dict) and isinstance(info, dict)
        fine = fine and isinstance(key, str) and all(isinstance(n, str) and _FILE_NAME.match(n) for n in files)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BadEntry(manifest, f"is missing or unreadable ({type(e).__name__}: {e})") from None
    if not fine or MANIFEST in files:
        raise BadEntry(manifest, "is not a casrbd manifest of this layout")
    if kind is not None and record.get("kind") != kind.name:
        raise BadEntry(manifest, f"was written for another kind of entry ({record.get('kind')!r})")
    return record


def entry_path(kind, stem, key, root=None):
    return Path(root or cache_dir()) / kind.folder / f"{stem}-{key[:20]}"


def checked(kind, stem, key):
    """The Entry of ``key``, checked (manifest, kind, key, every file's hash); None when there is none;
    ``BadEntry`` when it fails a check."""
    path = entry_path(kind, stem, key)
    if not _is_dir(path.parent):  # none, or not casrbd's (a file, a symlink: never followed)
        return None
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise BadEntry(path, "is not a directory")
    except FileNotFoundError:
        return None
    except NotADirectoryError:  # the root or the kind's folder is a file: nothing was stored
        return None
    record = _manifest(path, kind)
    if record["key"] != key:
        raise BadEntry(path / MANIFEST, "was not written for this build")
    for name, recorded in record["files"].items():
        try:
            actual = sha256(path / name)
        except OSError as e:
            raise BadEntry(path / name, f"cannot be read ({e})") from None
        if actual != recorded:
            raise BadEntry(path / name, "differs from the file stored (its hash): truncated, corrupted or replaced")
    with contextlib.suppress(OSError):  # its last use, for prune (a read-only cache stays as it is)
        os.utime(path / MANIFEST, follow_symlinks=False)
    return Entry(kind, path, key, record["info"], dict(record["files"]))


def load(kind, stem, key, use=None, stacklevel=2):
    """``use(entry)`` (default: the Entry) of the checked entry of ``key``, or None when there is none or
    it fails a check, ``checked``'s or ``use``'s (``BadEntry``): then it is removed, with a
    ``CacheWarning`` naming the culprit, for the owner to rebuild."""
    try:
        entry = checked(kind, stem, key)
        return None if entry is None else (use or (lambda e: e))(entry)
    except BadEntry as e:
        warnings.warn(f"{e}; rebuilding the cached {kind.about}", CacheWarning, stacklevel=stacklevel + 1)
        discard(entry_path(kind, stem, key))
        return None


def discard(path):
    """Move an entry out of the way in one step (another process may be reading it), then delete it."""
    path = Path(path)
    try:
        trash = Path(tempfile.mkdtemp(dir=path.parent, prefix=TRASH))
    except OSError:  # a read-only cache: the entry stays, and fails its checks again next time
        return
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # another process discarded it first
        os.replace(path, trash / path.name)
    shutil.rmtree(trash, ignore_errors=True)


_unwritable = set()


class Build:
    """An entry being written in ``directory``, private to this process until ``commit``."""

    def __init__(self, kind, stem, key):
        self.kind, self.key, self.target = kind, key, entry_path(kind, stem, key)
        try:
            _mark(self.target.parent.parent)
            self.target.parent.mkdir(exist_ok=True)
            if not _is_dir(self.target.parent):
                raise NotADirectoryError(f"{self.target.parent} is a symlink, not a folder of casrbd's")
            self.directory, self.persistent = Path(tempfile.mkdtemp(dir=self.target.parent, prefix=PARTIAL)), True
        except OSError as e:
            root = self.target.parent.parent
            if root not in _unwritable:
                _unwritable.add(root)
                warnings.warn(
                    f"{root}: the cache cannot be written ({e}); building in a temporary directory instead",
                    CacheWarning,
                    stacklevel=3,
                )
            self.directory, self.persistent = Path(tempfile.mkdtemp(prefix="casrbd-")), False
            atexit.register(shutil.rmtree, self.directory, True)

    def commit(self, info=None):
        """Write the manifest (the SHA-256 of every file written) and move the entry into place; returns its
        Entry. Where another process finished the same entry first, its entry is kept."""
        hashes = {}
        for path in sorted(self.directory.iterdir()):
            if not (_FILE_NAME.match(path.name) and stat.S_ISREG(os.lstat(path).st_mode)):
                raise ValueError(f"cache entry {self.target.name}: {path.name!r} is not a plain file of a plain name")
            hashes[path.name] = sha256(path)
        record = {"format": FORMAT, "kind": self.kind.name, "key": self.key, "files": hashes, "info": info or {}}
        (self.directory / MANIFEST).write_text(json.dumps(record, indent=1))
        if not self.persistent:
            return Entry(self.kind, self.directory, self.key, record["info"], hashes)
        try:
            os.rename(self.directory, self.target)
        except OSError:  # another process built it meanwhile (EEXIST, ENOTEMPTY): keep theirs if it is good
            with contextlib.suppress(BadEntry):
                theirs = checked(self.kind, self.target.name[:-21], self.key)
                if theirs is not None:
                    self.abandon()
                    return theirs
            discard(self.target)
            os.rename(self.directory, self.target)
        return Entry(self.kind, self.target, self.key, record["info"], hashes)

    def abandon(self):
        shutil.rmtree(self.directory, ignore_errors=True)


def begin(kind, stem, key):
    """A ``Build`` of the entry of ``key``: write its files into ``build.directory``, then ``commit``."""
    return Build(kind, stem, key)


def store(kind, stem, key, write, info=None):
    """Store an entry: ``write(directory)`` writes its files; returns the committed Entry, or None where the
    cache cannot be written (nothing is written then: the caller has what it built in memory)."""
    build = begin(kind, stem, key)
    try:
        if build.persistent:
            write(build.directory)
            return build.commit(info)
        return None
    finally:
        build.abandon()  # a no-op once committed (the directory has moved)


class CacheEntry(NamedTuple):
    """One entry as listed: ``kind`` (a registered kind's name, or "partial": a build in progress or left
    by a process that died), its directory, its bytes and the seconds since it was last written or loaded."""

    kind: str
    path: Path
    size: int
    idle: float


def _is_dir(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)  # a symlink is not followed, so never listed
    except OSError:
        return False


def _size(path):
    total = 0
    for directory, _, files in os.walk(path):  # os.walk does not follow symlinks
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total


def entries(root=None):
    """The entries of every registered kind under ``root`` (``cache_dir()``), oldest use first. Anything
    else (other files and folders, symlinks, directories without a valid manifest of their kind) is
    not an entry: never listed, never removed."""
    root, now, found = Path(root or cache_dir()), time.time(), []
    for kind in KINDS.values():
        folder = root / kind.folder
        if not _is_dir(folder):
            continue
        for path in sorted(folder.iterdir()):
            if not _is_dir(path):
                continue
            with contextlib.suppress(OSError):  # another process removed it meanwhile
                if path.name.startswith((PARTIAL, TRASH)):
                    found.append(CacheEntry("partial", path, _size(path), now - os.lstat(path).st_mtime))
                elif _ENTRY_NAME.match(path.name):
                    with contextlib.suppress(BadEntry):
                        _manifest(path, kind)
                        stamp = os.lstat(path / MANIFEST).st_mtime
                        found.append(CacheEntry(kind.name, path, _size(path), now - stamp))
    return sorted(found, key=lambda e: -e.idle)


def prune(unused_days=None, root=None):
    """Remove the entries not written or loaded for more than ``unused_days`` days (every entry when None),
    and partial ones older than ``STALE_SECONDS``; returns the removed ``CacheEntry``s. Refuses a root
    without casrbd's marker. Safe beside running processes: an entry is renamed away in one step before
    it is deleted, a library already loaded stays mapped, and what is removed is rebuilt when asked for."""
    if unused_days is not None and not unused_days >= 0:
        raise ValueError(f"prune_cache: unused_days must be a number of days >= 0, got {unused_days!r}")
    root = Path(root or cache_dir())
    if not _is_dir(root):
        return []
    if not is_marked(root):
        raise ValueError(
            f"{root} has no casrbd {MARKER} (the marker casrbd writes when it creates its cache): it is not "
            f"casrbd's cache, or one of an older casrbd; nothing was removed (check CASRBD_CACHE)"
        )
    removed = []
    for entry in entries(root):
        limit = STALE_SECONDS if entry.kind == "partial" else 0 if unused_days is None else 86400 * unused_days
        if entry.idle > limit:
            discard(entry.path)
            removed.append(entry)
    return removed
