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


# ---- clickhouse_answers: byte 0 = queries (bit i), byte 1 = variants, then [kind u8][len u16 LE][bytes] answers ----
# One day partition (2025-01-01, day 20089) of project "default" as ClickHouse
# would answer the engine's SELECTs in RowBinary; the order of the answers is
# the order of the requests (KILN_FUZZ_TRACE=1 on the target prints them).
CH_DAY = 20089
CH_T0 = 1735689600 * 10**9
CH_S = 10**9


def chv(n):  # LEB128, as RowBinary's string and array lengths
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7f | 0x80])
        n >>= 7
    return out + bytes([n])


def chs(s):
    s = s.encode() if isinstance(s, str) else s
    return chv(len(s)) + s


def u8(v):
    return bytes([v])


def u32(v):
    return (v & 0xffffffff).to_bytes(4, "little")


def u64(v):
    return (v & 0xffffffffffffffff).to_bytes(8, "little")


def labels(pairs):
    return chv(len(pairs)) + b"".join(chs(k) for k, _ in pairs) + chv(len(pairs)) + b"".join(chs(v) for _, v in pairs)


def ans(body, kind=0, length=None):
    n = len(body) if length is None else length
    return bytes([kind]) + n.to_bytes(2, "little") + body


# series: id, service, type, period type, unit, period, aggregation, cpu_alias, labels
CH_SERIES = {
    0x1111: ("api", "cpu:nanoseconds", "cpu", "nanoseconds", 10000000, 0, 0, [("env", "prod"), ("pod", "api-1")]),
    0x2222: ("api", "samples:count", "cpu", "nanoseconds", 10000000, 0, 1, [("env", "dev")]),
    0x3333: ("api", "inuse_space:bytes", "space", "bytes", 524288, 1, 0, [("env", "prod")]),
    0x4444: ("db", "alloc_space:bytes", "space", "bytes", 524288, 0, 0, []),
}
# frames: id, name, file, binary, build id, kind, unsymbolized
CH_FRAMES = [(0xf1, "main.main", "main.go", "/usr/bin/api", "b1d", "go", 0),
             (0xf2, "runtime.mallocgc", "malloc.go", "/usr/bin/api", "b1d", "go", 0),
             (0xf3, "", "", "/lib/x86_64-linux-gnu/libc.so.6", "", "native", 1),
             (0xf4, "main.compute", "main.go", "/usr/bin/api", "b1d", "go", 0)]
# nodes by depth: id, parent, frame, depth
CH_NODES = [(0xa1, 0, 0xf1, 0), (0xa2, 0xa1, 0xf2, 1), (0xa3, 0xa1, 0xf4, 1), (0xa4, 0xa3, 0xf3, 2)]
CH_SPAN, CH_TRACE = "00f067aa0ba902b7", "4bf92f3577b34da6a3ce929d0e0e4736"
CH_ATTRSETS = [(0xb1, [("thread", "main")]),
               (0xb2, [("span_id", CH_SPAN), ("thread", "worker")]),
               (0xb3, [("span_id", CH_SPAN), ("thread", "main"), ("trace_id", CH_TRACE)])]
# chunks: id, series, t, duration; entries: chunk, node, attrset, value, sample t
CH_CHUNKS = [(0xc1, 0x1111, CH_T0 + 60 * CH_S, 10 * CH_S), (0xc2, 0x1111, CH_T0 + 3600 * CH_S, 10 * CH_S),
             (0xc3, 0x2222, CH_T0 + 120 * CH_S, 10 * CH_S), (0xc4, 0x3333, CH_T0 + 300 * CH_S, 0),
             (0xc5, 0x3333, CH_T0 + 4000 * CH_S, 0), (0xc6, 0x4444, CH_T0 + 500 * CH_S, 15 * CH_S)]
CH_ENTRIES = [(0xc1, 0xa2, 0, 30000000, CH_T0 + 61 * CH_S), (0xc1, 0xa4, 0xb1, 20000000, CH_T0 + 62 * CH_S),
              (0xc1, 0xa4, 0xb2, 10000000, CH_T0 + 62 * CH_S), (0xc2, 0xa3, 0xb1, 50000000, CH_T0 + 3601 * CH_S),
              (0xc3, 0xa3, 0xb3, 7, CH_T0 + 121 * CH_S), (0xc3, 0xa2, 0, 2, CH_T0 + 121 * CH_S),
              (0xc4, 0xa2, 0, 1048576, CH_T0 + 300 * CH_S), (0xc5, 0xa2, 0xb1, 2097152, CH_T0 + 4000 * CH_S),
              (0xc6, 0xa4, 0, 4096, CH_T0 + 500 * CH_S)]


def ch_days(*days):
    return ans(b"".join(u32(d) for d in days))


def ch_series():
    return ans(b"".join(u64(i) + chs(s[0]) + chs(s[1]) + chs(s[2]) + chs(s[3]) + u64(s[4]) + u8(s[5]) + u8(s[6]) +
                        labels(s[7]) for i, s in sorted(CH_SERIES.items())))


def ch_frames():
    return ans(b"".join(u64(f[0]) + b"".join(chs(x) for x in f[1:6]) + u8(f[6]) for f in CH_FRAMES))


def ch_nodes():
    return ans(b"".join(u64(i) + u64(p) + u64(f) + u32(d) for i, p, f, d in CH_NODES))


def ch_attrsets():
    return ans(b"".join(u64(i) + labels(ls) for i, ls in CH_ATTRSETS))


def ch_heads(series):
    out = b""
    for c, s, t, d in sorted(CH_CHUNKS, key=lambda c: (c[1], c[2], c[0])):
        if s in series:
            es = [e for e in CH_ENTRIES if e[0] == c]
            out += u64(s) + u64(c) + u64(t) + u64(d) + u64(len(es)) + u64(sum(e[3] for e in es))
    return ans(out)


def ch_chunk_series(c):
    return next(x[1] for x in CH_CHUNKS if x[0] == c)


def ch_sums(series):
    acc = {}
    for c, n, a, v, _ in CH_ENTRIES:
        s = ch_chunk_series(c)
        if s in series:
            acc[(s, n, a)] = acc.get((s, n, a), 0) + v
    return ans(b"".join(u64(s) + u64(n) + u64(a) + u64(v) for (s, n, a), v in acc.items()))


def ch_entries(series):
    return ans(b"".join(u64(c) + u64(n) + u64(a) + u64(v) + u64(t) for c, n, a, v, t in CH_ENTRIES
                        if ch_chunk_series(c) in series))


def ch_hits(sets):
    out, chunks = b"", []
    for c, n, a, v, t in CH_ENTRIES:
        if a in sets and (c, a) not in chunks:
            chunks.append((c, a))
            _, s, ct, d = next(x for x in CH_CHUNKS if x[0] == c)
            out += u64(c) + u64(s) + u64(ct) + u64(d) + u64(a)
    counts = b""
    for c in sorted({c for c, _ in chunks}):
        es = [e for e in CH_ENTRIES if e[0] == c]
        counts += u64(c) + u64(len(es)) + u64(sum(e[3] for e in es))
    return ans(out) + ans(counts)


CH_CPU = {0x1111, 0x2222}          # cpu:nanoseconds and its cpu_alias series
CH_API = {0x1111, 0x2222, 0x3333}  # service api
CH_ALL = set(CH_SERIES)


def ch_flame(series, attr_filter=False):
    # days, series, heads, [attrsets for the filter,] frames, nodes, [attrsets,] sums
    pre = ch_days(CH_DAY) + ch_series() + ch_heads(series)
    if attr_filter:
        return pre + ch_attrsets() + ch_frames() + ch_nodes() + ch_sums(series)
    return pre + ch_frames() + ch_nodes() + ch_attrsets() + ch_sums(series)


def ch_chunks(series):  # timeline with its attribute filter, labels: the chunks are read
    return ch_days(CH_DAY) + ch_series() + ch_heads(series) + ch_attrsets() + ch_frames() + ch_nodes() + ch_entries(series)


def ch_span(sets):
    return ch_days(CH_DAY) + ch_series() + ch_attrsets() + ch_hits(sets) + ch_frames() + ch_nodes() + ch_entries(CH_ALL)


def seeds_clickhouse_answers():
    t = "clickhouse_answers"
    services = ch_days(CH_DAY) + ch_series() + ch_heads(CH_ALL)
    types = ch_days(CH_DAY) + ch_series() + ch_heads(CH_API)
    write(t, "seed-services", b"\x01\x00" + services)
    write(t, "seed-types", b"\x02\x00" + types)
    write(t, "seed-flame", b"\x04\x00" + ch_flame(CH_CPU))
    write(t, "seed-flame-filters", b"\x04\x03" + ch_flame({0x1111}, attr_filter=True))
    write(t, "seed-flame-snapshot", b"\x04\x20" + ch_flame({0x3333}))
    write(t, "seed-top", b"\x08\x00" + ch_flame(CH_CPU))
    write(t, "seed-timeline", b"\x10\x00" + ch_chunks(CH_CPU))
    write(t, "seed-timeline-snapshot-step", b"\x10\x24" + ch_chunks({0x3333}))
    write(t, "seed-labels", b"\x20\x00" + ch_chunks(CH_CPU))
    write(t, "seed-span", b"\x40\x00" + ch_span({0xb2, 0xb3}))
    write(t, "seed-span-trace-type", b"\x40\x58" + ch_span({0xb3}))
    write(t, "seed-pprof", b"\x80\x00" + ch_flame(CH_CPU))
    write(t, "seed-all", b"\x00\x00" + services + types + ch_flame(CH_CPU) + ch_flame(CH_CPU) + ch_chunks(CH_CPU) +
          ch_chunks(CH_CPU) + ch_span({0xb2, 0xb3}) + ch_flame(CH_CPU))
    two = ch_days(CH_DAY, CH_DAY + 1) + ch_series() + ch_heads(CH_CPU) + ch_series() + ch_heads(CH_CPU)
    write(t, "seed-flame-two-days", b"\x04\x00" + two + ch_frames() + ch_nodes() + ch_attrsets() + ch_sums(CH_CPU) +
          ch_frames() + ch_nodes() + ch_attrsets() + ch_sums(CH_CPU))
    # Regressions: no sums, no entries, no span hits (qsort was handed NULL, 0).
    empty = ans(b"")
    write(t, "seed-no-rows", b"\x54\x00" + ch_days(CH_DAY) + ch_series() + ch_heads(CH_CPU) + ch_frames() + ch_nodes() +
          ch_attrsets() + empty + ch_days(CH_DAY) + ch_series() + ch_heads(CH_CPU) + ch_attrsets() + ch_frames() +
          ch_nodes() + empty + ch_days(CH_DAY) + ch_series() + ch_attrsets() + empty)
    # Regression: days outside the view, repeated or out of order are not partitions (each cost its queries).
    write(t, "seed-days-out-of-range", b"\x01\x00" + ch_days(CH_DAY, CH_DAY, 5, 4000000000, CH_DAY + 1, CH_DAY, CH_DAY + 2) +
          ch_series() + ch_heads(CH_ALL) + ch_series() + ch_heads(CH_ALL))
    # The shared state (V_SHARED, after an empty services query): projects, usage, keys, then a
    # retention sweep keeping 7 days (2025-01-01T12:00Z: day 20082 on are kept), table by table.
    projects = ans(chs("default") + chs("shop"))
    usage = ans(b"".join(u32(CH_DAY + d) + chs("default") + chs(k) + b"".join(u64(v) for v in (10 + d, 1, 0, 2, 0))
                         for d in (0, 1) for k in ("", "ci")))
    keys = ans(chs("ci") + chs("default") + chs("ingest") + bytes(range(32)) + u64(CH_T0) + u64(0) +
               chs("old") + chs("default") + chs("query") + bytes(32) + u64(CH_T0 - 100 * CH_S) + u64(CH_T0))
    ok = ans(b"")
    sweep = ch_days(CH_DAY - 9, CH_DAY - 8) + ok + ok + ch_days(CH_DAY - 8) + ok + ok + ok + ok
    write(t, "seed-shared", b"\x01\x80" + ok + projects + usage + keys + sweep)
    write(t, "seed-shared-bad-rows", b"\x01\x80" + ok + ans(chs("default") + b"\x05ab") +
          ans(u32(CH_DAY) + chs("default") + chs("") + u64(1)) + ans(chs("ci") + chs("default")) + ok)
    # Regression: a span hit (or a chunk head) at a time outside the view; INT64_MIN and INT64_MAX
    # overflowed in the span view's minutes.
    def span_at(t_ns):
        hit = u64(0xc1) + u64(0x1111) + u64(t_ns) + u64(0) + u64(0xb2)
        return (b"\x40\x00" + ch_days(CH_DAY) + ch_series() + ch_attrsets() + ans(hit) +
                ans(u64(0xc1) + u64(3) + u64(60000000)) + ch_frames() + ch_nodes() + ch_entries(CH_ALL))
    write(t, "seed-span-time-min", span_at(-2**63))
    write(t, "seed-span-time-max", span_at(2**63 - 1))
    head = u64(0x1111) + u64(0xc1) + u64(-2**63) + u64(10 * CH_S) + u64(3) + u64(60000000)
    write(t, "seed-head-time-out-of-range", b"\x10\x00" + ch_days(CH_DAY) + ch_series() + ans(head) + ch_attrsets() +
          ch_frames() + ch_nodes() + ch_entries(CH_CPU))
    # Regression: days the sweep keeps, listed as if they were older, are not dropped.
    write(t, "seed-sweep-kept-days", b"\x01\x80" + ok + ok + ok + ok +
          ch_days(CH_DAY - 9, CH_DAY, CH_DAY - 8, CH_DAY - 7, 4000000000) + ok + ok + ok + ok + ok)
    # What a broken or hostile ClickHouse may answer.
    write(t, "seed-error-500", b"\x04\x00" + ch_days(CH_DAY) + ans(b"Code: 60, e.displayText() = DB::Exception: "
                                                                   b"Table kiln.series doesn't exist", kind=2))
    write(t, "seed-cut-transfer", b"\x04\x00" + ch_days(CH_DAY) + ans(ch_series()[3:43], kind=3))
    cut = ch_series()
    write(t, "seed-series-cut-row", b"\x01\x00" + ch_days(CH_DAY) + ans(cut[3:-5]) + ch_heads(CH_ALL))
    write(t, "seed-day-odd-length", b"\x01\x00" + ans(u32(CH_DAY) + b"\x01\x02"))
    write(t, "seed-node-unknown-parent", b"\x04\x00" + ch_days(CH_DAY) + ch_series() + ch_heads(CH_CPU) + ch_frames() +
          ans(u64(0xa2) + u64(0xa1) + u64(0xf2) + u32(1)) + ch_attrsets() + ch_sums(CH_CPU))
    write(t, "seed-label-count-mismatch", b"\x20\x00" + ch_days(CH_DAY) + ch_series() + ch_heads(CH_CPU) +
          ans(u64(0xb1) + chv(2) + chs("a") + chs("b") + chv(1) + chs("x")))
    write(t, "seed-huge-string-length", b"\x01\x00" + ch_days(CH_DAY) + ans(u64(0x1111) + chv(1 << 62) + b"api"))


# ---- pyroscope_name: the name= of a Pyroscope /ingest ----
def seeds_pyroscope_name():
    t = "pyroscope_name"
    write(t, "seed-bare", "checkout")
    write(t, "seed-labels", 'svc-X{env=prod,region="eu-1"}')
    write(t, "seed-dot-cpu", "svc.cpu{service_name=real,__session_id__=5f2a}")
    write(t, "seed-quoted-escapes", 'app{k="a \\"b\\" \\\\ c, }d", k2 = v 2 ,}')
    write(t, "seed-unterminated", 'app{k="v}')
    write(t, "seed-missing-equals", "app{k v}")
    write(t, "seed-trailing", "app{k=1}}x")
    write(t, "seed-many", "app{" + ",".join("k%d=v" % i for i in range(70)) + "}")
    write(t, "seed-time-ns", "1759990000123456789")


# ---- folded: Pyroscope's folded text (byte 0: format, units, rate, average; then the body) ----
def seeds_folded():
    t = "folded"
    groups = "main;work;leaf 5\nmain;idle 2\nmain;work;leaf 3\n"
    write(t, "seed-groups", b"\x00" + groups.encode())
    write(t, "seed-groups-crlf-blank", b"\x10" + b"\r\nfoo (a.py:3);bar (b.py:9) 7\r\n\r\nfoo (a.py:3) 1\r\n")
    write(t, "seed-groups-gzip", b"\x00" + gz(groups.encode()))
    write(t, "seed-lines", b"\x01" + b"a;b\na;b\nc d;e\n")
    write(t, "seed-lines-objects-average", b"\x89" + b"a;b\nx\n")
    write(t, "seed-sniff-text", b"\x02" + groups.encode())
    write(t, "seed-sniff-pprof", b"\x02" + b"\x0a\x04\x08\x01\x10\x02\x32\x00\x32\x03cpu\x32\x05count")
    write(t, "seed-bad-count", b"\x00a;b x1\n")
    write(t, "seed-overflow", b"\x00a 9223372036854775807\na 1\n")
    write(t, "seed-rate-overflow", b"\x40a 92233720368547758\n")
    write(t, "seed-empty-frame", b"\x00a;;b 1\n")
    write(t, "seed-control", b"\x01a\x01;b\n")
    write(t, "seed-deep", b"\x00" + ";".join("f%d" % i for i in range(4200)).encode() + b" 3\n")
    write(t, "seed-many-stacks", b"\x00" + "".join("s%d;x 1\n" % i for i in range(120)).encode())


# ---- multipart: first line the Content-Type, the rest the body ----
def seeds_multipart():
    t = "multipart"
    b = "3b1f0c6d9e2a4b7c8d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192"
    ct = "multipart/form-data; boundary=" + b
    cfg = (b'{"alloc_objects":{"units":"objects","cumulative":true},'
           b'"inuse_space":{"units":"bytes","aggregation":"average"},'
           b'"contentions":{"display-name":"mutex_count","units":"lock_samples","sampled":true}}')

    def part(name, data, filename=None):
        fn = filename if filename is not None else name + ".pprof"
        return (("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                 "Content-Type: application/octet-stream\r\n\r\n") % (b, name, fn)).encode() + data + b"\r\n"

    pprof = gz(b"\x0a\x04\x08\x01\x10\x02\x32\x07samples\x32\x05count")
    close = ("--%s--\r\n" % b).encode()
    write(t, "seed-go-sdk", ct.encode() + b"\n" + part("profile", pprof) +
          part("sample_type_config", cfg, "sample_type_config.json") + close)
    write(t, "seed-prev-profile", ct.encode() + b"\n" + part("profile", pprof) + part("prev_profile", pprof) +
          part("sample_type_config", cfg) + close)
    write(t, "seed-quoted-lf", b'Multipart/Form-Data; charset=x; BOUNDARY="a b"\n'
          b'pre\n--a b\ncontent-disposition: form-data; name="q\\"x"\n\nv\n--a bx\n--a b--epi')
    write(t, "seed-truncated", ct.encode() + b"\n" + part("profile", pprof)[:-10])
    write(t, "seed-duplicate", b"multipart/form-data; boundary=B\n--B\r\nContent-Disposition: form-data; name=a\r\n\r\n"
          b"x\r\n--B\r\nContent-Disposition: form-data; name=a\r\n\r\ny\r\n--B--")
    write(t, "seed-no-boundary", b"multipart/form-data\n--B--")
    write(t, "seed-mixed", b"multipart/mixed; boundary=B\n--B--")
    write(t, "seed-config", b"sample_type_config\n" + cfg)
    write(t, "seed-config-bad", b'sample_type_config\n{"a":{"aggregation":"max","cumulative":"yes"},"a":{}}')


# ---- pyroscope_push: a push.v1 PushRequest (first byte: 0 protobuf, 1 JSON) ----
def pbv(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pbf(num, payload):  # a length-delimited field
    if isinstance(payload, str):
        payload = payload.encode()
    return pbv(num << 3 | 2) + pbv(len(payload)) + payload


def push_series(labels, profiles):
    return pbf(1, b"".join(pbf(1, pbf(1, k) + pbf(2, v)) for k, v in labels) +
               b"".join(pbf(2, pbf(1, p) + pbf(2, "id")) for p in profiles))


def seeds_pyroscope_push():
    t = "pyroscope_push"
    pprof = gz(bytes.fromhex("0a040a020102"))
    ok = push_series([("service_name", "api"), ("__name__", "process_cpu"), ("env", "prod")], [pprof, b"\x0a\x00"])
    write(t, "seed-two-series", b"\x00" + ok + push_series([("k", "")], []))
    write(t, "seed-empty", b"\x00")
    write(t, "seed-annotations", b"\x00" + pbf(1, pbf(3, pbf(1, "k") + pbf(2, "v")) + pbf(2, pbf(1, "x"))))
    write(t, "seed-truncated", b"\x00" + ok[:-3])
    write(t, "seed-duplicate-label", b"\x00" + push_series([("k", "1"), ("k", "2")], []))
    write(t, "seed-empty-name", b"\x00" + push_series([("", "1")], []))
    write(t, "seed-many-labels", b"\x00" + push_series([("k%d" % i, "v") for i in range(65)], []))
    write(t, "seed-wrong-type", b"\x00\x08\x01")
    write(t, "seed-json", b"\x01" + b'{"series":[{"labels":[{"name":"service_name","value":"api"}],'
          b'"samples":[{"rawProfile":"H4sIAAAAAAAA/+NiYGRiBgCOxo6cBgAAAA==","ID":"a"}]},{}]}')
    write(t, "seed-json-proto-names", b"\x01" + b'{"series":[{"samples":[{"raw_profile":"AQI"}]}]}')
    write(t, "seed-json-bad-base64", b"\x01" + b'{"series":[{"samples":[{"rawProfile":"*"}]}]}')
    write(t, "seed-json-not-object", b"\x01[1]")



# ---- selector: a label selector of Pyroscope's query API (query=, label_selector, matchers) ----
def seeds_selector():
    t = "selector"
    write(t, "seed-empty-braces", "{}")
    write(t, "seed-render-query", 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="app"}')
    write(t, "seed-four-ops", "{service_name=\"app\", env!=\"dev\", pod=~\"api-[0-9a-f]{5}\", ns!~'kube-.*',}")
    write(t, "seed-quoted-name", '{"service.name"=~"(?i)Check(out|er)+", "process_cpu:cpu"}')
    write(t, "seed-escapes", '{a="x\\"y\\\\z\\n\\x41\\101\\u00e9\\U0001F600", b=`raw\\n`}')
    write(t, "seed-regex-classes", '{a=~"[^\\\\s\\\\d]\\\\w*\\\\.[a-z-]{2,}|(?:x|y)?$"}')
    write(t, "seed-pathological", '{a=~"(a*)*b", b=~"(x+x+)+y", c=~"(.*a){20}"}')
    write(t, "seed-unsupported", '{a=~"\\\\bword\\\\pL[[:alpha:]](?m)"}')
    write(t, "seed-bad-op", "{a}")
    write(t, "seed-unterminated", '{a="b')
    write(t, "seed-bad-escape", '{a="\\q\\ud800"}')
    write(t, "seed-too-large", '{a=~"(a{1000}){20}"}')
    write(t, "seed-many", "{" + ",".join('k%d="v"' % i for i in range(70)) + "}")
    write(t, "seed-regex-only", "(api|web)-\\d+\\x{e9}[\u00e9-\u00eb]")

# ---- querier_request: byte 0 = method (low 4 bits) | 0x10 for JSON; the rest a querier.v1 request ----
# 0 ProfileTypes, 1 LabelNames, 2 LabelValues, 3 SelectMergeStacktraces, 4 Series,
# 5 GetProfileStats, 6 SelectMergeProfile, 7 SelectSeries, 8 SelectMergeSpanProfile
def pb_field(num, value):
    import struct
    if isinstance(value, float):
        return pbv(num << 3 | 1) + struct.pack("<d", value)
    if isinstance(value, int):
        return pbv(num << 3) + pbv(value & ((1 << 64) - 1))
    return pbf(num, value.encode() if isinstance(value, str) else value)


def seeds_querier_request():
    t = "querier_request"
    sel = '{service_name="app", env=~"prod|dev"}'
    cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
    write(t, "seed-profile-types", b"\x00" + pb_field(1, 1760000000000) + pb_field(2, 1760003600000))
    write(t, "seed-label-names", b"\x01" + pb_field(1, sel) + pb_field(2, 1) + pb_field(3, 2))
    write(t, "seed-label-values", b"\x02" + pb_field(1, "service_name") + pb_field(2, "{}"))
    write(t, "seed-merge-tree", b"\x03" + pb_field(1, cpu) + pb_field(2, sel) + pb_field(5, 3) + pb_field(6, 2))
    write(t, "seed-merge-bad-format", b"\x03" + pb_field(1, cpu) + pb_field(2, sel) + pb_field(6, 9))
    write(t, "seed-series", b"\x04" + pb_field(1, sel) + pb_field(2, "service_name"))
    write(t, "seed-stats", b"\x05")
    write(t, "seed-merge-profile", b"\x06" + pb_field(1, cpu) + pb_field(2, sel) + pb_field(5, 16384))
    write(t, "seed-select-series", b"\x07" + pb_field(1, cpu) + pb_field(2, sel) + pb_field(3, 1000) +
          pb_field(4, 7000) + pb_field(5, "env") + pb_field(6, 15.0) + pb_field(7, 1) + pb_field(9, 2))
    write(t, "seed-select-series-nan-step", b"\x07" + pb_field(1, cpu) + pb_field(2, sel) + pb_field(6, float("nan")))
    write(t, "seed-span", b"\x08" + pb_field(1, cpu) + pb_field(2, sel) + pb_field(3, "9a3f0c21d4e5b6a7") +
          pb_field(3, "00000000000000ff") + pb_field(6, 100))
    write(t, "seed-truncated", b"\x03" + pb_field(1, cpu)[:-3])
    write(t, "seed-start-after-end", b"\x07" + pb_field(1, cpu) + pb_field(2, sel) + pb_field(3, 9) + pb_field(4, 1) +
          pb_field(6, 1.0))
    write(t, "seed-json-merge", b"\x13" + ('{"profileTypeID":"%s","labelSelector":"{service_name=\\"a\\"}",'
                                           '"start":"1","end":2,"maxNodes":"5","format":"PROFILE_FORMAT_TREE"}' % cpu).encode())
    write(t, "seed-json-series", b"\x17" + ('{"profileTypeID":"%s","labelSelector":"{service_name=\\"a\\"}",'
                                            '"groupBy":["pod"],"step":"Infinity","aggregation":'
                                            '"TIME_SERIES_AGGREGATION_TYPE_AVERAGE","limit":"3"}' % cpu).encode())
    write(t, "seed-json-span", b"\x18" + ('{"profile_typeID":"%s","label_selector":"{service_name=\\"a\\"}",'
                                          '"spanSelector":["ab","cd"],"max_nodes":1}' % cpu).encode())
    write(t, "seed-json-bad-enum", b"\x13" + b'{"format":"PROFILE_FORMAT_NOPE"}')
    write(t, "seed-json-not-object", b"\x10[]")


SEEDS = {name[len("seeds_"):]: fn for name, fn in list(globals().items()) if name.startswith("seeds_")}

if __name__ == "__main__":
    for t in sys.argv[1:] or sorted(SEEDS):
        SEEDS[t]()
