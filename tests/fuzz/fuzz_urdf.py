"""Fuzzing casrbd.load_urdf: the only exception that may escape it is URDFError.

Valid URDFs (casrbd's arm7 and, when installed, example-robot-data's robots
under 50 kB) are mutated by byte edits (flips, deletions, repeats, splices,
XML fragments, numbers) and by XML-aware edits (attribute values, joint
types, link names, removed, repeated and moved elements, long chains), and
each result is loaded as bytes, with or without a free-flyer root. An input
passes if load_urdf returns a model whose constants are finite or raises
URDFError; warnings are fine. Failures: any other exception, a model with
non-finite constants, or an input still running after ``--timeout`` seconds
(a SIGALRM interrupts it). Each distinct failure (exception type and the line
it came from) is saved with its traceback under ``--out``. An input whose
outcome is new (a loaded model, or an error message of a new kind) joins the
pool of inputs to mutate, a cheap stand-in for coverage guidance.

    python tests/fuzz/fuzz_urdf.py --seconds 660 [--seed 0] [--timeout 10] [--out DIR]

prints the figures (inputs tried, wall time, outcomes, failures) and exits
with status 1 if anything failed. With ``--atheris`` (pip install atheris)
libFuzzer drives the same mutations with coverage guidance instead.
"""

import argparse
import copy
import datetime
import glob
import hashlib
import os
import random
import re
import signal
import sys
import tempfile
import time
import traceback
import warnings
import xml.etree.ElementTree as ET

import numpy as np

import casrbd
from casrbd.models import example_robot_data_dir, robot_path

MAX_SEED_BYTES = 50_000
MAX_INPUT_BYTES = 300_000
MAX_POOL = 2000
VALUES = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "0",
    "-0",
    "-1",
    "1",
    "1e308",
    "-1e308",
    "1e-320",
    "1e400",
    "",
    " ",
    "1 2",
    "1 2 3 4",
    "0 0 0",
    "1e-12 0 0",
    "1e300 1e300 0",
    "abc",
    "0x10",
    "1_0",
    "\u0661",
    "+1",
    "\u22121",
    "1e15",
    "-1e15",
    "3.0e-7",
    "0 0 1",
    "1 1 1",
    "-0.5 0.2 0.1",
]
TYPES = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "spherical", "ball", "", "REVOLUTE"]
TOKENS = [
    b"<",
    b">",
    b"/>",
    b'"',
    b"&",
    b"&amp;",
    b"&lt;",
    b"&#0;",
    b"&#x41;",
    b"&foo;",
    b"<!DOCTYPE r>",
    b"<!ENTITY a 'b'>",
    b"<![CDATA[x]]>",
    b"<?pi x?>",
    b"<!-- c -->",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xef\xbb\xbf",
    b"<link/>",
    b'<link name="x"/>',
    b"<joint/>",
    b"<inertial/>",
    b'<mass value="1"/>',
    b"<robot>",
    b"</robot>",
    b'<inertia ixx="1"/>',
    b"<origin/>",
    b'<axis xyz="0 0 0"/>',
    b'<limit effort="1"/>',
    b'<mimic joint="x"/>',
    b' name="a"',
    b' xmlns:x="u"',
    b"<x:y/>",
    b"\n" * 3,
    b"\t",
]


class Timeout(BaseException):
    """Raised by SIGALRM; a BaseException so that no ``except Exception`` in the loader swallows it."""


def _alarm(signum, frame):
    raise Timeout()


# ---- mutations ----


def _number(rng):
    return repr(rng.choice([-1, 1]) * 10.0 ** rng.uniform(-20, 20))


def _value(rng):
    if rng.random() < 0.6:
        return rng.choice(VALUES)
    return " ".join(_number(rng) for _ in range(rng.choice([1, 3, 3, 2, 4])))


def _names(root, tag):
    return [el.get("name") for el in root.iter(tag) if el.get("name") is not None] or ["ghost"]


def _xml_edit(data, rng):
    """One structural edit of the document, or None if it does not parse."""
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, LookupError, ValueError):  # ValueError, LookupError: odd declared encodings
        return None
    elements = list(root.iter())
    el = rng.choice(elements)
    links, joints = _names(root, "link"), _names(root, "joint")
    edit = rng.randrange(9)
    if edit == 0:  # a number, a count of numbers or a word where a value was
        keys = list(el.attrib) or ["value"]
        el.set(rng.choice(keys), _value(rng))
    elif edit == 1:
        for joint in rng.sample(list(root.iter("joint")), min(2, len(list(root.iter("joint"))))):
            joint.set("type", rng.choice(TYPES))
    elif edit == 2:  # relink: cycles, two parents, several roots, self loops, missing links
        ends = [e for e in root.iter() if e.tag in ("parent", "child", "mimic")]
        if ends:
            end = rng.choice(ends)
            end.set("joint" if end.tag == "mimic" else "link", rng.choice(links + joints + ["ghost"]))
    elif edit == 3:  # rename: duplicates, dangling references
        named = [e for e in elements if e.get("name") is not None]
        if named:
            rng.choice(named).set("name", rng.choice(links + joints + ["", "new"]))
    elif edit == 4 and el is not root:
        for parent in root.iter():
            if el in list(parent):
                parent.remove(el)
                break
    elif edit == 5:  # repeat an element next to itself
        for parent in root.iter():
            if el in list(parent):
                parent.append(copy.deepcopy(el))
                break
    elif edit == 6:  # move an element under another one
        target = rng.choice(elements)
        if el is not root and target is not el and el not in list(target.iter()):
            for parent in root.iter():
                if el in list(parent):
                    parent.remove(el)
                    target.append(el)
                    break
    elif edit == 7:  # a long chain hanging off a random link
        parent = rng.choice(links)
        jtype = rng.choice(TYPES[:6])
        for k in range(rng.choice([2, 50, 250])):
            inertial = ET.SubElement(ET.SubElement(root, "link", name=f"c{k}"), "inertial")
            ET.SubElement(inertial, "mass", value="0.1")
            ET.SubElement(inertial, "inertia", ixx="1e-3", ixy="0", ixz="0", iyy="1e-3", iyz="0", izz="1e-3")
            joint = ET.SubElement(root, "joint", name=f"cj{k}", type=jtype)
            ET.SubElement(joint, "parent", link=parent)
            ET.SubElement(joint, "child", link=f"c{k}")
            ET.SubElement(joint, "origin", xyz="0 0 0.1")
            ET.SubElement(joint, "axis", xyz="1 0 0")
            ET.SubElement(joint, "limit", lower="-1", upper="1", effort="1", velocity="1")
            parent = f"c{k}"
    else:  # an inertial with random numbers
        link = rng.choice(list(root.iter("link")) or [root])
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "mass", value=_value(rng))
        ET.SubElement(inertial, "inertia", {k: _value(rng) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")})
        ET.SubElement(inertial, "origin", xyz=_value(rng), rpy=_value(rng))
    return ET.tostring(root)


def _byte_edit(data, rng, pool):
    n = len(data)
    i, j = sorted(rng.randrange(n + 1) for _ in range(2))
    edit = rng.randrange(7)
    if edit == 0 and n:
        k = rng.randrange(n)
        return data[:k] + bytes([data[k] ^ (1 << rng.randrange(8))]) + data[k + 1 :]
    if edit == 1:
        return data[:i] + data[j:]
    if edit == 2:
        return data[:j] + data[i:j] * rng.choice([1, 2, 10]) + data[j:]
    if edit == 3:
        return data[:i] + rng.choice(TOKENS) + data[i:]
    if edit == 4:  # splice: the head of this input, the tail of another
        other = rng.choice(pool)
        return data[:i] + other[rng.randrange(len(other) + 1) :]
    if edit == 5:  # replace a number
        numbers = list(re.finditer(rb"-?\d+(\.\d+)?(e-?\d+)?", data))
        if numbers:
            m = rng.choice(numbers)
            return data[: m.start()] + _value(rng).encode() + data[m.end() :]
        return data
    depth = rng.choice([10, 1000, 100000])  # deep nesting of unknown elements
    return data[:i] + b"<x>" * depth + b"</x>" * depth + data[i:]


def mutate(data, rng, pool):
    for _ in range(rng.choice([1, 1, 2, 4])):
        try:
            edited = _xml_edit(data, rng) if rng.random() < 0.6 else None
        except RecursionError:  # copying and writing trees recurse; the byte edits nest elements deeply
            edited = None
        data = edited if edited is not None else _byte_edit(data, rng, pool)
    return data


# ---- running one input ----


def _finite_model(model):
    arrays = []
    for joint, X, Y in zip(model.joints, model.placements, model.inertias):
        arrays += [Y.mass, Y.h, Y.I, X.R, X.p, 0.0 if joint.axis is None else joint.axis]
    arrays += [a for f in model.frames for a in (f.placement.R, f.placement.p)]
    return all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in arrays)


def _kind(message):
    """An error message with its names and numbers blanked: the kind of error."""
    return re.sub(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|-?\d[\d.e+-]*", "_", message.split(": ", 1)[-1])[:200]


def run_one(data, timeout):
    """(outcome, failure): outcome 'loaded' or the kind of URDFError; failure None or (signature, text).
    A third of the inputs, by length (so that a saved input replays alike), get a free-flyer root."""
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        model = casrbd.load_urdf(data, floating_base=len(data) % 3 == 0)
    except casrbd.URDFError as e:
        return _kind(str(e)), None
    except Timeout:
        return "timeout", ("Timeout", f"still running after {timeout} s")
    except Exception as e:  # the failures this fuzzer looks for
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return "escaped", (f"{type(e).__name__} at {os.path.basename(tb.filename)}:{tb.lineno}", traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if not _finite_model(model):
        return "non-finite", ("accepted a model with non-finite constants", "")
    return "loaded", None


def seeds():
    paths = [robot_path("arm7")[0]]
    base = example_robot_data_dir()
    if base:
        paths += sorted(
            p
            for p in glob.glob(os.path.join(base, "**", "*.urdf"), recursive=True)
            if os.path.getsize(p) <= MAX_SEED_BYTES
        )
    out = []
    for p in paths:
        with open(p, "rb") as fh:
            out.append(fh.read())
    return out


def fuzz(seconds, seed=0, timeout=10.0, out=None, log=lambda text: print(text, flush=True)):
    """Fuzz for ``seconds``; returns the figures as a dict."""
    rng = random.Random(seed)
    pool = seeds()
    seen_outcomes, failures = set(), {}
    counts = {"loaded": 0, "URDFError": 0, "escaped": 0, "timeout": 0, "non-finite": 0}
    signal.signal(signal.SIGALRM, _alarm)
    start = time.monotonic()
    tried = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # URDFWarning and numpy's are allowed
        while time.monotonic() - start < seconds:
            data = mutate(rng.choice(pool), rng, pool)[:MAX_INPUT_BYTES]
            outcome, failure = run_one(data, timeout)
            tried += 1
            counts[outcome if outcome in counts else "URDFError"] += 1
            if failure and failure[0] not in failures:
                failures[failure[0]] = failure[1]
                log(f"FAILURE {failure[0]}")
                if out:
                    os.makedirs(out, exist_ok=True)
                    stem = os.path.join(out, "crash-" + hashlib.sha1(failure[0].encode()).hexdigest()[:12])
                    with open(stem + ".urdf", "wb") as fh:
                        fh.write(data)
                    with open(stem + ".txt", "w") as fh:
                        fh.write(f"{failure[0]}\n\n{failure[1]}")
            elif outcome not in seen_outcomes and len(pool) < MAX_POOL:
                pool.append(data)
            seen_outcomes.add(outcome)
    return {
        "inputs tried": tried,
        "wall time (s)": round(time.monotonic() - start, 1),
        "inputs per second": round(tried / (time.monotonic() - start), 1),
        **counts,
        "distinct error kinds": len(seen_outcomes - {"loaded", "timeout", "escaped", "non-finite"}),
        "pool size": len(pool),
        "distinct failures": len(failures),
        "failures": sorted(failures),
    }


def fuzz_atheris(seconds, timeout, out):
    """The same inputs and checks driven by libFuzzer through atheris, which keeps the mutants that
    reach new lines (coverage guidance). It prints libFuzzer's figures and stops at the first
    failure, saved as ``out/crash-<sha1>``."""
    import atheris

    pool = seeds()
    corpus = tempfile.mkdtemp(prefix="urdf-corpus-")
    for k, data in enumerate(pool):
        with open(os.path.join(corpus, f"seed{k}.urdf"), "wb") as fh:
            fh.write(data)

    def one_input(data):
        outcome, failure = run_one(data, timeout)
        if failure:
            raise AssertionError(f"{failure[0]}\n{failure[1]}")

    def custom_mutator(data, max_size, seed):
        return mutate(data, random.Random(seed), pool)[:max_size]

    os.makedirs(out, exist_ok=True)
    signal.signal(signal.SIGALRM, _alarm)  # our per-input timeout, in place of libFuzzer's (-timeout=0)
    warnings.simplefilter("ignore")
    atheris.instrument_all()
    atheris.Setup(
        [
            sys.argv[0],
            f"-max_total_time={int(seconds)}",
            "-timeout=0",
            f"-max_len={MAX_INPUT_BYTES}",
            f"-artifact_prefix={out}/",
            "-print_final_stats=1",
            corpus,
        ],
        one_input,
        custom_mutator=custom_mutator,
    )
    atheris.Fuzz()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds one input may take")
    parser.add_argument("--out", default="fuzz-failures", help="folder for failing inputs and tracebacks")
    parser.add_argument("--atheris", action="store_true", help="coverage-guided, through atheris and libFuzzer")
    args = parser.parse_args(argv)
    if args.atheris:
        fuzz_atheris(args.seconds, args.timeout, args.out)
    figures = fuzz(args.seconds, args.seed, args.timeout, args.out)
    print(f"date: {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(f"command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}")
    for key, value in figures.items():
        print(f"{key}: {value}")
    return 1 if figures["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
