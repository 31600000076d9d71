"""Identifiers for casadi Functions and generated C from any user name.

Robot, file, frame and contact names come from URDF and MJCF files and may
hold anything: spaces and parentheses (``humanoid (1).xml``), non-ASCII
letters, a trailing underscore. casadi refuses such Function names (it
wants a letter first, then letters, digits and single underscores) and C
refuses them as symbols. ``identifier(*parts)`` joins the parts with ``_``
and returns the join itself when it is already valid, else a readable stem
(accents dropped, every other character replaced by ``_``, runs of ``_``
collapsed) plus ``_`` and 8 hex digits of a hash of the parts: two different
names never share an identifier (but by a hash collision, 1 in 4e9 per pair),
and names that were valid keep their old identifiers.

The original names stay where people read them: casrbd's error messages
and the model's records name the robot, frame and contact as they were given.
"""

import hashlib
import re
import unicodedata

MAX_CHARS = 200  # Function names become C symbols with suffixes, and file names (255 bytes at most)
STEM_CHARS = 120  # the readable part of a hashed name
HASH_CHARS = 8
# what casadi accepts as a Function name (Function::check_name): a letter, then letters, digits and
# underscores, never two underscores in a row; "jac", "hess" and "null" are taken
_CASADI_NAME = re.compile(r"[A-Za-z](?:_?[A-Za-z0-9])*_?\Z")
_CASADI_KEYWORDS = {"jac", "hess", "null"}

C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# C and C++ keywords (the header is includable from C++), the program entry point, and <math.h>,
# which the generated file includes: a Function of one of these names breaks compiling or linking
_KEYWORDS = set(
    """auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
    void volatile while alignas alignof and and_eq asm bitand bitor bool catch char16_t char32_t char8_t class
    compl concept consteval constexpr constinit const_cast co_await co_return co_yield decltype delete
    dynamic_cast explicit export false friend mutable namespace new noexcept not not_eq nullptr operator or
    or_eq private protected public reinterpret_cast requires static_assert static_cast template this
    thread_local throw true try typeid typename using virtual wchar_t xor xor_eq main""".split()
)
_MATH = (
    "acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb ldexp "
    "log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma tgamma ceil "
    "floor nearbyint rint lrint llrint round lround llround trunc fmod remainder remquo copysign nan "
    "nextafter nexttoward fdim fmax fmin fma"
).split()
_MATH_NAMES = {n + s for n in _MATH for s in ("", "f", "l")} | set(
    "isnan isinf isfinite isnormal signbit fpclassify isgreater isgreaterequal isless islessequal "
    "islessgreater isunordered".split()
)


def c_problem(name):
    """Why ``name`` cannot be a symbol of generated C code, or None when it can."""
    if not C_IDENTIFIER.match(name):
        return "it is not a C identifier (letters, digits and '_', not starting with a digit)"
    if name in _KEYWORDS or name in _MATH_NAMES:
        return "it is a C/C++ keyword, 'main' or a <math.h> function"
    if name.startswith("__") or re.match(r"_[A-Z]", name) or name.startswith("casadi_"):
        return "names starting with '__', '_' and a capital, or 'casadi_' are reserved"
    return None


def is_valid(name):
    """Whether ``name`` is both a casadi Function name and a usable C symbol of generated code."""
    return (
        bool(_CASADI_NAME.match(name))
        and not name.endswith("_")  # a suffix added after it (``_work``) would make a double underscore
        and name not in _CASADI_KEYWORDS
        and c_problem(name) is None
        and len(name) <= MAX_CHARS
    )


def identifier(*parts):
    """A valid, collision-free casadi and C identifier for the parts (strings) joined by ``_``."""
    text = "_".join(str(p) for p in parts)
    if is_valid(text):
        return text
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    stem = re.sub(r"[^A-Za-z0-9]+", "_", ascii_text).strip("_")[:STEM_CHARS].rstrip("_")
    if not stem[:1].isalpha():
        stem = "n" + ("_" + stem if stem else "")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    name = f"{stem}_{digest}"
    return name if is_valid(name) else f"n_{name}"  # a reserved prefix (casadi_)
