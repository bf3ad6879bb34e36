"""Loopback servers for remote loads, shared by
tests/python/test_remote.py and bench/bench_remote.py:

- RangeHTTPServer: serves a dict {path: bytes} over HTTP/1.1 with HEAD and
  single "Range: bytes=a-b" requests (what fsspec's HTTPFileSystem sends),
  counting the body bytes it serves (`served`) and the GETs (`gets`), and
  logging the request target of every request (`paths`).
- CountingProxy: forwards every request to another HTTP server (moto's S3
  server) and counts the body bytes of GET responses: an independent count
  of what an S3 client fetched.
"""
from __future__ import annotations

import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


class _Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.served = 0
        self.gets = 0

    def add(self, n: int) -> None:
        with self.lock:
            self.served += n
            self.gets += 1

    def reset(self) -> None:
        with self.lock:
            self.served = 0
            self.gets = 0


class _Server:
    def start(self, handler):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        # stop() waits for the loop to see the shutdown request, up to one
        # poll interval: 0.5 s by default, half a second per test
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class RangeHTTPServer(_Server, _Counter):
    def __init__(self, files: dict | None = None):
        _Counter.__init__(self)
        self.files = dict(files or {})
        self.paths: list[str] = []  # the request target of every request, as received
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _head(self, send_body: bool):
                with outer.lock:
                    outer.paths.append(self.path)
                data = outer.files.get(self.path.split("?", 1)[0])
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start, end, status = 0, len(data), 200
                rng = self.headers.get("Range")
                if rng:
                    m = _RANGE.match(rng.strip())
                    if not m or int(m.group(1)) >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    start = int(m.group(1))
                    end = min(len(data), int(m.group(2)) + 1) if m.group(2) else len(data)
                    status = 206
                self.send_response(status)
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", str(end - start))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
                self.end_headers()
                if send_body:
                    outer.add(end - start)  # before the body: a client never sees bytes not yet counted
                    self.wfile.write(memoryview(data)[start:end])

            def do_HEAD(self):  # noqa: N802
                self._head(False)

            def do_GET(self):  # noqa: N802
                self._head(True)

        self.start(Handler)


class CountingProxy(_Server, _Counter):
    """Forwards to `target` ("http://host:port"), counting GET response bodies."""

    def __init__(self, target: str):
        _Counter.__init__(self)
        host, port = target.split("://", 1)[1].split(":")
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data) if self.command != "HEAD" else
                                                       resp.getheader("Content-Length") or 0))
                self.end_headers()
                if self.command != "HEAD":
                    if self.command == "GET":
                        outer.add(len(data))  # before the body, as above
                    self.wfile.write(data)
                conn.close()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward  # noqa: N815

        self.start(Handler)
