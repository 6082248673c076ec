"""TLS contexts from Confluent's `ssl.*` settings: for https listeners and for the
client side of node-to-node calls.

    context = server_context(settings.tls)     # an https listener's
    context = client_context(settings.tls)     # forwarding to an https leader (mTLS when a keystore is set)

Key material, as Confluent users have it, minus JKS (refused with a hint to convert):
- `ssl.keystore.type=PEM`: one file holding the certificate chain and the private
  key, encrypted with `ssl.key.password` or not encrypted;
- `ssl.keystore.type=PKCS12` (`.p12`/`.pfx`): opened with `ssl.keystore.password`.
  Python's `ssl` loads keys from files only, so the key is written to a private
  temporary file re-encrypted under a one-time random password, loaded, and the file
  removed at once: the key never touches the disk in clear;
- `ssl.truststore.location`: CA certificates, PEM or PKCS12.
`ssl.enabled.protocols` bounds the TLS versions (TLSv1.2, TLSv1.3);
`ssl.client.authentication` is NONE, REQUESTED (a certificate is asked for and, when
sent, must verify) or REQUIRED; `ssl.endpoint.identification.algorithm=https` (the
default) makes node-to-node calls check the leader's name against its certificate.
"""
from __future__ import annotations

import os
import secrets
import ssl
import tempfile

from registry.settings import ClientAuth, ConfigError, KeyStore, TlsSettings

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_VERIFY = {ClientAuth.NONE: ssl.CERT_NONE, ClientAuth.REQUESTED: ssl.CERT_OPTIONAL,
           ClientAuth.REQUIRED: ssl.CERT_REQUIRED}


def server_context(tls: TlsSettings) -> ssl.SSLContext:
    """The context of an https listener. Raises ConfigError naming what cannot be used."""
    if not tls.keystore.location:
        raise ConfigError("an https listener needs ssl.keystore.location")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _bound_versions(context, tls)
    _load_keystore(context, tls.keystore, tls.key_password)
    if tls.client_auth is not ClientAuth.NONE:
        if not tls.truststore.location:
            raise ConfigError(f"ssl.client.authentication={tls.client_auth.value} needs ssl.truststore.location "
                              "(the CA certificates client certificates must chain to)")
        _load_truststore(context, tls.truststore)
    context.verify_mode = _VERIFY[tls.client_auth]
    context.set_alpn_protocols(["http/1.1"])
    return context


def client_context(tls: TlsSettings) -> ssl.SSLContext:
    """The context for calling another node over https: the truststore (or the
    system's CAs), and the keystore as client certificate when one is set."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _bound_versions(context, tls)
    if tls.truststore.location:
        _load_truststore(context, tls.truststore)
    else:
        context.load_default_certs()
    if tls.keystore.location:
        _load_keystore(context, tls.keystore, tls.key_password)
    context.check_hostname = tls.check_hostname
    return context


def _bound_versions(context: ssl.SSLContext, tls: TlsSettings) -> None:
    versions = sorted(_VERSIONS[p] for p in tls.protocols)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]


# `cryptography` reads PKCS12 stores only: imported when one is loaded, not by every
# registry's start (~50 ms of a cold start, bench/cold_start.py).


def _load_keystore(context: ssl.SSLContext, store: KeyStore, key_password: str) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        if store.type == "PEM":
            # A callable, never None: with None, OpenSSL would prompt on the terminal
            # for the password of an encrypted key, and the server would hang there.
            context.load_cert_chain(store.location, password=lambda: key_password.encode())
            return
        with open(store.location, "rb") as handle:
            data = handle.read()
        key, certificate, chain = pkcs12.load_key_and_certificates(data, store.password.encode() or None)
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise ConfigError(f"ssl.keystore.location {store.location}: cannot load the key and certificate: "
                          f"{exc}") from None
    if key is None or certificate is None:
        raise ConfigError(f"ssl.keystore.location {store.location}: the PKCS12 store holds no private key "
                          "with its certificate")
    one_time = secrets.token_bytes(32)
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    pem += b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    pem += key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.BestAvailableEncryption(one_time))
    handle_fd, path = tempfile.mkstemp(prefix="registry-key-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(handle_fd, "wb") as out:
            out.write(pem)
        context.load_cert_chain(path, password=one_time)
    finally:
        os.unlink(path)


def _load_truststore(context: ssl.SSLContext, store: KeyStore) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        if store.type == "PEM":
            context.load_verify_locations(cafile=store.location)
            return
        with open(store.location, "rb") as handle:
            loaded = pkcs12.load_pkcs12(handle.read(), store.password.encode() or None)
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise ConfigError(f"ssl.truststore.location {store.location}: cannot load CA certificates: {exc}") from None
    certificates = [c.certificate for c in loaded.additional_certs]
    if loaded.cert is not None:
        certificates.append(loaded.cert.certificate)
    if not certificates:
        raise ConfigError(f"ssl.truststore.location {store.location}: no certificates in the store")
    context.load_verify_locations(cadata="".join(
        c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in certificates))
