#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, for rgbaq model pull's tests (no network there).

It serves one model folder as repo REPO at commit COMMIT, the way huggingface_hub's file_download.py
expects the Hub to: /api/models/REPO/revision/REV?blobs=true (the commit and the listing, with each
LFS file's sha256), /REPO/resolve/REV/PATH (a small file itself, with ETag = its git blob id; an LFS
file (*.safetensors, any over 10 MB) as a 302 to a second server on another port, the "CDN", with X-Linked-Etag =
its sha256 and X-Linked-Size), X-Repo-Commit on both, Range requests. Faults on request: a token the
Hub host demands (401 without or with another, 403 for one that has not accepted the licence), a
connection dropped half way through each LFS file's first transfer, one file's first transfer slow, a byte of
one file corrupted, a file served as a plain (non-LFS) one whatever its size; and a hostile listing: a file's
listed ETag (blobId or lfs.sha256, which the resolve/ answer's headers then echo, as a consistent hostile
server would) or listed size replaced, extra files listed under any path. Every request is logged as a
JSON line (server, method, path, authorization, range), and manifest.json beside the port file gives
each file's hashes, computed here with hashlib.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--commit", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--token")
    p.add_argument("--token-unaccepted")
    p.add_argument("--drop-after", type=int, default=0, help="close each LFS file's first transfer after N bytes")
    p.add_argument("--slow", help="a file whose first transfer is sent slowly (50 KiB/s)")
    p.add_argument("--corrupt", help="a file whose bytes are served with one byte changed")
    p.add_argument("--not-lfs", action="append", default=[], help="a file the Hub serves itself (no LFS), whatever its size")
    p.add_argument("--listed-etag", action="append", default=[], help="PATH=ETAG: the blobId (or lfs.sha256) listed and sent")
    p.add_argument("--listed-size", action="append", default=[], help="PATH=N: the size listed (size and lfs.size)")
    p.add_argument("--list-extra", action="append", default=[], help="a file listed (and served: b'x') with this path")
    return p.parse_args()


ARGS = parse_args()
FILES = {}
for dirpath, _, names in os.walk(ARGS.root):
    for name in names:
        full = os.path.join(dirpath, name)
        rel = os.path.relpath(full, ARGS.root).replace(os.sep, "/")
        data = open(full, "rb").read()
        entry = {
            "data": data,
            "size": len(data),
            # the Hub keeps files over 10 MB in LFS
            "lfs": rel not in ARGS.not_lfs and (rel.endswith(".safetensors") or len(data) > 10 * 1000 * 1000),
            "sha256": hashlib.sha256(data).hexdigest(),
            "blob_id": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
        }
        if rel == ARGS.corrupt:
            bad = bytearray(data)
            bad[len(bad) // 2] ^= 0x01
            entry["served"] = bytes(bad)
            entry["served_sha256"] = hashlib.sha256(bad).hexdigest()
        else:
            entry["served"] = data
        FILES[rel] = entry
for rel in ARGS.list_extra:
    FILES[rel] = {"data": b"x", "served": b"x", "size": 1, "lfs": False, "sha256": hashlib.sha256(b"x").hexdigest(),
                  "blob_id": hashlib.sha1(b"blob 1\0x").hexdigest()}
LISTED_ETAG = dict(a.split("=", 1) for a in ARGS.listed_etag)
LISTED_SIZE = {k: int(v) for k, v in (a.split("=", 1) for a in ARGS.listed_size)}


def listed_etag(rel):
    e = FILES[rel]
    return LISTED_ETAG.get(rel, e["sha256"] if e["lfs"] else e["blob_id"])


BY_SHA = {e["sha256"]: e for e in FILES.values()}
LOG_LOCK = threading.Lock()
FIRST_SEEN = set()  # files (LFS: by sha256, others: by path) whose first transfer has happened (for the faults)
LOG = open(ARGS.log, "a", buffering=1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_name = "hub"

    def log_message(self, *args):
        pass

    def record(self):
        with LOG_LOCK:
            LOG.write(json.dumps({"server": self.server_name, "method": self.command, "path": self.path,
                                  "host": self.headers.get("Host"),
                                  "authorization": self.headers.get("Authorization"),
                                  "range": self.headers.get("Range")}) + "\n")

    def answer(self, status, body=b"", headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message):
        self.answer(status, json.dumps({"error": message}).encode(), {"X-Error-Code": code, "Content-Type": "application/json"})

    def path_file(self):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        return query.get("file", [""])[0]

    def send_bytes(self, data, extra, drop=False, slow=False):
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            if start >= len(data) and len(data) > 0:
                self.answer(416, b"", {"Content-Range": "bytes */%d" % len(data)})
                return
        body = data[start:]
        self.send_response(206 if start else 200)
        for k, v in extra.items():
            self.send_header(k, v)
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if drop and ARGS.drop_after and start == 0:
            self.wfile.write(body[:min(ARGS.drop_after, len(body) // 2)])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if slow and start == 0:
            for i in range(0, len(body), 1024):
                self.wfile.write(body[i:i + 1024])
                self.wfile.flush()
                time.sleep(0.02)
            return
        self.wfile.write(body)


class HubHandler(Handler):
    server_name = "hub"

    def authorized(self):
        if not ARGS.token:
            return True
        auth = self.headers.get("Authorization", "")
        if auth == "Bearer " + ARGS.token:
            return True
        if ARGS.token_unaccepted and auth == "Bearer " + ARGS.token_unaccepted:
            self.error(403, "GatedRepo", "Access to model %s is restricted: accept its conditions first" % ARGS.repo)
        elif auth:
            self.error(401, "", "Invalid credentials in Authorization header")
        else:
            self.error(401, "GatedRepo", "Access to model %s is restricted: you must be authenticated" % ARGS.repo)
        return False

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.record()
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        api = "/api/models/" + ARGS.repo + "/revision/"
        resolve = "/" + ARGS.repo + "/resolve/"
        if not (path.startswith(api) or path.startswith(resolve)):
            self.error(404, "RepoNotFound", "Repository not found")
            return
        if not self.authorized():
            return
        if path.startswith(api):
            rev = path[len(api):]
            if rev not in ("main", ARGS.commit):
                self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
                return
            siblings = []
            for rel, e in sorted(FILES.items()):
                size = LISTED_SIZE.get(rel, e["size"])
                s = {"rfilename": rel, "size": size, "blobId": listed_etag(rel) if not e["lfs"] else e["blob_id"]}
                if e["lfs"]:
                    s["lfs"] = {"sha256": listed_etag(rel), "size": size, "pointerSize": 134}
                siblings.append(s)
            body = json.dumps({"id": ARGS.repo, "modelId": ARGS.repo, "sha": ARGS.commit, "siblings": siblings}).encode()
            self.answer(200, body, {"Content-Type": "application/json"})
            return
        rev, _, rel = path[len(resolve):].partition("/")
        if rev not in ("main", ARGS.commit):
            self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            return
        e = FILES.get(rel)
        if e is None:
            self.error(404, "EntryNotFound", rel + " does not exist")
            return
        common = {"X-Repo-Commit": ARGS.commit}
        if e["lfs"]:
            cdn = "http://127.0.0.1:%d/cdn/%s?file=%s" % (CDN_PORT, e["sha256"], urllib.parse.quote(rel))
            self.answer(302, b"", dict(common, **{"Location": cdn, "X-Linked-Etag": '"%s"' % listed_etag(rel),
                                                   "X-Linked-Size": str(e["size"]), "ETag": '"%s"' % e["blob_id"]}))
            return
        with LOG_LOCK:
            first = rel not in FIRST_SEEN
            FIRST_SEEN.add(rel)
        self.send_bytes(e["served"], dict(common, ETag='"%s"' % listed_etag(rel)), slow=first and rel == ARGS.slow)


class CdnHandler(Handler):
    server_name = "cdn"

    def do_GET(self):
        self.record()
        sha = urllib.parse.urlsplit(self.path).path.rsplit("/", 1)[-1]
        e = BY_SHA.get(sha)
        if e is None:
            self.answer(404, b"no such object")
            return
        with LOG_LOCK:
            first = sha not in FIRST_SEEN
            FIRST_SEEN.add(sha)
        self.send_bytes(e["served"], {"ETag": '"%s"' % sha}, drop=first, slow=first and self.path_file() == ARGS.slow)


class Server(ThreadingHTTPServer):
    daemon_threads = True


hub = Server(("127.0.0.1", 0), HubHandler)
cdn = Server(("127.0.0.1", 0), CdnHandler)
CDN_PORT = cdn.server_address[1]
manifest = {rel: {k: v for k, v in e.items() if k not in ("data", "served")} for rel, e in FILES.items()}
out_dir = os.path.dirname(os.path.abspath(ARGS.port_file))
with open(os.path.join(out_dir, "manifest.json"), "w") as f:
    json.dump(manifest, f)
threading.Thread(target=cdn.serve_forever, daemon=True).start()
tmp = ARGS.port_file + ".tmp"
with open(tmp, "w") as f:
    f.write("%d %d\n" % (hub.server_address[1], CDN_PORT))
os.rename(tmp, ARGS.port_file)
try:
    hub.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
