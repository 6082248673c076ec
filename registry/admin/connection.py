"""From the command line's URL, auth and TLS options to a `registry.client` transport.

The options use confluent-kafka's schema-registry client configuration names
(`--conf basic.auth.user.info=user:secret`, `--conf ssl.ca.location=ca.pem`), with
shorthands for the common ones. `bearer.auth.credentials.source=STATIC_TOKEN` with
`bearer.auth.token` sends `Authorization: Bearer <token>`: the client package does not
take bearer auth yet, so it is set on the transport's session here.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry.client.config import ClientConfig
from registry.client.transport import Transport

BEARER_KEYS = frozenset({"bearer.auth.credentials.source", "bearer.auth.token"})


class ConnectionOptionError(ValueError):
    """The URL, auth or TLS options do not make a valid client configuration."""


def client_conf(url: str, conf_items: list[str], *, user_info: str | None = None,
                bearer_token: str | None = None, ca: str | None = None, cert: str | None = None,
                key: str | None = None, timeout: float | None = None) -> dict[str, Any]:
    """confluent-kafka's client configuration from the command line: `--conf KEY=VALUE`
    items first, then the shorthands (which win). Raises ConnectionOptionError."""
    conf: dict[str, Any] = {}
    for item in conf_items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ConnectionOptionError(f"--conf takes KEY=VALUE, not {item!r}")
        conf[name.strip()] = value
    conf["url"] = url
    if user_info is not None:
        conf["basic.auth.user.info"] = user_info
    if bearer_token is not None:
        conf["bearer.auth.credentials.source"] = "STATIC_TOKEN"
        conf["bearer.auth.token"] = bearer_token
    for name, value in (("ssl.ca.location", ca), ("ssl.certificate.location", cert),
                        ("ssl.key.location", key)):
        if value is not None:
            conf[name] = value
    if timeout is not None:
        conf["timeout"] = timeout
    for name in ("timeout", "max.retries", "retries.wait.ms", "retries.max.wait.ms", "url.dead.skip.ms"):
        if isinstance(conf.get(name), str):
            try:
                conf[name] = float(conf[name]) if "." in conf[name] else int(conf[name])
            except ValueError:
                raise ConnectionOptionError(f"{name} must be a number, not {conf[name]!r}") from None
    return conf


def transport_for(conf: Mapping[str, Any]) -> Transport:
    """A transport to the nodes `conf` names (failover between them, retries as the
    client does). Raises ConnectionOptionError for a configuration the client refuses."""
    plain = {k: v for k, v in conf.items() if k not in BEARER_KEYS}
    token = None
    if conf.get("bearer.auth.credentials.source") is not None:
        if str(conf["bearer.auth.credentials.source"]).upper() != "STATIC_TOKEN":
            raise ConnectionOptionError("bearer.auth.credentials.source: only STATIC_TOKEN is supported")
        token = conf.get("bearer.auth.token")
        if not token:
            raise ConnectionOptionError("bearer.auth.token is required with STATIC_TOKEN")
        if "basic.auth.user.info" in conf:
            raise ConnectionOptionError("give basic auth or a bearer token, not both")
    try:
        config = ClientConfig.from_conf(plain)
    except (ValueError, TypeError) as exc:
        raise ConnectionOptionError(str(exc)) from None
    transport = Transport.from_config(config)
    if token is not None:
        transport.session.headers["Authorization"] = f"Bearer {token}"
    return transport
