"""Loaded by ``neurogc run`` through PYTHONPATH: starts the agent before the user's program runs.
For ``neurogc sweep --step-function MODULE:QUALNAME`` it makes each call of that function a
training step instead (``neurogc.training._step_function``).

If another ``sitecustomize`` exists further down ``sys.path``, it is loaded too, so the program's
own site customisation keeps working.
"""

import importlib.util
import os
import sys


def _chain_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    for entry in rest:
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location(
                "_neurogc_chained_sitecustomize", candidate
            )
            if spec and spec.loader:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


def _start() -> None:
    try:
        from neurogc._agent import _start_from_environment
    except ImportError as exc:
        print(
            f"neurogc: cannot import neurogc in {sys.executable} ({exc}); "
            "running the command without the agent",
            file=sys.stderr,
        )
        return
    _start_from_environment()


def _step_function() -> None:
    if not os.environ.get("NEUROGC_STEP_FUNCTION"):
        return
    try:
        from neurogc.training._step_function import install_from_environment
    except ImportError as exc:
        print(
            f"neurogc: cannot import neurogc.training in {sys.executable} ({exc}); "
            "--step-function ignored, no steps recorded",
            file=sys.stderr,
        )
        return
    install_from_environment()


_chain_next_sitecustomize()
_start()
_step_function()
