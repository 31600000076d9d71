"""The robots of the simulation tests: arm7, the Panda with its fingers fixed (examples/common.load_arm) and
solo12."""

import sys
from pathlib import Path

import pytest

from casrbd.models import example_robot_data_dir, load_robot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_arm():
    """examples/common.load_arm: (model, limits, tool) of the Panda with its fingers fixed, else arm7."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # the examples' common module
    import common

    return common.load_arm()


def load(name):
    """A robot by name, "panda" the Panda with fingers fixed; skips where its data is missing."""
    if name == "panda":
        model = load_arm()[0]
        if model.name != "panda":
            pytest.skip("example-robot-data is not installed")
        return model
    if name != "arm7" and example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    return load_robot(name)
