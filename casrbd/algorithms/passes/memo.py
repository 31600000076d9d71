"""One memo per Function build: the passes that a Function and its derivative Functions share.

A build of ``casrbd.function(model, "aba", jacobian="analytical")`` writes aba, its Jacobian, its
adjoint and the adjoint's Jacobian over the same input symbols and the same nominal output ``a``;
each asks for IDSVA's sweep and composites, the second-order kinematics, the tree's placements, the
articulated inertias and the LTDL factors of M at the same arguments (a contact set's Functions: the
solution at the nominal outputs and its first-order derivatives). ``functions.py`` then runs one
common-subexpression pass over all their outputs, which hashes each shared node once. Inside
``sharing()`` a function decorated with ``shared`` computes such a pass once per set of argument
objects (by identity: casadi expressions have no value equality) and hands the same expressions to
every later caller; outside it, every call computes."""

import contextlib
import functools

_active = []  # the memo of the build under way (a stack: builds may nest)


@contextlib.contextmanager
def sharing():
    _active.append({})
    try:
        yield
    finally:
        _active.pop()


def shared(fn):
    @functools.wraps(fn)
    def memoized(*args, **kwargs):
        if not _active:
            return fn(*args, **kwargs)
        memo = _active[-1]
        key = (fn, tuple(map(id, args)), tuple((k, id(x)) for k, x in sorted(kwargs.items())))
        if key not in memo:
            # the arguments are kept with the result, so that their ids stay theirs during the build
            memo[key] = (args, kwargs, fn(*args, **kwargs))
        return memo[key][2]

    return memoized
