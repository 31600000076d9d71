"""casrbd.viewer: a trajectory as a self-contained HTML animation, rendered by headless Chromium where it
is installed (skipped otherwise): the page holds the robot's links where forward kinematics puts them at
every time, and the browser draws it."""

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

import casrbd
from casrbd import viewer
from casrbd.viewer import visuals

URDF = """<robot name="two">
  <material name="blue"><color rgba="0.1 0.3 0.9 1"/></material>
  <link name="base"><visual><geometry><box size="0.3 0.3 0.1"/></geometry></visual></link>
  <link name="upper">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 0.25"/><geometry><cylinder radius="0.04" length="0.5"/></geometry>
      <material name="blue"/></visual>
  </link>
  <link name="lower">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 0.2"/><geometry><sphere radius="0.08"/></geometry></visual>
  </link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="1 0 0"/>
    <origin xyz="0 0 0.05"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/><axis xyz="1 0 0"/>
    <origin xyz="0 0 0.5"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
</robot>"""


def _motion(model):
    t = np.linspace(0, 1, 21)
    return t, np.column_stack([1.2 * np.sin(np.pi * t), np.pi * t])


def _data(path):
    return json.loads(re.search(r"const D = (\{.*?\});\n", path.read_text()).group(1))


def test_the_page_holds_the_meshes_and_the_link_placements(tmp_path):
    """Three visuals on three links, placed at every time by forward kinematics (the tip of the upper
    arm is the elbow's origin); nothing loaded from elsewhere."""
    model = casrbd.load_urdf(URDF)
    t, qs = _motion(model)
    path = tmp_path / "two.html"
    viewer.write_html(path, model, t, qs, URDF)
    data = _data(path)
    assert len(data["meshes"]) == 3 and len(data["poses"]) == len(t)
    assert not re.search(r"""(src|href)=["']?http""", path.read_text())
    upper = sorted({"base", "upper", "lower"}).index("upper")
    for q, pose, joints in zip(qs, data["poses"], data["joints"]):
        R = np.array(pose[12 * upper : 12 * upper + 9]).reshape(3, 3)
        p = np.array(pose[12 * upper + 9 : 12 * upper + 12])
        elbow = casrbd.frame_placement(model, q, "lower")[:3, 3]
        np.testing.assert_allclose(R @ [0, 0, 0.5] + p, elbow, atol=1e-4)
        np.testing.assert_allclose(joints[3:6], elbow, atol=1e-4)


def test_bad_trajectories_are_refused(tmp_path):
    model = casrbd.load_urdf(URDF)
    with pytest.raises(ValueError, match="21 x 2"):
        viewer.write_html(tmp_path / "x.html", model, np.linspace(0, 1, 21), np.zeros((20, 2)))
    with pytest.raises(ValueError, match="increase"):
        viewer.write_html(tmp_path / "x.html", model, np.zeros(21), np.zeros((21, 2)))


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("no Chromium installed")


def _screenshot(browser, page, png):
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=640,480",
            f"--screenshot={png}",
            page.as_uri() + "#t=0.5",
        ],  # fmt: skip
        capture_output=True,
        timeout=120,
        check=True,
    )
    plt = pytest.importorskip("matplotlib.pyplot")
    return plt.imread(str(png))[..., :3]


def test_chromium_draws_the_robot(tmp_path):
    """Headless Chromium renders the page at t = 0.5 s: coloured pixels of the blue upper arm, not a
    blank page (that the links move is checked on the placements above)."""
    browser = _chromium()
    model = casrbd.load_urdf(URDF)
    t, qs = _motion(model)
    page = tmp_path / "two.html"
    viewer.write_html(page, model, t, qs, URDF)
    image = _screenshot(browser, page, tmp_path / "two.png")
    assert (image[..., 2] > image[..., 0] + 0.2).sum() > 200


MJCF = """<mujoco><worldbody><body name="arm"><joint name="hinge" type="hinge" axis="0 1 0"/>
  <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" rgba="0.9 0.1 0.1 1"/>
  <body name="tip" pos="0 0 -0.5"><joint name="slide" type="slide" axis="1 0 0"/><geom type="box" size="0.1 0.1 0.1"/>
  </body></body></worldbody></mujoco>"""


def test_mjcf_geoms_ride_on_their_bodies(tmp_path):
    """An MJCF file's geoms (through MuJoCo) on the frames of their bodies, coloured as in the file."""
    pytest.importorskip("mujoco")
    path = tmp_path / "arm.xml"
    path.write_text(MJCF)
    model = casrbd.load_mjcf(str(path))
    page = tmp_path / "arm.html"
    viewer.write_html(page, model, [0.0, 1.0], [[0.0, 0.0], [1.0, 0.2]], str(path))
    data = _data(page)
    assert len(data["meshes"]) == 2
    assert [0.9, 0.1, 0.1] in [[round(c, 3) for c in m["c"]] for m in data["meshes"]]
    tip = sorted({"arm", "tip"}).index("tip")
    np.testing.assert_allclose(
        data["poses"][1][12 * tip + 9 : 12 * tip + 12],
        casrbd.frame_placement(model, [1.0, 0.2], "tip")[:3, 3],
        atol=1e-4,
    )


# --- hostile input, one test per class ---------------------------------------------------------------


def test_names_cannot_end_the_pages_script(tmp_path):
    """A robot name (the title) with </script> and <!-- stays a JSON string inside the one script."""
    evil = "x</script><script>alert(1)</script><!--"
    model = casrbd.load_urdf(
        URDF.replace('name="two"', 'name="x&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!--"')
    )
    assert model.name == evil
    page = tmp_path / "x.html"
    viewer.write_html(page, model, *_motion(model), URDF, title=evil + " \u2028")
    text = page.read_text()
    assert text.count("</script>") == 1 and "<!--" not in text and text.count("<script>") == 1
    assert _data(page)["title"] == evil + " \u2028"


TRIANGLE = (
    b"solid s\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid\n"
)


def _package(tmp_path, mesh_uri, stl=TRIANGLE):
    """A URDF robot in folder robot/ (its package: no package.xml above) whose link `upper` shows a mesh."""
    (tmp_path / "robot" / "meshes").mkdir(parents=True)
    (tmp_path / "robot" / "meshes" / "arm.stl").write_bytes(stl)
    (tmp_path / "outside.stl").write_bytes(stl)
    urdf = URDF.replace('<cylinder radius="0.04" length="0.5"/>', f'<mesh filename="{mesh_uri}"/>')
    path = tmp_path / "robot" / "two.urdf"
    path.write_text(urdf)
    return casrbd.load_urdf(str(path)), str(path)


def test_meshes_are_read_from_the_robots_package_only(tmp_path):
    """package://, relative and file:// URIs inside the package are read (the triangle as written);
    one resolving outside it is refused naming the mesh and the link, never read."""
    for folder, uri in (
        ("package", "package://two/meshes/arm.stl"),
        ("relative", "meshes/arm.stl"),
        ("file", f"file://{tmp_path}/file/robot/meshes/arm.stl"),
    ):
        model, path = _package(tmp_path / folder, uri)
        page = tmp_path / "ok.html"
        viewer.write_html(page, model, [0.0], [[0.0, 0.0]], path)
        mesh = next(m for m in _data(page)["meshes"] if m["f"] == [0, 1, 2])
        np.testing.assert_allclose(np.reshape(mesh["v"], (3, 3)), [[0, 0, 0.25], [1, 0, 0.25], [0, 1, 0.25]], atol=1e-6)
    for k, uri in enumerate(("../outside.stl", f"file://{tmp_path}/bad0/outside.stl", f"{tmp_path}/bad0/outside.stl")):
        model, path = _package(tmp_path / f"bad{k}", uri)
        with pytest.raises(
            ValueError,
            match=rf"link 'upper': mesh '{re.escape(uri)}' resolves to .*outside.stl, outside the robot's package",
        ):
            viewer.write_html(tmp_path / "x.html", model, [0.0], [[0.0, 0.0]], path)


def test_meshes_over_the_size_limit_or_unparsable_are_refused_naming_the_file(tmp_path, monkeypatch):
    model, path = _package(tmp_path, "meshes/arm.stl")
    monkeypatch.setattr(viewer.visuals, "MAX_MESH_BYTES", 50)
    with pytest.raises(ValueError, match=r"link 'upper': mesh .*arm.stl: larger than the limit of 50 bytes"):
        viewer.write_html(tmp_path / "x.html", model, [0.0], [[0.0, 0.0]], path)
    monkeypatch.undo()
    for name, content in (("arm.stl", b"solid s\nvertex 1 2 x\n"), ("arm.dae", b"<COLLADA><library_geometries>")):
        model, path = _package(tmp_path / name, f"meshes/{name}", stl=content)
        if name.endswith(".dae"):
            (tmp_path / name / "robot" / "meshes" / name).write_bytes(content)
        with pytest.raises(ValueError, match=rf"link 'upper': mesh .*{name} cannot be read: "):
            viewer.write_html(tmp_path / "x.html", model, [0.0], [[0.0, 0.0]], path)
    model, path = _package(tmp_path / "nan", "meshes/arm.stl", stl=TRIANGLE.replace(b"vertex 1 0 0", b"vertex nan 0 0"))
    with pytest.raises(ValueError, match=r"link 'upper': a visual has non-finite vertices"):
        viewer.write_html(tmp_path / "x.html", model, [0.0], [[0.0, 0.0]], path)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs here")
def test_a_special_file_as_mesh_is_refused_unopened(tmp_path):
    import os

    model, path = _package(tmp_path, "meshes/pipe.stl")
    os.mkfifo(tmp_path / "robot" / "meshes" / "pipe.stl")  # opened, it would block until a writer appears
    with pytest.raises(ValueError, match=r"link 'upper': mesh .*pipe.stl: not a regular file \(a FIFO\)"):
        viewer.write_html(tmp_path / "x.html", model, [0.0], [[0.0, 0.0]], path)


@pytest.mark.parametrize("max_triangles", [-1, 0, 2.5, True, "100", None])
def test_max_triangles_must_be_a_positive_int(tmp_path, max_triangles):
    model = casrbd.load_urdf(URDF)
    with pytest.raises(ValueError, match=r"max_triangles must be an int >= 1, got"):
        viewer.write_html(tmp_path / "x.html", model, *_motion(model), URDF, max_triangles=max_triangles)


@pytest.mark.parametrize(
    "bad, message",
    [
        ("time", r"times: sample 3 has time = nan"),
        ("q", r"qs: sample 3 has q\[1\] \(joint 'elbow'\) = inf"),
        ("far", r"forward kinematics: sample 3 has the placement of link 'lower' = inf"),
    ],
)
def test_non_finite_times_and_poses_are_refused_naming_the_sample(tmp_path, bad, message):
    """Also a placement that overflows from a finite q (a prismatic joint pushed to 1e308)."""
    urdf = (
        URDF
        if bad != "far"
        else URDF.replace('<joint name="shoulder" type="revolute">', '<joint name="shoulder" type="prismatic">')
    )
    model = casrbd.load_urdf(urdf)
    t, qs = _motion(model)
    t[3] = np.nan if bad == "time" else t[3]
    qs[3] = [0.0, np.inf] if bad == "q" else [1e308, 0.0] if bad == "far" else qs[3]
    with pytest.raises(ValueError, match=message):
        viewer.write_html(tmp_path / "x.html", model, t, qs, urdf)


COLLADA = """<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit meter="0.5"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries><geometry id="tri"><mesh>
    <source id="pos"><float_array id="pos-array" count="9">0 0 0  2 0 0  0 4 0</float_array></source>
    <vertices id="verts"><input semantic="POSITION" source="#pos"/></vertices>
    <triangles count="1"><input semantic="VERTEX" source="#verts" offset="0"/><p>0 1 2</p></triangles>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="scene"><node>
    <matrix>1 0 0 1  0 1 0 0  0 0 1 0  0 0 0 1</matrix><instance_geometry url="#tri"/>
  </node></visual_scene></library_visual_scenes>
</COLLADA>"""


def test_collada_meshes_are_read_from_their_text(tmp_path):
    """A COLLADA triangle's vertices come from the arrays' text, moved by its node's matrix and scaled to
    metres by its unit (the numbers written in the file above)."""
    (tmp_path / "package.xml").write_text("<package/>")
    (tmp_path / "tri.dae").write_text(COLLADA)
    urdf = URDF.replace('<box size="0.3 0.3 0.1"/>', '<mesh filename="tri.dae"/>')
    (tmp_path / "two.urdf").write_text(urdf)
    shapes = visuals.robot_visuals(str(tmp_path / "two.urdf"))
    V = next(V for link, V, F, rgb in shapes if link == "base")
    np.testing.assert_allclose(V, 0.5 * np.array([[1, 0, 0], [3, 0, 0], [1, 4, 0]]), atol=1e-12)
