"""A builder for tests/ocp/test_many.py: casrbd.ocp.reach's problem, whose solve can hang or kill its worker."""

import os
import signal
import time

from casrbd.ocp import reach


def build(marker, solver=None, **parameters):
    """reach.build(**parameters) with a solve that takes ``sleep`` (seconds to sleep first) and ``die``
    (kill the worker process the first time, when the file ``marker`` does not exist yet)."""
    return Faulty(reach.build(solver=solver, **parameters), marker)


class Faulty:
    def __init__(self, problem, marker):
        self.problem, self.marker = problem, marker

    def solve(self, sleep=0.0, die=False, **variation):
        if die and _first(self.marker):
            os.kill(os.getppid(), signal.SIGKILL)  # solve_many runs each solve in a child of the worker
            time.sleep(60)
        time.sleep(sleep)
        return self.problem.solve(**variation)


def _first(marker):
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False
