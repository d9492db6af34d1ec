"""``python -m neurogc.demo --port 8001 --policy P``: the demo service with the agent;
``--no-agent`` without it. Ports as in the seed: with NeuroGC 8001, without 8002."""

from __future__ import annotations

import argparse
import sys


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from .app import DEFAULT_HEAP_OBJECTS, SCENARIOS

    p = argparse.ArgumentParser(prog="python -m neurogc.demo", description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--policy", default="default", help="NeuroGC policy spec (default: default)")
    p.add_argument("--interval", type=float, default=1.0, help="sample interval, seconds")
    p.add_argument("--csv", default=None, help="append samples to this CSV file")
    p.add_argument(
        "--gc-events-csv", default=None, help="append one row per collection to this CSV file"
    )
    p.add_argument("--no-agent", action="store_true", help="run without the NeuroGC agent")
    p.add_argument("--scenario", choices=SCENARIOS, default="seed")
    p.add_argument(
        "--heap-objects",
        type=int,
        default=DEFAULT_HEAP_OBJECTS,
        help=f"long-lived tracked objects for --scenario large-heap (default {DEFAULT_HEAP_OBJECTS:,})",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from ..workloads._base import serve_with_agent
    from .app import create_app

    try:
        app = create_app(args.scenario, args.heap_objects, agent_enabled=not args.no_agent)
        serve_with_agent(app, args)
    except (ValueError, OSError) as exc:
        print(f"neurogc.demo: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
