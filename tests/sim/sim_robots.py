"""The robots of the simulation tests: arm7, the Panda with its fingers fixed (``casrbd.models.load_arm``) and
solo12."""

import pytest

from casrbd.models import example_robot_data_dir, load_arm, load_robot


def load(name):
    """A robot by name, "panda" the Panda with fingers fixed; skips where its data is missing."""
    if name == "panda":
        if example_robot_data_dir() is None:
            pytest.skip("example-robot-data is not installed")
        return load_arm("panda")[0]
    if name != "arm7" and example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    return load_robot(name)
