"""The REST resources, grouped as Confluent groups them. Each view only translates."""
from registry.http.routes.associations import association_routes
from registry.http.routes.cluster import cluster_routes
from registry.http.routes.config import config_routes
from registry.http.routes.contexts import context_routes
from registry.http.routes.imports import import_routes
from registry.http.routes.observability import observability_routes
from registry.http.routes.schemas import DIRECT as SCHEMA_DIRECT, schema_routes
from registry.http.routes.subjects import DIRECT as SUBJECT_DIRECT, DIRECT_ON_LOOP as SUBJECT_ON_LOOP, subject_routes
from registry.http.routes.ui import ui_routes

BLUEPRINTS = (subject_routes, schema_routes, config_routes, context_routes, association_routes, cluster_routes,
              import_routes, observability_routes, ui_routes)

# Requests the bridge answers without Flask, by method and endpoint, with the same view
# function as Flask (registry.http.direct).
DIRECT_VIEWS = {**SUBJECT_DIRECT, **SCHEMA_DIRECT}
DIRECT_VIEWS_ON_LOOP = {**SUBJECT_ON_LOOP}

__all__ = ["BLUEPRINTS", "DIRECT_VIEWS", "DIRECT_VIEWS_ON_LOOP"]
