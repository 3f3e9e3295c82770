"""Trust and key stores as Java clients name them (`ssl.truststore.*`, `ssl.keystore.*`: PEM,
PKCS12, JKS), for the Python clients, which read PEM only.

A PEM store at a path is used where it is. Any other is read here, into memory: kafka-python is
given an `ssl.SSLContext` holding it (`ssl_context`), librdkafka the PEM text (`ssl.ca.pem`,
`ssl.key.pem`, ...). Nothing converted is left on disk: Spark's Python workers end without
running exit handlers, so files written for them outlived every stop. Python's TLS loads a key
from a file only: it is written for that moment, encrypted with a password of its own, in a
private folder (0700) removed at once.

JKS stores are read with purejks (pyjks' pure-Python fork, its module `jks`) where it is
installed; without it they are refused with the keytool command that converts them.
"""
from __future__ import annotations

import os
import secrets
import shutil
import ssl
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Mapping

_JKS_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")  # JKS, JCEKS


@dataclass(frozen=True)
class Trust:
    cafile: str | None = None  # a PEM file of the user's
    cadata: str | None = None  # PEM text read from a store


@dataclass(frozen=True)
class Keys:
    certfile: str | None = None  # a PEM file of the user's (key and chain)
    password: str | None = None  # of the key in it, or of `key_pem`
    key_pem: bytes | None = None  # read from a store: the key, encrypted with `password`
    chain_pem: bytes | None = None


def trust_of(settings: Mapping[str, str]) -> Trust | None:
    """What `ssl.truststore.*` names (a SettingError, naming the setting, when it cannot be
    used)."""
    if "ssl.truststore.certificates" in settings:
        return Trust(cadata=settings["ssl.truststore.certificates"])
    location = settings.get("ssl.truststore.location")
    if location is None:
        return None
    kind = _store_type("ssl.truststore", settings, location)
    if kind == "PEM":
        return Trust(cafile=location)
    _, certificates = _read("ssl.truststore", location, kind,
                            settings.get("ssl.truststore.password"), None, False)
    if not certificates:
        raise _error("kafka.ssl.truststore.location: the store holds no certificate")
    return Trust(cadata=b"".join(_pem(c) for c in certificates).decode("ascii"))


def keys_of(settings: Mapping[str, str]) -> Keys | None:
    """What `ssl.keystore.*` names (mutual TLS)."""
    location = settings.get("ssl.keystore.location")
    if location is None:
        return None
    kind = _store_type("ssl.keystore", settings, location)
    if kind == "PEM":  # Kafka's PEM key store: the key and its certificate chain in one file
        return Keys(certfile=location, password=settings.get("ssl.key.password") or None)
    key, chain = _read("ssl.keystore", location, kind, settings.get("ssl.keystore.password"),
                       settings.get("ssl.key.password"), True)
    from cryptography.hazmat.primitives import serialization

    own = secrets.token_urlsafe(24)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.BestAvailableEncryption(own.encode()))
    return Keys(password=own, key_pem=pem, chain_pem=b"".join(_pem(c) for c in chain))


def in_memory(trust: Trust | None, keys: Keys | None) -> bool:
    """Whether a store was read here (the client then needs it given in memory)."""
    return bool((trust and trust.cadata) or (keys and keys.key_pem))


def ssl_context(trust: Trust | None, keys: Keys | None, check_hostname: bool = True,
                crlfile: str | None = None) -> ssl.SSLContext:
    """The context kafka-python builds from its `ssl_*` settings (its KafkaSSLTransport), from
    these stores."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = check_hostname
    if trust is None:
        context.load_default_certs()
    else:
        context.load_verify_locations(cafile=trust.cafile, cadata=trust.cadata)
    if keys is not None and keys.certfile:
        context.load_cert_chain(keys.certfile, password=keys.password)
    elif keys is not None:
        folder = tempfile.mkdtemp(prefix="groupscope-tls-")  # 0700
        try:
            path = os.path.join(folder, "key.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(keys.key_pem + keys.chain_pem)
            context.load_cert_chain(path, password=keys.password)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if crlfile:
        context.load_verify_locations(crl=crlfile)  # type: ignore[call-arg]
        context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    return context


def librdkafka_tls(trust: Trust | None, keys: Keys | None) -> dict[str, str]:
    """librdkafka's settings for these stores: paths where the user gave PEM files, PEM text
    where a store was read here."""
    out: dict[str, str] = {}
    if trust is not None:
        out.update({"ssl.ca.location": trust.cafile} if trust.cafile
                   else {"ssl.ca.pem": trust.cadata})
    if keys is not None:
        if keys.certfile:
            out.update({"ssl.certificate.location": keys.certfile,
                        "ssl.key.location": keys.certfile})
        else:
            out.update({"ssl.certificate.pem": keys.chain_pem.decode("ascii"),
                        "ssl.key.pem": keys.key_pem.decode("ascii")})
        if keys.password:
            out["ssl.key.password"] = keys.password
    return out


def _store_type(prefix: str, settings: Mapping[str, str], location: str) -> str:
    kind = settings.get(f"{prefix}.type", "").upper()
    try:
        with open(location, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise _error(f"kafka.{prefix}.location: cannot read {location}: {exc.strerror}") from None
    if not kind:
        kind = "PEM" if head.startswith(b"----") else "JKS" if head in _JKS_MAGIC else "PKCS12"
    if kind not in ("PEM", "PKCS12", "JKS", "JCEKS"):
        raise _error(f"kafka.{prefix}.type: PEM, PKCS12 or JKS")
    return kind


# -- reading stores: each once per process (and again when its file changes) -------------------

_read_before: dict[tuple, Any] = {}
_lock = threading.Lock()


def _read(prefix: str, location: str, kind: str, password: str | None,
          key_password: str | None, keys: bool):
    """(key or None, certificates): with `keys`, the store's private key and its chain; else
    None and every certificate it holds."""
    stat = os.stat(location)
    cache_key = (prefix, location, stat.st_mtime_ns, stat.st_size, kind, password,
                 key_password, keys)
    with _lock:
        if cache_key in _read_before:
            return _read_before[cache_key]
    with open(location, "rb") as fh:
        data = fh.read()
    reader = _pkcs12 if kind == "PKCS12" else _jks
    key, certificates = reader(prefix, location, data, password, key_password)
    if keys and key is None:
        raise _error(f"kafka.{prefix}.location: the store holds no private key")
    with _lock:
        _read_before[cache_key] = (key, certificates)
    return key, certificates


def _pkcs12(prefix, location, data, password, key_password):
    from cryptography.hazmat.primitives.serialization import pkcs12

    for candidate in dict.fromkeys((password, key_password)):
        try:
            store = pkcs12.load_pkcs12(data, candidate.encode() if candidate else None)
            break
        except ValueError:
            continue
    else:
        raise _error(f"kafka.{prefix}.location: cannot open the PKCS12 store: wrong or missing "
                    f"{prefix}.password, or not a PKCS12 file")
    certificates = ([store.cert] if store.cert else []) + list(store.additional_certs)
    return store.key, [c.certificate for c in certificates]


def _jks(prefix, location, data, password, key_password):
    try:
        import jks
    except ImportError:
        raise _error(f"kafka.{prefix}.location: a JKS store, which needs purejks here (pip "
                     f"install purejks): or convert it to PKCS12 (keytool -importkeystore "
                     f"-srckeystore {os.path.basename(location)} -destkeystore store.p12 "
                     f"-deststoretype PKCS12), or give PEM ({prefix}.type PEM)") from None
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        # No password: read without checking the store's integrity, as Java does.
        store = jks.KeyStore.loads(data, password or None, try_decrypt_keys=False)
    except Exception:  # noqa: BLE001 - its errors say a wrong password or a bad file
        raise _error(f"kafka.{prefix}.location: cannot open the JKS store: wrong "
                    f"{prefix}.password, or not a JKS file") from None
    entry = next(iter(store.private_keys.values()), None)
    if entry is None:
        return None, [x509.load_der_x509_certificate(e.cert) for e in store.certs.values()]
    for candidate in dict.fromkeys((key_password, password)):
        try:
            entry.decrypt(candidate or "")
            break
        except Exception:  # noqa: BLE001 - the next password, else said below
            continue
    if not entry.is_decrypted():
        raise _error(f"kafka.{prefix}.location: cannot decrypt the JKS store's key: wrong or "
                    f"missing ssl.key.password")
    key = serialization.load_der_private_key(entry.pkey_pkcs8, None)
    return key, [x509.load_der_x509_certificate(der) for _, der in entry.cert_chain]


def _error(message: str) -> Exception:
    from streaming.kafka.client_settings import SettingError

    return SettingError(message)


def _pem(certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return certificate.public_bytes(serialization.Encoding.PEM)
