"""The demo service: the seed's FastAPI app, runnable offline. See ``python -m neurogc.demo --help``."""

from .app import create_app

__all__ = ["create_app"]
