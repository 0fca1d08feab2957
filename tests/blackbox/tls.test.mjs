// TLS on every listener (OPS: TLS): a test CA and a server
// certificate for 127.0.0.1 made with the openssl CLI; curl --cacert reads
// /healthz from the UI listener and uploads a pprof; OTLP/HTTP over HTTPS;
// @grpc/grpc-js with grpc.credentials.createSsl(CA) calls Export (ALPN h2);
// a plain-HTTP client (and an h2c gRPC client) against a TLS port gets an
// error promptly, and the server keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import tls from 'node:tls';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { TESTDATA, uniqueName } from './lib/env.mjs';
import { tail } from './lib/server.mjs';
import {
  todoUnless, stopAll, startTracked, makeCerts, startS6, configYaml, request, apiAs, brief, wide, grpcClientAt, grpcExportMd, describeGrpcMd, otlpN, ALL4,
} from './lib/s6.mjs';
import { pushTo } from './lib/s6-push.mjs';

const execFileP = promisify(execFile);
const todo = await todoUnless('tls');
let certs;
let server;

before(async () => {
  certs = makeCerts();
  if (todo) return;
  const tlsPair = { cert: certs.cert, key: certs.key };
  server = await startS6({ config: configYaml({ listeners: Object.fromEntries(ALL4.map((l) => [l, { tls: tlsPair }])) }), https: ALL4 });
});
after(stopAll);

const portOf = (l) => new URL(server.urls[l]).port;

test('self-check: the test CA signs a server certificate for IP 127.0.0.1 (openssl verify)', () => {
  const out = execFileSync('openssl', ['verify', '-CAfile', certs.ca, certs.cert]).toString();
  assert.match(out, /OK/);
  const text = execFileSync('openssl', ['x509', '-in', certs.cert, '-noout', '-text']).toString();
  assert.match(text, /IP Address:127\.0\.0\.1/);
});

test('curl --cacert: GET /healthz on the UI listener over HTTPS; without the CA curl refuses the certificate', { todo }, async () => {
  const url = `https://127.0.0.1:${portOf('ui')}/healthz`;
  const { stdout } = await execFileP('curl', ['-sS', '--max-time', '10', '--cacert', certs.ca, '-o', '/dev/null', '-w', '%{http_code} %{ssl_verify_result}', url]);
  assert.equal(stdout.trim(), '200 0', `curl --cacert ${url}`);
  const bad = await execFileP('curl', ['-sS', '--max-time', '10', '-o', '/dev/null', url]).then(() => null, (e) => e);
  assert.ok(bad, 'curl without --cacert must refuse a certificate of the test CA');
});

test('curl --cacert uploads a pprof over HTTPS; the UI over HTTPS shows it', { todo }, async () => {
  const svc = uniqueName('tls-curl');
  const file = path.join(TESTDATA, 'pprof', 'go-cpu-two-stacks.pb.gz');
  const { stdout } = await execFileP('curl', ['-sS', '--max-time', '20', '--cacert', certs.ca, '--data-binary', `@${file}`,
    '-H', 'content-type: application/octet-stream', '-w', '\n%{http_code}', `https://127.0.0.1:${portOf('upload')}/profiling/upload?serviceName=${svc}`]);
  const [body, code] = stdout.trim().split('\n');
  assert.equal(code, '200', `upload over TLS: ${stdout}`);
  assert.ok(JSON.parse(body).samples > 0, body);
  const s = await apiAs(server, '/api/services', wide(), { ca: certs.caPem });
  assert.equal(s.status, 200, brief(s));
  assert.ok(s.json.services.some((x) => x.name === svc), `${svc} not listed: ${s.text.slice(0, 300)}`);
});

test('OTLP/HTTP over HTTPS (node https with the test CA)', { todo }, async () => {
  const r = await pushTo(server, 'otlp_http', uniqueName('tls-otlp-http'), {}, { ca: certs.caPem });
  assert.equal(r.status, 200, r.describe);
});

test('OTLP/gRPC over TLS: grpc-js createSsl(CA) Export succeeds; the port negotiates ALPN h2', { todo }, async () => {
  const svc = uniqueName('tls-grpc');
  const c = grpcClientAt(server.urls.otlp_grpc, { ca: certs.caPem });
  try {
    const r = await grpcExportMd(c, otlpN(svc, 4), {}, 15000);
    assert.ok(r.ok, `Export over TLS: ${describeGrpcMd(r)}\n${tail(server.stderr(), 8)}`);
  } finally { c.close(); }
  const fg = await apiAs(server, '/api/flamegraph', { service: svc, type: 'cpu:nanoseconds', ...wide() }, { ca: certs.caPem });
  assert.equal(fg.status, 200, brief(fg));
  assert.equal(fg.json.total, 4, 'stored over TLS');
  const alpn = await new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: Number(portOf('otlp_grpc')), ca: certs.caPem, ALPNProtocols: ['h2'], servername: undefined }, () => { resolve(s.alpnProtocol); s.end(); });
    s.on('error', reject);
    s.setTimeout(5000, () => { s.destroy(); reject(new Error('TLS handshake timed out')); });
  });
  assert.equal(alpn, 'h2', 'ALPN on the gRPC TLS port');
});

test('plain HTTP against every TLS port fails promptly (no hang) and the server keeps serving', { todo }, async () => {
  for (const l of ALL4) {
    const plain = `http://127.0.0.1:${portOf(l)}/healthz`;
    const t0 = Date.now();
    const r = await request(plain, { timeoutMs: 5000 }).then((x) => x, (e) => e);
    const took = Date.now() - t0;
    if (r instanceof Error) {
      assert.doesNotMatch(r.message, /no answer within/, `${l}: plain HTTP hung for ${took} ms`);
    } else {
      assert.ok(r.status >= 400, `${l}: plain HTTP on a TLS port answered ${brief(r)}`);
    }
    assert.ok(took < 5000, `${l}: plain HTTP took ${took} ms to fail`);
  }
  const c = grpcClientAt(`http://127.0.0.1:${portOf('otlp_grpc')}`);
  try {
    const t0 = Date.now();
    const r = await grpcExportMd(c, otlpN('tls-h2c', 1), {}, 5000);
    assert.ok(!r.ok, 'h2c gRPC against the TLS port must fail');
    assert.notEqual(r.codeName, 'DEADLINE_EXCEEDED', `h2c against TLS hung: ${describeGrpcMd(r)} after ${Date.now() - t0} ms`);
  } finally { c.close(); }
  // HTTP/1.1 listeners answer over TLS (any status); the gRPC one speaks h2 only.
  for (const l of ['upload', 'otlp_http', 'ui']) {
    const r = await request(`${server.urls[l]}/healthz`, { ca: certs.caPem }).then((x) => x, (e) => e);
    assert.ok(!(r instanceof Error), `${l}: the TLS listener stopped answering after plain-HTTP clients: ${r.message ?? ''}`);
  }
  const g = grpcClientAt(server.urls.otlp_grpc, { ca: certs.caPem });
  try {
    const r = await grpcExportMd(g, otlpN(uniqueName('tls-grpc-after'), 2), {}, 15000);
    assert.ok(r.ok, `gRPC over TLS after plain clients: ${describeGrpcMd(r)}`);
  } finally { g.close(); }
  const h = await apiAs(server, '/healthz', {}, { ca: certs.caPem });
  assert.equal(h.status, 200, `/healthz over TLS afterwards: ${brief(h)}`);
  const up = await pushTo(server, 'upload', uniqueName('tls-after'), {}, { ca: certs.caPem });
  assert.equal(up.status, 200, `upload over TLS afterwards: ${up.describe}`);
});

test('a TLS config naming a missing certificate file is a startup error', { todo }, async () => {
  const e = await startS6({ config: configYaml({ listeners: { ui: { tls: { cert: '/nonexistent/cert.pem', key: '/nonexistent/key.pem' } } } }), https: ['ui'], timeoutMs: 5000 })
    .then((s) => { s.stop(); return null; }, (x) => x);
  assert.ok(e, 'kiln serve started with a missing TLS certificate');
  assert.match(e.message, /cert|nonexistent/i, e.message);
});
