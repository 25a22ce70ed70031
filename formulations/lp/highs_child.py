"""The HiGHS child process: ``python -m formulations.lp.highs_child FD``.

Started by :func:`formulations.lp.highs_runner.solve_highs` for large models. A fresh interpreter
that imports this package only, never the caller's ``__main__`` (see the runner's docstring),
reads one pickled job from stdin and streams its events and result to the pipe ``FD``.
"""

from __future__ import annotations

import sys

from formulations.lp.highs_runner import child_main

if __name__ == "__main__":
    sys.exit(child_main(int(sys.argv[1])))
