"""The visuals of a robot file as triangle meshes in its links' frames, for the viewer.

URDF ``<visual>``: meshes (STL, binary or ASCII, and COLLADA triangles/polylists), boxes, cylinders,
spheres, the material's colour; MJCF geoms through MuJoCo (``loaders.mjcf.mujoco_model``: meshes,
boxes, spheres, capsules, cylinders, ellipsoids; planes excluded).

Every file is read as the loaders read theirs (``loaders.xml``): a regular file checked before it is
opened, within a size limit (``MAX_MESH_BYTES`` for a mesh), XML without DOCTYPE. A mesh URI
(``package://``, ``file://``, a relative or absolute path) is looked up from the robot file's folder
upwards to its package's folder (``loaders.xml.package_root``: the nearest folder with a
``package.xml``, else the file's own; a URDF string's is the current directory), dropping leading
parts of the URI (the package name, the folders above the robot's own);
``package://example-robot-data/`` also in the installed example-robot-data. A mesh found outside
those folders is refused, one not found is left out with a warning, each naming the mesh and the link;
a mesh that cannot be parsed raises naming the file, and non-finite vertices naming the link.
"""

import os
import struct
import warnings

import numpy as np

from ..loaders.mjcf import mujoco_model
from ..loaders.urdf import URDFError
from ..loaders.xml import MAX_BYTES, element_tree, package_root, read_bytes, read_text
from ..models import example_robot_data_dir, robot_format, robot_path

GREY = (0.7, 0.7, 0.72)
# ~3x the largest mesh of example-robot-data (go1's trunk.dae); larger ones are refused, not read
MAX_MESH_BYTES = 100_000_000
_EMPTY = (np.zeros((0, 3)), np.zeros((0, 3), dtype=int))


def robot_visuals(robot):
    """[(link, vertices in the link frame (n x 3), triangles (m x 3), rgb)] of a robot name, a URDF or
    MJCF path, or a URDF string."""
    if isinstance(robot, str) and robot.lstrip("\ufeff").lstrip().startswith("<"):
        text, where = read_text(robot, MAX_BYTES, "URDF", URDFError)
        return _urdf_visuals(element_tree(text, where, URDFError), os.path.abspath(os.curdir), os.curdir)
    path = robot_path(robot)[0]
    if robot_format(path) == "mjcf":
        return _mjcf_visuals(path)
    text, where = read_text(path, MAX_BYTES, "URDF", URDFError)
    folder = os.path.dirname(os.path.abspath(path))
    return _urdf_visuals(element_tree(text, where, URDFError), folder, package_root(path))


def _urdf_visuals(root, folder, package):
    named = {m.get("name"): _rgb(m) for m in root.findall("material")}
    out = []
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            geometry = visual.find("geometry")
            shape = _urdf_shape(geometry, folder, package, link.get("name")) if geometry is not None else None
            if shape is None:
                continue
            V, F = shape
            R, p = _origin(visual.find("origin"))
            material = visual.find("material")
            rgb = GREY
            if material is not None:
                rgb = _rgb(material) or named.get(material.get("name")) or GREY
            out.append((link.get("name"), _finite(V @ R.T + p, link.get("name")), F, rgb))
    return out


def _finite(V, link):
    if not np.all(np.isfinite(V)):
        raise ValueError(f"link {link!r}: a visual has non-finite vertices (its mesh, origin, scale or size)")
    return V


def _rgb(material):
    color = material.find("color")
    if color is None or not color.get("rgba"):
        return None
    return tuple(float(x) for x in color.get("rgba").split()[:3])


def _origin(origin):
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = [float(x) for x in origin.get("xyz", "0 0 0").split()]
    r, p, y = (float(x) for x in origin.get("rpy", "0 0 0").split())
    Rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    Ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    Rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx, np.array(xyz)


def _urdf_shape(geometry, folder, package, link):
    child = next(iter(geometry), None)
    if child is None:
        return None
    if child.tag == "mesh":
        uri = child.get("filename", "")
        path = _find(uri, folder, package, link)
        if path is None:
            warnings.warn(f"link {link!r}: mesh {uri!r} not found; left out of the page", stacklevel=4)
            return None
        V, F = _read_mesh(path, link)
        scale = [float(x) for x in child.get("scale", "1 1 1").split()]
        return V * np.array(scale), F
    if child.tag == "box":
        return _box(np.array([float(x) for x in child.get("size").split()]) / 2)
    if child.tag == "cylinder":
        return _cylinder(float(child.get("radius")), float(child.get("length")))
    if child.tag == "sphere":
        return _ellipsoid(np.full(3, float(child.get("radius"))))
    return None


def _find(uri, folder, package, link):
    """The file of a mesh URI (see the module docstring), or None."""
    rest = uri.split("://", 1)[1] if "://" in uri else uri
    allowed = [os.path.realpath(package)]
    parts = [p for p in rest.split("/") if p]
    candidates, here = [rest] if os.path.isabs(rest) else [], folder
    while not os.path.isabs(rest):
        candidates += [os.path.join(here, *parts[k:]) for k in range(len(parts))]
        if os.path.realpath(here) == allowed[0] or os.path.dirname(here) == here:
            break
        here = os.path.dirname(here)
    if uri.startswith("package://example-robot-data/") and example_robot_data_dir():
        allowed.append(os.path.realpath(example_robot_data_dir()))
        candidates += [os.path.join(allowed[1], *parts[2:])]
    for candidate in candidates:
        if os.path.lexists(candidate):
            real = os.path.realpath(candidate)
            if not any(os.path.commonpath([real, root]) == root for root in allowed):
                raise ValueError(
                    f"link {link!r}: mesh {uri!r} resolves to {real}, outside the robot's package {allowed[0]}: refused"
                )
            return candidate
    return None


def _read_mesh(path, link):
    """(vertices, triangles) of an STL or COLLADA file (other formats: none), read within
    ``MAX_MESH_BYTES``; a file that cannot be parsed raises naming it."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".stl", ".dae"):
        warnings.warn(f"link {link!r}: mesh {path}: only STL and COLLADA are drawn; left out", stacklevel=5)
        return _EMPTY
    try:
        data = read_bytes(path, MAX_MESH_BYTES, ValueError)
    except ValueError as e:
        raise ValueError(f"link {link!r}: mesh {e}") from None
    try:
        return _read_stl(data) if suffix == ".stl" else _read_collada(data, path)
    except (ValueError, KeyError, IndexError, AttributeError, TypeError, struct.error) as e:
        raise ValueError(f"link {link!r}: mesh {path} cannot be read: {e}") from None


def _read_stl(data):
    if len(data) >= 84:
        (count,) = struct.unpack("<I", data[80:84])
        if 84 + 50 * count == len(data):  # binary
            records = np.frombuffer(data[84:], dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]))
            V = records["v"].reshape(-1, 3).astype(float)
            return V, np.arange(len(V)).reshape(-1, 3)
    words = data.decode("ascii", errors="replace").split()
    V = [[float(words[i + 1]), float(words[i + 2]), float(words[i + 3])] for i, w in enumerate(words) if w == "vertex"]
    V = np.array(V, dtype=float).reshape(-1, 3)
    return V, np.arange(len(V) - len(V) % 3).reshape(-1, 3)


def _read_collada(data, path):
    """The triangles of every geometry instanced in the visual scene, in metres, z up."""
    text = read_text(data, MAX_MESH_BYTES, "COLLADA", ValueError)[0]
    root = element_tree(text, path, ValueError)
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    unit = root.find(f"{ns}asset/{ns}unit")
    scale = float(unit.get("meter", 1)) if unit is not None else 1.0
    up = root.find(f"{ns}asset/{ns}up_axis")
    geometries = {g.get("id"): _collada_geometry(g, ns) for g in root.iter(f"{ns}geometry")}
    Vs, Fs, n = [], [], 0

    def walk(node, M):
        nonlocal n
        for child in node:
            if child.tag == f"{ns}matrix":
                M = M @ np.array([float(x) for x in child.text.split()]).reshape(4, 4)
        for inst in node.findall(f"{ns}instance_geometry"):
            V, F = geometries.get(inst.get("url", "").lstrip("#"), _EMPTY)
            Vs.append(V @ M[:3, :3].T + M[:3, 3])
            Fs.append(F + n)
            n += len(V)
        for child in node.findall(f"{ns}node"):
            walk(child, M)

    for scene in root.iter(f"{ns}visual_scene"):
        walk(scene, np.eye(4))
    if not Vs:
        return _EMPTY
    V = np.concatenate(Vs) * scale
    if up is not None and up.text.strip() == "Y_UP":
        V = V[:, [0, 2, 1]] * np.array([1, -1, 1])
    return V, np.concatenate(Fs)


def _collada_geometry(geometry, ns):
    mesh = geometry.find(f"{ns}mesh")
    if mesh is None:
        return _EMPTY
    sources = {s.get("id"): s for s in mesh.findall(f"{ns}source")}
    vertices = mesh.find(f"{ns}vertices")
    position = vertices.find(f"{ns}input[@semantic='POSITION']").get("source").lstrip("#")
    V = np.array(sources[position].find(f"{ns}float_array").text.split(), dtype=float).reshape(-1, 3)
    Fs = []
    for prims in list(mesh.findall(f"{ns}triangles")) + list(mesh.findall(f"{ns}polylist")):
        inputs = prims.findall(f"{ns}input")
        stride = max(int(i.get("offset", 0)) for i in inputs) + 1
        offset = next(int(i.get("offset", 0)) for i in inputs if i.get("semantic") == "VERTEX")
        p = prims.find(f"{ns}p")
        if p is None or not p.text:
            continue
        index = np.array(p.text.split(), dtype=int).reshape(-1, stride)[:, offset]
        counts = prims.find(f"{ns}vcount")
        counts = np.full(len(index) // 3, 3) if counts is None else np.array(counts.text.split(), dtype=int)
        start = 0
        for c in counts:  # fans
            Fs.extend([index[start], index[start + k], index[start + k + 1]] for k in range(1, c - 1))
            start += c
    return V, np.array(Fs, dtype=int).reshape(-1, 3)


def _mjcf_visuals(path):
    import mujoco

    m = mujoco_model(path)
    out = []
    for g in range(m.ngeom):
        kind = mujoco.mjtGeom(int(m.geom_type[g])).name
        size = np.array(m.geom_size[g], dtype=float)
        if kind == "mjGEOM_MESH":
            mesh = int(m.geom_dataid[g])
            v0, nv = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
            f0, nf = m.mesh_faceadr[mesh], m.mesh_facenum[mesh]
            V, F = np.array(m.mesh_vert[v0 : v0 + nv], dtype=float), np.array(m.mesh_face[f0 : f0 + nf], dtype=int)
        elif kind == "mjGEOM_BOX":
            V, F = _box(size)
        elif kind in ("mjGEOM_SPHERE", "mjGEOM_ELLIPSOID"):
            V, F = _ellipsoid(size if kind == "mjGEOM_ELLIPSOID" else np.full(3, size[0]))
        elif kind in ("mjGEOM_CYLINDER", "mjGEOM_CAPSULE"):
            V, F = _cylinder(size[0], 2 * size[1])
        else:
            continue
        w, x, y, z = m.geom_quat[g]
        R = np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
            ]
        )
        name = m.body(int(m.geom_bodyid[g])).name or ("world" if m.geom_bodyid[g] == 0 else None)
        out.append((name, _finite(V @ R.T + m.geom_pos[g], name), F, tuple(float(c) for c in m.geom_rgba[g][:3])))
    return out


def _box(half):
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * half
    F = [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6]]
    F += [[0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]]
    return corners, np.array(F)


def _cylinder(radius, length, n=16):
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    ring = np.column_stack([radius * np.cos(a), radius * np.sin(a)])
    V = np.vstack([np.column_stack([ring, np.full(n, -length / 2)]), np.column_stack([ring, np.full(n, length / 2)])])
    V = np.vstack([V, [[0, 0, -length / 2], [0, 0, length / 2]]])
    F = []
    for i in range(n):
        j = (i + 1) % n
        F += [[i, j, n + j], [i, n + j, n + i], [2 * n, j, i], [2 * n + 1, n + i, n + j]]
    return V, np.array(F)


def _ellipsoid(radii, n=12):
    theta, phi = np.linspace(0, np.pi, n + 1), np.linspace(0, 2 * np.pi, 2 * n, endpoint=False)
    V = np.array([[np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)] for t in theta for p in phi]) * radii
    F = []
    for i in range(n):
        for j in range(2 * n):
            a, b = i * 2 * n + j, i * 2 * n + (j + 1) % (2 * n)
            F += [[a, a + 2 * n, b + 2 * n], [a, b + 2 * n, b]]
    return V, np.array(F)
