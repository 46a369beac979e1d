#!/usr/bin/env python3
"""A webhook receiver for rgbaqd's webhook tests (Python's http.server, no network beyond loopback).

It listens on 127.0.0.1 (a free port, written to --port-file), takes POSTs on any path, and answers the
first --fail of them 500 and the rest 200. Each request is kept: its raw body as DIR/N.body (N = 1, 2,
... in arrival order) and a JSON line in DIR/requests.jsonl with its number, path, headers (names in
lower case) and the status it was answered with, so that a test can check the signature of the exact
bytes received with a tool of its own (OpenSSL's command line).
"""
import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--fail", type=int, default=0, help="answer the first N requests 500")
    args = p.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    lock = threading.Lock()
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                count[0] += 1
                n = count[0]
                status = 500 if n <= args.fail else 200
                with open(os.path.join(args.dir, "%d.body" % n), "wb") as f:
                    f.write(body)
                with open(os.path.join(args.dir, "requests.jsonl"), "a") as f:
                    f.write(json.dumps({"n": n, "path": self.path, "status": status,
                                        "headers": {k.lower(): v for k, v in self.headers.items()}}) + "\n")
            reply = b"failing on purpose\n" if status == 500 else b"ok\n"
            self.send_response(status)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
