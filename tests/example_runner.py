"""The one way the tests run an example: examples/NAME.py loaded as a module, with examples/ on the path for
its helper ``common`` (as ``python examples/NAME.py`` has it). Nothing else under tests/ or benchmarks/ loads
an example or imports from examples/ (tests/test_layering.py): what tests and benchmarks need beyond an
example's run lives in casrbd."""

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name):
    """The module examples/``name``.py (its ``main`` not run)."""
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no example {name!r}: {path} does not exist")
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
