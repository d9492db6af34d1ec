"""What a benchmark's output was produced from, in the lines every RESULTS.md starts with.

The summarize scripts add these flags (`add_arguments`) and print `lines(...)`: the command, the
commit (`bench/lib.sh`'s `commit_stamp`, "-dirty" with the changes listed in `--dirty`), date,
host and versions. Standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import platform
from pathlib import Path


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--command", required=True, help="the command that produced the output")
    ap.add_argument("--commit", required=True, help="git rev-parse --short HEAD, -dirty if changed")
    ap.add_argument("--dirty", help="file with `git status --porcelain` of the tree at run time")
    ap.add_argument("--versions", required=True, help="the tools measured, with their versions")


def lines(a: argparse.Namespace, built: str) -> list[str]:
    """The provenance lines; `built` names what the uncommitted `crates/` changes went into."""
    now = datetime.datetime.now(datetime.timezone.utc)
    out = [
        f"- Command: `{a.command}`",
        f"- Commit: {a.commit}; date: {now:%Y-%m-%d %H:%M} UTC; host: {platform.node()}, "
        f"{platform.machine()}, 2 CPUs; {a.versions}",
    ]
    dirty = [line[3:] for line in Path(a.dirty).read_text().splitlines()] if a.dirty else []
    if dirty:
        out.append(
            f"- Uncommitted changes in the tree at run time (built into {built} only if under "
            f"`crates/`): {', '.join(f'`{p}`' for p in dirty)}"
        )
    return out
