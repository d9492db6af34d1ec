"""A local upstream for ``/network-heavy``: the seed called a public website; we never leave the
machine. Runs as its own process (so its work does not share the demo's GIL) and exits when its
parent does. Prints its port on the first line of stdout."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MAX_PAYLOAD = 4 << 20


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        query = parse_qs(urlparse(self.path).query)
        try:
            size = min(int(query.get("size", ["65536"])[0]), MAX_PAYLOAD)
        except ValueError:
            self.send_error(400, "size must be an integer")
            return
        body = b"x" * max(size, 0)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _exit_with_parent(parent: int) -> None:
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description="Local upstream for the demo's /network-heavy")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdout.close()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        # SIGINT to the app's process group (how `neurogc bench` stops a server) reaches us
        # too: a stop request, not an error worth a traceback in the server's log.
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
