#!/usr/bin/env python3
"""Writes the hand-made seed corpora of tests/fuzz/corpus/<target>/ for the
targets named on the command line (default: all that this script knows).
Seeds are small and deterministic; rerunning rewrites the same files. Inputs
that libFuzzer found (crash-*, merged ones) are not touched."""
import gzip
import os
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def zstd(data):
    return subprocess.run(["zstd", "-q", "-c", "-3"], input=data, stdout=subprocess.PIPE, check=True).stdout


def raw_deflate(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def gz(data):
    return gzip.compress(data, mtime=0)


# ---- decompress: first byte = encoding index (high bit: small ceiling) ----
# 0 gzip, 1 x-gzip, 2 zstd, 3 deflate, 4 identity, 5 "", 6 GZip, 7 br
def seeds_decompress():
    text = b"kiln fuzz seed: " + b"main.fib;runtime.main " * 20
    bomb = b"\0" * (2 << 20)  # passes the target's 1 MiB ceiling
    write("decompress", "seed-gzip", bytes([0]) + gz(text))
    write("decompress", "seed-gzip-two-members", bytes([1]) + gz(text[:40]) + gz(text[40:]))
    write("decompress", "seed-gzip-truncated", bytes([0]) + gz(text)[:-6])
    write("decompress", "seed-gzip-bomb", bytes([0]) + gz(bomb))
    write("decompress", "seed-zstd", bytes([2]) + zstd(text))
    write("decompress", "seed-zstd-two-frames", bytes([2]) + zstd(text[:40]) + zstd(text[40:]))
    write("decompress", "seed-zstd-bomb", bytes([2]) + zstd(bomb))
    write("decompress", "seed-zlib", bytes([3]) + zlib.compress(text))
    write("decompress", "seed-raw-deflate", bytes([3]) + raw_deflate(text))
    write("decompress", "seed-zlib-small-ceiling", bytes([0x83]) + zlib.compress(text * 4))
    write("decompress", "seed-identity", bytes([4]) + text)
    write("decompress", "seed-unsupported", bytes([7]) + text)


# ---- query_params: a URL query string ----
def seeds_query_params():
    write("query_params", "seed-flame", "service=checkout&type=cpu&from=now-1h&until=now")
    write("query_params", "seed-labels", "service=api&label.pod=api-7d9f%2Dx&label.region=eu+west&from=1760000000")
    write("query_params", "seed-absolute", "from=1759990000&until=1760000000&limit=50")
    write("query_params", "seed-from-only", "from=now-2d")
    write("query_params", "seed-bad-order", "from=now&until=now-1h")
    write("query_params", "seed-bad-escape", "service=a%2&label.x=%zz")
    write("query_params", "seed-empty-label", "label.=v&&&=&a")
    write("query_params", "seed-nul", "label.k=%00")
    write("query_params", "seed-many", "&".join("p%d=%d" % (i, i) for i in range(130)))


# ---- http1_request: first byte = piece size (>= 0xc0: all at once), then requests ----
def seeds_http1_request():
    get = b"GET /api/flame?service=x&from=now-1h HTTP/1.1\r\nHost: kiln\r\nAccept: */*\r\n\r\n"
    post = (b"POST /ingest?name=app.cpu&format=pprof HTTP/1.1\r\nHost: kiln\r\n"
            b"Content-Type: application/octet-stream\r\nContent-Length: 5\r\n\r\nhello")
    chunked = (b"POST /v1development/profiles HTTP/1.1\r\nHost: kiln\r\nTransfer-Encoding: chunked\r\n"
               b"Content-Encoding: gzip\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n")
    write("http1_request", "seed-get", b"\xff" + get)
    write("http1_request", "seed-get-bytewise", b"\x00" + get)
    write("http1_request", "seed-pipelined", b"\x07" + get + post + chunked + get)
    write("http1_request", "seed-chunked-pieces", b"\x02" + chunked)
    write("http1_request", "seed-lf-only", b"\xff" + get.replace(b"\r\n", b"\n"))
    write("http1_request", "seed-absolute-form", b"\xff" + b"GET http://kiln:4040/ready?x=1 HTTP/1.0\r\n\r\n")
    write("http1_request", "seed-expect", b"\xff" + post.replace(b"Host: kiln", b"Expect: 100-continue"))
    write("http1_request", "seed-both-framings", b"\xff" + chunked.replace(b"Host: kiln", b"Content-Length: 3"))
    write("http1_request", "seed-bad-version", b"\xff" + b"GET / HTTP/2.0\r\n\r\n")
    write("http1_request", "seed-bad-chunk", b"\x03" + chunked.replace(b"5;ext", b"5g;ext"))
    write("http1_request", "seed-big-chunk", b"\xff" + chunked.replace(b"5;ext=1", b"fffffffffffffffff"))


# ---- config: a kiln.yaml ----
def seeds_config():
    write("config", "seed-sensor.yaml", """role: sensor
data: /var/lib/kiln
listeners:
  upload:    {addr: ":8028"}
  otlp_http: {addr: ":4318"}
  otlp_grpc: {addr: ":4317"}
receivers:
  profiles:
    scrape:
      enabled: true
      interval: 1m
kubernetes: {}
""")
    write("config", "seed-all.yaml", """role: all
data: ./kiln-data
listeners:
  ui: {addr: "127.0.0.1:4040", auth: required, tls: {cert: c.pem, key: k.pem}}
limits: {samplesPerSecond: 5000}
retention: {days: 7, maxDays: 30, projects: {checkout: 30, batch: 3}}
receivers:
  profiles:
    maxDecodedSampleRows: 20000
    scrape:
      enabled: true
      interval: 30s
      defaultPort: 6060
      extraAnnotationPrefixes: [profiles.example.com, pyroscope.io]
      static:
        - name: db
          url: http://10.0.0.5:6060
          service: postgres-exporter
          types: {cpu: {scrape: true}, memory: {scrape: true, path: /debug/pprof/allocs}}
        - name: edge
          host: edge.internal
          port: 9090
          types: {goroutine: {scrape: true, scheme: https, sample_types: goroutine}}
kubernetes: {apiServer: "https://10.96.0.1:443", tokenFile: /t, caFile: /ca, node: n1}
""")
    write("config", "seed-empty.yaml", "")
    write("config", "seed-not-mapping.yaml", "- a\n- b\n")
    write("config", "seed-bad-auth.yaml", "listeners: {ui: {auth: maybe}}\n")
    write("config", "seed-bad-retention.yaml", "retention: {days: 30, projects: {a: 100, b: x}}\n")
    write("config", "seed-bad-static.yaml",
          "receivers: {profiles: {scrape: {static: [{name: x, url: u, host: h}, 3]}}}\n")
    write("config", "seed-anchors.yaml", "a: &x {addr: ':1'}\nlisteners: {upload: *x, ui: *x}\nrole: *x\n")
    write("config", "seed-broken.yaml", "role: [sensor\n  data: {\n")


# ---- k8s_watch: cut byte, pod list page, NUL, watch event lines ----
def pod(name, ip, phase="Running", rs="api-7d9f8c", extra=None):
    p = {"metadata": {"name": name, "namespace": "shop", "resourceVersion": "100",
                      "ownerReferences": [{"kind": "ReplicaSet", "name": rs, "controller": True}],
                      "annotations": {"profiles.kiln.dev/cpu.scrape": "true"}},
         "spec": {"nodeName": "n1", "containers": [{"name": "app"}],
                  "initContainers": [{"name": "proxy", "restartPolicy": "Always"}]},
         "status": {"phase": phase, "podIP": ip}}
    if extra:
        p.update(extra)
    return p


def seeds_k8s_watch():
    import json
    def listp(items, rv="100", cont=None):
        meta = {"resourceVersion": rv}
        if cont:
            meta["continue"] = cont
        return json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items}).encode()
    def ev(t, obj):
        return json.dumps({"type": t, "object": obj}).encode() + b"\n"
    a, b = pod("api-7d9f8c-x2k4p", "10.1.0.7"), pod("db-0", "10.1.0.9", rs="db")
    b["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    pending = pod("api-7d9f8c-zzzzz", "", phase="Pending")
    watch = (ev("ADDED", pod("web-5f6b7-abcde", "10.1.0.12", rs="web-5f6b7")) + ev("MODIFIED", a) +
             ev("DELETED", b) + ev("BOOKMARK", {"metadata": {"resourceVersion": "130"}}))
    write("k8s_watch", "seed-list-only", b"\x80" + listp([a, b, pending]))
    write("k8s_watch", "seed-list-watch", b"\x40" + listp([a, b]) + b"\0" + watch)
    write("k8s_watch", "seed-list-continue", b"\x10" + listp([a], cont="eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ") + b"\0" + listp([b]))
    write("k8s_watch", "seed-watch-expired", b"\x20" + listp([a]) + b"\0" + watch +
          ev("ERROR", {"kind": "Status", "code": 410, "message": "too old resource version"}))
    write("k8s_watch", "seed-watch-error", b"\xc0" + listp([]) + b"\0" + ev("ERROR", {"code": 500, "message": "boom"}))
    write("k8s_watch", "seed-watch-garbage", b"\x7f" + listp([a]) + b"\0" + b"{not json}\n" + watch)
    write("k8s_watch", "seed-watch-crlf-split", b"\x03" + listp([a]) + b"\0" + watch.replace(b"\n", b"\r\n"))
    write("k8s_watch", "seed-list-bad", b"\x80" + b'{"items": {}, "metadata": {"resourceVersion": 5}}')
    write("k8s_watch", "seed-pod-odd", b"\x80" + listp([pod("x", "fd00::3", extra={"spec": {"containers": []}}),
                                                        pod("", "10.0.0.1"), {"metadata": []}]))


# ---- grpc_frame: byte 0 = DATA frame size (bits 0-5), small limit (0x40), gzip (0x80); then the body ----
def frame(msg, flag=0, length=None):
    n = len(msg) if length is None else length
    return bytes([flag]) + n.to_bytes(4, "big") + msg


def seeds_grpc_frame():
    msg = b"\x0a\x1c\x0a\x1a\x0a\x0cservice.name\x12\x0a\x0a\x08checkout"  # a small OTLP-ish message
    write("grpc_frame", "seed-identity", b"\x3f" + frame(msg))
    write("grpc_frame", "seed-identity-bytewise", b"\x00" + frame(msg))
    write("grpc_frame", "seed-gzip", b"\x87" + frame(gz(msg), 1))
    write("grpc_frame", "seed-zstd", b"\x07" + frame(zstd(msg), 1))
    write("grpc_frame", "seed-zstd-bomb-small-limit", b"\x4f" + frame(zstd(b"\0" * 4096), 1))
    write("grpc_frame", "seed-empty-message", b"\x01" + frame(b""))
    write("grpc_frame", "seed-short-prefix", b"\x01" + b"\0\0\0")
    write("grpc_frame", "seed-truncated", b"\x02" + frame(msg, length=100))
    write("grpc_frame", "seed-two-messages", b"\x3f" + frame(msg) + frame(msg))
    write("grpc_frame", "seed-over-limit", b"\x45" + frame(msg, length=1 << 30))
    write("grpc_frame", "seed-flag-2", b"\x3f" + frame(msg, 2))


# ---- h2_request: byte 0 = read size / small body limit (0x80); then client frames after the preface ----
def h2frame(ftype, flags, sid, payload):
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + sid.to_bytes(4, "big") + payload


def hpack(headers):  # literal header fields without indexing, no Huffman coding
    out = b""
    for k, v in headers:
        out += b"\x00" + bytes([len(k)]) + k.encode() + bytes([len(v)]) + v.encode()
    return out


def seeds_h2_request():
    settings = h2frame(4, 0, 0, b"")
    ack = h2frame(4, 1, 0, b"")
    def req(path, method="POST", extra=()):
        return hpack([(":method", method), (":scheme", "http"), (":path", path), (":authority", "kiln")] +
                     list(extra))
    grpc = [("content-type", "application/grpc"), ("te", "trailers"), ("grpc-encoding", "gzip")]
    body = b"\0\0\0\0\x05hello"
    export = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
    one = settings + h2frame(1, 4, 1, req(export, extra=grpc)) + h2frame(0, 1, 1, body)
    write("h2_request", "seed-grpc-unary", b"\x7f" + one)
    write("h2_request", "seed-grpc-bytewise", b"\x00" + one)
    write("h2_request", "seed-get-end-stream", b"\x7f" + settings + ack + h2frame(1, 5, 1, req("/ready", "GET")))
    write("h2_request", "seed-kept-then-closed", b"\x7f" + settings + h2frame(1, 4, 1, req("/ask")) +
          h2frame(0, 1, 1, b"x") + h2frame(1, 5, 3, req("/ask")) + h2frame(7, 0, 0, b"\0\0\0\x03\0\0\0\0"))
    write("h2_request", "seed-refused-early", b"\x7f" + settings + h2frame(1, 4, 1, req("/", extra=[("x-refuse", "1")])) +
          h2frame(0, 0, 1, b"a" * 100) + h2frame(0, 1, 1, b"b"))
    write("h2_request", "seed-body-over-limit", b"\x80" + settings + h2frame(1, 4, 1, req("/big")) +
          h2frame(0, 0, 1, b"z" * 200) + h2frame(0, 1, 1, b""))
    write("h2_request", "seed-continuation", b"\x7f" + settings + h2frame(1, 0, 1, req("/c")[:20]) +
          h2frame(9, 4, 1, req("/c")[20:]) + h2frame(0, 1, 1, b"q"))
    write("h2_request", "seed-trailers", b"\x7f" + settings + h2frame(1, 4, 1, req("/t")) + h2frame(0, 0, 1, b"d") +
          h2frame(1, 5, 1, hpack([("x-trailer", "1")])))
    write("h2_request", "seed-misc-frames", b"\x10" + settings + h2frame(6, 0, 0, b"12345678") +
          h2frame(8, 0, 0, (1 << 20).to_bytes(4, "big")) + h2frame(2, 0, 5, b"\0\0\0\x03\x10") +
          h2frame(1, 4, 5, req("/p")) + h2frame(3, 0, 5, b"\0\0\0\x08") + h2frame(0, 1, 5, b"late"))
    write("h2_request", "seed-many-streams", b"\x7f" + settings +
          b"".join(h2frame(1, 5, i, req("/s%d" % i, "GET")) for i in range(1, 40, 2)))
    write("h2_request", "seed-bad-frame", b"\x7f" + settings + h2frame(0, 1, 0, b"data on stream 0"))
    write("h2_request", "seed-bad-hpack", b"\x7f" + settings + h2frame(1, 5, 1, b"\xff\xff\xff\xff"))


SEEDS = {name[len("seeds_"):]: fn for name, fn in list(globals().items()) if name.startswith("seeds_")}

if __name__ == "__main__":
    for t in sys.argv[1:] or sorted(SEEDS):
        SEEDS[t]()
