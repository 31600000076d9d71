"""What a new user meets first: expand keeping the analytical derivatives, robots by name, limits on
the model, the messages and the command line."""

import os
import sys

import casadi as ca
import numpy as np
import pytest

import casrbd
from casrbd import codegen
from casrbd.algorithms import SPECS
from casrbd.cli import main
from casrbd.models import EXAMPLE_ROBOTS, example_robot_data_dir, load_robot, robot_path, serial_chain
from casrbd.ocp.expand import keep_analytical
from casrbd.testing import rel_err

# --- expand ------------------------------------------------------------------------------------------


@pytest.fixture
def wrong_aba_jacobian(monkeypatch):
    """aba's analytical Jacobian, deliberately doubled: where the NLP's Jacobian shows the doubling,
    it calls casrbd's derivative Function; where it does not, casadi took its own AD."""
    spec = SPECS["aba"]

    def doubled(*args, **kwargs):
        return {k: 2 * block for k, block in spec.jacobian.impl(*args, **kwargs).items()}

    monkeypatch.setitem(SPECS, "aba", spec._replace(jacobian=spec.jacobian._replace(impl=doubled)))


def _opti_jacobian(options):
    """The constraint Jacobian of one Opti problem (a fresh model: nothing cached) at a fixed point,
    solved under ``options`` (no iteration), and the Opti."""
    model = serial_chain(3, seed=5)
    aba = casrbd.function(model, "aba", jacobian="analytical", second_order="ad")
    opti = ca.Opti()
    q, v, tau = (opti.variable(model.nv) for _ in range(3))
    opti.subject_to(aba(q, v, tau) == 0)
    opti.minimize(ca.sumsqr(tau))
    options = keep_analytical(options, opti)
    opti.solver("ipopt", {**options, "print_time": False, "ipopt.print_level": 0, "ipopt.max_iter": 0})
    opti.solve_limited()
    jac_g = opti.debug.casadi_solver.get_function("nlp_jac_g")
    x = np.linspace(0.2, 1.4, 3 * model.nv)
    plain = casrbd.function(model, "aba")  # the AD reference
    X = ca.SX.sym("x", 3 * model.nv)
    ref = ca.Function("j", [X], [ca.jacobian(plain(X[:3], X[3:6], X[6:]), X)])(x)
    return rel_err(np.array(jac_g(x, [])[1]), np.array(ref)), options


def test_expand_keeps_the_analytical_jacobian_through_keep_analytical(wrong_aba_jacobian, recwarn, monkeypatch):
    """The same Opti problem: in MX and with expand through keep_analytical the NLP calls casrbd's
    (doubled) Jacobian; with postpone_expand=False, expand drops it for AD, with a warning naming it."""
    monkeypatch.setattr("casrbd.ocp.expand._warned", set())
    err, _ = _opti_jacobian({})
    assert err > 0.1
    err, options = _opti_jacobian({"expand": True})
    assert options["postpone_expand"] is True and err > 0.1
    assert not recwarn.list
    with pytest.warns(UserWarning, match=r"chain3_revolute_aba.*postpone_expand=True"):
        err, _ = _opti_jacobian({"expand": True, "postpone_expand": False})
    assert err < 1e-12


# --- limits ------------------------------------------------------------------------------------------

LIMITS = {"lower": "lowerPositionLimit", "upper": "upperPositionLimit"}
TANGENT_LIMITS = {"velocity_limit": "velocityLimit", "effort_limit": "effortLimit"}


def _pinocchio_limits(pm, name):
    """Pinocchio's limit array, its largest double read as infinity (casrbd's "none")."""
    x = np.array(getattr(pm, name), dtype=float)
    x[np.abs(x) == np.finfo(float).max] *= np.inf
    return x


def check_limits_as_pinocchio(pin, name):
    path, floating = robot_path(name)
    model = load_robot(name)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    assert pm.nv == model.nv
    for ours, theirs in TANGENT_LIMITS.items():
        np.testing.assert_array_equal(getattr(model, ours), _pinocchio_limits(pm, theirs), err_msg=ours)
    for i, joint in enumerate(model.joints):
        pj = pm.joints[pm.getJointId(model.names[i])]
        if pj.nq != joint.nq:  # a continuous joint: (cos, sin) in Pinocchio, an angle here
            continue
        for ours, theirs in LIMITS.items():
            np.testing.assert_array_equal(
                getattr(model, ours)[model.q_slice(i)],
                _pinocchio_limits(pm, theirs)[pj.idx_q : pj.idx_q + pj.nq],
                err_msg=f"{ours} of {model.names[i]}",
            )


@pytest.mark.parametrize("name", ["panda", "solo12", "ur5"])
def test_urdf_limits_are_pinocchios(pin, name):
    check_limits_as_pinocchio(pin, name)


MJCF_LIMITS = """
<mujoco>
  <compiler angle="radian"/>
  <worldbody>
    <body name="a">
      <joint name="hinge" type="hinge" axis="0 0 1" range="-1 2" actuatorfrcrange="-3 5" actuatorfrclimited="true"/>
      <geom size="0.1" mass="1"/>
      <body name="b" pos="0 0 0.3">
        <joint name="slide" type="slide" axis="1 0 0"/>
        <geom size="0.1" mass="1"/>
        <body name="c" pos="0 0 0.3">
          <joint name="free_hinge" type="hinge" axis="0 1 0"/>
          <geom size="0.1" mass="1"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="hinge" gear="10" ctrlrange="-1 1" ctrllimited="true"/>
    <motor joint="slide" gear="-2" ctrlrange="-4 3" ctrllimited="true"/>
    <position joint="slide" gear="3" kp="100" forcerange="-7 6" forcelimited="true"/>
    <position joint="free_hinge" kp="100"/>
  </actuator>
</mujoco>
"""


def test_mjcf_limits_follow_ranges_and_actuators():
    """Effort limits: actuatorfrcrange caps the motor's 10 x 1 on the hinge; the slide's motor and
    position actuator add up, |-2| x 4 + 3 x 7; the hinge driven by an unbounded position servo has none."""
    pytest.importorskip("mujoco")
    model = casrbd.load_mjcf(MJCF_LIMITS)
    np.testing.assert_array_equal(model.lower, [-1, -np.inf, -np.inf])
    np.testing.assert_array_equal(model.upper, [2, np.inf, np.inf])
    np.testing.assert_array_equal(model.effort_limit, [5, 8 + 21, np.inf])
    np.testing.assert_array_equal(model.velocity_limit, np.full(3, np.inf))


def test_bad_limits_are_refused_by_name():
    body = serial_chain(1).bodies[0]
    with pytest.raises(ValueError, match=r"j0_revolute.*effort limit"):
        casrbd.Model("m", [body._replace(effort_limit=[-1.0])])


# --- robots by name ----------------------------------------------------------------------------------

# refused on purpose: a mimic joint naming a joint that does not exist (Pinocchio ignores mimics)
REFUSED = {"alex_psyonic_hands": "mimics joint"}


def installed(name):
    return example_robot_data_dir() is not None and os.path.isfile(
        os.path.join(example_robot_data_dir(), EXAMPLE_ROBOTS[name][0])
    )


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=() if n in ("go2", "z1", "talos_arm") else pytest.mark.slow) for n in EXAMPLE_ROBOTS]
)
def test_every_example_robot_loads_by_name_with_pinocchios_limits(pin, name):
    """Every name of example_robot_data.load whose file is installed: the model by name, a free-flyer
    root where the package puts one, the limits Pinocchio reads (a sample in CI, all with -m slow)."""
    if not installed(name):
        pytest.skip(f"{name}: not in the installed example-robot-data")
    if name in REFUSED:
        with pytest.raises(casrbd.URDFError, match=REFUSED[name]):
            load_robot(name)
        return
    model = load_robot(name)
    assert (model.joints[0].type == "floating") == EXAMPLE_ROBOTS[name][1]
    check_limits_as_pinocchio(pin, name)


def test_a_bare_name_given_to_load_urdf_points_to_load_robot():
    with pytest.raises(FileNotFoundError, match=r"casrbd.load_robot\('ur5'\)"):
        casrbd.load_urdf("ur5")


def test_names_without_a_file_say_why():
    with pytest.raises(LookupError, match="SDF"):
        load_robot("cassie")


# --- messages and the command line -------------------------------------------------------------------


def test_version_on_the_command_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"casrbd {casrbd.__version__}"


def test_info_lists_frames_and_limits(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    model = load_robot()
    for frame in model.frames:
        assert f"\n  {frame.name} " in out
    assert "effort [N m or N]" in out


def test_missing_mujoco_is_one_line_naming_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco raises ImportError
    path = tmp_path / "m.xml"
    path.write_text(MJCF_LIMITS)
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "casrbd[mjcf]" in err


def test_a_library_lookup_lists_what_it_holds(tmp_path, monkeypatch):
    monkeypatch.setenv("CASRBD_CACHE", str(tmp_path))
    try:
        codegen.find_compiler()
    except codegen.CompilerNotFoundError:
        pytest.skip("no C compiler")
    lib = codegen.compile_functions([casrbd.function(serial_chain(2), "rnea")], flags=("-O0",))
    with pytest.raises(KeyError, match=r"holds no Function 'aba'; it holds \['chain2_revolute_rnea'\]"):
        lib["aba"]
