"""Reading robot description documents safely: regular files only, a size limit, UTF-8 text, and
no DOCTYPE.

A path is opened without blocking and must be a regular file: a FIFO (which would block until some
writer appears), a device or a directory is refused before anything is read.

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
        data = _read_regular_file(where, max_bytes + 1, error)  # one byte more tells a file over the limit
    if len(data) > max_bytes:
        raise error(f"{where}: larger than the limit of {max_bytes} bytes (max_bytes)")
    try:
        return data.decode("utf-8-sig"), where
    except UnicodeDecodeError as e:
        raise error(f"{where}: not UTF-8 text: byte {data[e.start]:#04x} at offset {e.start}") from None


def _read_regular_file(path, limit, error):
    """At most ``limit`` bytes of a regular file; opened non-blocking so that a FIFO cannot hang."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "a device or socket"
            raise error(f"{path}: not a regular file ({kind})")
        with open(fd, "rb", closefd=False) as fh:
            return fh.read(limit)
    finally:
        os.close(fd)


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
    try:
        parser.Parse(text, True)
    except expat.ExpatError as e:
        raise error(
            f"{where}: malformed XML at line {e.lineno}, column {e.offset}: {expat.ErrorString(e.code)}"
        ) from None
    return builder.close()
