"""`/ui`: the operators' web UI, static files shipped in the package (registry/http/ui).

The page is plain HTML, CSS and JavaScript with no build step; in the browser it calls
only the public REST API, with the browser's own credentials. Files are served by
exact name from that one directory (send_from_directory refuses paths leaving it).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, send_from_directory

UI_FILES = Path(__file__).resolve().parent.parent / "ui"

ui_routes = Blueprint("ui", __name__)


@ui_routes.get("/ui")
def ui_index() -> Any:
    return _file("index.html")


@ui_routes.get("/ui/<path:name>")
def ui_file(name: str) -> Any:
    return _file(name)


def _file(name: str) -> Any:
    response = send_from_directory(UI_FILES, name, max_age=0)
    # The page's scripts come from this origin only; nothing may frame it.
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
