"""The reviewer web page: one server-rendered HTML shell plus a small script and style sheet.

No build step: the files under ``services/review/static/`` are served as they are (package
data). The shell holds no data; the script asks the API with the Bearer token the reviewer typed
once (kept in ``sessionStorage``). Chat text only ever enters the page as DOM text nodes, and the
Content-Security-Policy forbids inline scripts and any other origin.
"""

from __future__ import annotations

import html
from functools import cache
from importlib.resources import files

from aiohttp import web

__all__ = ["SECURITY_HEADERS", "page_routes", "render_page"]

_STATIC = files("services.review") / "static"
_ASSETS = {"review.js": "text/javascript", "review.css": "text/css"}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


@cache
def _asset(name: str) -> str:
    return (_STATIC / name).read_text(encoding="utf-8")


def render_page(prefix: str = "/review") -> str:
    prefix = prefix.rstrip("/")
    return (
        _asset("review.html")
        .replace("{{api}}", html.escape(f"{prefix}/api"))
        .replace("{{static}}", html.escape(f"{prefix}/static"))
    )


def page_routes(prefix: str = "/review") -> list[web.RouteDef]:
    """``GET {prefix}/`` (the page) and ``GET {prefix}/static/{name}`` (its two assets)."""
    prefix = prefix.rstrip("/")
    page = render_page(prefix)

    async def index(request: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html", headers=SECURITY_HEADERS)

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in _ASSETS:
            raise web.HTTPNotFound()
        return web.Response(text=_asset(name), content_type=_ASSETS[name], headers=SECURITY_HEADERS)

    return [
        web.get(f"{prefix}/", index),
        web.get(prefix, index),
        web.get(f"{prefix}/static/{{name}}", asset),
    ]
