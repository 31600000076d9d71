"""The robots of the simulation tests: arm7, the Panda with its fingers fixed (examples/common.load_arm) and
solo12."""

import sys
from pathlib import Path

import pytest

from casrbd.models import example_robot_data_dir, load_robot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_panda():
    """examples/common.load_arm's Panda, fingers fixed; skips where example-robot-data is missing."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # the examples' common module
    import common

    model, limits, tool = common.load_arm()
    if model.name != "panda":
        pytest.skip("example-robot-data is not installed")
    return model, tool


def load(name):
    """A robot by name, "panda" the Panda with fingers fixed; skips where its data is missing."""
    if name == "panda":
        return load_panda()[0]
    if name != "arm7" and example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    return load_robot(name)
