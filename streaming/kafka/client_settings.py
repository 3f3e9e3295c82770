"""The Kafka client settings a user gives (`source.kafka`), for each client groupscope drives.

Users copy their Java client's properties (`security.protocol`, `sasl.mechanism`,
`sasl.jaas.config`, `ssl.truststore.location`, ...), so those are the settings' own language:

- Spark's Kafka source (Java) takes them as they are (`java_settings`); kafka-python's names
  (`sasl.plain.username`, `ssl.cafile`, ...), which earlier configs used, are turned into them.
- groupscope's own source, the end-offset poller and the progress client use kafka-python
  (`kafka_python_settings`): a JAAS line of PLAIN or SCRAM becomes a user name and password, a
  PKCS12 or JKS trust or key store is read into memory (streaming/kafka/key_stores.py),
  OAUTHBEARER gets a token provider.
- confluent-kafka (librdkafka, `librdkafka_settings`) gets its own names where they differ.

A setting with no equivalent for a client is refused with what to use instead. Values may name a
secret instead of holding it: `${env:NAME}`, `${file:PATH}` (the file's content) or
`${file:PATH:KEY}` (a key of a properties file, as Kafka's FileConfigProvider reads it),
anywhere in the value (`password="${env:KAFKA_PASSWORD}"` inside a JAAS line). Messages name
settings, never their values.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

from streaming.errors import UserError
from streaming.kafka.key_stores import in_memory, keys_of, librdkafka_tls, ssl_context, trust_of
from streaming.kafka.oauth_tokens import token_provider

_REFERENCE = re.compile(r"\$\{(env|file):([^}]*)\}")
_JAAS = re.compile(r'^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$',
                   re.S)
_JAAS_OPTION = re.compile(r'\s*([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class SettingError(UserError, ValueError):
    """A client setting that cannot be used; the message names it (never its value). A user
    error wherever it is found, also once the job runs (a secret's variable unset, a store that
    cannot be read): one line, no trace."""


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
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        config["ssl_check_hostname"] = algorithm.strip().lower() == "https"
    config.update(_tls_for_kafka_python(settings, config))
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


def _tls_for_kafka_python(settings: Mapping[str, str], config: Mapping[str, Any]
                          ) -> dict[str, Any]:
    """PEM files of the user's by path; a store read here (streaming/kafka/key_stores.py) in
    an SSL context built as kafka-python would build it from its other `ssl_*` settings."""
    trust, keys = trust_of(settings), keys_of(settings)
    if in_memory(trust, keys):
        return {"ssl_context": ssl_context(trust, keys, config.get("ssl_check_hostname", True),
                                           config.get("ssl_crlfile"))}
    out: dict[str, Any] = {}
    if trust is not None:
        out["ssl_cafile"] = trust.cafile
    if keys is not None:
        out.update({"ssl_certfile": keys.certfile, "ssl_keyfile": keys.certfile})
        if keys.password:
            out["ssl_password"] = keys.password
    return out


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
    out.update(librdkafka_tls(trust_of(settings), keys_of(settings)))
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        out["ssl.endpoint.identification.algorithm"] = algorithm.strip().lower() or "none"
    return out
