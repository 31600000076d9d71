"""An MJCF document and the files it names, read safely before MuJoCo compiles it (``loaders.mjcf``
maps the compiled model; the viewer reads its geoms).

The document and every file it ``<include>``s, directly or not (found as MuJoCo finds them: relative to
the main file's folder, or to the current directory for a string; an include outside that folder is
refused), are read by ``loaders.xml`` (regular files only, so a FIFO cannot hang; UTF-8; no
DOCTYPE/ENTITY; ``max_bytes`` for all of them together) and handed to MuJoCo as its assets, so that
MuJoCo compiles exactly what was checked. Every other file they name (meshes, textures, height fields,
skins, which MuJoCo opens itself) must be a regular file, checked with ``stat`` alone. MuJoCo's warnings
are collected for Python, never appended to its ``MUJOCO_LOG.TXT`` in the current directory.
"""

import os
import pathlib

from .xml import element_tree, read_text, regular_file


def compile_checked(source, max_bytes, error):
    """(mujoco, mjModel, MuJoCo's warnings, the document's root element, how to name it) of an MJCF path,
    string or bytes: the document and its includes read safely, the files they name checked, then
    compiled by MuJoCo; problems raise ``error`` naming the file."""
    text, where = read_text(source, max_bytes, "MJCF", error)
    root = element_tree(text, where, error)
    if root.tag != "mujoco":
        hint = " (a URDF: load it with casrbd.load_urdf)" if root.tag == "robot" else ""
        raise error(f"{where}: root element is <{root.tag}>, expected <mujoco>{hint}")
    is_path = not isinstance(source, (bytes, bytearray)) and not (
        isinstance(source, str) and source.lstrip("\ufeff").lstrip().startswith("<")
    )
    folder = os.path.dirname(where) if is_path else ""
    documents = _included(root, folder, where, max_bytes, len(text.encode()), error)
    _check_asset_files(documents, folder, error)
    assets = {name: data for name, (data, _, _) in documents.items() if name is not None}
    return (*_compile(text, where if is_path else None, where, assets, error), root, where)


def _included(root, folder, where, max_bytes, size, error):
    """{file attribute: (bytes, root element, path)} of the main document (key None) and of every
    document ``<include>``d, directly or not, each read and parsed as the main one; ``folder``: where
    MuJoCo looks for them (the main file's, "" for the current one), which they may not leave;
    ``size``: the main document's bytes, counted with the included ones against ``max_bytes``. A file
    is read once, which also ends an include cycle (MuJoCo then reports it)."""
    documents, pending = {None: (b"", root, where)}, [(root, where)]
    base = os.path.realpath(folder or os.curdir)
    while pending:
        document, parent = pending.pop()
        for element in document.iter("include"):
            name = element.get("file")
            if not name or name in documents:  # no file attribute: MuJoCo's error says so
                continue
            path = pathlib.Path(folder, name)
            if os.path.commonpath([os.path.realpath(path), base]) != base:
                raise error(
                    f"{parent}: <include file={name!r}> is outside the model's folder {base}: "
                    f"a document includes files from its own folder and below"
                )
            try:
                text, path = read_text(path, max_bytes, "MJCF", error)
            except OSError as e:
                raise error(f"{parent}: <include file={name!r}> cannot be read: {e}") from None
            included = element_tree(text, path, error)
            documents[name] = (text.encode("utf-8"), included, path)
            size += len(documents[name][0])
            if size > max_bytes:
                raise error(f"{where}: with the files it includes, larger than the limit of {max_bytes} bytes")
            pending.append((included, path))
    return documents


# the attributes that name a file MuJoCo reads itself (a cube texture has one per face)
_FILE_ATTRIBUTES = ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")


def _check_asset_files(documents, folder, error):
    """Every file a document names (meshes, textures, height fields, skins), found as MuJoCo finds it
    (``<compiler meshdir texturedir assetdir>``, relative to ``folder``), a regular file if it exists:
    MuJoCo opens it blocking, so a FIFO would hang it. MuJoCo reports the missing ones."""
    dirs = {}
    for _, root, _ in documents.values():
        for compiler in root.iter("compiler"):
            dirs.update({k: v for k, v in compiler.attrib.items() if k in ("meshdir", "texturedir", "assetdir")})
    for _, root, path in documents.values():
        for element in root.iter():
            if element.tag == "include":
                continue
            kind = "meshdir" if element.tag in ("mesh", "skin") else "texturedir"
            for attribute in _FILE_ATTRIBUTES:
                name = element.get(attribute)
                if not name:
                    continue
                file = os.path.join(folder, dirs.get(kind, dirs.get("assetdir", "")), name)
                if os.path.exists(file):
                    try:
                        regular_file(file, error)
                    except error as e:
                        raise error(f"{path}: <{element.tag} {attribute}={name!r}>: {e}") from None


def _compile(text, path, where, assets, error):
    """(mujoco, the compiled mjModel, MuJoCo's warnings): from the path when there is one, so that
    MuJoCo finds meshes beside it, with the included files as checked (``assets``); MuJoCo's errors
    raise error."""
    try:
        import mujoco
    except ImportError as e:
        raise ImportError(f"load_mjcf needs MuJoCo: pip install 'casrbd[mjcf]' ({e})") from None
    notes = []
    previous = mujoco.get_mju_user_warning()
    # MuJoCo prints warnings on stderr and appends them to MUJOCO_LOG.TXT in the current directory
    # unless a handler takes them (a process-wide setting, restored right after)
    mujoco.set_mju_user_warning(lambda message: notes.append(f"MuJoCo: {message.strip()}"))
    try:
        m = mujoco.MjModel.from_xml_path(path, assets) if path else mujoco.MjModel.from_xml_string(text, assets)
    except Exception as e:  # MuJoCo raises ValueError naming the element and line at fault
        raise error(f"{where}: MuJoCo rejected it: {str(e).strip()}") from None
    finally:
        mujoco.set_mju_user_warning(previous)
    return mujoco, m, notes
