"""The Kafka client settings a user gives (`source.kafka`), for each client groupscope drives.

Users copy their Java client's properties (`security.protocol`, `sasl.mechanism`,
`sasl.jaas.config`, `ssl.truststore.location`, ...), so those are the settings' own language:

- Spark's Kafka source (Java) takes them as they are (`java_settings`); kafka-python's names
  (`sasl.plain.username`, `ssl.cafile`, ...), which earlier configs used, are turned into them.
- groupscope's own source, the end-offset poller and the progress client use kafka-python
  (`kafka_python_settings`): a JAAS line of PLAIN or SCRAM becomes a user name and password, a
  PKCS12 trust or key store becomes PEM files, OAUTHBEARER gets a token provider.
- confluent-kafka (librdkafka, `librdkafka_settings`) gets its own names where they differ.

A setting with no equivalent for a client is refused with what to use instead. Values may name a
secret instead of holding it: `${env:NAME}`, `${file:PATH}` (the file's content) or
`${file:PATH:KEY}` (a key of a properties file, as Kafka's FileConfigProvider reads it),
anywhere in the value (`password="${env:KAFKA_PASSWORD}"` inside a JAAS line). Messages name
settings, never their values.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import threading
from typing import Any, Mapping

from streaming.kafka.oauth_tokens import token_provider

_REFERENCE = re.compile(r"\$\{(env|file):([^}]*)\}")
_JAAS = re.compile(r'^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$',
                   re.S)
_JAAS_OPTION = re.compile(r'\s*([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_JKS_MAGIC = b"\xfe\xed\xfe\xed"


class SettingError(ValueError):
    """A client setting that cannot be used; the message names it (never its value)."""


# -- secrets ----------------------------------------------------------------------------------

def resolve_secrets(settings: Mapping[str, Any]) -> dict[str, str]:
    """`settings` with every `${env:...}` and `${file:...}` replaced by what it names."""
    return {name: _resolve(name, str(value)) for name, value in settings.items()}


def _resolve(name: str, value: str) -> str:
    def replace(match: re.Match) -> str:
        kind, ref = match.group(1), match.group(2)
        if kind == "env":
            if ref not in os.environ:
                raise SettingError(f"kafka.{name}: environment variable {ref} is not set")
            return os.environ[ref]
        path, key = ref, None
        if not os.path.isfile(path) and ":" in ref:
            path, key = ref.rsplit(":", 1)
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise SettingError(f"kafka.{name}: cannot read {path}: {exc.strerror}") from None
        if key is None:
            return text.rstrip("\r\n")
        found = _properties(text).get(key)
        if found is None:
            raise SettingError(f"kafka.{name}: {path} has no key {key}")
        return found

    return _REFERENCE.sub(replace, value)


def _properties(text: str) -> dict[str, str]:
    """A Java properties file's `key=value` (or `key: value`) lines; no continuation lines."""
    found = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        found[match.group(1) if match else line] = match.group(2) if match else ""
    return found


# -- JAAS -------------------------------------------------------------------------------------

def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """(login module class, its options) of a one-module JAAS line, as Kafka clients take it."""
    match = _JAAS.match(text)
    if not match:
        raise SettingError("kafka.sasl.jaas.config: expected '<LoginModule class> required "
                           "key=\"value\" ...;'")
    options, rest = {}, match.group(3)
    position = 0
    while position < len(rest):
        option = _JAAS_OPTION.match(rest, position)
        if not option:
            if rest[position:].strip(" ;"):
                raise SettingError("kafka.sasl.jaas.config: cannot read the options after the "
                                   "login module (key=\"value\" pairs)")
            break
        quoted = option.group(2)
        options[option.group(1)] = (re.sub(r"\\(.)", r"\1", quoted) if quoted is not None
                                    else option.group(3))
        position = option.end()
    return match.group(1), options


def jaas_line(module: str, options: Mapping[str, str]) -> str:
    quoted = " ".join(f'{k}="{_escape(v)}"' for k, v in options.items())
    return f"{module} required {quoted};"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


# -- Spark's Kafka source (Java) ---------------------------------------------------------------

def java_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """Kafka's Java client settings: Java names kept, kafka-python's turned into them."""
    out = {k: v for k, v in settings.items() if not k.startswith(("sasl.plain.", "ssl.cafile",
                                                                   "ssl.certfile", "ssl.keyfile",
                                                                   "ssl.password",
                                                                   "ssl.check.hostname"))}
    if "sasl.plain.username" in settings and "sasl.jaas.config" not in settings:
        mechanism = settings.get("sasl.mechanism", "PLAIN").upper()
        module = SCRAM_MODULE if mechanism.startswith("SCRAM-") else PLAIN_MODULE
        out["sasl.jaas.config"] = jaas_line(module, {
            "username": settings["sasl.plain.username"],
            "password": settings.get("sasl.plain.password", "")})
    if "ssl.cafile" in settings and "ssl.truststore.location" not in settings:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = settings["ssl.cafile"]
    if "ssl.certfile" in settings and "ssl.keystore.location" not in settings:
        # Java's PEM key store wants the key unencrypted or with ssl.key.password, in one value.
        out["ssl.keystore.type"] = "PEM"
        out["ssl.keystore.certificate.chain"] = _read_text("ssl.certfile", settings["ssl.certfile"])
        out["ssl.keystore.key"] = _read_text("ssl.keyfile",
                                             settings.get("ssl.keyfile", settings["ssl.certfile"]))
        if "ssl.password" in settings:
            out["ssl.key.password"] = settings["ssl.password"]
    if str(settings.get("ssl.check.hostname", "true")).lower() in ("false", "0", "no"):
        out.setdefault("ssl.endpoint.identification.algorithm", "")
    return out


def _read_text(name: str, path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise SettingError(f"kafka.{name}: cannot read {path}: {exc.strerror}") from None


# -- kafka-python -----------------------------------------------------------------------------

# Java settings kafka-python has under another name.
_KAFKA_PYTHON_NAMES = {"sasl.mechanism": "sasl_mechanism", "security.protocol": "security_protocol"}
# Java settings with no kafka-python equivalent, and what to do instead.
_NO_EQUIVALENT = {
    "sasl.login.callback.handler.class": "a Java class cannot run in groupscope's kafka-python "
                                         "source: use source.type kafka (Spark's Java source)",
    "sasl.client.callback.handler.class": "a Java class cannot run in groupscope's kafka-python "
                                          "source: use source.type kafka (Spark's Java source)",
    "ssl.keystore.key": "write the key and certificate to a PEM file: ssl.keystore.location "
                        "with ssl.keystore.type PEM",
    "ssl.keystore.certificate.chain": "write the key and certificate to a PEM file: "
                                      "ssl.keystore.location with ssl.keystore.type PEM",
}
# Settings of a Java client's properties that tune what groupscope's Python clients do not do
# (a producer's, the Java DNS resolver's): copied along with the rest, they change nothing here.
_JAVA_ONLY = {"client.dns.lookup", "acks", "linger.ms", "batch.size", "compression.type",
              "enable.idempotence", "retries", "delivery.timeout.ms"}
_HANDLED = {"sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.type",
            "ssl.truststore.password", "ssl.truststore.certificates", "ssl.keystore.location",
            "ssl.keystore.type", "ssl.keystore.password", "ssl.key.password",
            "ssl.endpoint.identification.algorithm", "sasl.oauthbearer.token.endpoint.url",
            "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name",
            "sasl.kerberos.service.name"}


def kafka_python_settings(settings: Mapping[str, str], known: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for kafka-python from Java (or kafka-python) setting names; `known`
    is kafka-python's DEFAULT_CONFIG, which gives each setting's type."""
    config: dict[str, Any] = {}
    for name, value in settings.items():
        if name in _NO_EQUIVALENT:
            raise SettingError(f"kafka.{name}: no equivalent in kafka-python; {_NO_EQUIVALENT[name]}")
        if name in _HANDLED or name in _JAVA_ONLY:
            continue
        key = _KAFKA_PYTHON_NAMES.get(name, name.replace(".", "_"))
        if key not in known:
            raise SettingError(f"kafka.{name}: neither a Kafka client setting kafka-python has "
                               f"nor one of its own ({key})")
        config[key] = _typed(value, known[key])
    mechanism = str(settings.get("sasl.mechanism", "")).upper()
    if "sasl.jaas.config" in settings:
        config.update(_jaas_for_kafka_python(settings, mechanism))
    elif mechanism == "OAUTHBEARER":
        raise SettingError("kafka.sasl.mechanism OAUTHBEARER needs kafka.sasl.jaas.config "
                           f"({OAUTH_MODULE} required clientId=... clientSecret=...; with "
                           "kafka.sasl.oauthbearer.token.endpoint.url)")
    if "sasl.kerberos.service.name" in settings:
        config["sasl_kerberos_service_name"] = settings["sasl.kerberos.service.name"]
    config.update(_trust_for_kafka_python(settings))
    config.update(_keys_for_kafka_python(settings))
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        config["ssl_check_hostname"] = algorithm.strip().lower() == "https"
    return config


def _typed(value: Any, default: Any) -> Any:
    """kafka-python wants ints and bools where settings arrive as strings."""
    if isinstance(default, bool):
        return str(value).lower() in ("1", "true", "yes")
    if isinstance(default, int):
        try:
            return int(value)
        except ValueError:
            raise SettingError("a setting that takes a whole number got something else") from None
    return value


def _jaas_for_kafka_python(settings: Mapping[str, str], mechanism: str) -> dict[str, Any]:
    module, options = parse_jaas(settings["sasl.jaas.config"])
    if module in (PLAIN_MODULE, SCRAM_MODULE):
        if "username" not in options or "password" not in options:
            raise SettingError("kafka.sasl.jaas.config: the login module needs username and "
                               "password")
        return {"sasl_plain_username": options["username"],
                "sasl_plain_password": options["password"]}
    if module == OAUTH_MODULE:
        if mechanism != "OAUTHBEARER":
            raise SettingError("kafka.sasl.jaas.config: OAuthBearerLoginModule goes with "
                               "kafka.sasl.mechanism OAUTHBEARER")
        return {"sasl_oauth_token_provider": token_provider(
            options, settings.get("sasl.oauthbearer.token.endpoint.url"),
            settings.get("sasl.oauthbearer.scope.claim.name", "scope"),
            settings.get("sasl.oauthbearer.sub.claim.name", "sub"))}
    raise SettingError(f"kafka.sasl.jaas.config: login module {module} has no equivalent in "
                       f"kafka-python (PlainLoginModule, ScramLoginModule and "
                       f"OAuthBearerLoginModule have); use source.type kafka for it")


def _trust_for_kafka_python(settings: Mapping[str, str]) -> dict[str, Any]:
    if "ssl.truststore.certificates" in settings:
        return {"ssl_cafile": _written("truststore.pem",
                                       settings["ssl.truststore.certificates"].encode())}
    location = settings.get("ssl.truststore.location")
    if location is None:
        return {}
    kind = _store_type("ssl.truststore", settings, location)
    if kind == "PEM":
        return {"ssl_cafile": location}
    return {"ssl_cafile": _pkcs12_to_pem("ssl.truststore", location,
                                         settings.get("ssl.truststore.password"), keys=False)}


def _keys_for_kafka_python(settings: Mapping[str, str]) -> dict[str, Any]:
    location = settings.get("ssl.keystore.location")
    if location is None:
        return {}
    kind = _store_type("ssl.keystore", settings, location)
    if kind == "PEM":  # Kafka's PEM key store: the key and its certificate chain in one file
        config = {"ssl_certfile": location, "ssl_keyfile": location}
        if settings.get("ssl.key.password"):
            config["ssl_password"] = settings["ssl.key.password"]
        return config
    password = settings.get("ssl.keystore.password")
    path, key_password = _pkcs12_to_pem("ssl.keystore", location, password, keys=True,
                                        key_password=settings.get("ssl.key.password"))
    return {"ssl_certfile": path, "ssl_keyfile": path, "ssl_password": key_password}


def _store_type(prefix: str, settings: Mapping[str, str], location: str) -> str:
    kind = settings.get(f"{prefix}.type", "").upper()
    try:
        with open(location, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise SettingError(f"kafka.{prefix}.location: cannot read {location}: "
                           f"{exc.strerror}") from None
    if kind == "JKS" or head == _JKS_MAGIC:
        raise SettingError(f"kafka.{prefix}.location: a JKS store, which only Java reads: "
                           f"convert it to PKCS12 (keytool -importkeystore -srckeystore "
                           f"{os.path.basename(location)} -destkeystore store.p12 "
                           f"-deststoretype PKCS12) or give PEM ({prefix}.type PEM)")
    if not kind:
        kind = "PEM" if head.startswith(b"----") else "PKCS12"
    if kind not in ("PEM", "PKCS12"):
        raise SettingError(f"kafka.{prefix}.type: PEM or PKCS12 (JKS converts to PKCS12 with "
                           f"keytool -importkeystore)")
    return kind


# -- files made from stores: one private folder per process, gone when it ends -----------------

_made: dict[tuple, Any] = {}
_made_lock = threading.Lock()
_folder: str | None = None


def _private_folder() -> str:
    global _folder
    if _folder is None:
        _folder = tempfile.mkdtemp(prefix="groupscope-tls-")  # mode 0700
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def _written(name: str, data: bytes) -> str:
    with _made_lock:
        key = ("data", name, data)
        if key not in _made:
            path = os.path.join(_private_folder(), f"{len(_made)}-{name}")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            _made[key] = path
        return _made[key]


def _pkcs12_to_pem(prefix: str, location: str, password: str | None, keys: bool,
                   key_password: str | None = None):
    """A PKCS12 store's certificates as a PEM file; with `keys`, (a PEM file of its key,
    encrypted with a password of its own, and certificate chain, that password)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    stat = os.stat(location)
    cache_key = (prefix, location, stat.st_mtime_ns, stat.st_size, password, keys)
    with _made_lock:
        if cache_key in _made:
            return _made[cache_key]
    with open(location, "rb") as fh:
        data = fh.read()
    store = None
    for candidate in dict.fromkeys((password, key_password)):
        try:
            store = pkcs12.load_pkcs12(data, candidate.encode() if candidate else None)
            break
        except ValueError:
            continue
    if store is None:
        raise SettingError(f"kafka.{prefix}.location: cannot open the PKCS12 store: wrong or "
                           f"missing {prefix}.password, or not a PKCS12 file")
    certificates = ([store.cert] if store.cert else []) + list(store.additional_certs)
    chain = b"".join(c.certificate.public_bytes(serialization.Encoding.PEM)
                     for c in certificates)
    if not keys:
        if not chain:
            raise SettingError(f"kafka.{prefix}.location: the store holds no certificate")
        result: Any = _written("truststore.pem", chain)
    else:
        if store.key is None:
            raise SettingError(f"kafka.{prefix}.location: the store holds no private key")
        import secrets
        own = secrets.token_urlsafe(24)
        key = store.key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.BestAvailableEncryption(own.encode()))
        result = (_written("keystore.pem", key + chain), own)
    with _made_lock:
        _made[cache_key] = result
    return result


# -- librdkafka (confluent-kafka) --------------------------------------------------------------

def librdkafka_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """librdkafka's names for the Java settings it names otherwise; the rest as given."""
    out = {k: v for k, v in settings.items() if k not in _HANDLED}
    if "sasl.mechanism" in out:
        out["sasl.mechanisms"] = out.pop("sasl.mechanism")
    if "sasl.jaas.config" in settings:
        module, options = parse_jaas(settings["sasl.jaas.config"])
        if module in (PLAIN_MODULE, SCRAM_MODULE):
            out["sasl.username"] = options.get("username", "")
            out["sasl.password"] = options.get("password", "")
        elif module == OAUTH_MODULE and "clientId" in options:
            out.update({"sasl.oauthbearer.method": "oidc",
                        "sasl.oauthbearer.client.id": options["clientId"],
                        "sasl.oauthbearer.client.secret": options.get("clientSecret", "")})
            if "scope" in options:
                out["sasl.oauthbearer.scope"] = options["scope"]
            if settings.get("sasl.oauthbearer.token.endpoint.url"):
                out["sasl.oauthbearer.token.endpoint.url"] = \
                    settings["sasl.oauthbearer.token.endpoint.url"]
        else:
            raise SettingError(f"kafka.sasl.jaas.config: login module {module} has no "
                               f"equivalent in librdkafka; use source.client kafka-python")
    trust = _trust_for_kafka_python(settings).get("ssl_cafile")
    if trust:
        out["ssl.ca.location"] = trust
    if "ssl.keystore.location" in settings:
        keys = _keys_for_kafka_python(settings)
        out["ssl.certificate.location"] = keys["ssl_certfile"]
        out["ssl.key.location"] = keys["ssl_keyfile"]
        if keys.get("ssl_password"):
            out["ssl.key.password"] = keys["ssl_password"]
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        out["ssl.endpoint.identification.algorithm"] = algorithm.strip().lower() or "none"
    return out
