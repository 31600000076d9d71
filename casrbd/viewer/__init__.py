"""A trajectory as a self-contained HTML animation with the robot's visual meshes.

``write_html(path, model, robot, times, qs)`` writes one HTML file that plays the motion in any browser,
offline: the meshes (decimated by vertex clustering to ``max_triangles``), the placement of every link
at every time and a small canvas renderer (flat shading, painter's algorithm; drag to turn, wheel to
zoom, space to pause, the slider to scrub) are all inside it, with no script or file from elsewhere.

Why not a viewer library: meshcat's Python package has had no release since 2021. viser 1.1 does write
a self-contained page (``get_scene_serializer().as_html()``), but recording needs a running
``ViserServer`` (a port), its dependencies (websockets, msgspec, trimesh, zstandard, ...) and WebGL to
show: in headless Chromium with software rendering its page stayed blank, where this one renders
(benchmarks/README.md, The HTML viewer). A page here needs numpy only (three.js is not available offline
without vendoring it).

Visuals come from the robot's file (``viewer.visuals``: URDF ``<visual>`` meshes and shapes, MJCF geoms
through MuJoCo; meshes only from the robot's package, read as safely as the robot files). Links are
placed through the model's frames of the same names (every URDF link and MJCF body is one). The page is
``page.html`` (package data) with the data as JSON in its script, escaped so that no name or title can
end the script. Times and configurations must be finite, as every placement computed from them.
"""

import json
from importlib import resources

import numpy as np

from ..functions import function
from .visuals import GREY, MAX_MESH_BYTES, robot_visuals

__all__ = ["GREY", "MAX_MESH_BYTES", "write_html"]

# JSON inside <script>: "</script>" or "<!--" in a name would end or change the script, and U+2028/9
# end lines in older JavaScript; their \u escapes are the same JSON strings
_HTML_SAFE = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def write_html(path, model, times, qs, robot=None, title=None, max_triangles=40000):
    """Write the animation of configurations ``qs`` (N x nq) at ``times`` (N seconds, increasing) of
    ``model`` to ``path``, with the visuals of ``robot`` (a robot name, a URDF or MJCF path, or a URDF
    string: the file the model was loaded from), or a stick figure of the joints where it is None or has
    none; the meshes are decimated to ``max_triangles`` (an int >= 1) in all."""
    if isinstance(max_triangles, bool) or not isinstance(max_triangles, (int, np.integer)) or max_triangles < 1:
        raise ValueError(f"max_triangles must be an int >= 1, got {max_triangles!r}")
    times, qs = np.asarray(times, dtype=float).reshape(-1), np.asarray(qs, dtype=float)
    if qs.ndim != 2 or qs.shape != (len(times), model.nq):
        raise ValueError(f"qs must be {len(times)} x {model.nq} (times x nq), got shape {qs.shape}")
    _require_finite(times.reshape(-1, 1), "times", ["time"])
    _require_finite(qs, "qs", [f"q[{k}] (joint {name!r})" for k, name in enumerate(_q_joints(model))])
    if len(times) > 1 and np.any(np.diff(times) <= 0):
        raise ValueError("times must increase")
    shapes = [s for s in (robot_visuals(robot) if robot is not None else []) if s[0] in model._frame_index]
    links = sorted({s[0] for s in shapes})
    meshes = _decimate([(links.index(link), V, F, rgb) for link, V, F, rgb in shapes], max_triangles)
    fk = function(model, "forward_kinematics")
    poses, joints = [], []
    with np.errstate(over="ignore", invalid="ignore"):  # a placement that overflows is refused below, by name
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
    for rows, kind, names, width in ((poses, "link", links, 12), (joints, "joint", model.names, 3)):
        columns = [f"the placement of {kind} {name!r}" for name in names for _ in range(width)]
        _require_finite(np.array(rows, dtype=float).reshape(len(qs), -1), "forward kinematics", columns)
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
    script = json.dumps(data, separators=(",", ":"), allow_nan=False).translate(_HTML_SAFE)
    page = (resources.files(__name__) / "page.html").read_text(encoding="utf-8")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page.replace("/*DATA*/", script))


def _q_joints(model):
    """The joint name of every configuration coordinate."""
    names = [""] * model.nq
    for i, name in enumerate(model.names):
        names[model.q_slice(i)] = [name] * model.joints[i].nq
    return names


def _require_finite(x, what, columns):
    """Refuse a non-finite entry of ``x`` (samples x columns), naming the sample and the column."""
    bad = np.argwhere(~np.isfinite(x))
    if len(bad):
        k, c = bad[0]
        raise ValueError(f"{what}: sample {k} has {columns[c]} = {x[k, c]}; finite numbers expected")


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
