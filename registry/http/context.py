"""What a view needs from the node serving it: found on the current Flask app.

`create_app` puts the node in `app.extensions`; views reach it through these two
functions only, so no module holds global state.
"""
from __future__ import annotations

from flask import current_app

from registry.node import Node
from registry.service import RegistryService

NODE_EXTENSION = "registry.node"


def node() -> Node:
    return current_app.extensions[NODE_EXTENSION]


def service() -> RegistryService:
    return node().service
