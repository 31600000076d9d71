"""Hostile files around a robot description, one test per class: special files where MuJoCo reads a
mesh, includes outside the model's folder, unreadable meshes, files shadowing robot names, file
descriptors given as robots; and what the loaders leave behind (MuJoCo's log) or print (short paths)."""

import os
import warnings

import pytest

import casrbd
from casrbd.cli import main
from casrbd.loaders import LoadError, MJCFError, URDFWarning, load_mjcf
from casrbd.models import load_robot

fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")

BODY = '<body name="b"><joint name="j"/><geom size=".1"/>{}</body>'


def mjcf_with_mesh(file, compiler=""):
    body = BODY.format('<geom type="mesh" mesh="m"/>')
    return (
        f'<mujoco><compiler {compiler}/><asset><mesh name="m" file="{file}"/></asset>'
        f"<worldbody>{body}</worldbody></mujoco>"
    )


@fifo
def test_a_fifo_mesh_is_refused_before_mujoco_opens_it(tmp_path, capsys):
    """MuJoCo opens meshes itself, blocking on a FIFO: load_mjcf and `casrbd info` name the file instead,
    found through <compiler meshdir> as MuJoCo finds it."""
    pytest.importorskip("mujoco")
    (tmp_path / "assets").mkdir()
    os.mkfifo(tmp_path / "assets" / "part.stl")
    path = tmp_path / "robot.xml"
    path.write_text(mjcf_with_mesh("part.stl", 'meshdir="assets"'))
    message = r"robot.xml: <mesh file='part.stl'>: .*assets/part.stl: not a regular file \(a FIFO\)"
    with pytest.raises(MJCFError, match=message):
        load_mjcf(str(path))
    assert main(["info", str(path)]) == 2
    assert "part.stl: not a regular file (a FIFO)" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_an_include_outside_the_models_folder_is_refused_by_name(tmp_path, where):
    pytest.importorskip("mujoco")
    secret = tmp_path / "secret.xml"
    secret.write_text(f"<mujoco><worldbody>{BODY.format('')}</worldbody></mujoco>")
    (tmp_path / "model").mkdir()
    name = str(secret) if where == "absolute" else "../secret.xml"
    main_file = tmp_path / "model" / "main.xml"
    main_file.write_text(f'<mujoco><include file="{name}"/></mujoco>')
    with pytest.raises(MJCFError, match=rf"main.xml: <include file='{name}'> is outside the model's folder"):
        load_mjcf(str(main_file))


def test_a_mesh_mujoco_cannot_parse_is_named(tmp_path):
    pytest.importorskip("mujoco")
    (tmp_path / "broken.stl").write_bytes(b"solid nothing\x00\x01")
    path = tmp_path / "robot.xml"
    path.write_text(mjcf_with_mesh("broken.stl"))
    with pytest.raises(MJCFError, match=r"robot.xml: MuJoCo rejected it: .*broken.stl"):
        load_mjcf(str(path))


def test_no_mujoco_log_in_the_working_directory(tmp_path, monkeypatch):
    """MuJoCo appends its warnings to MUJOCO_LOG.TXT in the current directory unless a handler takes
    them: the loader and the viewer (which reads MJCF geoms through MuJoCo) both take them."""
    pytest.importorskip("mujoco")
    from casrbd import viewer

    path = tmp_path / "robot.xml"
    path.write_text(f'<mujoco><compiler settotalmass="2"/><worldbody>{BODY.format("")}</worldbody></mujoco>')
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    with pytest.warns(casrbd.loaders.MJCFWarning, match="settotalmass"):
        model = load_mjcf(str(path))
    viewer.write_html(tmp_path / "page.html", model, [0.0, 1.0], [[0.0], [1.0]], str(path))
    assert os.listdir(here) == []


def test_urdf_warnings_name_the_file_from_its_package(tmp_path, monkeypatch):
    """An absolute path deep in a package is named from the package's folder, outside one by its file
    name; a path given relative stays as given. Errors keep the full path."""
    urdf = (
        '<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
        '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 2"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'
    )
    (tmp_path / "pkg" / "urdf").mkdir(parents=True)
    (tmp_path / "pkg" / "package.xml").write_text("<package/>")
    (tmp_path / "loose").mkdir()
    for path, named in (
        (tmp_path / "pkg" / "urdf" / "r.urdf", os.path.join("pkg", "urdf", "r.urdf")),
        (tmp_path / "loose" / "r.urdf", "r.urdf"),
    ):
        path.write_text(urdf)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            casrbd.load_urdf(str(path))
        messages = [str(w.message) for w in caught if issubclass(w.category, URDFWarning)]
        assert messages and all(m.startswith(f"{named}: joint 'j' has axis") for m in messages), messages
    monkeypatch.chdir(tmp_path)
    with pytest.warns(URDFWarning, match=r"^loose/r.urdf: joint 'j'"):
        casrbd.load_urdf("loose/r.urdf")


def test_a_file_named_like_a_robot_does_not_shadow_it(tmp_path, monkeypatch):
    """`arm7` is the shipped robot even beside a file called arm7; `./arm7` is the file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "arm7").write_text("not a robot")
    assert load_robot("arm7").nv == 7
    with pytest.raises(LoadError, match=r"\./arm7: malformed XML"):
        load_robot("./arm7")


@pytest.mark.parametrize("robot", [3, None, b"arm7", 7.0])
def test_a_robot_that_is_not_a_name_or_path_is_a_type_error(robot):
    with pytest.raises(TypeError, match=rf"robot must be a robot name or a file path.*{type(robot).__name__}"):
        load_robot(robot)


def test_a_file_descriptor_number_is_refused_and_left_open(tmp_path):
    """load_robot(fd) used to open the descriptor as a file and close it: the caller's file with it."""
    (tmp_path / "f").write_text("data")
    fd = os.open(tmp_path / "f", os.O_RDONLY)
    try:
        with pytest.raises(TypeError, match="got int"):
            load_robot(fd)
        assert os.read(fd, 4) == b"data"
    finally:
        os.close(fd)


@fifo
def test_a_fifo_given_as_the_robot_is_refused(tmp_path):
    os.mkfifo(tmp_path / "robot.urdf")
    with pytest.raises(LoadError, match=r"robot.urdf: not a regular file \(a FIFO\)"):
        load_robot(str(tmp_path / "robot.urdf"))
