"""The MJCF loader against MuJoCo's own dynamics and Pinocchio's MJCF parser; the state maps; bad input.

MuJoCo is the reference: its mass matrix (``mj_fullM``, armature included),
bias forces (``mj_rne`` without acceleration) and inverse dynamics
(``mj_inverse``), with constraints, springs, dampers and every other passive
force off, converted to casrbd's coordinates by ``casrbd.loaders.mujoco_state``
(so the maps are tested through them), on 30 random states per model, for
every MuJoCo model shipped with gymnasium and for hand-written models with
what gymnasium does not have (ball joints, several joints with anchors and
references in one body, welded and mocap bodies, tilted free bodies, sites,
actuator armature). casrbd's side is one mapped Function call per model.
"""

import importlib.util
import os
import warnings

import casadi as ca
import numpy as np
import pytest
from conftest import mujoco_full_m

import casrbd
from casrbd import cli, models
from casrbd.loaders.mjcf import (
    MJCFError,
    MJCFWarning,
    from_mujoco_force,
    from_mujoco_state,
    load_mjcf,
    to_mujoco_force,
    to_mujoco_state,
    velocity_map,
)
from casrbd.testing import rel_err

mujoco = pytest.importorskip("mujoco")

STATES = 30
TOL = 1e-9


def gym_assets():
    """{name: path} of the MuJoCo XML files shipped with gymnasium (found, not imported)."""
    spec = importlib.util.find_spec("gymnasium")
    if spec is None:
        return {}
    folder = os.path.join(os.path.dirname(spec.origin), "envs", "mujoco", "assets")
    return {f[:-4]: os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".xml")}


GYM = gym_assets()
# the files Pinocchio 4.1's buildModelFromMJCF loads correctly; on the others it drops the second
# top-level body (reacher, pusher), ignores settotalmass (half_cheetah) and gives no mass to geoms with
# contype = conaffinity = 0 (swimmer, pusher)
PINOCCHIO_OK = ("ant", "hopper", "humanoid", "humanoidstandup", "inverted_double_pendulum", "inverted_pendulum",
                "point", "walker2d", "walker2d_v5")  # fmt: skip

STRESS = """
<mujoco model="stress"><compiler angle="degree"/><option gravity="0.5 -0.3 -9.81"/>
<default><joint armature=".05"/></default>
<worldbody>
  <site name="origin" pos=".1 0 0"/>
  <body name="base" pos=".1 .2 .3" euler="10 20 30"><geom type="box" size=".1 .1 .1"/>
    <body name="welded" pos=".2 0 0" euler="0 40 0"><geom type="sphere" size=".05" pos=".1 0 0"/>
      <body name="c1" pos=".4 -.1 .2" quat=".8 .2 .3 -.1">
        <joint name="h1" type="hinge" pos=".1 .2 .3" axis="1 2 3" ref="23" range="-40 50"/>
        <joint name="s1" type="slide" pos="-.3 .1 0" axis="0 1 1" ref="-.2" range="-.5 .3"/>
        <joint name="h2" type="hinge" pos="0 -.2 .5" axis="0 1 0"/>
        <geom type="box" size=".1 .2 .3" pos=".1 0 0" euler="10 20 30"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 .2 .1"/>
        <site name="c1_site" pos=".2 .1 0" euler="0 0 30"/>
        <body name="c2" pos=".3 .1 0" euler="0 0 45">
          <joint name="b1" type="ball" pos=".05 -.05 .1"/>
          <geom type="ellipsoid" size=".1 .05 .2" pos=".1 .1 0" euler="30 0 0"/>
          <site name="tip" pos=".2 0 0"/>
          <body name="c2_welded" pos="0 .2 0"><geom type="box" size=".02 .03 .04"/></body>
        </body>
        <body pos="0 0 -.3">
          <joint type="hinge" axis="1 0 0" pos=".1 0 0"/>
          <joint name="hb_b" type="ball" pos="0 .1 0"/>
          <joint name="hb_s" type="slide" axis="1 1 0"/>
          <geom type="box" size=".05 .1 .15" pos=".05 0 0"/>
        </body>
      </body>
    </body>
  </body>
  <body name="torso" pos="0 0 1" euler="10 0 0">
    <joint type="free" name="root" pos=".3 .1 0" armature="0"/>
    <geom type="box" size=".2 .1 .05" pos=".02 .01 0" euler="5 10 15"/>
    <body name="arm" pos=".2 0 0"><joint name="sh" type="hinge" axis="0 1 1" pos=".05 0 0" ref="17" armature=".1"/>
      <geom type="capsule" size=".03" fromto="0 0 0 .3 0 0"/>
      <body name="hand" pos=".3 0 0"><joint name="wr" type="ball" armature=".02"/>
        <geom type="box" size=".05 .02 .01"/></body>
    </body>
  </body>
</worldbody>
<actuator><motor joint="sh" gear="3" armature=".25"/><motor joint="h1" gear="-2" armature=".5"/></actuator>
</mujoco>
"""


def rigid_only(m):
    """Switch off everything that is not rigid-body dynamics: constraints and all passive forces."""
    flags = mujoco.mjtDisableBit
    passive = ("mjDSBL_SPRING", "mjDSBL_DAMPER") if hasattr(flags, "mjDSBL_SPRING") else ("mjDSBL_PASSIVE",)  # < 3.3
    for flag in ("mjDSBL_CONSTRAINT", *passive):
        m.opt.disableflags |= int(getattr(flags, flag))
    return m


def compiled(source):
    """MuJoCo's own model of the file, its warnings dropped (else MuJoCo writes MUJOCO_LOG.TXT here)."""
    mujoco.set_mju_user_warning(lambda message: None)
    try:
        m = mujoco.MjModel.from_xml_path(source) if os.path.isfile(source) else mujoco.MjModel.from_xml_string(source)
    finally:
        mujoco.set_mju_user_warning(None)
    return rigid_only(m)


def load(source):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        return load_mjcf(source)


def mujoco_dynamics(m, d, model, q, v, a):
    """MuJoCo's M, bias and inverse dynamics at casrbd's (q, v, a), in casrbd's coordinates."""
    qpos, qvel, qacc = to_mujoco_state(model, q, v, a)
    dT_v = to_mujoco_state(model, q, v, np.zeros(model.nv))[2]  # dT/dt v: qacc at a = 0
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    M_mj, bias = mujoco_full_m(m, d), np.zeros(m.nv)
    mujoco.mj_rne(m, d, 0, bias)
    d.qacc[:] = qacc  # after mj_forward, which computes its own
    mujoco.mj_inverse(m, d)
    T = velocity_map(model, q)
    return (
        T.T @ M_mj @ T,
        from_mujoco_force(model, qpos, bias + M_mj @ dT_v),
        from_mujoco_force(model, qpos, d.qfrc_inverse),
    )


def states(model, seed, n=STATES):
    rng = np.random.default_rng(seed)
    Q = np.array([casrbd.random_configuration(model, rng) for _ in range(n)])
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def casrbd_dynamics(model, Q, V, A):
    """(M, nle, tau) of casrbd at every state, from one call of a mapped Function: arrays over states."""
    q, v, a = (ca.SX.sym(s, n) for s, n in (("q", model.nq), ("v", model.nv), ("a", model.nv)))
    outs = [ca.vec(casrbd.function(model, "crba")(q))]
    outs += [casrbd.function(model, "nonlinear_effects")(q, v), casrbd.function(model, "rnea")(q, v, a)]
    M, nle, tau = (np.array(x).T for x in ca.Function("dyn", [q, v, a], outs).map(len(Q))(Q.T, V.T, A.T))
    return M.reshape(len(Q), model.nv, model.nv).transpose(0, 2, 1), nle, tau


def check_against_mujoco(source, seed=0):
    model, m = load(source), compiled(source)
    d = mujoco.MjData(m)
    assert model.idx_q == tuple(m.jnt_qposadr) and model.idx_v == tuple(m.jnt_dofadr)
    np.testing.assert_allclose(model.gravity, m.opt.gravity, rtol=0, atol=0)
    Q, V, A = states(model, seed)
    M, nle, tau = casrbd_dynamics(model, Q, V, A)
    worst = np.zeros(3)
    for k in range(len(Q)):
        ref = mujoco_dynamics(m, d, model, Q[k], V[k], A[k])
        worst = np.maximum(worst, [rel_err(x[k], r) for x, r in zip((M, nle, tau), ref)])
    assert np.all(worst <= TOL), f"M, bias, tau relative errors {worst}"
    return model, m


@pytest.mark.skipif(not GYM, reason="gymnasium (its MuJoCo models) is not installed")
@pytest.mark.parametrize("name", sorted(GYM))
def test_gymnasium_models_agree_with_mujoco(name):
    model, m = check_against_mujoco(GYM[name])
    assert list(model.names) == [m.joint(j).name for j in range(m.njnt)]  # named as in the file
    np.testing.assert_array_equal(model.armature, m.dof_armature)  # no actuator armature in gymnasium


def test_stress_model_agrees_with_mujoco():
    model, m = check_against_mujoco(STRESS)
    assert model.names == ("h1", "s1", "h2", "b1", "joint4", "hb_b", "hb_s", "root", "sh", "wr")
    # hinge and slide limits on q = qpos (the reference is in the placement), in radians
    np.testing.assert_allclose(model.lower[:2], [np.radians(-40), -0.5])
    np.testing.assert_allclose(model.upper[:2], [np.radians(50), 0.3])
    # actuator armature x gear^2 on top of the joint's own
    assert model.armature[m.jnt_dofadr[0]] == pytest.approx(0.05 + 0.5 * 4)
    assert model.armature[m.jnt_dofadr[8]] == pytest.approx(0.1 + 0.25 * 9)


@pytest.mark.parametrize("source", ["stress", *(["humanoid", "ant", "reacher"] if GYM else [])])
def test_body_and_site_frames_are_mujocos(source):
    path = STRESS if source == "stress" else GYM[source]
    model, m = load(path), compiled(path)
    d = mujoco.MjData(m)
    q, v, _ = states(model, 1, n=1)
    d.qpos[:] = to_mujoco_state(model, q[0])[0]
    mujoco.mj_kinematics(m, d)
    oMi = casrbd.forward_kinematics(model, q[0])
    placement = {
        f.name: (np.eye(4) if f.joint < 0 else oMi[f.joint]) @ np.array(f.placement.homogeneous()) for f in model.frames
    }
    reference = {m.body(b).name or f"body{b}": (d.xpos[b], d.xmat[b]) for b in range(m.nbody)}
    reference.update({m.site(k).name or f"site{k}": (d.site_xpos[k], d.site_xmat[k]) for k in range(m.nsite)})
    assert set(placement) == set(reference)
    for name, (p, R) in reference.items():
        np.testing.assert_allclose(placement[name][:3, 3], p, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(placement[name][:3, :3], R.reshape(3, 3), atol=1e-12, err_msg=name)


@pytest.mark.skipif(not GYM, reason="gymnasium (its MuJoCo models) is not installed")
@pytest.mark.parametrize("name", PINOCCHIO_OK)
def test_gymnasium_models_agree_with_pinocchios_mjcf_parser(pin, name):
    """Pinocchio's composite joints concatenate MuJoCo's, so q and v are casrbd's as they are."""
    model = load(GYM[name])
    pm = pin.buildModelFromMJCF(GYM[name])
    pm.gravity = pin.Motion(np.concatenate([model.gravity, np.zeros(3)]))  # Pinocchio does not read <option gravity>
    pd = pm.createData()
    assert (pm.nq, pm.nv) == (model.nq, model.nv)
    np.testing.assert_array_equal(pm.armature, model.armature)
    Q, V, A = states(model, 2)
    M, nle, tau = casrbd_dynamics(model, Q, V, A)
    for k in range(len(Q)):
        Mp = pin.crba(pm, pd, Q[k])  # with the armature, upper triangle
        assert rel_err(M[k], np.triu(Mp) + np.triu(Mp, 1).T) <= TOL
        assert rel_err(nle[k], pin.nonLinearEffects(pm, pd, Q[k], V[k])) <= TOL
        assert rel_err(tau[k], pin.rnea(pm, pd, Q[k], V[k], A[k])) <= TOL


# ---------------------------------------------------------------------------------------- the state maps


def test_state_maps_are_inverse_and_batched():
    model = load(STRESS)
    Q, V, A = states(model, 3, n=5)
    qpos, qvel, qacc = to_mujoco_state(model, Q, V, A)
    for k in range(5):  # a batch is its rows
        for x, y in zip((qpos, qvel, qacc), to_mujoco_state(model, Q[k], V[k], A[k])):
            np.testing.assert_array_equal(x[k], y)
    q, v, a = from_mujoco_state(model, qpos, qvel, qacc)
    for x, y in ((q, Q), (v, V), (a, A)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-14)
    T = velocity_map(model, Q)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", T, V), qvel, atol=1e-14)
    np.testing.assert_allclose(T.transpose(0, 2, 1) @ T, np.broadcast_to(np.eye(model.nv), T.shape), atol=1e-14)
    tau = np.random.default_rng(0).normal(size=(5, model.nv))
    np.testing.assert_allclose(from_mujoco_force(model, qpos, to_mujoco_force(model, Q, tau)), tau, atol=1e-14)
    # quaternions: casrbd (x, y, z, w), MuJoCo (w, x, y, z)
    i = model.joint_index("root")
    np.testing.assert_array_equal(qpos[:, model.idx_q[i] + 3], Q[:, model.idx_q[i] + 6])


def test_free_velocity_is_mujocos_world_velocity_of_the_body_origin():
    """MuJoCo's qvel of a free joint: world-frame velocity of the body origin; casrbd's v: local."""
    model = load(STRESS)
    m = compiled(STRESS)
    d = mujoco.MjData(m)
    Q, V, _ = states(model, 4, n=1)
    q, v = Q[0], V[0]
    i, b = model.joint_index("root"), m.body("torso").id
    qpos, qvel, _ = to_mujoco_state(model, q, v)
    h = 1e-7
    positions = []
    for sign in (1, -1):
        d.qpos[:] = qpos
        mujoco.mj_integratePos(m, d.qpos, sign * qvel, h)
        mujoco.mj_kinematics(m, d)
        positions.append(d.xpos[b].copy())
    world_velocity = (positions[0] - positions[1]) / (2 * h)
    R = casrbd.forward_kinematics(model, q)[i][:3, :3]
    np.testing.assert_allclose(world_velocity, R @ v[model.idx_v[i] : model.idx_v[i] + 3], atol=1e-7)


def test_state_maps_refuse_joints_mujoco_does_not_have():
    model = models.random_tree(3, ("revolute", "planar"))
    with pytest.raises(ValueError, match="joint 'j1_planar' is planar, which MuJoCo does not have"):
        to_mujoco_state(model, casrbd.neutral(model))
    model = load(STRESS)
    with pytest.raises(ValueError, match=rf"qpos must have shape \({model.nq},\) or \(N, {model.nq}\)"):
        from_mujoco_state(model, np.zeros(3))
    with pytest.raises(ValueError, match="needs v too"):
        to_mujoco_state(model, casrbd.neutral(model), None, np.zeros(model.nv))


# ---------------------------------------------------------------------------------- what is not modelled

FREE_ARMATURE = """<mujoco><worldbody><body name="box" pos="0 0 1" euler="10 20 30">
<joint name="root" type="free" armature="0.7"/><geom type="box" size=".1 .2 .3" pos=".1 0 0"/></body>
</worldbody></mujoco>"""


def test_free_joint_armature_warns_and_differs_from_mujoco_by_the_stated_term():
    xml = FREE_ARMATURE
    with pytest.warns(MJCFWarning, match=r"free joints 'root' have armature"):
        model = load_mjcf(xml)
    m = compiled(xml)
    d = mujoco.MjData(m)
    Q, V, A = states(model, 5, n=3)
    for q, v, a in zip(Q, V, A):
        M_ref, nle_ref, tau_ref = mujoco_dynamics(m, d, model, q, v, a)
        term = np.concatenate([0.7 * np.cross(v[3:], v[:3]), np.zeros(3)])
        assert rel_err(casrbd.crba(model, q), M_ref) <= TOL
        assert rel_err(casrbd.rnea(model, q, v, a) + term, tau_ref) <= TOL
        assert rel_err(casrbd.nonlinear_effects(model, q, v) + term, nle_ref) <= TOL


UNSUPPORTED = """
<mujoco><option density="1.2" viscosity="0.01"/>
<worldbody>
  <body name="a"><joint name="ja" axis="0 1 0" stiffness="3" damping=".2" frictionloss=".1"/>
    <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/><site name="sa" pos=".3 0 0"/>
    <body name="b" pos=".3 0 0" gravcomp="1"><joint name="jb" axis="0 1 0"/><geom size=".05"/><site name="sb"/></body>
  </body>
  <body name="target" mocap="true" pos="1 0 0"><geom size=".05" contype="0" conaffinity="0"/></body>
</worldbody>
<tendon>
  <fixed name="coupling" stiffness="2" armature=".1"><joint joint="ja" coef="1"/><joint joint="jb" coef="-1"/></fixed>
  <fixed name="inert"><joint joint="ja" coef="1"/></fixed>
  <spatial name="cable"><site site="sa"/><site site="sb"/></spatial>
</tendon>
<equality><joint name="lock" joint1="ja" joint2="jb"/><weld body1="b" body2="target"/></equality>
<actuator><motor name="pull" tendon="cable" armature=".3"/><motor joint="ja"/></actuator>
</mujoco>
"""
UNSUPPORTED_NOTES = (
    "joint springs (stiffness) not modelled, of joints 'ja'",
    "joint damping not modelled, of joints 'ja'",
    "joint dry friction (frictionloss) not modelled, of joints 'ja'",
    "tendon 'coupling' not modelled (it has stiffness, armature)",
    "tendon 'cable' not modelled (it has an actuator)",
    "equality constraint 'lock' (joint) not modelled",
    "equality constraint 'equality1' (weld) not modelled",
    "armature of actuators 'pull' not modelled",
    "gravity compensation (gravcomp) not modelled, of bodies 'b'",
    "mocap bodies are fixed at their pose in the file: 'target'",
    "fluid forces not modelled (density 1.2, viscosity 0.01",
)


def test_what_the_tree_cannot_represent_names_itself():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_mjcf(UNSUPPORTED)
    messages = [str(w.message) for w in caught if issubclass(w.category, MJCFWarning)]
    for note in UNSUPPORTED_NOTES:
        assert sum(note in text for text in messages) == 1, (note, messages)
    assert not any("inert" in text for text in messages)  # a tendon that does nothing is skipped silently
    assert model.names == ("ja", "jb")
    with pytest.raises(MJCFError, match="MJCF string: .*tendon 'coupling'.*equality constraint 'lock'"):
        load_mjcf(UNSUPPORTED, strict=True)


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "xml, message",
    [
        ('<mujoco><worldbody><body><joint type="hing"/><geom size=".1"/></body></worldbody></mujoco>',
         "invalid keyword: 'hing'"),
        ('<mujoco><worldbody><body><joint/><geom size=".1"/><body><freejoint/><geom size=".1"/></body></body>'
         "</worldbody></mujoco>", "free joint can only be used on top level"),
        ('<mujoco><worldbody><body><joint range="1"/><geom size=".1"/></body></worldbody></mujoco>',
         "attribute 'range' does not have enough data"),
        ("<mujoco><worldbody><body><joint/></body></worldbody></mujoco>", "mass and inertia of moving bodies"),
    ],
)  # fmt: skip
def test_mujocos_errors_are_wrapped_naming_the_file(tmp_path, xml, message):
    path = tmp_path / "bad.xml"
    path.write_text(xml)
    with pytest.raises(MJCFError, match=rf"{path}: MuJoCo rejected it: .*{message}"):
        load_mjcf(str(path))
    with pytest.raises(MJCFError, match=rf"MJCF string: MuJoCo rejected it: .*{message}"):
        load_mjcf(xml)


@pytest.mark.parametrize(
    "source, message",
    [
        ("<mujoco><worldbody>", "malformed XML"),
        ('<!DOCTYPE m [<!ENTITY e "x">]><mujoco/>', "DOCTYPE and ENTITY declarations are refused"),
        ('<robot name="r"><link name="a"/></robot>', r"root element is <robot>, expected <mujoco> \(a URDF"),
        (b"<mujoco>\xff</mujoco>", "not UTF-8"),
    ],
)
def test_documents_are_read_safely_before_mujoco(source, message):
    with pytest.raises(MJCFError, match=message):
        load_mjcf(source)


def test_size_limit_and_missing_file(tmp_path):
    with pytest.raises(MJCFError, match="larger than the limit of 100 bytes"):
        load_mjcf(STRESS, max_bytes=100)
    with pytest.raises(OSError):
        load_mjcf(str(tmp_path / "missing.xml"))


def test_without_mujoco_the_loader_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "mujoco", None)
    with pytest.raises(ImportError, match=r"pip install 'casrbd\[mjcf\]'"):
        load_mjcf(STRESS)


def test_includes_resolve_beside_the_file_and_mujoco_warnings_are_python_warnings(tmp_path, monkeypatch):
    (tmp_path / "arm.xml").write_text(
        '<mujoco><worldbody><body name="a"><joint name="j"/><geom size=".1"/></body></worldbody></mujoco>'
    )
    main = tmp_path / "main.xml"
    main.write_text('<mujoco model="inc"><compiler settotalmass="2"/><include file="arm.xml"/></mujoco>')
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.warns(MJCFWarning, match="MuJoCo: compiler attribute 'settotalmass' is deprecated"):
        model = load_mjcf(str(main))
    assert model.name == "inc" and model.names == ("j",) and model.mass == pytest.approx(2.0)
    assert not os.listdir(elsewhere)  # no MUJOCO_LOG.TXT: the warning went to Python
    assert mujoco.get_mju_user_warning() is None  # the handler was put back


PENDULUM = """<mujoco model="pendulum"><worldbody><body name="a"><joint name="j" axis="0 1 0"/>
<geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/></body></worldbody></mujoco>"""


def test_load_robot_and_compare_take_mjcf_files(tmp_path, capsys):
    path = tmp_path / "pendulum.xml"
    path.write_text(PENDULUM)
    model = models.load_robot(str(path))
    assert model.name == "pendulum" and model.names == ("j",)
    assert models.robot_format(str(path)) == "mjcf"
    assert cli.main(["info", str(path)]) == 0
    assert "model pendulum: nq = 1, nv = 1" in capsys.readouterr().out
    assert cli.main(["compare", str(path)]) == 0
    assert "idsva/ltdl" in capsys.readouterr().out
    with pytest.raises(ValueError, match="an MJCF file has its own free joints"):
        models.load_robot(str(path), floating_base=True)


@pytest.mark.slow  # compiles 15 Functions and times each for a second or more
def test_compare_time_shows_compiled_and_pinocchio_times(tmp_path, capsys, monkeypatch, pin):
    path = tmp_path / "pendulum.xml"
    path.write_text(PENDULUM)
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path / "cache"))
    assert cli.main(["compare", "--time", str(path)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("aba ", "idsva ", "idsva/ltdl "))]
    assert len(rows) == 3 and "compiled" in out and "Pinocchio" in out
    for row in rows:  # VM, compiled and Pinocchio times, then (derivatives) the two errors
        assert [row[k] for k in (3, 5, 7)] == ["us"] * 3, row
