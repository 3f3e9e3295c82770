"""sample_metrics' page served on 127.0.0.1 (a free port): a scrape target standing in for a
groupscope exporter when a throw-away Prometheus checks dashboards and rules against it."""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from dashboards.sample_metrics import CLUSTER, render


class _Page(BaseHTTPRequestHandler):
    server: "_Server"

    def do_GET(self) -> None:
        if self.path != "/metrics":
            self.send_error(404)
            return
        target = self.server.target
        if target.failing:
            self.send_error(503)
            return
        body = render(time.time() - target.started, time.time(), target.clusters).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:   # one request per second: keep test output clean
        pass


class _Server(ThreadingHTTPServer):
    target: "SampleTarget"


class SampleTarget:
    """Serves the sample page of `clusters` (assign another tuple to serve those from the next
    scrape on) until `stop()`, after which its port refuses connections as a dead exporter's does.
    While `failing` is set, scrapes fail (503), as those of an exporter too loaded to answer in time."""

    def __init__(self, clusters: tuple[str, ...] = (CLUSTER,)) -> None:
        self.clusters = clusters
        self.failing = False
        self.started = time.time()
        self._server = _Server(("127.0.0.1", 0), _Page)
        self._server.target = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        """host:port, as Prometheus labels the target's `instance`."""
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()

    def __enter__(self) -> "SampleTarget":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
