"""What the ASGI workloads share: a FastAPI app with ``/health`` whose live set is built at lifespan
start-up (after the agent has started, so start-up collections are recorded, and before the
server accepts connections, so ``/health`` answers only once the workload is ready), and small
helpers to check options."""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from fastapi import FastAPI


def positive(name: str, value: Any, *, minimum: float = 1, integer: bool = True) -> Any:
    """``value`` checked as a number >= ``minimum`` (an int when ``integer``), or ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"option {name}: expected a number, got {value!r}")
    if integer and value != int(value):
        raise ValueError(f"option {name}: expected an integer, got {value!r}")
    if not value >= minimum:
        raise ValueError(f"option {name}: must be >= {minimum:g}, got {value!r}")
    return int(value) if integer else float(value)


def fraction(name: str, value: Any) -> float:
    """``value`` checked as a number in [0, 1], or ValueError."""
    value = positive(name, value, minimum=0, integer=False)
    if value > 1:
        raise ValueError(f"option {name}: must be between 0 and 1, got {value!r}")
    return value


def new_app(
    title: str,
    startup: Callable[[], None] | None = None,
    shutdown: Callable[[], None] | None = None,
) -> FastAPI:
    """A FastAPI app with ``GET /health``; ``startup`` builds the live set at lifespan start-up."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if startup is not None:
            startup()
        try:
            yield
        finally:
            if shutdown is not None:
                shutdown()

    app = FastAPI(title=title, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def serve_with_agent(app: Any, args: Any) -> None:
    """Serves ``app`` with uvicorn on ``args.host:args.port``, with the agent
    (``args.policy``, ``interval``, ``csv``, ``gc_events_csv``) unless ``args.no_agent``. A bad
    policy or output path raises ValueError or OSError before anything is served."""
    import uvicorn

    import neurogc

    if not args.no_agent:
        # The app serves its own routes (the demo's /metrics included); the middleware measures.
        app = neurogc.install(
            app,
            policy=args.policy,
            interval=args.interval,
            csv=args.csv,
            gc_events_csv=args.gc_events_csv,
            metrics_path=None,
        )
    uvicorn.run(
        app, host=args.host, port=args.port, log_level="warning", access_log=False, lifespan="on"
    )
