// One call shape for the four listeners, so auth and isolation tests can
// loop over them: pushTo(server, listener, svc, auth) and
// queryAs(server, auth) normalise HTTP codes and gRPC statuses to
// {status: 200|401|403|429|…, message, raw} (gRPC OK/UNAUTHENTICATED/
// PERMISSION_DENIED/RESOURCE_EXHAUSTED → 200/401/403/429).
import { parseOtlpReply } from './otlp.mjs';
import {
  uploadAs, postOtlpAs, apiAs, grpcClientAt, grpcExportMd, pprofN, otlpN, brief, describeGrpcMd, wide,
} from './s6.mjs';

const GRPC_TO_HTTP = { OK: 200, UNAUTHENTICATED: 401, PERMISSION_DENIED: 403, RESOURCE_EXHAUSTED: 429, INVALID_ARGUMENT: 400, UNAVAILABLE: 503 };

// auth: {key} | {bearer} | {} ; opts.n: samples in the body; opts.ca for TLS.
export async function pushTo(server, listener, svc, auth = {}, opts = {}) {
  const n = opts.n ?? 3;
  switch (listener) {
    case 'upload': {
      const r = await uploadAs(server, opts.body ?? pprofN(n), { serviceName: svc, ...(opts.params ?? {}) }, { ...auth, ca: opts.ca });
      return { status: r.status, message: r.json?.error ?? r.json?.message ?? r.text, raw: r, samples: r.json?.samples, describe: brief(r) };
    }
    case 'otlp_http': {
      const r = await postOtlpAs(server, opts.body ?? otlpN(svc, n), { ...auth, ca: opts.ca });
      const p = parseOtlpReply(r.status, r.headers, r.buf);
      const message = p.rpcStatus?.message ?? p.text;
      return { status: r.status, message, raw: r, parsed: p, describe: `${brief(r)}${p.rpcStatus ? ` status=${JSON.stringify(p.rpcStatus)}` : ''}` };
    }
    case 'otlp_grpc': {
      const c = grpcClientAt(server.urls.otlp_grpc, { ca: opts.ca });
      try {
        const md = {};
        if (auth.key !== undefined) md['x-kiln-key'] = auth.key;
        if (auth.bearer !== undefined) md.authorization = `Bearer ${auth.bearer}`;
        const r = await grpcExportMd(c, opts.body ?? otlpN(svc, n), md);
        return { status: GRPC_TO_HTTP[r.codeName] ?? `grpc ${r.codeName}`, message: r.details ?? '', raw: r, describe: describeGrpcMd(r) };
      } finally { c.close(); }
    }
    case 'ui':
      return queryAs(server, auth, opts);
    default: throw new Error(`unknown listener ${listener}`);
  }
}

// GET /api/services on the UI listener (the query "push" of the auth matrix).
export async function queryAs(server, auth = {}, opts = {}) {
  const r = await apiAs(server, opts.route ?? '/api/services', opts.params ?? wide(), { ...auth, ca: opts.ca });
  return { status: r.status, message: r.json?.error ?? r.json?.message ?? r.text, raw: r, describe: brief(r) };
}
