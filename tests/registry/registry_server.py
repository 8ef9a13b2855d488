#!/usr/bin/env python3
"""A small Schema Registry for tests: the part of Confluent's REST API that
serializers, deserializers and kwire use, kept in memory.

  POST /subjects/{subject}/versions     register (the same schema text gets
                                        the same id, in any subject)
  POST /subjects/{subject}              look a schema up in a subject
  GET  /schemas/ids/{id}                a schema by id
  GET  /subjects                        subjects
  GET  /subjects/{subject}/versions     versions of a subject
  GET  /subjects/{subject}/versions/{version|latest}
  GET  /config, PUT /config[/subject]   answered, not enforced (no
                                        compatibility checks)
  GET  /_requests                       (tests only) {"METHOD path": count}
  GET  /_hosts                          (tests only) the Host headers of kwire's requests
                                        of the requests so far

Errors as Confluent's registry words them: 404 with error_code 40401
(subject), 40402 (version), 40403 (schema); 401 without the configured
basic-auth user; 422 42201 for a body without "schema".

Usage: registry_server.py [--port N] [--port-file F] [--user user:password]
                          [--tls CERT KEY]
Binds 127.0.0.1; prints "listening on PORT" when ready; stops on SIGTERM.
"""

import argparse
import base64
import json
import signal
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse


class Store:
    def __init__(self):
        self.lock = threading.Lock()
        self.ids = {}  # (schemaType, text) -> id
        self.schemas = {}  # id -> (schemaType, text, references)
        self.subjects = {}  # subject -> [id, ...] (version = index + 1)
        self.requests = {}  # "GET /path" -> count
        self.hosts = set()  # Host headers of kwire's requests

    def register(self, subject, schema_type, text, references):
        with self.lock:
            key = (schema_type, text)
            sid = self.ids.get(key)
            if sid is None:
                sid = len(self.schemas) + 1
                self.ids[key] = sid
                self.schemas[sid] = (schema_type, text, references)
            versions = self.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
            return sid, versions.index(sid) + 1


def make_handler(store, user_info):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, status, code, message):
            self.reply(status, {"error_code": code, "message": message})

        def authorized(self):
            key = "%s %s" % (self.command, urlparse(self.path).path)
            with store.lock:
                store.requests[key] = store.requests.get(key, 0) + 1
                if self.headers.get("User-Agent") == "kwire":
                    store.hosts.add(self.headers.get("Host", ""))
            if user_info is None:
                return True
            want = "Basic " + base64.b64encode(user_info.encode()).decode()
            if self.headers.get("Authorization") == want:
                return True
            self.error(401, 401, "Unauthorized")
            return False

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n) or b"{}")

        def schema_body(self, sid, subject=None, version=None):
            schema_type, text, refs = store.schemas[sid]
            out = {"id": sid, "schema": text}
            if schema_type != "AVRO":
                out["schemaType"] = schema_type
            if refs:
                out["references"] = refs
            if subject is not None:
                out["subject"] = subject
                out["version"] = version
            return out

        def parts(self):
            path = urlparse(self.path).path
            return [unquote(p) for p in path.strip("/").split("/") if p]

        def do_GET(self):
            if not self.authorized():
                return
            p = self.parts()
            with store.lock:
                if p == ["_requests"]:
                    return self.reply(200, store.requests)
                if p == ["_hosts"]:
                    return self.reply(200, sorted(store.hosts))
                if p == ["subjects"]:
                    return self.reply(200, sorted(store.subjects))
                if p[:1] == ["config"]:
                    return self.reply(200, {"compatibilityLevel": "NONE"})
                if len(p) == 3 and p[:2] == ["schemas", "ids"]:
                    sid = int(p[2]) if p[2].isdigit() else -1
                    if sid not in store.schemas:
                        return self.error(404, 40403, "Schema %s not found" % p[2])
                    return self.reply(200, self.schema_body(sid))
                if len(p) >= 3 and p[0] == "subjects" and p[2] == "versions":
                    versions = store.subjects.get(p[1])
                    if not versions:
                        return self.error(404, 40401, "Subject '%s' not found." % p[1])
                    if len(p) == 3:
                        return self.reply(200, list(range(1, len(versions) + 1)))
                    v = len(versions) if p[3] == "latest" else (int(p[3]) if p[3].lstrip("-").isdigit() else 0)
                    if v == -1:
                        v = len(versions)
                    if not 1 <= v <= len(versions):
                        return self.error(404, 40402, "Version %s not found." % p[3])
                    body = self.schema_body(versions[v - 1], p[1], v)
                    if len(p) == 5 and p[4] == "schema":
                        return self.reply(200, json.loads(body["schema"]))
                    return self.reply(200, body)
            self.error(404, 404, "HTTP 404 Not Found")

        def do_PUT(self):
            if not self.authorized():
                return
            body = self.body()
            self.reply(200, {"compatibility": body.get("compatibility", "NONE")})

        def do_POST(self):
            if not self.authorized():
                return
            p = self.parts()
            body = self.body()
            if len(p) < 2 or p[0] != "subjects" or "schema" not in body:
                return self.error(422, 42201, "Invalid schema")
            schema_type = body.get("schemaType", "AVRO")
            text = body["schema"]
            refs = body.get("references") or []
            if len(p) == 3 and p[2] == "versions":
                sid, version = store.register(p[1], schema_type, text, refs)
                return self.reply(200, self.schema_body(sid, p[1], version))
            if len(p) == 2:
                with store.lock:
                    sid = store.ids.get((schema_type, text))
                    versions = store.subjects.get(p[1])
                    if not versions:
                        return self.error(404, 40401, "Subject '%s' not found." % p[1])
                    if sid is None or sid not in versions:
                        return self.error(404, 40403, "Schema not found")
                    return self.reply(200, self.schema_body(sid, p[1], versions.index(sid) + 1))
            self.error(404, 404, "HTTP 404 Not Found")

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--user", help="user:password required as HTTP basic auth")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(Store(), args.user))
    server.daemon_threads = True
    if args.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls[0], args.tls[1])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        import os

        os.replace(args.port_file + ".tmp", args.port_file)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print("listening on %d" % port, flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
