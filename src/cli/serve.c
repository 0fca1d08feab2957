/* kiln serve: settings (defaults < config file < flags), the store, the
 * worker pool, one listener per role-enabled address, and a clean shutdown
 * on SIGTERM/SIGINT that answers in-flight requests and flushes the store. */
#include <errno.h>
#include <event2/event.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "base/alloc.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "cli/cli.h"
#include "cli/config.h"
#include "net/tls.h"
#include "scrape/discovery.h"

#define SHUTDOWN_GRACE_MS 10000
#define KEYS_REFRESH_MS 250      /* a created/revoked key takes effect within a second (store_keys_poll) */
#define USAGE_FLUSH_MS 1000      /* at most a second of usage counts is lost on kill -9 */
#define RETENTION_SWEEP_MS 60000 /* the cleaner, also run once at startup */

typedef struct {
	config_t cfg;
	loop_t *loop;
	pool_t *pool;
	store_t *store;
	api_ctx_t api;
	api_listener_t listeners[API_LISTENER_COUNT];
	http_server_t *servers[API_LISTENER_COUNT]; /* HTTP/1.1 listeners */
	grpc_server_t *grpc;                        /* the OTLP/gRPC listener */
	scraper_t *scraper;                         /* roles all and sensor, when scraping is enabled */
	discovery_t *discovery;                     /* the pod watch, when scraping and a node is known */
	struct event *sig_term, *sig_int, *drain_timer;
	int draining_ms;
	struct event *keys_timer, *usage_timer, *retention_timer;
	struct ssl_ctx_st *tls[API_LISTENER_COUNT]; /* per listener, when tls: {cert, key} */
	net_budget_t bodies; /* request bodies of every listener (limits.requestBodiesMiB) */
	_Atomic int keys_busy, usage_busy, retention_busy; /* a periodic job is on the pool */
} serve_state_t;

/* ---- periodic jobs: timers on the loop, work on the pool (never blocking the loop) ---- */

static void keys_job(void *arg)
{
	serve_state_t *s = arg;
	keys_refresh(s->api.keys);
	atomic_store(&s->keys_busy, 0);
}

static void usage_job(void *arg)
{
	serve_state_t *s = arg;
	err_t err;
	if (usage_flush(s->api.usage, &err) < 0)
		log_warn("usage flush failed", "error=\"%s\"", err.msg);
	atomic_store(&s->usage_busy, 0);
}

typedef struct {
	serve_state_t *s;
	int64_t now;
} sweep_ctx_t;

static void sweep_project(slice_t project, void *arg)
{
	sweep_ctx_t *c = arg;
	char name[LIMIT_NAME_BYTES + 1];
	snprintf(name, sizeof name, "%.*s", (int)project.n, (const char *)project.p);
	uint32_t deleted = 0;
	err_t err;
	int days = store_retention_days(&c->s->cfg.retention, name);
	if (store_retention_sweep(c->s->store, project, days, c->now, &deleted, &err) < 0)
		log_warn("retention sweep failed", "project=%s error=\"%s\"", name, err.msg);
	else if (deleted)
		log_info("expired partitions deleted", "project=%s days=%d deleted=%u", name, days, deleted);
}

static void retention_job(void *arg)
{
	serve_state_t *s = arg;
	sweep_ctx_t c = {s, time_now_ns()};
	err_t err;
	if (store_projects(s->store, sweep_project, &c, &err) < 0)
		log_warn("retention sweep failed", "error=\"%s\"", err.msg);
	atomic_store(&s->retention_busy, 0);
}

/* Submits job unless the previous run is still on the pool. */
static void run_once(serve_state_t *s, _Atomic int *busy, void (*job)(void *))
{
	int idle = 0;
	if (atomic_compare_exchange_strong(busy, &idle, 1))
		pool_submit(s->pool, job, s);
}

static void on_keys_timer(evutil_socket_t fd, short what, void *arg)
{
	serve_state_t *s = arg;
	run_once(s, &s->keys_busy, keys_job);
}

static void on_usage_timer(evutil_socket_t fd, short what, void *arg)
{
	serve_state_t *s = arg;
	run_once(s, &s->usage_busy, usage_job);
}

static void on_retention_timer(evutil_socket_t fd, short what, void *arg)
{
	serve_state_t *s = arg;
	run_once(s, &s->retention_busy, retention_job);
}

static struct event *periodic(serve_state_t *s, int ms, event_callback_fn cb)
{
	struct event *ev = event_new(loop_base(s->loop), -1, EV_PERSIST, cb, s);
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_add(ev, &tv);
	return ev;
}

static int parse_flags(int argc, char **argv, config_t *c, const char **config_path)
{
	static const struct {
		const char *flag;
		int listener;
	} addr_flags[] = {{"--upload", API_LISTENER_UPLOAD},
	                  {"--otlp-http", API_LISTENER_OTLP_HTTP},
	                  {"--otlp-grpc", API_LISTENER_OTLP_GRPC},
	                  {"--ui", API_LISTENER_UI}};
	for (int pass = 0; pass < 2; pass++) { /* --config first, so flags override it */
		for (int i = 1; i < argc; i++) {
			const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
			int known = 0;
			if (!strcmp(a, "--config") || !strcmp(a, "--data") || !strcmp(a, "--role") || !strcmp(a, "--auth") ||
			    !strcmp(a, "--node"))
				known = 1;
			for (size_t k = 0; k < sizeof addr_flags / sizeof *addr_flags; k++)
				known |= !strcmp(a, addr_flags[k].flag);
			if (!known) {
				fprintf(stderr, "kiln serve: unknown flag %s\n", a);
				return -1;
			}
			if (!v) {
				fprintf(stderr, "kiln serve: %s needs a value\n", a);
				return -1;
			}
			i++;
			if (pass == 0) {
				if (!strcmp(a, "--config"))
					*config_path = v;
				continue;
			}
			if (!strcmp(a, "--data"))
				config_set(&c->data_dir, v);
			else if (!strcmp(a, "--role"))
				config_set(&c->role, v);
			else if (!strcmp(a, "--node"))
				config_set(&c->kubernetes.node, v);
			else if (!strcmp(a, "--auth")) {
				if (strcmp(v, "none") && strcmp(v, "required")) {
					fprintf(stderr, "kiln serve: --auth must be none or required\n");
					return -1;
				}
				for (int l = 0; l < API_LISTENER_COUNT; l++)
					c->listeners[l].auth_required = !strcmp(v, "required");
			}
			for (size_t k = 0; k < sizeof addr_flags / sizeof *addr_flags; k++)
				if (!strcmp(a, addr_flags[k].flag))
					config_set(&c->listeners[addr_flags[k].listener].addr, v);
		}
		if (pass == 0 && *config_path) {
			err_t err;
			if (config_load_file(c, *config_path, &err) < 0) {
				fprintf(stderr, "kiln serve: %s\n", err.msg);
				return -1;
			}
		}
	}
	/* OPS: Discovery: the node is --node, else kubernetes.node, else $NODE_NAME. */
	const char *env_node = getenv("NODE_NAME");
	if (!c->kubernetes.node && env_node && *env_node)
		config_set(&c->kubernetes.node, env_node);
	return 0;
}

/* Which listeners a role runs (OPS: Roles and listeners). */
static int role_runs(const char *role, int listener)
{
	if (!strcmp(role, "all"))
		return 1;
	if (!strcmp(role, "query"))
		return listener == API_LISTENER_UI;
	return listener != API_LISTENER_UI; /* sensor, ingestor: receivers only */
}

static void drain_check(evutil_socket_t fd, short what, void *arg)
{
	serve_state_t *s = arg;
	s->draining_ms += 50;
	if (api_inflight(&s->api) == 0 || s->draining_ms >= SHUTDOWN_GRACE_MS) {
		if (s->draining_ms >= SHUTDOWN_GRACE_MS)
			log_warn("shutdown grace period over", "inflight=%u", api_inflight(&s->api));
		loop_stop(s->loop);
		return;
	}
	struct timeval tv = {0, 50000};
	evtimer_add(s->drain_timer, &tv);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	serve_state_t *s = arg;
	if (s->drain_timer)
		return;
	log_info("shutting down", "signal=%s inflight=%u", sig == SIGTERM ? "SIGTERM" : "SIGINT",
	         api_inflight(&s->api));
	/* Stop taking new connections and requests; finish those in flight. */
	for (int i = 0; i < API_LISTENER_COUNT; i++)
		if (s->servers[i])
			http_server_stop_accepting(s->servers[i]);
	if (s->grpc)
		grpc_server_stop_accepting(s->grpc);
	s->drain_timer = evtimer_new(loop_base(s->loop), drain_check, s);
	drain_check(-1, 0, s);
}

static void log_listening(const char *name, const char *addr, int port)
{
	char host[256];
	snprintf(host, sizeof host, "%.*s", (int)(strrchr(addr, ':') - addr), addr);
	log_info("listening", "listener=%s addr=%s:%d", name, host[0] ? host : "0.0.0.0", port);
}

static int start_grpc(serve_state_t *s, const char *addr, err_t *err)
{
	grpc_opts_t o = {
	    .h2 = {.name = api_listener_names[API_LISTENER_OTLP_GRPC],
	           .ssl_ctx = s->tls[API_LISTENER_OTLP_GRPC],
	           .budget = &s->bodies},
	    .methods = api_grpc_methods,
	    .n_methods = api_grpc_n_methods,
	    .ctx = &s->listeners[API_LISTENER_OTLP_GRPC],
	};
	s->grpc = grpc_server_new(loop_base(s->loop), addr, &o, err);
	if (!s->grpc)
		return -1;
	log_listening(api_listener_names[API_LISTENER_OTLP_GRPC], addr, grpc_server_port(s->grpc));
	return 0;
}

static int start_listeners(serve_state_t *s)
{
	struct event_base *base = loop_base(s->loop);
	for (int i = 0; i < API_LISTENER_COUNT; i++) {
		const char *addr = s->cfg.listeners[i].addr;
		if (!strcmp(addr, "off") || !role_runs(s->cfg.role, i))
			continue;
		err_t err;
		const api_listener_options_t *lc = &s->cfg.listeners[i];
		if (lc->tls_cert) {
			s->tls[i] =
			    tls_ctx_new(lc->tls_cert, lc->tls_key,
			                i == API_LISTENER_OTLP_GRPC ? TLS_ALPN_H2 : TLS_ALPN_HTTP1, &err);
			if (!s->tls[i]) {
				log_error("cannot set up TLS", "listener=%s error=\"%s\"",
				          api_listener_names[i], err.msg);
				return -1;
			}
		}
		if (i == API_LISTENER_OTLP_GRPC) {
			if (start_grpc(s, addr, &err) < 0) {
				log_error("cannot listen", "listener=%s addr=%s error=\"%s\"",
				          api_listener_names[i], addr, err.msg);
				return -1;
			}
			continue;
		}
		http_opts_t o = {
		    .name = api_listener_names[i],
		    .max_body = LIMIT_BODY_BYTES, /* UI: 64 KiB but for a push (api_ui_on_headers) */
		    .format_error = api_format_error,
		    .ssl_ctx = s->tls[i],
		    .budget = &s->bodies,
		    .ctx = &s->listeners[i],
		};
		/* h2c on the upload and UI listeners: Connect RPC (API: Push: push.v1.PusherService/Push
		 * (Pyroscope Connect)); bodies get 64 KiB over the limit so that an oversize one
		 * is answered in Connect's form (api_h2_on_data). */
		h2_opts_t h2c = {.max_body = LIMIT_BODY_BYTES + (64u << 10),
		                 .on_headers = api_h2_on_headers,
		                 .on_data = api_h2_on_data,
		                 .on_request = api_h2_on_request,
		                 .ctx = &s->listeners[i]};
		if (i == API_LISTENER_UPLOAD || i == API_LISTENER_UI)
			o.h2c = &h2c;
		if (i == API_LISTENER_UPLOAD) {
			o.on_headers = api_upload_on_headers;
			o.on_request = api_upload_on_request;
		} else if (i == API_LISTENER_OTLP_HTTP) {
			o.on_headers = api_otlp_on_headers;
			o.on_request = api_otlp_on_request;
			o.format_error = api_otlp_format_error;
		} else {
			o.on_headers = api_ui_on_headers;
			o.on_request = api_ui_on_request;
		}
		s->servers[i] = http_server_new(base, addr, &o, &err);
		if (!s->servers[i]) {
			log_error("cannot listen", "listener=%s addr=%s error=\"%s\"", api_listener_names[i],
			          addr, err.msg);
			return -1;
		}
		log_listening(api_listener_names[i], addr, http_server_port(s->servers[i]));
	}
	return 0;
}

int cli_serve(int argc, char **argv)
{
	serve_state_t s;
	memset(&s, 0, sizeof s);
	config_defaults(&s.cfg);
	const char *config_path = NULL;
	err_t err;
	int rc = 1;
	if (parse_flags(argc, argv, &s.cfg, &config_path) < 0)
		goto out;
	if (config_validate(&s.cfg, &err) < 0) {
		fprintf(stderr, "kiln serve: %s\n", err.msg);
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Before the first allocations of the server's threads (limits.h). */
	mallopt(M_MMAP_THRESHOLD, LIMIT_MALLOC_MMAP_BYTES);
	mallopt(M_TRIM_THRESHOLD, LIMIT_MALLOC_TRIM_BYTES);
	s.bodies.limit = (size_t)s.cfg.limits.bodies_mib << 20;

	if (!(s.store = cli_store_open(&s.cfg, 0, &err))) {
		log_error("cannot open store", "engine=%s dir=%s error=\"%s\"", s.cfg.store.engine, s.cfg.data_dir,
		          err.msg);
		goto out;
	}
	s.loop = loop_new();
	s.pool = pool_new(s.cfg.workers); /* 0: one per online CPU */
	s.api.store = s.store;
	s.api.loop = s.loop;
	s.api.pool = s.pool;
	s.api.limits = &s.cfg.limits;
	s.api.retention = &s.cfg.retention;
	if (!(s.api.keys = keys_open(s.store, &err))) {
		log_error("cannot open keys", "error=\"%s\"", err.msg);
		goto out;
	}
	s.api.usage = usage_open(s.store);
	s.api.pyro_deltas = api_pyro_deltas_new();
	s.api.limiter = ratelimit_new(s.cfg.limits.samples_per_second);
	/* 0: the caller of listeners without auth is not limited */
	if (s.cfg.limits.default_samples_per_second > 0)
		s.api.default_limiter = ratelimit_new(s.cfg.limits.default_samples_per_second);
	for (uint32_t i = 0; i < s.cfg.retention.n_projects; i++) {
		const char *p = s.cfg.retention.projects[i].project;
		if (store_set_retention(s.store, slice_cstr(p), store_retention_days(&s.cfg.retention, p),
		                        &err) < 0) {
			log_error("bad retention setting", "project=%s error=\"%s\"", p, err.msg);
			goto out;
		}
	}
	for (int i = 0; i < API_LISTENER_COUNT; i++)
		s.listeners[i] = (api_listener_t){&s.api, i, s.cfg.listeners[i].auth_required,
		                                  s.cfg.listeners[i].tls_cert != NULL,
		                                  s.cfg.listeners[i].trust_scope_org_id};
	log_info("starting", "role=%s data=%s workers=%d", s.cfg.role, s.cfg.data_dir, pool_size(s.pool));
	if (start_listeners(&s) < 0)
		goto out;
	/* OPS: Roles and listeners: only the roles all and sensor ever scrape. */
	if (!strcmp(s.cfg.role, "all") || !strcmp(s.cfg.role, "sensor"))
		s.scraper = s.api.scraper = scraper_from_config(&s.cfg.scrape, s.cfg.limits.max_rows, s.loop,
		                                                s.pool, s.store, s.api.usage);
	if (s.scraper && s.cfg.kubernetes.node && *s.cfg.kubernetes.node) {
		s.discovery = discovery_start(&s.cfg.scrape, &s.cfg.kubernetes, s.cfg.kubernetes.node, s.loop,
		                              s.scraper);
		s.api.k8s = discovery_watcher(s.discovery);
	} else if (s.scraper) {
		log_info("pod discovery is off", "reason=\"no node name: set --node, kubernetes.node or NODE_NAME\"");
	}
	s.keys_timer = periodic(&s, KEYS_REFRESH_MS, on_keys_timer);
	s.usage_timer = periodic(&s, USAGE_FLUSH_MS, on_usage_timer);
	s.retention_timer = periodic(&s, RETENTION_SWEEP_MS, on_retention_timer);
	on_retention_timer(-1, 0, &s); /* once at startup */
	s.sig_term = evsignal_new(loop_base(s.loop), SIGTERM, on_signal, &s);
	s.sig_int = evsignal_new(loop_base(s.loop), SIGINT, on_signal, &s);
	event_add(s.sig_term, NULL);
	event_add(s.sig_int, NULL);
	loop_run(s.loop);
	rc = 0;
out:
	for (int i = 0; i < API_LISTENER_COUNT; i++)
		if (s.servers[i])
			http_server_free(s.servers[i]);
	if (s.grpc)
		grpc_server_free(s.grpc);
	for (int i = 0; i < API_LISTENER_COUNT; i++)
		tls_ctx_free(s.tls[i]);
	if (s.sig_term)
		event_free(s.sig_term);
	if (s.sig_int)
		event_free(s.sig_int);
	if (s.drain_timer)
		event_free(s.drain_timer);
	struct event *timers[] = {s.keys_timer, s.usage_timer, s.retention_timer};
	for (size_t i = 0; i < 3; i++)
		if (timers[i])
			event_free(timers[i]);
	discovery_stop(s.discovery);
	scraper_stop(s.scraper); /* scrapes already decoding finish on the pool below */
	if (s.pool)
		pool_free(s.pool); /* runs queued jobs: their batches reach the store */
	store_drain(s.store); /* commits everything queued (their usage is counted) */
	if (s.api.usage)
		usage_close(s.api.usage); /* flushes the last counts into the store */
	if (s.api.keys)
		keys_close(s.api.keys);
	store_close(s.store);
	if (s.api.limiter)
		ratelimit_free(s.api.limiter);
	if (s.api.default_limiter)
		ratelimit_free(s.api.default_limiter);
	s.api.k8s = NULL;
	api_pyro_deltas_free(s.api.pyro_deltas); /* the pool has drained: no decoder uses it */
	s.api.pyro_deltas = NULL;
	discovery_free(s.discovery); /* after the pool: workers look pods up (API: Push attribution) */
	if (s.loop)
		loop_free(s.loop);
	scraper_free(s.scraper); /* after loop_free ran the scrapes' last completions */
	if (rc == 0)
		log_info("stopped", NULL);
	config_free(&s.cfg);
	return rc;
}
