"""The client's configuration: confluent-kafka's keys, checked and typed once.

    config = ClientConfig.from_conf({"url": "http://sr-1:8081,http://sr-2:8081", "timeout": 5})

Keys: ``url`` (required; several nodes separated by commas), ``basic.auth.user.info``,
``basic.auth.credentials.source`` (``USER_INFO``, ``URL`` or ``SASL_INHERIT``),
``sasl.username``/``sasl.password`` (with ``SASL_INHERIT``), ``timeout`` (seconds per
HTTP request, default 10), ``max.retries`` (default 3), ``retries.wait.ms`` (default
1000), ``retries.max.wait.ms`` (default 20000), ``cache.capacity`` (default 1000),
``cache.latest.ttl.sec`` (forever when unset), ``ssl.ca.location``,
``ssl.certificate.location``, ``ssl.key.location``, ``proxy``; and ours,
``url.dead.skip.ms`` (default 10000). The messages of the ValueErrors it raises are
confluent-kafka's, so code that matches on them keeps working.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

Auth = tuple[str, str]

KNOWN_KEYS = frozenset({
    "url", "basic.auth.user.info", "basic.auth.credentials.source", "sasl.username", "sasl.password",
    "timeout", "max.retries", "retries.wait.ms", "retries.max.wait.ms", "cache.capacity",
    "cache.latest.ttl.sec", "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
    "ssl.key.password", "proxy", "url.dead.skip.ms",
})


@dataclass(frozen=True)
class NodeUrl:
    """One registry node: its base URL (credentials taken out) and the basic auth to send it."""

    url: str
    auth: Auth | None


@dataclass(frozen=True)
class ClientConfig:
    """What `SchemaRegistryClient` runs with; build it with `from_conf`."""

    nodes: tuple[NodeUrl, ...]
    timeout: float = 10.0
    max_retries: int = 3
    retries_wait_ms: float = 1000.0
    retries_max_wait_ms: float = 20000.0
    dead_skip_s: float = 10.0
    cache_capacity: int = 1000
    latest_ttl_s: float | None = None
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    proxy: str | None = None

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> ClientConfig:
        """`conf` (confluent-kafka's keys) checked and typed.

        Raises ValueError for an unknown key, a missing or malformed url, inconsistent
        credentials or TLS settings, and TypeError for a number of the wrong type.
        """
        unknown = [k for k in conf if k not in KNOWN_KEYS]
        if unknown:
            raise ValueError(f"Unrecognized properties: {', '.join(unknown)}")
        if conf.get("ssl.key.password") is not None:
            raise ValueError("ssl.key.password is not supported: use an unencrypted key file")
        if conf.get("ssl.key.location") is not None and conf.get("ssl.certificate.location") is None:
            raise ValueError("ssl.certificate.location required when configuring ssl.key.location")
        max_retries = _number(conf, "max.retries", 3)
        capacity = _number(conf, "cache.capacity", 1000)
        nodes = _nodes_from(conf)
        return cls(
            nodes=tuple(nodes),
            # 0 (or None) means the default, as in confluent-kafka.
            timeout=float(_number(conf, "timeout", 10.0) or 10.0),
            max_retries=int(max_retries or 0),
            retries_wait_ms=float(_number(conf, "retries.wait.ms", 1000) or 0),
            retries_max_wait_ms=float(_number(conf, "retries.max.wait.ms", 20000) or 0),
            dead_skip_s=float(_number(conf, "url.dead.skip.ms", 10000) or 0) / 1000.0,
            cache_capacity=max(1, int(capacity or 1000)),
            latest_ttl_s=_number(conf, "cache.latest.ttl.sec", None),
            ca_location=conf.get("ssl.ca.location"),
            certificate_location=conf.get("ssl.certificate.location"),
            key_location=conf.get("ssl.key.location"),
            proxy=conf.get("proxy"),
        )


def _number(conf: Mapping[str, Any], key: str, default: float | None) -> float | None:
    value = conf.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{key} must be a number, not {type(value).__name__}")
    return value


def _nodes_from(conf: Mapping[str, Any]) -> list[NodeUrl]:
    raw = conf.get("url")
    if raw is None:
        raise ValueError("Missing required configuration property url")
    if not isinstance(raw, str):
        raise TypeError(f"url must be a str, not {type(raw).__name__}")
    source = str(conf.get("basic.auth.credentials.source",
                          "USER_INFO" if "basic.auth.user.info" in conf else "URL")).upper()
    if source not in ("URL", "USER_INFO", "SASL_INHERIT"):
        raise ValueError("basic.auth.credentials.source must be one of URL, USER_INFO, SASL_INHERIT")
    shared: Auth | None = None
    if source == "USER_INFO":
        parts = str(conf.get("basic.auth.user.info", "")).split(":", 1)
        if len(parts) != 2:
            raise ValueError("basic.auth.user.info must be in the form of {username}:{password}")
        shared = (parts[0], parts[1])
    elif source == "SASL_INHERIT":
        if "sasl.username" not in conf or "sasl.password" not in conf:
            raise ValueError("SASL_INHERIT needs sasl.username and sasl.password")
        shared = (str(conf["sasl.username"]), str(conf["sasl.password"]))
    nodes = []
    for item in raw.split(","):
        item = item.strip().rstrip("/")
        if not item:
            continue
        if not item.startswith(("http://", "https://")):
            raise ValueError(f"Invalid url {item}")
        parts = urlsplit(item)
        userinfo = None
        if parts.username is not None:
            if source != "URL":
                raise ValueError("basic.auth.user.info configured with userinfo credentials in the URL. "
                                 "Remove userinfo credentials from the url or remove basic.auth.user.info "
                                 "from the configuration")
            userinfo = (unquote(parts.username), unquote(parts.password or ""))
            host = parts.hostname or ""
            netloc = f"[{host}]" if ":" in host else host
            if parts.port is not None:
                netloc += f":{parts.port}"
            item = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        nodes.append(NodeUrl(item, shared if shared is not None else userinfo))
    if not nodes:
        raise ValueError("Missing required configuration property url")
    return nodes
