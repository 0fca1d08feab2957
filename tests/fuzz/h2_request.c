/* libFuzzer target for net/h2.c: client bytes after a fixed preface, through
 * nghttp2 with Kiln's callbacks, on a connection that is one end of a
 * bufferevent pair (h2_server_detached + h2_server_adopt: no socket; pairs
 * defer their callbacks, so the loop runs without blocking until nothing is
 * pending, and no timer is ever due). Byte 0 sets the size
 * of each read and the body ceiling. Requests are answered at once, early
 * (from on_headers / on_data), or kept and answered after the connection is
 * gone. It checks for crashes, leaks, UB and the server's own bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "base/log.h"
#include "net/h2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEPT_MAX 64

typedef struct {
	size_t max_body;
	h2_req_t *kept[KEPT_MAX];
	size_t n_kept;
} fuzz_ctx;

static void check(const h2_req_t *r, const fuzz_ctx *f)
{
	if (r->body.n > f->max_body)
		abort();
	for (uint32_t i = 0; i < r->n_hdrs; i++)
		if (!r->hdr_names[i].n || r->hdr_names[i].p[0] == ':')
			abort();
}

static int on_headers(h2_req_t *r, void *arg)
{
	fuzz_ctx *f = arg;
	check(r, f);
	if (!h2_header_get(r, "x-refuse"))
		return 0;
	h2_header_t h[] = {{"content-type", "text/plain"}};
	h2_respond(r, 403, h, 1, "no\n", 3, NULL, 0);
	return 1;
}

static int on_data(h2_req_t *r, void *arg)
{
	fuzz_ctx *f = arg;
	check(r, f);
	if (r->body.n < 1000)
		return 0;
	h2_respond(r, 413, NULL, 0, NULL, 0, NULL, 0);
	return 1;
}

static void on_request(h2_req_t *r, void *arg)
{
	fuzz_ctx *f = arg;
	check(r, f);
	if (r->path.n && r->path.p[r->path.n - 1] == 'k' && f->n_kept < KEPT_MAX) {
		f->kept[f->n_kept++] = r; /* the handler works on it elsewhere */
		return;
	}
	h2_header_t h[] = {{"content-type", "application/grpc"}};
	h2_header_t t[] = {{"grpc-status", "0"}};
	h2_respond(r, 200, h, 1, r->body.p, r->body.n, t, 1);
}

/* Runs the deferred callbacks (reads, writes) until none is left. */
static void settle(struct event_base *base, struct evbuffer *answers)
{
	for (int i = 0; i < 64; i++) {
		evbuffer_drain(answers, evbuffer_get_length(answers));
		if (event_base_loop(base, EVLOOP_NONBLOCK) < 0 || !evbuffer_get_length(answers))
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	static struct event_base *base;
	if (!base) {
		log_set_level(LOG_ERROR);
		base = event_base_new();
	}
	if (size < 1)
		return 0;
	fuzz_ctx f = {.max_body = data[0] & 0x80 ? 64 : 4096};
	size_t piece = 1 + (data[0] & 0x7f) * 8;
	h2_opts_t o = {.name = "fuzz",
	               .max_body = f.max_body,
	               .max_streams = 8,
	               .on_headers = on_headers,
	               .on_data = on_data,
	               .on_request = on_request,
	               .ctx = &f};
	h2_server_t *s = h2_server_detached(base, &o);
	struct bufferevent *pair[2];
	bufferevent_pair_new(base, 0, pair);
	bufferevent_enable(pair[1], EV_READ | EV_WRITE);
	h2_server_adopt(s, pair[0], "192.0.2.1:40000");
	struct evbuffer *answers = bufferevent_get_input(pair[1]);
	bufferevent_write(pair[1], preface, sizeof preface - 1);
	for (size_t at = 1; at < size; at += piece) { /* reads of piece bytes */
		bufferevent_write(pair[1], data + at, size - at < piece ? size - at : piece);
		settle(base, answers);
	}
	size_t half = f.n_kept / 2;
	for (size_t i = 0; i < half; i++) /* answered while the connection may be open */
		h2_respond(f.kept[i], 200, NULL, 0, "ok", 2, NULL, 0);
	settle(base, answers);
	h2_server_free(s);                       /* closes the connection (and frees pair[0]) */
	for (size_t i = half; i < f.n_kept; i++) /* answered after: only freed */
		h2_respond(f.kept[i], 200, NULL, 0, "ok", 2, NULL, 0);
	bufferevent_free(pair[1]);
	return 0;
}
