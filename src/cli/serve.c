/* kiln serve: settings (defaults < config file < flags), the store, the
 * worker pool, one listener per role-enabled address, and a clean shutdown
 * on SIGTERM/SIGINT that answers in-flight requests and flushes the store. */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "base/config.h"
#include "base/limits.h"
#include "base/log.h"
#include "cli/cli.h"

#define SHUTDOWN_GRACE_MS 10000

typedef struct {
	kiln_config cfg;
	kn_loop *loop;
	kn_pool *pool;
	store_t *store;
	api_ctx api;
	http_server *servers[LISTENER_COUNT]; /* HTTP/1.1 listeners */
	grpc_server *grpc;                    /* the OTLP/gRPC listener */
	struct event *sig_term, *sig_int, *drain_timer;
	int draining_ms;
} serve_state;

static int parse_flags(int argc, char **argv, kiln_config *c, const char **config_path)
{
	static const struct {
		const char *flag;
		int listener;
	} addr_flags[] = {{"--upload", LISTENER_UPLOAD},
	                  {"--otlp-http", LISTENER_OTLP_HTTP},
	                  {"--otlp-grpc", LISTENER_OTLP_GRPC},
	                  {"--ui", LISTENER_UI}};
	for (int pass = 0; pass < 2; pass++) { /* --config first, so flags override it */
		for (int i = 1; i < argc; i++) {
			const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
			int known = 0;
			if (!strcmp(a, "--config") || !strcmp(a, "--data") || !strcmp(a, "--role") || !strcmp(a, "--auth"))
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
			else if (!strcmp(a, "--auth")) {
				if (strcmp(v, "none") && strcmp(v, "required")) {
					fprintf(stderr, "kiln serve: --auth must be none or required\n");
					return -1;
				}
				for (int l = 0; l < LISTENER_COUNT; l++)
					c->listeners[l].auth_required = !strcmp(v, "required");
			}
			for (size_t k = 0; k < sizeof addr_flags / sizeof *addr_flags; k++)
				if (!strcmp(a, addr_flags[k].flag))
					config_set(&c->listeners[addr_flags[k].listener].addr, v);
		}
		if (pass == 0 && *config_path) {
			kn_err err;
			if (config_load_file(c, *config_path, &err) < 0) {
				fprintf(stderr, "kiln serve: %s\n", err.msg);
				return -1;
			}
		}
	}
	return 0;
}

/* Which listeners a role runs (SPEC S1). */
static int role_runs(const char *role, int listener)
{
	if (!strcmp(role, "all"))
		return 1;
	if (!strcmp(role, "query"))
		return listener == LISTENER_UI;
	return listener != LISTENER_UI; /* sensor, ingestor: receivers only */
}

static void drain_check(evutil_socket_t fd, short what, void *arg)
{
	serve_state *s = arg;
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
	serve_state *s = arg;
	if (s->drain_timer)
		return;
	log_info("shutting down", "signal=%s inflight=%u", sig == SIGTERM ? "SIGTERM" : "SIGINT",
	         api_inflight(&s->api));
	/* Stop taking new connections and requests; finish those in flight. */
	for (int i = 0; i < LISTENER_COUNT; i++)
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

static int start_grpc(serve_state *s, const char *addr, kn_err *err)
{
	grpc_opts o = {
	    .h2 = {.name = listener_names[LISTENER_OTLP_GRPC]},
	    .methods = api_grpc_methods,
	    .n_methods = api_grpc_n_methods,
	    .ctx = &s->api,
	};
	s->grpc = grpc_server_new(loop_base(s->loop), addr, &o, err);
	if (!s->grpc)
		return -1;
	log_listening(listener_names[LISTENER_OTLP_GRPC], addr, grpc_server_port(s->grpc));
	return 0;
}

static int start_listeners(serve_state *s)
{
	struct event_base *base = loop_base(s->loop);
	for (int i = 0; i < LISTENER_COUNT; i++) {
		const char *addr = s->cfg.listeners[i].addr;
		if (!strcmp(addr, "off") || !role_runs(s->cfg.role, i))
			continue;
		kn_err err;
		if (i == LISTENER_OTLP_GRPC) {
			if (start_grpc(s, addr, &err) < 0) {
				log_error("cannot listen", "listener=%s addr=%s error=\"%s\"", listener_names[i], addr,
				          err.msg);
				return -1;
			}
			continue;
		}
		http_opts o = {
		    .name = listener_names[i],
		    .max_body = i == LISTENER_UI ? 64 << 10 : LIMIT_BODY_BYTES,
		    .format_error = api_format_error,
		    .ctx = &s->api,
		};
		if (i == LISTENER_UPLOAD) {
			o.on_headers = api_upload_on_headers;
			o.on_request = api_upload_on_request;
		} else if (i == LISTENER_OTLP_HTTP) {
			o.on_headers = api_otlp_on_headers;
			o.on_request = api_otlp_on_request;
			o.format_error = api_otlp_format_error;
		} else {
			o.on_headers = api_ui_on_headers;
			o.on_request = api_ui_on_request;
		}
		s->servers[i] = http_server_new(base, addr, &o, &err);
		if (!s->servers[i]) {
			log_error("cannot listen", "listener=%s addr=%s error=\"%s\"", listener_names[i], addr, err.msg);
			return -1;
		}
		log_listening(listener_names[i], addr, http_server_port(s->servers[i]));
	}
	return 0;
}

int cli_serve(int argc, char **argv)
{
	serve_state s;
	memset(&s, 0, sizeof s);
	config_defaults(&s.cfg);
	const char *config_path = NULL;
	kn_err err;
	int rc = 1;
	if (parse_flags(argc, argv, &s.cfg, &config_path) < 0)
		goto out;
	if (config_validate(&s.cfg, &err) < 0) {
		fprintf(stderr, "kiln serve: %s\n", err.msg);
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);

	store_config sc = {.dir = s.cfg.data_dir};
	s.store = store_open(&sc, &err);
	if (!s.store) {
		log_error("cannot open store", "dir=%s error=\"%s\"", s.cfg.data_dir, err.msg);
		goto out;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	s.loop = loop_new();
	s.pool = pool_new(s.cfg.workers ? s.cfg.workers : (int)(cores > 0 ? cores : 2));
	s.api = (api_ctx){.store = s.store, .loop = s.loop, .pool = s.pool, .project = "default",
	                  .max_rows = s.cfg.max_rows};
	log_info("starting", "role=%s data=%s workers=%ld", s.cfg.role, s.cfg.data_dir, cores > 0 ? cores : 2);
	if (start_listeners(&s) < 0)
		goto out;
	s.sig_term = evsignal_new(loop_base(s.loop), SIGTERM, on_signal, &s);
	s.sig_int = evsignal_new(loop_base(s.loop), SIGINT, on_signal, &s);
	event_add(s.sig_term, NULL);
	event_add(s.sig_int, NULL);
	loop_run(s.loop);
	rc = 0;
out:
	for (int i = 0; i < LISTENER_COUNT; i++)
		if (s.servers[i])
			http_server_free(s.servers[i]);
	if (s.grpc)
		grpc_server_free(s.grpc);
	if (s.sig_term)
		event_free(s.sig_term);
	if (s.sig_int)
		event_free(s.sig_int);
	if (s.drain_timer)
		event_free(s.drain_timer);
	if (s.pool)
		pool_free(s.pool); /* runs queued jobs: their batches reach the store */
	if (s.store)
		store_close(s.store); /* commits everything queued */
	if (s.loop)
		loop_free(s.loop);
	if (rc == 0)
		log_info("stopped", NULL);
	config_free(&s.cfg);
	return rc;
}
