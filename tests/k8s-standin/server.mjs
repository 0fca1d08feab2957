// A stand-in for the Kubernetes API server (the one piece the tests cannot run
// for real): pods list and watch in the real JSON shapes, bearer-token checks,
// and a /control API for tests. Node built-ins only; state lives in memory.
//
//   node tests/k8s-standin/server.mjs [--port N] [--token T]   → prints "listening PORT"
//
// API (as kube-apiserver answers it):
//   GET /api/v1/pods?fieldSelector=spec.nodeName%3DN&limit=L&continue=C    PodList, paged
//   GET /api/v1/pods?fieldSelector=…&watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=S
//       chunked stream of {"type":…,"object":…} lines; a resourceVersion older than the last
//       compaction → an ERROR event with a Status 410 (or HTTP 410, see /control/compact)
// Control (tests):
//   POST   /control/pods            body: a Pod object, or {namespace,name,node,ip,phase,annotations,
//                                   labels,owner:{kind,name},containers:[{name,ports:[{name,containerPort}]}],
//                                   initContainers:[…,restartPolicy],padBytes} → ADDED or MODIFIED
//   DELETE /control/pods/NS/NAME    → DELETED
//   POST   /control/compact?as=event|http   forget history: open watches get an ERROR 410 event
//                                   (as=event) or are dropped so the reconnect gets HTTP 410 (as=http)
//   POST   /control/bookmark        a BOOKMARK with a new resourceVersion to every open watch
//   POST   /control/drop            destroy every open API connection
//   POST   /control/stall?on=1|0    while on, API requests get no answer at all (and open watches go quiet)
//   POST   /control/token           body: the only bearer token accepted from now on
//   GET    /control/requests        [{kind:"list"|"watch", query:{…}, auth}] of every API request so far
//   GET    /control/state           {resourceVersion, pods, watches}
import http from 'node:http';

const args = process.argv.slice(2);
const arg = (name, def) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : def;
};

let token = arg('--token', 'test-token');
let rv = 1000;
let compactedRv = 0; // watches from a resourceVersion below this are expired
let expiredAs = 'event';
let stalled = false;
const pods = new Map(); // "ns/name" → Pod
const history = []; // {rv, type, object}
const watches = new Set(); // {res, node, timer}
const sockets = new Set();
const requests = [];

function makePod(o) {
	if (o.metadata) return o;
	const containers = (o.containers || [{ name: 'app', ports: [{ name: 'http-metrics', containerPort: 8080 }] }]).map((c) => ({
		name: c.name,
		image: c.image || 'registry.example/app:1.0',
		ports: (c.ports || []).map((p) => ({ name: p.name, containerPort: p.containerPort, protocol: 'TCP' })),
		resources: {},
		terminationMessagePath: '/dev/termination-log',
		imagePullPolicy: 'IfNotPresent',
	}));
	const pod = {
		kind: 'Pod',
		apiVersion: 'v1',
		metadata: {
			name: o.name,
			namespace: o.namespace || 'default',
			uid: `uid-${o.namespace || 'default'}-${o.name}`,
			labels: o.labels || {},
			annotations: o.annotations || {},
			creationTimestamp: '2024-05-01T10:00:00Z',
			ownerReferences: o.owner
				? [{ apiVersion: 'apps/v1', kind: o.owner.kind, name: o.owner.name, uid: `uid-${o.owner.name}`, controller: true, blockOwnerDeletion: true }]
				: undefined,
		},
		spec: {
			nodeName: o.node || 'node-a',
			containers,
			initContainers: o.initContainers
				? o.initContainers.map((c) => ({ name: c.name, image: 'registry.example/side:1.0', restartPolicy: c.restartPolicy, ports: (c.ports || []).map((p) => ({ name: p.name, containerPort: p.containerPort, protocol: 'TCP' })) }))
				: undefined,
			restartPolicy: 'Always',
			serviceAccountName: 'default',
		},
		status: {
			phase: o.phase || 'Running',
			podIP: o.ip,
			podIPs: o.ip ? [{ ip: o.ip }] : undefined,
			hostIP: '192.168.1.10',
			startTime: '2024-05-01T10:00:01Z',
			containerStatuses: containers.map((c) => ({ name: c.name, ready: true, restartCount: 0, state: { running: { startedAt: '2024-05-01T10:00:02Z' } } })),
			// Native sidecars (restartPolicy Always) keep running; other init containers have completed.
			initContainerStatuses: o.initContainers
				? o.initContainers.map((c) => ({
					name: c.name, ready: c.restartPolicy === 'Always', restartCount: 0,
					state: c.restartPolicy === 'Always'
						? { running: { startedAt: '2024-05-01T10:00:01Z' } }
						: { terminated: { exitCode: 0, reason: 'Completed', startedAt: '2024-05-01T10:00:01Z', finishedAt: '2024-05-01T10:00:01Z' } },
				}))
				: undefined,
		},
	};
	if (o.padBytes) pod.metadata.annotations['example.com/padding'] = 'x'.repeat(o.padBytes);
	return JSON.parse(JSON.stringify(pod)); // drops the undefined fields
}

function status(code, reason, message) {
	return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

function send(res, code, obj) {
	const body = JSON.stringify(obj);
	res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
	res.end(body);
}

function emit(type, pod) {
	rv++;
	const object = structuredClone(pod);
	object.metadata.resourceVersion = String(rv);
	if (type !== 'DELETED') pods.set(`${object.metadata.namespace}/${object.metadata.name}`, object);
	history.push({ rv, type, object });
	if (history.length > 10000) history.shift();
	for (const w of watches) if (!stalled && object.spec.nodeName === w.node) writeEvent(w, { type, object });
}

function writeEvent(w, ev) {
	w.res.write(JSON.stringify(ev) + '\n');
}

function nodeOf(q) {
	const fs = q.get('fieldSelector') || '';
	const m = /^spec\.nodeName=(.*)$/.exec(fs);
	return m ? m[1] : null;
}

function list(q, res) {
	const node = nodeOf(q);
	const limit = Number(q.get('limit') || 0);
	let offset = 0;
	let snapshotRv = rv;
	const cont = q.get('continue');
	if (cont) {
		try {
			({ offset, rv: snapshotRv } = JSON.parse(Buffer.from(cont, 'base64').toString()));
		} catch {
			return send(res, 400, status(400, 'BadRequest', 'invalid continue token'));
		}
		if (snapshotRv < compactedRv) return send(res, 410, status(410, 'Expired', 'The provided continue parameter is too old'));
	}
	const all = [...pods.values()].filter((p) => node === null || p.spec.nodeName === node).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
	const items = limit > 0 ? all.slice(offset, offset + limit) : all.slice(offset);
	const more = limit > 0 && offset + limit < all.length;
	const metadata = { resourceVersion: String(snapshotRv) };
	if (more) {
		metadata.continue = Buffer.from(JSON.stringify({ offset: offset + limit, rv: snapshotRv })).toString('base64');
		metadata.remainingItemCount = all.length - offset - limit;
	}
	send(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata, items: items.map((p) => { const c = structuredClone(p); delete c.kind; delete c.apiVersion; return c; }) });
}

function watch(q, res) {
	const from = Number(q.get('resourceVersion') || 0);
	const node = nodeOf(q);
	if (from < compactedRv && expiredAs === 'http')
		return send(res, 410, status(410, 'Expired', `too old resource version: ${from} (${compactedRv})`));
	res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
	res.flushHeaders(); // as kube-apiserver does: the client knows the watch is open
	if (from < compactedRv) {
		res.end(JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from} (${compactedRv})`) }) + '\n');
		return;
	}
	const w = { res, node };
	const timeout = Number(q.get('timeoutSeconds') || 300);
	w.timer = setTimeout(() => res.end(), timeout * 1000);
	watches.add(w);
	res.on('close', () => {
		clearTimeout(w.timer);
		watches.delete(w);
	});
	for (const h of history) if (h.rv > from && h.object.spec.nodeName === node) writeEvent(w, { type: h.type, object: h.object });
}

function readBody(req) {
	return new Promise((resolve) => {
		const parts = [];
		req.on('data', (d) => parts.push(d));
		req.on('end', () => resolve(Buffer.concat(parts).toString()));
	});
}

async function control(req, res, url) {
	const path = url.pathname;
	if (req.method === 'POST' && path === '/control/pods') {
		const pod = makePod(JSON.parse(await readBody(req)));
		const known = pods.has(`${pod.metadata.namespace}/${pod.metadata.name}`);
		emit(known ? 'MODIFIED' : 'ADDED', pod);
		return send(res, 200, { resourceVersion: String(rv) });
	}
	const del = /^\/control\/pods\/([^/]+)\/([^/]+)$/.exec(path);
	if (req.method === 'DELETE' && del) {
		const pod = pods.get(`${del[1]}/${del[2]}`);
		if (!pod) return send(res, 404, { error: 'no such pod' });
		pods.delete(`${del[1]}/${del[2]}`);
		emit('DELETED', pod);
		return send(res, 200, { resourceVersion: String(rv) });
	}
	if (path === '/control/compact') {
		expiredAs = url.searchParams.get('as') || 'event';
		rv++;
		compactedRv = rv;
		history.length = 0;
		for (const w of watches) {
			if (expiredAs === 'http') w.res.destroy();
			else w.res.end(JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', 'too old resource version') }) + '\n');
		}
		return send(res, 200, { resourceVersion: String(rv) });
	}
	if (path === '/control/bookmark') {
		rv++;
		for (const w of watches) writeEvent(w, { type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } } });
		return send(res, 200, { resourceVersion: String(rv) });
	}
	if (path === '/control/drop') {
		for (const s of sockets) if (!s.control) s.destroy();
		return send(res, 200, {});
	}
	if (path === '/control/stall') {
		stalled = url.searchParams.get('on') !== '0';
		return send(res, 200, { stalled });
	}
	if (path === '/control/token') {
		token = (await readBody(req)).trim();
		return send(res, 200, {});
	}
	if (path === '/control/requests') return send(res, 200, requests);
	if (path === '/control/state') return send(res, 200, { resourceVersion: String(rv), pods: pods.size, watches: watches.size });
	send(res, 404, { error: 'unknown control path' });
}

const server = http.createServer((req, res) => {
	const url = new URL(req.url, 'http://standin');
	if (url.pathname.startsWith('/control/')) {
		req.socket.control = true;
		control(req, res, url).catch((e) => send(res, 400, { error: String(e) }));
		return;
	}
	const q = url.searchParams;
	const isWatch = q.get('watch') === '1' || q.get('watch') === 'true';
	requests.push({ kind: isWatch ? 'watch' : 'list', query: Object.fromEntries(q), auth: req.headers.authorization || '' });
	if (stalled) return; // never answered
	if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
	if (url.pathname !== '/api/v1/pods' || req.method !== 'GET') return send(res, 404, status(404, 'NotFound', 'the server could not find the requested resource'));
	if (isWatch) watch(q, res);
	else list(q, res);
});
server.on('connection', (s) => {
	sockets.add(s);
	s.on('close', () => sockets.delete(s));
});
server.keepAliveTimeout = 60000;
server.listen(Number(arg('--port', 0)), '127.0.0.1', () => {
	process.stdout.write(`listening ${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
