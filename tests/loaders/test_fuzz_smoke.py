"""A short run of the URDF fuzzer (tests/fuzz/fuzz_urdf.py; docs/reliability.md has a long one's figures):
nothing but URDFError escapes load_urdf, no input hangs, no model with non-finite constants is accepted."""

import os
import re
import subprocess
import sys

FUZZER = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fuzz", "fuzz_urdf.py")
SECONDS = float(os.environ.get("CASRBD_FUZZ_SECONDS", "20"))


def test_fuzzing_the_urdf_loader_lets_only_urdf_errors_escape(tmp_path):
    run = subprocess.run(
        [sys.executable, FUZZER, "--seconds", str(SECONDS), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=SECONDS + 120,
    )
    figures = dict(re.findall(r"^([\w ()-]+): (.*)$", run.stdout, re.MULTILINE))
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\nfailing inputs: {sorted(os.listdir(tmp_path))}"
    assert figures["escaped"] == figures["timeout"] == figures["non-finite"] == "0"
    # a loose floor (a loaded CI machine tries about 10 a second, an idle one far more): it catches a stuck fuzzer
    assert int(figures["inputs tried"]) > 2 * SECONDS, "the fuzzer barely ran"
    assert int(figures["loaded"]) > 0 and int(figures["URDFError"]) > 0, "mutations too mild or too wild"
