"""The group lane's question to the offsets lane, over a socket: the offsets of these groups as
the lane held them before the micro-batch.

The group lane runs in Spark's Python workers (streaming.pipeline.state_stage), the offsets lane
in the driver (streaming.offsets.table). A micro-batch's tasks run while the driver waits for
their output in `foreachBatch`, before it applies the batch's commits to the table, so every
answer is the table as the previous batch left it: what the group lane needs to apply this
batch's records as a reducer fed every commit would. One request per shard that has records other
than commits, for those groups only: a few per rebalance, none for a batch of commits.

The server listens on the driver's address (127.0.0.1 in local mode); a request carries a token
drawn at start, so nothing else on the network can read the offsets.
"""
from __future__ import annotations

import logging
import secrets
import socket
import socketserver
import struct
import threading
from typing import Callable

from coordinator import compact_json
from coordinator.state.lanes import Activity, LaneEntry

log = logging.getLogger("groupscope.job")

_LENGTH = struct.Struct(">I")
LOOKUP_TIMEOUT_S = 120.0


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_LENGTH.pack(len(payload)) + payload)


def _receive(sock: socket.socket) -> bytes:
    head = _exactly(sock, _LENGTH.size)
    return _exactly(sock, _LENGTH.unpack(head)[0])


def _exactly(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("the offsets lane closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


Answer = tuple[dict[str, list[LaneEntry]], dict[str, Activity]]


def encode_answer(answer: Answer) -> bytes:
    entries, activity = answer
    return compact_json.dumps_bytes({
        "entries": {g: [[e.topic, e.partition, list(e.entry)] for e in rows]
                    for g, rows in entries.items()},
        "activity": {g: list(a) for g, a in activity.items()}})


def decode_answer(payload: bytes) -> Answer:
    data = compact_json.loads(payload)
    return ({g: [LaneEntry(t, p, tuple(entry)) for t, p, entry in rows]
             for g, rows in data["entries"].items()},
            {g: Activity(*a) for g, a in data["activity"].items()})


class LookupServer:
    """Answers the group lane's look-ups with `answer(groups)` (the caller holds its own lock)."""

    def __init__(self, answer: Callable[[list[str]], Answer], host: str = "127.0.0.1") -> None:
        self.token = secrets.token_hex(16)
        token = self.token.encode()
        ask = answer

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock = self.request
                try:
                    if _receive(sock) != token:
                        return
                    while True:
                        groups = compact_json.loads(_receive(sock))
                        _send(sock, encode_answer(ask(list(groups))))
                except (ConnectionError, OSError):
                    return
                except Exception:  # a defect: the task fails and says so
                    log.exception("offsets lane look-up failed")

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server((host, 0), Handler)
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(target=self._server.serve_forever, name="offsets-lookup",
                                        daemon=True)
        self._thread.start()

    def client(self) -> "LookupClient":
        return LookupClient(self.host, self.port, self.token)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class LookupClient:
    """The group lane's side: picklable (it travels with the processor to Spark's workers), and
    connects on first use in each worker."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token
        self._sock: socket.socket | None = None

    def __getstate__(self) -> dict:
        return {"host": self.host, "port": self.port, "token": self.token}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["host"], state["port"], state["token"])

    def lookup(self, groups: list[str]) -> Answer:
        for attempt in (1, 2):  # once more on a fresh connection: the last one may be stale
            try:
                sock = self._connect()
                _send(sock, compact_json.dumps_bytes(groups))
                return decode_answer(_receive(sock))
            except (ConnectionError, OSError):
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection((self.host, self.port), timeout=LOOKUP_TIMEOUT_S)
            _send(sock, self.token.encode())
            self._sock = sock
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None


def driver_host(spark) -> str:
    """Where Spark's executors reach the driver: loopback in local mode."""
    context = spark.sparkContext
    if context.master.startswith("local"):
        return "127.0.0.1"
    return context.getConf().get("spark.driver.host", socket.gethostname())
