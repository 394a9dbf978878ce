"""Worker feature modules. Every module here is registered by ``create_app``.

A module defines ``register(ctx: WorkerContext) -> None`` (topics, tables, agents, timers, web
routes, and hooks on ``ctx.after_screen`` / ``ctx.after_check``) and may define
``topics(settings) -> list[tuple[str, bool]]`` (name, compacted) for ``vigil topics create``.
"""

from __future__ import annotations

import pkgutil

__all__ = ["feature_modules"]


def feature_modules() -> tuple[str, ...]:
    """Dotted names of the feature modules, sorted, so registration order is stable."""
    return tuple(sorted(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__)))
