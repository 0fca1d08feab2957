/* libFuzzer target for the ClickHouse engine's read path (src/store/clickhouse_*.c:
 * ch_exec, the bounded RowBinary reader ch_rd_*, every view call) and the
 * queries of src/query on top of it, against a hostile ClickHouse. No seam:
 * a tiny HTTP/1.1 server on a loopback socket (a thread of this process)
 * answers each request libcurl sends with the next answer of the input, and
 * the store is a real store_open(STORE_ENGINE_CLICKHOUSE) pointed at it,
 * opened once (its schema is created then, from empty 200s).
 *
 * Input: byte 0 picks the queries (bit i runs query i of run_queries, in
 * order; 0 runs them all), byte 1 their variants (V_* below; V_SHARED adds
 * the project list, usage and key reads and a retention sweep); then the
 * answers, one per request, each [kind u8][length u16 LE][length bytes] (a
 * cut last one takes what is left). kind & 3: 0 or 1 a 200 with the bytes
 * as body, 2 a 500 with them as ClickHouse's error text, 3 a 200 whose body
 * is cut short (Content-Length one more than sent, then the connection
 * closes). When the answers run out, every request gets an empty 200 (an
 * empty result, or a CREATE that worked).
 *
 * It checks for crashes, hangs, leaks, UB and reads out of bounds; a query
 * that succeeds must have written valid JSON (pprof: a gzip stream), one
 * that fails an error status; the sweep must never drop a day it keeps,
 * whatever days ClickHouse lists. Each input starts with the schema in
 * place: an answer "Code: 60, ..." makes the engine create it again, which
 * one request with no answers (store_projects) redoes before the next
 * input. KILN_FUZZ_TRACE=1 prints each request's SQL and the answer it got
 * (how the seeds in make_seeds.py were laid out). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "base/log.h"
#include "query/query.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (1u << 20)
#define MAX_CLIENTS 8
#define REQ_MAX (1u << 20) /* a request's head and the part of its body kept (for the trace) */

/* ---- the fake ClickHouse ---- */

typedef struct {
	int fd;
	size_t n;       /* bytes in buf */
	size_t need;    /* head + body length once the head is complete, else 0 */
	size_t dropped; /* body bytes beyond REQ_MAX, read and not kept */
	char buf[REQ_MAX];
} client;

static struct {
	pthread_mutex_t mu;
	uint8_t in[MAX_INPUT];
	size_t at, end; /* the answers left: in[at..end) */
	unsigned served;
	int trace;
	int checking;          /* the request before each input, not one of its own */
	int64_t keep_from_day; /* the sweep must not drop this day or a later one */
	int dropped_kept;      /* ... and did */
	int lfd;
	client cl[MAX_CLIENTS];
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		c += w;
		n -= (size_t)w;
	}
}

static void drop(client *c)
{
	close(c->fd);
	c->fd = -1;
}

/* Answers the complete request in c with the next answer of the input. */
static void answer(client *c)
{
	pthread_mutex_lock(&srv.mu);
	uint8_t kind = 0;
	const uint8_t *body = NULL;
	size_t n = 0;
	if (srv.at < srv.end) {
		kind = srv.in[srv.at++];
		size_t len = 0;
		if (srv.at < srv.end)
			len = srv.in[srv.at++];
		if (srv.at < srv.end)
			len |= (size_t)srv.in[srv.at++] << 8;
		n = len < srv.end - srv.at ? len : srv.end - srv.at;
		body = srv.in + srv.at;
		srv.at += n;
	}
	unsigned no = srv.served++;
	const char *dp = strstr(c->buf, "DROP PARTITION ('default', ");
	if (dp && strtoll(dp + 27, NULL, 10) >= srv.keep_from_day)
		srv.dropped_kept = 1;
	if (srv.trace) {
		const char *sql = strstr(c->buf, "\r\n\r\n");
		sql = sql ? sql + 4 : c->buf;
		fprintf(stderr, "ch-fuzz: %s %u answer kind %u, %zu bytes: %.300s\n",
		        srv.checking ? "schema check" : "request", no, kind & 3, n, sql);
	}
	int status = (kind & 3) == 2 ? 500 : 200;
	/* Head and body in one send: two small writes would wait for a delayed ACK. */
	static char out[256 + 65536];
	int hn = snprintf(
	    out, 256,
	    "HTTP/1.1 %d %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n", status,
	    status == 200 ? "OK" : "Internal Server Error", n + ((kind & 3) == 3));
	if (n)
		memcpy(out + hn, body, n);
	send_all(c->fd, out, (size_t)hn + n);
	pthread_mutex_unlock(&srv.mu);
	if ((kind & 3) == 3)
		drop(c);
}

/* Reads what c sent; answers once a request is complete (curl sends one at a time). */
static void on_readable(client *c)
{
	char tmp[65536];
	char *to = c->n < REQ_MAX - 1 ? c->buf + c->n : tmp;
	size_t room = c->n < REQ_MAX - 1 ? REQ_MAX - 1 - c->n : sizeof tmp;
	ssize_t r = recv(c->fd, to, room, 0);
	if (r <= 0) {
		drop(c);
		return;
	}
	if (to == tmp)
		c->dropped += (size_t)r;
	else
		c->n += (size_t)r;
	c->buf[c->n] = 0;
	if (!c->need) {
		char *eoh = strstr(c->buf, "\r\n\r\n");
		if (!eoh) {
			if (c->n >= REQ_MAX - 1)
				drop(c);
			return;
		}
		size_t clen = 0;
		const char *cl = strcasestr(c->buf, "\r\nContent-Length:");
		if (cl && cl < eoh)
			clen = strtoul(cl + 17, NULL, 10);
		c->need = (size_t)(eoh + 4 - c->buf) + clen;
	}
	if (c->n + c->dropped < c->need)
		return;
	/* curl never pipelines: whatever follows belongs to no request yet. */
	answer(c);
	c->n = c->need = c->dropped = 0;
}

static void *server_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pf[MAX_CLIENTS + 1];
		pf[0] = (struct pollfd){.fd = srv.lfd, .events = POLLIN};
		for (int i = 0; i < MAX_CLIENTS; i++)
			pf[i + 1] = (struct pollfd){.fd = srv.cl[i].fd, .events = POLLIN};
		if (poll(pf, MAX_CLIENTS + 1, -1) < 0)
			continue;
		for (int i = 0; i < MAX_CLIENTS; i++)
			if (srv.cl[i].fd >= 0 && (pf[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
				on_readable(&srv.cl[i]);
		if (pf[0].revents & POLLIN) {
			int fd = accept(srv.lfd, NULL, NULL);
			if (fd < 0)
				continue;
			int slot = -1;
			for (int i = 0; i < MAX_CLIENTS && slot < 0; i++)
				if (srv.cl[i].fd < 0)
					slot = i;
			if (slot < 0) { /* more connections than curl keeps: refuse the new one */
				close(fd);
				continue;
			}
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			srv.cl[slot].fd = fd;
			srv.cl[slot].n = srv.cl[slot].need = srv.cl[slot].dropped = 0;
		}
	}
	return NULL;
}

/* ---- the store and the queries ---- */

/* 2025-01-01T00:00:00Z: day 20089. Views cover it and the next day. */
#define T0_NS (1735689600LL * 1000000000LL)
#define DAY_NS (86400LL * 1000000000LL)

enum {
	V_FILTER_SERIES = 1, /* flame graph, top, pprof, labels: filter env=prod (a series label) */
	V_FILTER_ATTR = 2,   /* ... and/or thread=main (a sample attribute) */
	V_STEP = 4,          /* timeline: 3600 s steps instead of automatic ones */
	V_TRACE = 8,         /* span: with a trace_id */
	V_SPAN_TYPE = 16,    /* span: ask for alloc_space:bytes */
	V_SNAPSHOT = 32,     /* flame graph, top, pprof, timeline: inuse_space:bytes instead of CPU */
	V_SPAN_SERVICE = 64, /* span: hint service "api" */
	V_SHARED = 128,      /* then store_projects, store_usage_read, store_keys_read, a retention sweep */
};

#define KEEP_DAYS 7

static store_t *store;

static void open_store(void)
{
	log_set_level(LOG_ERROR); /* damaged partitions are reported as warnings */
	srv.trace = getenv("KILN_FUZZ_TRACE") != NULL;
	for (int i = 0; i < MAX_CLIENTS; i++)
		srv.cl[i].fd = -1;
	srv.lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (srv.lfd < 0 || bind(srv.lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(srv.lfd, 16) < 0 ||
	    getsockname(srv.lfd, (struct sockaddr *)&a, &al) < 0) {
		perror("clickhouse_answers: loopback listener");
		abort();
	}
	pthread_t t;
	if (pthread_create(&t, NULL, server_main, NULL) != 0)
		abort();
	pthread_detach(t);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
	store_config_t cfg = {.engine = STORE_ENGINE_CLICKHOUSE, .ch_url = url, .ch_database = "kiln_fuzz"};
	err_t err = {0};
	store = store_open(&cfg, &err); /* the schema: every CREATE answered with an empty 200 */
	if (!store) {
		fprintf(stderr, "clickhouse_answers: store_open: %s\n", err.msg);
		abort();
	}
}

static void check_result(int rc, const buf_t *out, const err_t *err, int json)
{
	if (rc < 0) {
		if (err->status < 400 || err->status > 599 || !err->msg[0])
			abort();
		return;
	}
	if (!out)
		return;
	if (!json) {
		if (out->n < 2 || out->p[0] != 0x1f || out->p[1] != 0x8b)
			abort();
		return;
	}
	json_error_t je;
	json_t *j = json_loadb((const char *)out->p, out->n, JSON_ALLOW_NUL, &je);
	if (!j) {
		fprintf(stderr, "clickhouse_answers: invalid JSON (%s): %.*s\n", je.text, (int)out->n,
		        out->p);
		abort();
	}
	json_decref(j);
}

static void on_project(slice_t project, void *ctx)
{
	if (project.n && !project.p)
		abort();
}

static void on_usage(const store_usage_row_t *r, void *ctx)
{
	if ((r->project.n && !r->project.p) || (r->key.n && !r->key.p))
		abort();
}

static void on_key(const store_key_row_t *r, void *ctx)
{
	if ((r->name.n && !r->name.p) || (r->hash.n && !r->hash.p))
		abort();
}

/* The state the engine shares between processes, and the sweep. */
static void run_shared(void)
{
	err_t err = {0};
	int rc = store_projects(store, on_project, NULL, &err);
	check_result(rc, NULL, &err, 0);
	rc = store_usage_read(store, slice_cstr("default"), T0_NS / DAY_NS, T0_NS / DAY_NS + 1, on_usage,
	                      NULL, &err);
	check_result(rc, NULL, &err, 0);
	rc = store_keys_read(store, on_key, NULL, &err);
	check_result(rc, NULL, &err, 0);
	uint32_t deleted = 0;
	int64_t now = T0_NS + DAY_NS / 2;
	pthread_mutex_lock(&srv.mu);
	srv.keep_from_day = now / DAY_NS - KEEP_DAYS;
	pthread_mutex_unlock(&srv.mu);
	rc = store_retention_sweep(store, slice_cstr("default"), KEEP_DAYS, now, &deleted, &err);
	check_result(rc, NULL, &err, 0);
	pthread_mutex_lock(&srv.mu);
	int dropped_kept = srv.dropped_kept;
	pthread_mutex_unlock(&srv.mu);
	if (dropped_kept) {
		fprintf(stderr, "clickhouse_answers: the sweep dropped a day it keeps\n");
		abort();
	}
}

static void run_queries(uint8_t which, uint8_t var)
{
	model_label_t filters[2];
	uint32_t nf = 0;
	if (var & V_FILTER_SERIES)
		filters[nf++] = (model_label_t){slice_cstr("env"), slice_cstr("prod")};
	if (var & V_FILTER_ATTR)
		filters[nf++] = (model_label_t){slice_cstr("thread"), slice_cstr("main")};
	query_params_t q = {
	    .project = slice_cstr("default"),
	    .service = slice_cstr("api"),
	    .type = slice_cstr(var & V_SNAPSHOT ? "inuse_space:bytes" : "cpu:nanoseconds"),
	    .from_ns = T0_NS,
	    .until_ns = T0_NS + 2 * DAY_NS,
	    .labels = filters,
	    .n_labels = nf,
	};
	/* The timeline always filters on a sample attribute, so its chunks are read too. */
	model_label_t tl_filter = {slice_cstr("thread"), slice_cstr("main")};
	query_params_t tq = q;
	tq.labels = &tl_filter;
	tq.n_labels = 1;
	query_params_t all = q;
	all.service = slice_make("", 0);
	query_span_opts_t so = {.now_ns = T0_NS + DAY_NS / 2};
	if (var & V_SPAN_TYPE)
		so.type = slice_cstr("alloc_space:bytes");
	if (var & V_SPAN_SERVICE)
		so.service = slice_cstr("api");
	slice_t trace = var & V_TRACE ? slice_cstr("4bf92f3577b34da6a3ce929d0e0e4736") : slice_make("", 0);
	for (int i = 0; i < 8; i++) {
		if (which && !(which & (1u << i)))
			continue;
		buf_t out;
		buf_init(&out, 16u << 20);
		err_t err = {0};
		int rc = 0, json = 1;
		switch (i) {
		case 0:
			rc = query_services(store, &all, &out, &err);
			break;
		case 1:
			rc = query_types(store, &q, &out, &err);
			break;
		case 2:
			rc = query_flamegraph(store, &q, &out, &err);
			break;
		case 3:
			rc = query_top(store, &q, 10, &out, &err);
			break;
		case 4:
			rc = query_timeline(store, &tq, var & V_STEP ? 3600 : 0, &out, &err);
			break;
		case 5:
			rc = query_labels(store, &q, &out, &err);
			break;
		case 6:
			rc = query_span(store, slice_cstr("default"), trace, slice_cstr("00f067aa0ba902b7"),
			                &so, &out, &err);
			break;
		case 7:
			rc = query_pprof(store, &q, &out, &err);
			json = 0;
			break;
		}
		if (srv.trace)
			fprintf(stderr, "ch-fuzz: query %d: %d %s %.*s\n", i, rc < 0 ? err.status : 200,
			        err.msg, json ? (int)(out.n > 600 ? 600 : out.n) : 0, out.p);
		check_result(rc, &out, &err, json);
		buf_free(&out);
	}
	if (var & V_SHARED)
		run_shared();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!store)
		open_store(); /* here, not in LLVMFuzzerInitialize: the replay main calls only this */
	if (size < 2 || size - 2 > MAX_INPUT)
		return 0;
	/* No answers yet: whatever the last input left, the schema is there again. */
	pthread_mutex_lock(&srv.mu);
	srv.at = srv.end = 0;
	srv.dropped_kept = 0;
	srv.keep_from_day = INT64_MAX;
	srv.checking = 1;
	pthread_mutex_unlock(&srv.mu);
	err_t err = {0};
	store_projects(store, on_project, NULL, &err);
	pthread_mutex_lock(&srv.mu);
	srv.checking = 0;
	memcpy(srv.in, data + 2, size - 2);
	srv.at = 0;
	srv.end = size - 2;
	srv.served = 0;
	pthread_mutex_unlock(&srv.mu);
	run_queries(data[0], data[1]);
	return 0;
}
