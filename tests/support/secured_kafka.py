"""The session broker's secured listeners, and the TLS material the test makes for them.

Beside PLAINTEXT (the tests' own way in, as `User:ANONYMOUS`, a super user) the 4.4 session
broker serves:

* `SASL_SSL`: SCRAM-SHA-512 (the user is created at format time, `kafka-storage format
  --add-scram`) and OAUTHBEARER (Kafka's unsecured JWT validator: any unsigned token names its
  `sub` as the principal);
* `SSL` with client certificates required (mutual TLS; the principal is the certificate's CN).

The standard authorizer is on, so every principal but the super users gets only what ACLs grant
(`grant`). Certificates are made here with `cryptography`: a CA, the broker's certificate for
127.0.0.1 and a client certificate, written as PEM (what the broker reads) and as PKCS12 key and
trust stores (what users of Java clients have).
"""
from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

SCRAM_USER = "groupscope"
MTLS_USER = "groupscope-mtls"    # the client certificate's CN
OAUTH_USER = "groupscope-oauth"  # the tokens' `sub`
STORE_PASSWORD = "changeit-test"


@dataclass(frozen=True)
class TlsFiles:
    ca: Path              # the CA's certificate (PEM): the clients' trust
    broker: Path          # the broker's private key and certificate (PEM, one file)
    client_cert: Path     # mutual TLS: the client's certificate (PEM)
    client_key: Path      # ... and its private key (PEM, unencrypted)
    truststore: Path      # the CA as a PKCS12 truststore (STORE_PASSWORD)
    keystore: Path        # the client's key and certificate as a PKCS12 keystore (STORE_PASSWORD)


@dataclass(frozen=True)
class SecuredBroker:
    """Where and how to connect to the secured listeners."""
    plaintext: str        # bootstrap of the super user's listener
    sasl_ssl: str
    ssl: str
    scram_password: str
    tls: TlsFiles


def make_tls(folder: Path) -> TlsFiles:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID
    import ipaddress

    folder.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def issue(subject: str, key, issuer_name, issuer_key, ca: bool = False, san=None):
        builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(issuer_name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(hours=1))
                   .not_valid_after(now + dt.timedelta(days=2))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = issue("groupscope-test-ca", ca_key, name("groupscope-test-ca"), ca_key, ca=True)
    broker_key = ec.generate_private_key(ec.SECP256R1())
    broker = issue("127.0.0.1", broker_key, ca.subject, ca_key,
                   san=[x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = issue(MTLS_USER, client_key, ca.subject, ca_key)

    pem = serialization.Encoding.PEM
    pkcs8 = dict(encoding=pem, format=serialization.PrivateFormat.PKCS8,
                 encryption_algorithm=serialization.NoEncryption())
    files = TlsFiles(ca=folder / "ca.pem", broker=folder / "broker.pem",
                     client_cert=folder / "client.pem", client_key=folder / "client.key",
                     truststore=folder / "truststore.p12", keystore=folder / "client.p12")
    files.ca.write_bytes(ca.public_bytes(pem))
    files.broker.write_bytes(broker_key.private_bytes(**pkcs8) + broker.public_bytes(pem)
                             + ca.public_bytes(pem))
    files.client_cert.write_bytes(client.public_bytes(pem))
    files.client_key.write_bytes(client_key.private_bytes(**pkcs8))
    password = serialization.BestAvailableEncryption(STORE_PASSWORD.encode())
    files.truststore.write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(ca, b"ca")], password))
    files.keystore.write_bytes(pkcs12.serialize_key_and_certificates(
        b"client", client_key, client, [ca], password))
    return files


def secured_settings(folder: Path) -> tuple[dict[str, str], list[str], list[str], str, TlsFiles]:
    """(broker properties, listeners, format arguments, SCRAM password, TLS files) for
    `start_kafka`."""
    tls = make_tls(folder)
    password = secrets.token_urlsafe(16)
    props = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # PLAINTEXT and the controller's listener: the tests, the broker itself.
        "super.users": "User:ANONYMOUS",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.broker),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/$1/,DEFAULT",
    }
    scram = f"SCRAM-SHA-512=[name={SCRAM_USER},password={password}]"
    return props, ["SASL_SSL", "SSL"], ["--add-scram", scram], password, tls


def unsecured_jwt(subject: str, lifetime_s: int = 3600) -> str:
    """An unsigned JWT (`alg: none`), what Kafka's unsecured OAUTHBEARER validator accepts."""
    import base64
    import json
    import time

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + lifetime_s})}."


def grant(bootstrap: str, principal: str, grants: Iterable[tuple[str, ...]]) -> None:
    """ACLs for `principal` (e.g. "User:groupscope"): (resource type TOPIC or GROUP or CLUSTER,
    name, operation[, pattern type LITERAL or PREFIXED]) each, allowed from any host."""
    from kafka import KafkaAdminClient
    from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePattern, ResourceType)

    acls = [ACL(principal, "*", ACLOperation[operation], ACLPermissionType.ALLOW,
                ResourcePattern(ResourceType[kind], name,
                                ACLResourcePatternType[pattern[0] if pattern else "LITERAL"]))
            for kind, name, operation, *pattern in grants]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        result = admin.create_acls(acls)
        if result.get("failed"):
            raise RuntimeError(f"creating ACLs failed: {result['failed']}")
    finally:
        admin.close()


def revoke(bootstrap: str, principal: str) -> None:
    """Every ACL of `principal`."""
    from kafka import KafkaAdminClient
    from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter,
                             ResourceType, ACLResourcePatternType)

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_acls([ACLFilter(principal, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                     ResourcePatternFilter(ResourceType.ANY, None,
                                                           ACLResourcePatternType.ANY))])
    finally:
        admin.close()
