"""The Prometheus exporter: `/metrics` and `/healthz` over HTTP(S), served from a MonitorView.

`/metrics` renders the view's families directly (see `streaming.exporter.exposition` for why not
through `generate_latest`) and streams them from the render cache, gzipped as they go when the
scraper accepts it (Prometheus does; the large parts the cache keeps gzipped are sent as they
are), with the end of the response marking the end of the body.
`/healthz` answers 200 once the job has caught up with `__consumer_offsets` (groupscope_ready),
503 before. Basic auth, when configured, guards both paths.
"""
from __future__ import annotations

import base64
import hmac
import json
import ssl
import threading
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from streaming.exporter.group_api import group_document, group_name
from streaming.exporter.gzip_member import GzipMember, gzipped, plain
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.view import MonitorView

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class ExporterSettings:
    listen: str = "127.0.0.1:9464"       # metrics.listen
    certfile: str | None = None          # metrics.tls.certfile
    keyfile: str | None = None           # metrics.tls.keyfile
    username: str | None = None          # metrics.basic_auth.username
    password: str | None = None          # metrics.basic_auth.password

    def __post_init__(self) -> None:
        host, sep, port = self.listen.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"metrics.listen must be host:port, got {self.listen!r}")
        if (self.certfile is None) != (self.keyfile is None):
            raise ValueError("metrics.tls needs both certfile and keyfile")
        if (self.username is None) != (self.password is None):
            raise ValueError("metrics.basic_auth needs both username and password")

    @property
    def address(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]"), int(port)


def metrics_app(cache: MetricsCache, settings: ExporterSettings) -> Callable:
    """The WSGI application serving `/metrics` and `/healthz` (of one view, or of every
    cluster's: FleetCache)."""
    views = cache.views

    def app(environ, start_response):
        if settings.username is not None and not _authorised(environ, settings):
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="groupscope"'),
                                                ("Content-Type", "text/plain")])
            return [b"unauthorised\n"]
        path = environ.get("PATH_INFO", "/")
        if path == "/healthz":
            health = [(view.settings.cluster, _health(view)) for view in views]
            healthy = all(said == "ok" for _, said in health)
            start_response("200 OK" if healthy else "503 Service Unavailable",
                           [("Content-Type", "text/plain")])
            if len(health) == 1:
                return [f"{health[0][1]}\n".encode()]
            return ["".join(f"{cluster}: {said}\n" for cluster, said in health).encode()]
        if path in ("/metrics", "/"):
            # `?name[]=x&name[]=y`: those families only, as prometheus-client's handler serves
            names = parse_qs(environ.get("QUERY_STRING", "")).get("name[]")
            pieces = cache.exposition(names, members=True)
            headers = [("Content-Type", CONTENT_TYPE)]
            if "gzip" in environ.get("HTTP_ACCEPT_ENCODING", ""):
                headers.append(("Content-Encoding", "gzip"))
                start_response("200 OK", headers)
                return gzipped(_slices(pieces))
            start_response("200 OK", headers)
            return _as_bytes(plain(pieces))
        group = group_name(path)
        if group is not None:
            # a list, one document per cluster that serves the group (a job may watch several)
            found = [doc for view in views if (doc := group_document(view, group)) is not None]
            if not found:
                start_response("404 Not Found", [("Content-Type", "text/plain")])
                return [f"group {group!r} is not served here\n".encode()]
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(found).encode()]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found: try /metrics, /healthz or /groups/<group>\n"]

    return app


# Refusals of the connection itself (credentials, TLS), by who found them, rather than of an ACL.
_CONNECTION_REFUSALS = ("connect", "admin")


def _health(view: MonitorView) -> str:
    """"ok", or why the view is not to be trusted yet."""
    with view.lock:
        ready, up, polled = view.ready, view.source_up, view.last_poll_s is not None
        refusals, failures = dict(view.source_refusals), view.poll_failures
        seeded = len(view.seeded)
    if view.stopping:
        return "stopping: what is served no longer follows the cluster"
    refused = next((refusals[k] for k in _CONNECTION_REFUSALS if k in refusals), None)
    if refused:
        return f"source refused the connection: {refused}"
    if refusals:
        return f"source not authorized: {next(iter(refusals.values()))}"
    if not up:
        if not polled and not failures:
            return "waiting for the first end-offset poll"
        return "source unreachable: the last end-offset poll failed (the log names the error)"
    if ready:
        return "ok"
    if seeded:
        return (f"catching up on __consumer_offsets; serving {seeded} groups as the Admin API "
                "showed them at launch")
    return "catching up on __consumer_offsets"


_WRITE_SIZE = 1 << 20


def _slices(pieces: Iterable[bytes | memoryview | GzipMember]
            ) -> Iterator[bytes | memoryview | GzipMember]:
    """The lag part (memoryviews of Arrow's buffers, up to a gigabyte at 10^6 partitions) a
    megabyte at a time, so that nothing serving a scrape, compressed or not, allocates more."""
    for piece in pieces:
        if isinstance(piece, memoryview):
            for first in range(0, len(piece), _WRITE_SIZE):
                yield piece[first:first + _WRITE_SIZE]
        elif piece:
            yield piece


def _as_bytes(pieces: Iterable[bytes | memoryview]) -> Iterator[bytes]:
    """WSGI writes bytes only: the lag part's slices are copied out, a megabyte at a time."""
    for piece in _slices(pieces):
        yield piece.tobytes() if isinstance(piece, memoryview) else piece


def _authorised(environ, settings: ExporterSettings) -> bool:
    header = environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        user, _, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    # Compare both parts without short-circuiting, so timing does not reveal which was wrong.
    user_ok = hmac.compare_digest(user.encode(), settings.username.encode())
    password_ok = hmac.compare_digest(password.encode(), settings.password.encode())
    return user_ok and password_ok


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # scrapes every few seconds: no log
        pass


class RunningExporter:
    def __init__(self, server: WSGIServer, thread: threading.Thread, cache: MetricsCache) -> None:
        self.server = server
        self.thread = thread
        self.cache = cache  # give `cache.refresh_if_read` to the end-offset poller as its on_poll

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def start_exporter(view: MonitorView, settings: ExporterSettings | None = None,
                   cache: MetricsCache | None = None) -> RunningExporter:
    """Serve the view in a daemon thread. Port 0 picks a free port (see `.port`)."""
    settings = settings or ExporterSettings()
    cache = cache or MetricsCache(view)
    host, port = settings.address
    server = make_server(host, port, metrics_app(cache, settings), server_class=_ThreadingServer,
                         handler_class=_QuietHandler)
    if settings.certfile is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(settings.certfile, settings.keyfile)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    # serve_forever checks for a stop request between polls: its default half second would make
    # every stop (the job's, on a signal) wait that long; ten wake-ups a second cost nothing.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name="groupscope-exporter", daemon=True)
    thread.start()
    return RunningExporter(server, thread, cache)
