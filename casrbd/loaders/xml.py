"""Reading robot description documents safely: regular files only, a size limit, UTF-8 text, and
no DOCTYPE.

A path must be a regular file (``regular_file``: checked with ``stat`` before it is opened, and again
on the open descriptor): a FIFO (which would block until some writer appears), a device or a directory
is refused before anything is read; it is opened without blocking, should it change in between.
``read_bytes`` reads any other file (a mesh) the same way, within a size limit.

Messages name files by the path given; warnings about a file deep in an installed package name it
from its package (``short_path``), as ``example-robot-data/robots/talos_data/robots/talos_reduced.urdf``.

Entity expansion is a denial-of-service and file-disclosure vector, and no
robot format needs it: a DOCTYPE or ENTITY declaration is refused before any
parser sees the text, and again by the parser, an expat parser that stops at
a DOCTYPE (ElementTree's own parser hides these hooks).
"""

import os
import re
import stat
import xml.etree.ElementTree as ET
import xml.parsers.expat as expat

MAX_BYTES = 20_000_000


def read_text(source, max_bytes, kind, error):
    """(text, how to name it in messages) of a path, an XML string or XML bytes, within ``max_bytes``.

    A string is read as XML when it starts with ``<`` (after white space and a byte-order mark),
    else as a path; bytes are always the document. ``kind`` names the format in messages
    ("URDF", "MJCF"); problems raise ``error``, a path that cannot be read ``OSError``."""
    if isinstance(source, str) and source.lstrip("\ufeff").lstrip().startswith("<"):
        where = f"{kind} string"
        if len(source) > max_bytes:  # a character is at least a byte: no need to encode
            raise error(f"{where}: larger than the limit of {max_bytes} bytes (max_bytes)")
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError as e:
            raise error(f"{where}: not text: lone surrogate {source[e.start]!r} at offset {e.start}") from None
    elif isinstance(source, (bytes, bytearray)):
        data, where = bytes(source), f"{kind} bytes"
    else:
        where = os.fspath(source)
        if not os.path.exists(where) and isinstance(where, str) and re.fullmatch(r"[\w-]+", where):
            raise FileNotFoundError(f"no {kind} file {where!r}; for a robot by name, casrbd.load_robot({where!r})")
        data = read_head(where, max_bytes + 1, error)  # one byte more tells a file over the limit
    if len(data) > max_bytes:
        raise error(f"{where}: larger than the limit of {max_bytes} bytes (max_bytes)")
    try:
        return data.decode("utf-8-sig"), where
    except UnicodeDecodeError as e:
        raise error(f"{where}: not UTF-8 text: byte {data[e.start]:#04x} at offset {e.start}") from None


def regular_file(path, error):
    """``path`` when it names a regular file (links followed), else ``error`` naming it and what it is;
    nothing is opened (``stat`` only). A path that does not exist raises ``FileNotFoundError``."""
    _check_mode(os.stat(path).st_mode, path, error)
    return path


def read_bytes(path, max_bytes, error):
    """The bytes of a regular file of at most ``max_bytes`` (else ``error`` naming it)."""
    data = read_head(path, max_bytes + 1, error)
    if len(data) > max_bytes:
        raise error(f"{path}: larger than the limit of {max_bytes} bytes")
    return data


def _check_mode(mode, path, error):
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "a device or socket"
        raise error(f"{path}: not a regular file ({kind})")


def read_head(path, limit, error):
    """At most ``limit`` bytes of a regular file; opened non-blocking so that a FIFO cannot hang."""
    regular_file(path, error)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        _check_mode(os.fstat(fd).st_mode, path, error)  # the file may have changed since the stat
        with open(fd, "rb", closefd=False) as fh:
            return fh.read(limit)
    finally:
        os.close(fd)


def package_root(path):
    """The folder of the package a file belongs to: the nearest folder above it that holds a
    ``package.xml`` (a ROS package, as example-robot-data's share folder), else the file's own folder."""
    folder = here = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.isfile(os.path.join(here, "package.xml")):
            return here
        if os.path.dirname(here) == here:
            return folder
        here = os.path.dirname(here)


def short_path(path):
    """How warnings name a file: a relative path as given, an absolute one from its package's folder
    (``package_root``; the file name outside a package)."""
    if not os.path.isabs(path):
        return path
    root = package_root(path)
    if not os.path.isfile(os.path.join(root, "package.xml")):
        return os.path.basename(path)
    return os.path.join(os.path.basename(root), os.path.relpath(path, root))


def refuse_doctype(text, where, error):
    found = re.search(r"<!DOCTYPE|<!ENTITY", text, re.IGNORECASE)
    if found:
        line = text.count("\n", 0, found.start()) + 1
        raise error(f"{where}: line {line}: DOCTYPE and ENTITY declarations are refused")


def element_tree(text, where, error):
    """The element tree of ``text`` (DOCTYPE refused); namespaces are not processed, as in urdfdom:
    ``xacro:property`` is a tag like any other."""
    refuse_doctype(text, where, error)
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()

    def refuse(*_):
        raise error(f"{where}: line {parser.CurrentLineNumber}: DOCTYPE and ENTITY declarations are refused")

    parser.StartDoctypeDeclHandler = parser.EntityDeclHandler = refuse
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text, True)
    except expat.ExpatError as e:
        raise error(
            f"{where}: malformed XML at line {e.lineno}, column {e.offset}: {expat.ErrorString(e.code)}"
        ) from None
    return builder.close()
