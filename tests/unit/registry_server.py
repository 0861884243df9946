#!/usr/bin/env python3
"""A small schema registry stand-in for tests/unit/test_registry.c.

    registry_server.py DIR

Makes (once) in DIR a CA, a server certificate for 127.0.0.1 signed by it,
a client certificate signed by it and a second CA that signed nothing
(openssl's command line), then serves the Confluent-compatible calls the
harness makes on three ports of 127.0.0.1: plain HTTP, HTTPS and HTTPS
that wants a client certificate (mutual TLS). DIR/ports.PID gets
"HTTP HTTPS MTLS" once all three listen. It stops when its parent does.

A path's first segment picks a behaviour, the rest is the API call:
/basic/... wants user:s3cret-basic, /bearer/... the token t0ken-bearer,
/echo/... answers 401 repeating the Authorization header, /chunked/...
answers in chunks, /redir/... redirects (307) to the call without it,
/loop/... redirects to itself, /slow/... waits 5 s, /big/... answers 1 MiB;
/store/... is a registry that keeps what is registered (ids from 1, the
same schema the same id; every compatibility rule accepted) for callers
with either credential, as a drill's run needs one.
"""
import base64
import http.server
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

SCHEMA = '{"type":"record","name":"S","fields":[{"name":"event_id","type":"string"}]}'
# a Protobuf schema whose import names another registered schema, which
# imports a third: GET /schemas/ids/3 carries the first reference, each
# referenced version the next (ids 4 and 5: a reference the registry does
# not hold, one without a version)
PROTO_MAIN = ('syntax = "proto3";\nimport "shop/common.proto";\n'
              'message Order { string event_id = 1; shop.Money total = 2; }\n')
PROTO_COMMON = ('syntax = "proto3";\npackage shop;\nimport "base.proto";\n'
                'message Money { string currency = 1; int64 cents = 2; Unit unit = 3; }\n')
PROTO_BASE = 'syntax = "proto3";\npackage shop;\nenum Unit { CENT = 0; MILL = 1; }\n'
REFS = {
    "/schemas/ids/3": (PROTO_MAIN, [{"name": "shop/common.proto", "subject": "shop/common", "version": 1}]),
    "/subjects/shop%2Fcommon/versions/1": (PROTO_COMMON, [{"name": "base.proto", "subject": "base", "version": 2},
                                                           {"name": "shop/common.proto", "subject": "shop/common", "version": 1}]),
    "/subjects/base/versions/2": (PROTO_BASE, []),
    "/schemas/ids/4": (PROTO_MAIN, [{"name": "shop/common.proto", "subject": "gone", "version": 1}]),
    "/schemas/ids/5": (PROTO_MAIN, [{"name": "shop/common.proto", "subject": "shop/common"}]),
}
BASIC = "Basic " + base64.b64encode(b"user:s3cret-basic").decode()
BEARER = "Bearer t0ken-bearer"


def certs(folder):
    """The CAs and certificates, made into a temporary folder and moved in
    whole, so two tests starting at once never see half of them."""
    if os.path.exists(os.path.join(folder, "done")):
        return
    os.makedirs(os.path.dirname(os.path.abspath(folder)), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(folder)))

    def ssl_cmd(*args):
        subprocess.run(["openssl", *args], cwd=tmp, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    for ca in ("ca", "wrong-ca"):
        ssl_cmd("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", f"/CN=streamdrill test {ca}",
                "-keyout", f"{ca}.key", "-out", f"{ca}.pem")
    with open(os.path.join(tmp, "server.ext"), "w", encoding="utf-8") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, ext in (("server", ["-extfile", "server.ext"]), ("client", [])):
        ssl_cmd("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.csr")
        ssl_cmd("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "30",
                "-out", f"{name}.pem", *ext)
    open(os.path.join(tmp, "done"), "w", encoding="utf-8").close()
    try:
        os.rename(tmp, folder)
    except OSError:  # another test made them first
        shutil.rmtree(tmp, ignore_errors=True)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    lock = threading.Lock()
    ids = {}  # schema text -> id (/store)
    subjects = {}  # subject -> its ids, oldest first (/store)

    def log_message(self, *args):
        pass

    def answer(self, status, obj, chunked=False, extra=None):
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(body), 7):
                part = body[i:i + 7]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def call(self, method):
        n = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(n) if n else b""
        path = self.path
        first = path.split("/")[1] if path.count("/") > 1 else ""
        rest = path[len(first) + 1:] if first in ("basic", "bearer", "echo", "chunked", "redir", "loop", "slow", "big", "store") else path
        auth = self.headers.get("Authorization", "")
        if first == "basic" and auth != BASIC or first == "bearer" and auth != BEARER:
            return self.answer(401, {"error_code": 401, "message": "Unauthorized"})
        if first == "store":
            if auth not in (BASIC, BEARER):
                return self.answer(401, {"error_code": 401, "message": "Unauthorized"})
            return self.store(method, rest, sent)
        if first == "echo":
            return self.answer(401, {"error_code": 401, "message": "bad credentials: " + auth})
        if first == "redir":
            return self.answer(307, {}, extra={"Location": rest})
        if first == "loop":
            return self.answer(302, {}, extra={"Location": path})
        if first == "slow":
            time.sleep(5)
        if first == "big":
            return self.answer(200, {"schema": "x" * (1 << 20)})
        if method == "GET" and rest in REFS:
            text, refs = REFS[rest]
            return self.answer(200, {"schema": text, "schemaType": "PROTOBUF", "references": refs})
        if method == "GET" and rest.startswith("/schemas/ids/"):
            if rest == "/schemas/ids/1":
                return self.answer(200, {"schema": SCHEMA}, chunked=first == "chunked")
            return self.answer(404, {"error_code": 40403, "message": "Schema not found"})
        if method == "GET" and rest.endswith("/versions/latest"):
            return self.answer(200, {"subject": rest.split("/")[2], "version": 3, "id": 5, "schema": SCHEMA})
        if method == "POST" and rest.startswith("/subjects/") and rest.endswith("/versions"):
            # the subject's segment as it came: '/' and ' ' must be %-escaped
            seg = rest[len("/subjects/"):-len("/versions")]
            if seg == "a%2Fb%20c-value" and json.loads(sent).get("schema") == SCHEMA:
                return self.answer(200, {"id": 7})
            if seg == "refused-value":
                return self.answer(409, {"error_code": 409, "message": "Schema being registered is incompatible"})
            return self.answer(400, {"error_code": 400, "message": "unexpected subject segment " + seg})
        if method == "PUT" and rest.startswith("/config/"):
            return self.answer(200, json.loads(sent))
        return self.answer(404, {"error_code": 404, "message": "no such call " + method + " " + rest})

    def store(self, method, rest, sent):
        parts = [urllib.parse.unquote(p) for p in rest.split("/")[1:]]
        with Handler.lock:
            if method == "PUT" and len(parts) == 2 and parts[0] == "config":
                return self.answer(200, json.loads(sent))
            if method == "POST" and len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
                text = json.loads(sent)["schema"]
                sid = Handler.ids.setdefault(text, len(Handler.ids) + 1)
                Handler.subjects.setdefault(parts[1], []).append(sid)
                return self.answer(200, {"id": sid})
            if method == "GET" and len(parts) == 3 and parts[:2] == ["schemas", "ids"]:
                by_id = {v: k for k, v in Handler.ids.items()}
                if parts[2].isdigit() and int(parts[2]) in by_id:
                    return self.answer(200, {"schema": by_id[int(parts[2])]})
                return self.answer(404, {"error_code": 40403, "message": "Schema not found"})
            if method == "GET" and len(parts) == 4 and parts[0] == "subjects" and parts[2:] == ["versions", "latest"]:
                got = Handler.subjects.get(parts[1])
                if not got:
                    return self.answer(404, {"error_code": 40401, "message": "Subject not found"})
                by_id = {v: k for k, v in Handler.ids.items()}
                return self.answer(200, {"subject": parts[1], "version": len(got), "id": got[-1], "schema": by_id[got[-1]]})
        return self.answer(404, {"error_code": 404, "message": "no such call " + method + " " + rest})

    def do_GET(self):
        self.call("GET")

    def do_POST(self):
        self.call("POST")

    def do_PUT(self):
        self.call("PUT")


def serve(tls, folder, want_client):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(folder, "server.pem"), os.path.join(folder, "server.key"))
        if want_client:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(os.path.join(folder, "ca.pem"))
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1]


def main():
    folder = sys.argv[1]
    certs(folder)
    parent = os.getppid()
    ports = [serve(False, folder, False), serve(True, folder, False), serve(True, folder, True)]
    tmp = os.path.join(folder, f"ports.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(" ".join(map(str, ports)) + "\n")
    os.rename(tmp, os.path.join(folder, f"ports.{os.getpid()}"))
    while os.getppid() == parent:
        time.sleep(0.2)
    os.remove(os.path.join(folder, f"ports.{os.getpid()}"))


if __name__ == "__main__":
    main()
