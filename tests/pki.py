"""Certificates made in the test, with `cryptography`: a CA, servers and clients signed by
it, and the files each tool wants (PEM, PKCS12, a JWKS).

    pki = Pki(tmp_path)                       # a CA of its own
    server = pki.issue("localhost", server=True)
    server.pem_bundle                         # certificate chain and key in one PEM file
    server.pkcs12(password="pw")              # the same as a PKCS12 store
    pki.ca_pem                                # what clients trust
"""
from __future__ import annotations

import datetime
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_NOW = datetime.datetime.now(datetime.timezone.utc)


def _name(common_name: str, organization: str = "Registry Tests") -> x509.Name:
    # Most general first, as CAs issue them: RFC 4514 (and Java) then print CN=...,O=...
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@dataclass
class Issued:
    directory: Path
    name: str
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate
    ca: x509.Certificate

    @property
    def cert_pem(self) -> Path:
        path = self.directory / f"{self.name}.crt"
        path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        return path

    def key_pem(self, password: str | None = None) -> Path:
        path = self.directory / f"{self.name}{'-encrypted' if password else ''}.key"
        encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                      else serialization.NoEncryption())
        path.write_bytes(self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                encryption))
        path.chmod(0o600)
        return path

    def pem_bundle(self, password: str | None = None) -> Path:
        """Certificate, CA and key in one PEM file: a PEM keystore (Confluent's and Kafka's)."""
        path = self.directory / f"{self.name}{'-encrypted' if password else ''}.pem"
        encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                      else serialization.NoEncryption())
        path.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM)
                         + self.ca.public_bytes(serialization.Encoding.PEM)
                         + self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  encryption))
        path.chmod(0o600)
        return path

    def pkcs12(self, password: str) -> Path:
        path = self.directory / f"{self.name}.p12"
        path.write_bytes(pkcs12.serialize_key_and_certificates(
            self.name.encode(), self.key, self.certificate, [self.ca],
            serialization.BestAvailableEncryption(password.encode())))
        return path

    @property
    def subject(self) -> str:
        return self.certificate.subject.rfc4514_string()


class Pki:
    def __init__(self, directory: Path, name: str = "Test CA") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        subject = _name(name)
        self.ca = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                   .public_key(self.ca_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(_NOW - datetime.timedelta(days=1))
                   .not_valid_after(_NOW + datetime.timedelta(days=30))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False),
                                  critical=True)
                   .sign(self.ca_key, hashes.SHA256()))
        self._file = name.replace(" ", "-").lower()

    @property
    def ca_pem(self) -> Path:
        path = self.directory / f"{self._file}.crt"
        path.write_bytes(self.ca.public_bytes(serialization.Encoding.PEM))
        return path

    def ca_pkcs12(self, password: str) -> Path:
        path = self.directory / f"{self._file}-truststore.p12"
        path.write_bytes(pkcs12.serialize_key_and_certificates(
            None, None, None, [self.ca], serialization.BestAvailableEncryption(password.encode())))
        return path

    def issue(self, common_name: str, *, organization: str = "Registry Tests",
              hosts: tuple[str, ...] = ("localhost", "127.0.0.1"), days: int = 30) -> Issued:
        """A certificate for `common_name`, good for servers (its `hosts`) and clients alike."""
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = (x509.CertificateBuilder().subject_name(_name(common_name, organization))
                   .issuer_name(self.ca.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(_NOW - datetime.timedelta(days=1))
                   .not_valid_after(_NOW + datetime.timedelta(days=days))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                         ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self.ca_key, hashes.SHA256())
        file_name = "".join(c if c.isalnum() else "-" for c in common_name)
        return Issued(self.directory, file_name, key, certificate, self.ca)


class TokenIssuer:
    """An OAuth issuer of the test's own: RSA keys, a JWKS file, and signed JWTs."""

    def __init__(self, directory: Path, issuer: str = "https://issuer.test", kid: str = "key-1") -> None:
        self.issuer = issuer
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwks_path = directory / "jwks.json"
        self.write_jwks()

    def write_jwks(self, *keys: tuple[str, rsa.RSAPrivateKey]) -> Path:
        entries = []
        for kid, key in ((self.kid, self.key), *keys):
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
            entries.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        self.jwks_path.write_text(json.dumps({"keys": entries}))
        return self.jwks_path

    def token(self, subject: str, *, audience: str | list[str] = "schema-registry", lifetime: int = 300,
              issuer: str | None = None, key: rsa.RSAPrivateKey | None = None, kid: str | None = None,
              **claims: object) -> str:
        now = int(datetime.datetime.now(datetime.timezone.utc).timestamp())
        payload = {"sub": subject, "iss": issuer or self.issuer, "aud": audience, "iat": now,
                   "exp": now + lifetime, **claims}
        return jwt.encode(payload, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})
