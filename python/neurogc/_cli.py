"""The ``neurogc`` command and ``python -m neurogc``: both exec the command-line binary.

The command line is a Rust program (``crates/neurogc-cli``), not Python. The wheel ``make wheel``
builds carries it as ``neurogc/bin/neurogc``; this module finds it and replaces the Python process
with it (``execv``), so arguments, exit code and signals are the binary's own.

A wheel built without it (``make setup``'s development wheel, ``pip install .`` from a checkout)
falls back to a ``neurogc`` binary in the environment's scripts folder or on ``PATH``: in
development that is ``.venv/bin/neurogc``, a link to ``target/release/neurogc``. Console scripts
(this module's own wrapper among them) are skipped, so the fallback never runs itself.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

NAME = "neurogc"


def bundled_binary() -> Path:
    """Where the wheel puts the binary (it may be missing: see the module's docstring)."""
    return Path(__file__).resolve().parent / "bin" / NAME


def _is_binary(path: Path) -> bool:
    """An executable ELF file (so never a Python console script, never this launcher)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError:
        return False
    return magic == b"\x7fELF" and os.access(path, os.X_OK)


def _candidates() -> Iterator[Path]:
    yield bundled_binary()
    scripts = sysconfig.get_path("scripts")
    if scripts:
        yield Path(scripts) / NAME
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry:
            yield Path(entry) / NAME


def find_binary() -> Path:
    """The ``neurogc`` binary this package runs; ``FileNotFoundError`` says where it looked."""
    for path in _candidates():
        if _is_binary(path):
            return path
    raise FileNotFoundError(
        f"no neurogc binary: {bundled_binary()} is missing (this install was built without it), "
        "and no neurogc binary is on PATH. Install the wheel `make wheel` builds (dist/), or "
        "build the binary: cargo build --release -p neurogc-cli"
    )


def main() -> None:
    """Execs the binary with this process's arguments; returns only on failure (exit code 127)."""
    try:
        binary = find_binary()
    except FileNotFoundError as exc:
        print(f"neurogc: {exc}", file=sys.stderr)
        sys.exit(127)
    # The binary starts Python programs (collect, bench, demo): the interpreter that has this
    # package installed is the one to use, unless the user chose one.
    os.environ.setdefault("NEUROGC_PYTHON", sys.executable)
    try:
        os.execv(binary, [str(binary), *sys.argv[1:]])
    except OSError as exc:
        print(f"neurogc: cannot run {binary}: {exc}", file=sys.stderr)
        sys.exit(126)
