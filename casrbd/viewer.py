"""A trajectory as a self-contained HTML animation with the robot's visual meshes.

``write_html(path, model, robot, times, qs)`` writes one HTML file that plays the motion in any browser,
offline: the meshes (decimated by vertex clustering to ``max_triangles``), the placement of every link
at every time and a small canvas renderer (flat shading, painter's algorithm; drag to turn, wheel to
zoom, space to pause, the slider to scrub) are all inside it, with no script or file from elsewhere.

Why not a viewer library: meshcat's Python package has had no release since 2021. viser 1.1 does write
a self-contained page (``get_scene_serializer().as_html()``, 0.9 MB for solo12 over 21 frames), but
recording needs a running ``ViserServer`` (a port), its ten dependencies (websockets, msgspec, trimesh,
zstandard, ...) and WebGL to show: in headless Chromium with software rendering its page was blank at
load and did not finish within two minutes of virtual time, where this one renders in about 3 s. A
page here needs numpy only (three.js is not available offline without vendoring it).

Visuals come from the robot's file: URDF ``<visual>`` (mesh: STL, binary or ASCII, and COLLADA
triangles/polylists; box, cylinder, sphere; the material's colour), MJCF geoms through MuJoCo (meshes,
boxes, spheres, capsules, cylinders, ellipsoids, planes excluded). Mesh paths ``package://...`` and
relative paths are looked up from the file's folder upwards and in example-robot-data. Links are placed
through the model's frames of the same names (every URDF link and MJCF body is one).
"""

import json
import os
import struct
import xml.etree.ElementTree as ET

import numpy as np

from .functions import function
from .models import example_robot_data_dir, robot_format, robot_path

GREY = (0.7, 0.7, 0.72)


def write_html(path, model, times, qs, robot=None, title=None, max_triangles=40000):
    """Write the animation of configurations ``qs`` (N x nq) at ``times`` (N seconds) of ``model``
    to ``path``, with the visuals of ``robot`` (a robot name, a URDF or MJCF path, or a URDF string:
    the file the model was loaded from), or a stick figure of the joints where it is None or has none."""
    times, qs = np.asarray(times, dtype=float).reshape(-1), np.asarray(qs, dtype=float)
    if qs.ndim != 2 or qs.shape != (len(times), model.nq):
        raise ValueError(f"qs must be {len(times)} x {model.nq} (times x nq), got shape {qs.shape}")
    if len(times) > 1 and np.any(np.diff(times) <= 0):
        raise ValueError("times must increase")
    shapes = [s for s in (_visuals(robot) if robot is not None else []) if s[0] in model._frame_index]
    links = sorted({s[0] for s in shapes})
    meshes = _decimate([(links.index(link), V, F, rgb) for link, V, F, rgb in shapes], max_triangles)
    fk = function(model, "forward_kinematics")
    poses, joints = [], []
    for q in qs:
        oMi = np.array(fk(q))
        joints.append(oMi[:3, 3::4].T.round(5).ravel().tolist())
        row = []
        for link in links:
            frame = model.frames[model.frame_index(link)]
            R, p = np.eye(3), np.zeros(3)
            if frame.joint >= 0:
                R, p = oMi[:3, 4 * frame.joint : 4 * frame.joint + 3], oMi[:3, 4 * frame.joint + 3]
            Rf, pf = np.array(frame.placement.R, dtype=float), np.array(frame.placement.p, dtype=float).reshape(3)
            row.extend(np.concatenate([(R @ Rf).ravel(), R @ pf + p]).round(5).tolist())
        poses.append(row)
    data = {
        "title": title or f"{model.name}: {times[-1] - times[0]:.3g} s",
        "times": times.round(6).tolist(),
        "poses": poses,
        "joints": joints,  # the stick figure: joint origins, drawn to their parents' (a fixed base to 0)
        "parents": [p if p >= 0 or j.full_motion else -2 for p, j in zip(model.parents, model.joints)],
        "meshes": [
            {"link": k, "v": V.astype(np.float32).round(5).ravel().tolist(), "f": F.ravel().tolist(), "c": list(c)}
            for k, V, F, c in meshes
        ],
    }
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(_PAGE.replace("/*DATA*/", json.dumps(data, separators=(",", ":"))))


# --- visuals -----------------------------------------------------------------------------------------


def _visuals(robot):
    """[(link, vertices in the link frame (n x 3), triangles (m x 3), rgb)]."""
    source = robot
    if isinstance(robot, str) and not robot.lstrip().startswith("<") and not os.path.isfile(robot):
        source = robot_path(robot)[0]
    if isinstance(source, str) and not source.lstrip().startswith("<") and robot_format(source) == "mjcf":
        return _mjcf_visuals(source)
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return _urdf_visuals(ET.fromstring(source), os.getcwd())
    return _urdf_visuals(ET.parse(source).getroot(), os.path.dirname(os.path.abspath(source)))


def _urdf_visuals(root, folder):
    named = {m.get("name"): _rgb(m) for m in root.findall("material")}
    out = []
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            geometry = visual.find("geometry")
            shape = _urdf_shape(geometry, folder) if geometry is not None else None
            if shape is None:
                continue
            V, F = shape
            R, p = _origin(visual.find("origin"))
            material = visual.find("material")
            rgb = GREY
            if material is not None:
                rgb = _rgb(material) or named.get(material.get("name")) or GREY
            out.append((link.get("name"), V @ R.T + p, F, rgb))
    return out


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


def _urdf_shape(geometry, folder):
    child = next(iter(geometry), None)
    if child is None:
        return None
    if child.tag == "mesh":
        path = _find(child.get("filename", ""), folder)
        if path is None:
            return None
        V, F = _read_mesh(path)
        scale = [float(x) for x in child.get("scale", "1 1 1").split()]
        return V * np.array(scale), F
    if child.tag == "box":
        return _box(np.array([float(x) for x in child.get("size").split()]) / 2)
    if child.tag == "cylinder":
        return _cylinder(float(child.get("radius")), float(child.get("length")))
    if child.tag == "sphere":
        return _ellipsoid(np.full(3, float(child.get("radius"))))
    return None


def _find(uri, folder):
    """The file of a mesh URI: package:// and relative paths from ``folder`` upwards, then in
    example-robot-data's robots/ folder."""
    rest = uri.split("://", 1)[1] if "://" in uri else uri
    if uri.startswith("file://") and os.path.isfile(rest):
        return rest
    parts = rest.split("/")
    roots, here = [], folder
    while True:
        roots.append(here)
        if os.path.dirname(here) == here:
            break
        here = os.path.dirname(here)
    if example_robot_data_dir():
        roots.append(example_robot_data_dir())
    for root in roots:
        for k in range(len(parts)):  # drop the package name and the folders above the robot's own
            candidate = os.path.join(root, *parts[k:])
            if os.path.isfile(candidate):
                return candidate
    return None


def _read_mesh(path):
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".stl":
        return _read_stl(path)
    if suffix == ".dae":
        return _read_collada(path)
    return np.zeros((0, 3)), np.zeros((0, 3), dtype=int)


def _read_stl(path):
    with open(path, "rb") as fh:
        data = fh.read()
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


def _read_collada(path):
    """The triangles of every geometry instanced in the visual scene, in metres, z up."""
    root = ET.parse(path).getroot()
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
            V, F = geometries.get(inst.get("url", "").lstrip("#"), (np.zeros((0, 3)), np.zeros((0, 3), dtype=int)))
            Vs.append(V @ M[:3, :3].T + M[:3, 3])
            Fs.append(F + n)
            n += len(V)
        for child in node.findall(f"{ns}node"):
            walk(child, M)

    for scene in root.iter(f"{ns}visual_scene"):
        walk(scene, np.eye(4))
    if not Vs:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=int)
    V = np.concatenate(Vs) * scale
    if up is not None and up.text.strip() == "Y_UP":
        V = V[:, [0, 2, 1]] * np.array([1, -1, 1])
    return V, np.concatenate(Fs)


def _collada_geometry(geometry, ns):
    mesh = geometry.find(f"{ns}mesh")
    if mesh is None:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=int)
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

    m = mujoco.MjModel.from_xml_path(path)
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
        out.append((name, V @ R.T + m.geom_pos[g], F, tuple(float(c) for c in m.geom_rgba[g][:3])))
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


def _decimate(meshes, max_triangles):
    """Vertex clustering on a grid, coarser until all meshes hold at most ``max_triangles``."""
    total = sum(len(F) for _, _, F, _ in meshes)
    cell = 0.002
    out = meshes
    while total > max_triangles:
        out, total = [], 0
        for k, V, F, c in meshes:
            keys, inverse = np.unique(np.floor(V / cell).astype(np.int64), axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            W = np.zeros((len(keys), 3))
            np.add.at(W, inverse, V)
            W /= np.bincount(inverse, minlength=len(keys))[:, None]
            G = inverse[F]
            G = G[(G[:, 0] != G[:, 1]) & (G[:, 1] != G[:, 2]) & (G[:, 0] != G[:, 2])]
            out.append((k, W, G, c))
            total += len(G)
        cell *= 1.5
    return out


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>casrbd</title>
<style>body{margin:0;background:#f4f4f4;font:13px sans-serif}#bar{position:fixed;left:8px;right:8px;bottom:8px;
display:flex;gap:8px;align-items:center}#t{flex:1}canvas{display:block}#title{position:fixed;left:8px;top:6px}</style>
</head><body><canvas id="c"></canvas><div id="title"></div>
<div id="bar"><button id="play">pause</button><input id="t" type="range" min="0" max="1000" value="0">
<span id="time"></span></div>
<script>
const D = /*DATA*/;
const cv = document.getElementById("c"), ctx = cv.getContext("2d");
const T = D.times, n = T.length, dur = Math.max(T[n - 1] - T[0], 1e-9);
document.getElementById("title").textContent = D.title;
let lo = [1e9, 1e9, 1e9], hi = [-1e9, -1e9, -1e9];
for (const row of D.joints) for (let k = 0; k < row.length; k += 3)
  for (let i = 0; i < 3; i++) { lo[i] = Math.min(lo[i], row[k + i]); hi[i] = Math.max(hi[i], row[k + i]); }
const center = [0, 1, 2].map(i => (lo[i] + hi[i]) / 2);
let radius = Math.max(0.5, Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]));
let az = -0.9, el = 0.35, playing = true, t0 = performance.now(), tnow = 0;
const m = location.hash.match(/t=([0-9.]+)/);
if (m) { tnow = parseFloat(m[1]); playing = false; }
function frameAt(t) { let k = 0; while (k < n - 1 && T[k + 1] - T[0] <= t) k++; return k; }
function draw() {
  cv.width = innerWidth; cv.height = innerHeight;
  const W = cv.width, H = cv.height, f = 1.2 * Math.min(W, H);
  const ca = Math.cos(az), sa = Math.sin(az), ce = Math.cos(el), se = Math.sin(el);
  const dist = 1.8 * radius;
  function cam(x, y, z) {  // world -> camera: orbit about the centre, z up
    x -= center[0]; y -= center[1]; z -= center[2];
    const u = ca * x + sa * y, w = -sa * x + ca * y;
    return [w, ce * z - se * u, dist - (ce * u + se * z)];
  }
  function px(c) { return [W / 2 + f * c[0] / c[2], H / 2 - f * c[1] / c[2]]; }
  ctx.fillStyle = "#f4f4f4"; ctx.fillRect(0, 0, W, H);
  ctx.strokeStyle = "#ccc"; ctx.lineWidth = 1;
  const g = Math.ceil(radius), z0 = Math.min(0, lo[2]);
  for (let i = -g; i <= g; i += 0.25) {
    for (const [a, b] of [[[center[0] + i, center[1] - g, z0], [center[0] + i, center[1] + g, z0]],
                          [[center[0] - g, center[1] + i, z0], [center[0] + g, center[1] + i, z0]]]) {
      const ca_ = cam(...a), cb = cam(...b);
      if (ca_[2] < 0.05 || cb[2] < 0.05) continue;
      const p = px(ca_), q = px(cb);
      ctx.beginPath(); ctx.moveTo(p[0], p[1]); ctx.lineTo(q[0], q[1]); ctx.stroke();
    }
  }
  const pose = D.poses[frameAt(tnow)], tris = [];
  const light = [0.3, 0.5, 0.81];
  for (const mesh of D.meshes) {
    const o = 12 * mesh.link, R = pose.slice(o, o + 9), p = pose.slice(o + 9, o + 12), v = mesh.v;
    const world = new Float64Array(v.length), view = [];
    for (let i = 0; i < v.length; i += 3) {
      for (let r = 0; r < 3; r++)
        world[i + r] = R[3 * r] * v[i] + R[3 * r + 1] * v[i + 1] + R[3 * r + 2] * v[i + 2] + p[r];
      view.push(cam(world[i], world[i + 1], world[i + 2]));
    }
    const F = mesh.f;
    for (let k = 0; k < F.length; k += 3) {
      const a = F[k], b = F[k + 1], c = F[k + 2];
      if (view[a][2] < 0.05 || view[b][2] < 0.05 || view[c][2] < 0.05) continue;
      const e1 = [0, 1, 2].map(r => world[3 * b + r] - world[3 * a + r]);
      const e2 = [0, 1, 2].map(r => world[3 * c + r] - world[3 * a + r]);
      const nx = e1[1] * e2[2] - e1[2] * e2[1], ny = e1[2] * e2[0] - e1[0] * e2[2], nz = e1[0] * e2[1] - e1[1] * e2[0];
      const nn = Math.hypot(nx, ny, nz) || 1;
      const s = 0.35 + 0.65 * Math.abs((nx * light[0] + ny * light[1] + nz * light[2]) / nn);
      tris.push([view[a][2] + view[b][2] + view[c][2], px(view[a]), px(view[b]), px(view[c]), mesh.c, s]);
    }
  }
  tris.sort((x, y) => y[0] - x[0]);
  const J = D.joints[frameAt(tnow)];
  ctx.lineWidth = 4; ctx.strokeStyle = "#345";
  for (let i = 0; i < D.parents.length && !D.meshes.length; i++) {
    const p = D.parents[i];
    if (p == -2) continue;
    const a = cam(J[3 * i], J[3 * i + 1], J[3 * i + 2]);
    const b = p < 0 ? cam(0, 0, 0) : cam(J[3 * p], J[3 * p + 1], J[3 * p + 2]);
    if (a[2] < 0.05 || b[2] < 0.05) continue;
    const u = px(a), w = px(b);
    ctx.beginPath(); ctx.moveTo(u[0], u[1]); ctx.lineTo(w[0], w[1]); ctx.stroke();
  }
  ctx.lineWidth = 1;
  for (const [_, a, b, c, col, s] of tris) {
    ctx.fillStyle = `rgb(${255 * col[0] * s | 0},${255 * col[1] * s | 0},${255 * col[2] * s | 0})`;
    ctx.strokeStyle = ctx.fillStyle;
    ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.lineTo(c[0], c[1]); ctx.closePath();
    ctx.fill(); ctx.stroke();
  }
  document.getElementById("time").textContent = `t = ${tnow.toFixed(2)} s / ${dur.toFixed(2)} s`;
  document.getElementById("t").value = Math.round(1000 * tnow / dur);
}
function tick(now) {
  if (playing) tnow = ((now - t0) / 1000) % dur;
  draw(); requestAnimationFrame(tick);
}
const bt = document.getElementById("play");
bt.onclick = () => {
  playing = !playing; t0 = performance.now() - 1000 * tnow; bt.textContent = playing ? "pause" : "play";
};
document.getElementById("t").oninput = e => {
  tnow = dur * e.target.value / 1000; playing = false; bt.textContent = "play";
};
addEventListener("keydown", e => { if (e.code === "Space") bt.onclick(); });
let drag = null;
cv.onmousedown = e => drag = [e.clientX, e.clientY];
addEventListener("mouseup", () => drag = null);
addEventListener("mousemove", e => { if (!drag) return; az -= (e.clientX - drag[0]) / 200;
  el = Math.max(-1.5, Math.min(1.5, el + (e.clientY - drag[1]) / 200)); drag = [e.clientX, e.clientY]; });
cv.onwheel = e => { radius *= Math.exp(e.deltaY / 500); e.preventDefault(); };
draw(); requestAnimationFrame(tick);
</script></body></html>
"""
