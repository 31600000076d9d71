"""A dataset of solutions on disk, written as it grows and checked when read.

A directory holds ``variations.npz`` (the table of the items' variations,
written once), shards ``shard-NNNNNN.npz`` (the solutions of some items: each
field stacked over them, with their ``item`` numbers) and ``index.json`` (the
problem's spec and digest, the table's digest, every shard's items, size and
SHA-256, the fields' per-item shapes and kinds, and the unsolved items with
their status and message). Each file is written to a temporary file and moved
into place (``os.replace``), the index last, so a run interrupted at any point
leaves the dataset as the index describes it, and a resumed run adds only the
items the index lacks. Every item is in one shard or among the unsolved, never
twice. Reading checks sizes, hashes, fields, shapes and items against the index.
"""

import hashlib
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np

INDEX = "index.json"
VARIATIONS = "variations.npz"
VERSION = 1
KEYS = {"version", "spec", "spec_digest", "items", "variations_digest", "variations", "fields", "shards", "unsolved"}


class DatasetError(ValueError):
    """A dataset on disk that does not match its index, or a table or result that cannot be stored."""


def table(variations):
    """The variations as columns of equal length: ({name: array with one row per item}, number of items),
    from a list of dicts with the same keys or a dict of equal-length arrays."""
    if isinstance(variations, dict):
        columns = {str(k): np.asarray(v) for k, v in variations.items()}
    else:
        rows = list(variations)
        keys = [sorted(r) for r in rows]
        for k, row in enumerate(keys):
            if row != keys[0]:
                raise DatasetError(f"variations: row {k} has keys {row}, row 0 has {keys[0]}")
        columns = {k: np.asarray([r[k] for r in rows]) for k in (keys[0] if rows else [])}
    lengths = {k: (len(v) if v.ndim else None) for k, v in columns.items()}
    if not columns or len(set(lengths.values())) != 1 or None in lengths.values():
        raise DatasetError(f"variations: a non-empty table of columns of equal length, got lengths {lengths}")
    for k, v in columns.items():
        if v.dtype.kind not in "biufU":
            raise DatasetError(f"variations: column {k!r} has dtype {v.dtype}; numbers, booleans or strings only")
    return columns, next(iter(lengths.values()))


def row(columns, item):
    """Item ``item`` of a table: {name: a Python number or string, or an array}."""
    return {k: (v[item].item() if v.ndim == 1 else v[item]) for k, v in columns.items()}


def digest(columns):
    """SHA-256 of a table: its names, dtypes, shapes and bytes."""
    h = hashlib.sha256()
    for k in sorted(columns):
        v = np.ascontiguousarray(columns[k])
        h.update(f"{k}|{v.dtype.str}|{v.shape}|".encode())
        h.update(v.tobytes())
    return h.hexdigest()


def _atomic(path, data):
    """Write bytes to ``path`` through a temporary file in the same directory and ``os.replace``."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _npz(arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _read_npz(path, size, sha256):
    """The arrays of an .npz file, after checking its size and SHA-256 against the index's."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DatasetError(f"dataset file {path} is listed in the index but cannot be read: {e}") from None
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
        raise DatasetError(f"dataset file {path} does not match the index (size or SHA-256): changed or truncated")
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


class Dataset:
    """A dataset directory (``create`` or ``open`` it); ``done``: the items stored, ``load()``: the solutions."""

    def __init__(self, path, index):
        self.path, self.index = Path(path), index

    @classmethod
    def create(cls, path, spec, columns):
        """A new dataset at ``path`` for the problem ``spec`` (``ProblemSpec``) and the variations ``columns``,
        or the existing one if it was made for the same spec and table (else a ``DatasetError``)."""
        path = Path(path)
        if (path / INDEX).exists():
            existing = cls.open(path)
            if existing.index["spec_digest"] != spec.digest or existing.index["variations_digest"] != digest(columns):
                raise DatasetError(
                    f"dataset {path} holds solutions of another problem or variations table "
                    f"(spec {existing.index['spec']}); give another directory"
                )
            return existing
        path.mkdir(parents=True, exist_ok=True)
        # a new directory, or one where a creation was interrupted before its index was written
        foreign = [p.name for p in path.iterdir() if p.name != VARIATIONS and not p.name.startswith(".")]
        if foreign:
            raise DatasetError(f"{path} is not empty and holds no {INDEX}: give a new or empty directory")
        data = _npz(columns)
        _atomic(path / VARIATIONS, data)
        index = {
            "version": VERSION,
            "spec": spec.to_dict(),
            "spec_digest": spec.digest,
            "items": len(next(iter(columns.values()))),
            "variations_digest": digest(columns),
            "variations": {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()},
            "fields": None,
            "shards": [],
            "unsolved": {},
        }
        dataset = cls(path, index)
        dataset._write_index()
        return dataset

    @classmethod
    def open(cls, path):
        """The dataset at ``path``, its index checked (every shard's file is checked when read)."""
        path = Path(path)
        try:
            index = json.loads((path / INDEX).read_text())
        except (OSError, ValueError) as e:
            raise DatasetError(f"dataset {path}: no readable {INDEX} ({e})") from None
        if not isinstance(index, dict) or index.get("version") != VERSION or set(index) != KEYS:
            raise DatasetError(f"dataset {path}: {INDEX} is not a casrbd dataset index of version {VERSION}")
        seen = [i for s in index["shards"] for i in s["items"]] + [int(i) for i in index["unsolved"]]
        if len(set(seen)) != len(seen) or not all(0 <= i < index["items"] for i in seen):
            raise DatasetError(f"dataset {path}: {INDEX} lists an item twice or out of range 0..{index['items'] - 1}")
        return cls(path, index)

    @property
    def done(self):
        """The items stored: solved (in a shard) or unsolved."""
        return {i for s in self.index["shards"] for i in s["items"]} | {int(i) for i in self.index["unsolved"]}

    @property
    def unsolved(self):
        """{item: {"status": ..., "message": ...}} of the items without a solution (timed out, crashed, ...)."""
        return {int(i): r for i, r in self.index["unsolved"].items()}

    def forget(self, statuses):
        """Drop the unsolved items of these statuses from the index, so that a run solves them again."""
        unsolved = self.index["unsolved"]
        kept = {i: r for i, r in unsolved.items() if r["status"] not in set(statuses)}
        if len(kept) != len(unsolved):
            self.index["unsolved"] = kept
            self._write_index()

    def summary(self):
        """One line: the items solved and unsolved (by status) of the table's."""
        unsolved = [r["status"] for r in self.index["unsolved"].values()]
        counts = ", ".join(f"{s} {unsolved.count(s)}" for s in sorted(set(unsolved)))
        solved = sum(len(s["items"]) for s in self.index["shards"])
        total = self.index["items"]
        return f"{self.path}: {solved} solved, {len(unsolved)} unsolved ({counts or 'none'}) of {total} items"

    def variations(self):
        """The variations table, checked against the index."""
        v = self.index["variations"]
        columns = _read_npz(self.path / VARIATIONS, v["size"], v["sha256"])
        if digest(columns) != self.index["variations_digest"]:
            raise DatasetError(f"dataset {self.path}: {VARIATIONS} does not match the index's digest")
        return columns

    def add(self, records):
        """Store records ({"item", "result"} with the builder's dict, or {"item", "status", "message"}):
        the solutions as one new shard, then the index."""
        done = self.done
        for r in records:
            if r["item"] in done:
                raise DatasetError(f"dataset {self.path}: item {r['item']} is stored already")
        solved = [r for r in records if "result" in r]
        if solved:
            arrays = self._stack(solved)
            data = _npz(arrays)
            name = f"shard-{len(self.index['shards']):06d}.npz"
            _atomic(self.path / name, data)
            entry = {"file": name, "items": [int(r["item"]) for r in solved], "size": len(data)}
            self.index["shards"].append({**entry, "sha256": hashlib.sha256(data).hexdigest()})
        for r in records:
            if "result" not in r:
                self.index["unsolved"][str(r["item"])] = {"status": r["status"], "message": r["message"]}
        self._write_index()

    def _stack(self, solved):
        fields = {k: _field(np.asarray(v)) for k, v in solved[0]["result"].items()}
        if self.index["fields"] is None:
            self.index["fields"] = fields
        known = self.index["fields"]
        for r in solved:
            got = {k: _field(np.asarray(v)) for k, v in r["result"].items()}
            if got != known:
                raise DatasetError(
                    f"item {r['item']}: the solve returned fields {got}, the dataset's earlier items {known}"
                )
        arrays = {k: np.stack([np.asarray(r["result"][k]) for r in solved]) for k in known}
        arrays["item"] = np.array([r["item"] for r in solved], dtype=np.int64)
        return arrays

    def load(self):
        """The solutions, every shard checked: {field: array stacked over the solved items in item order,
        "item": their numbers}; the unsolved items are in ``unsolved``."""
        fields, parts = self.index["fields"] or {}, []
        for shard in self.index["shards"]:
            path = self.path / shard["file"]
            arrays = _read_npz(path, shard["size"], shard["sha256"])
            if set(arrays) != set(fields) | {"item"} or list(arrays["item"]) != shard["items"]:
                raise DatasetError(f"dataset file {path} holds other fields or items than the index lists")
            for k, f in fields.items():
                v = arrays[k]
                if v.shape != (len(shard["items"]), *f["shape"]) or v.dtype.kind != f["kind"]:
                    raise DatasetError(
                        f"dataset file {path}: field {k!r} has shape {v.shape} and kind {v.dtype.kind!r}, "
                        f"expected ({len(shard['items'])}, {', '.join(map(str, f['shape']))}) of kind {f['kind']!r}"
                    )
            parts.append(arrays)
        if not parts:
            return {"item": np.zeros(0, dtype=np.int64)}
        out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        order = np.argsort(out["item"], kind="stable")
        return {k: v[order] for k, v in out.items()}

    def _write_index(self):
        _atomic(self.path / INDEX, json.dumps(self.index, indent=1).encode())


def _field(value):
    if value.dtype.kind not in "biufU":
        raise DatasetError(f"a solve returned a value of dtype {value.dtype}; numbers, booleans or strings only")
    return {"shape": list(value.shape), "kind": value.dtype.kind}
