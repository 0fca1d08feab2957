/* Tests of the push job (src/ingest/push.c) through every path's decoder
 * (upload and scrape: pprof; OTLP/HTTP protobuf and JSON; OTLP/gRPC): one
 * table of inputs (a valid pprof, a valid OTLP request, a malformed body, an
 * over-limit body, a rate-limited caller, a store failure) run on a real
 * loop, pool, store and usage in a temporary directory, asserting the exact
 * reply (status, message, Retry-After) and the usage counted once the reply
 * is out (accepted, and rejected per reason). And the rate limit of the
 * caller of listeners without auth (limits.defaultSamplesPerSecond). */
#include "testutil.h"

#include "store/helpers.h" /* tests/unit/store: temporary directories, open_store */

#include "api/api.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "ingest/push.h"
#include "scrape/scraper.h"

/* The OTLP fixture was recorded at 1774910497.5 .. 1774910502.3 s (its
 * timestamps, read with a Python regex over the JSON); "now" a minute after
 * keeps every point inside the window. */
#define OTLP_NOW_NS 1774910562000000000LL

/* go tool pprof -raw tests/data/pprof/go-cpu-two-stacks.pb.gz: one sample
 * type (cpu/nanoseconds), two samples. */
#define PPROF_SAMPLES 2
/* tests/unit/wire/otlp.c: 5321 points in ebpf-profiler-v1.10 (Python walk). */
#define OTLP_SAMPLES 5321

enum { P_UPLOAD, P_OTLP_PB, P_OTLP_JSON, P_GRPC, P_SCRAPE, N_PATHS };
static const char *path_names[N_PATHS] = {"upload", "otlp_pb", "otlp_json", "grpc", "scrape"};

enum { IN_PPROF, IN_OTLP, IN_MALFORMED, IN_OVERSIZE, IN_LIMITED, IN_STORE_FAIL, N_INPUTS };
static const char *input_names[N_INPUTS] = {"pprof", "otlp", "malformed", "oversize", "limited", "storefail"};

typedef struct {
	int status; /* 200: accepted */
	const char *msg;
	int retry_after;
	uint64_t counts[USAGE_COUNTERS]; /* accepted, rate_limited, too_large, invalid, out_of_window */
} want;

#define OK_PPROF                                                                                             \
	{                                                                                                    \
		200, NULL, 0,                                                                                \
		{                                                                                            \
			PPROF_SAMPLES, 0, 0, 0, 0                                                            \
		}                                                                                            \
	}
#define OK_OTLP                                                                                              \
	{                                                                                                    \
		200, NULL, 0,                                                                                \
		{                                                                                            \
			OTLP_SAMPLES, 0, 0, 0, 0                                                             \
		}                                                                                            \
	}
#define INVALID(m)                                                                                           \
	{                                                                                                    \
		400, m, 0,                                                                                   \
		{                                                                                            \
			0, 0, 0, 1, 0                                                                        \
		}                                                                                            \
	}
#define OVERSIZE                                                                                             \
	{                                                                                                    \
		413, "request body is 33554433 bytes; the limit is 32 MiB", 0,                               \
		{                                                                                            \
			0, 0, 1, 0, 0                                                                        \
		}                                                                                            \
	}
/* %s: the key */
#define LIMITED(n)                                                                                           \
	{                                                                                                    \
		429,                                                                                         \
		    "key %s is over its rate limit of 1 samples/s: this request has " #n                     \
		    " samples; retry in 1 s",                                                                \
		    1,                                                                                       \
		{                                                                                            \
			0, n, 0, 0, 0                                                                        \
		}                                                                                            \
	}
#define STORE_FAIL                                                                                           \
	{                                                                                                    \
		503, "store: shutting down", 5,                                                              \
		{                                                                                            \
			0, 0, 0, 0, 0                                                                        \
		}                                                                                            \
	}

/* What wire/ says of a body in the wrong format (its own tests pin these). */
#define PPROF_AS_OTLP "malformed field key at byte 0 (truncated, field 0 or wire type 6/7)"
#define PPROF_AS_JSON "malformed JSON at line 1, column 1: '[' or '{' expected near ''"
#define OTLP_AS_PPROF                                                                                        \
	{                                                                                                    \
		413, "profile has 77 sample types; the limit is 64", 0,                                      \
		{                                                                                            \
			0, 0, 1, 0, 0                                                                        \
		}                                                                                            \
	}
#define JUNK_AS_PPROF "default_sample_type: wire type 4 (group), expected varint (field 14 at byte 0)"
#define JUNK_AS_OTLP "unknown field 14 (wire type 4) at byte 0 is truncated or malformed"
#define JUNK_AS_JSON "malformed JSON at line 1, column 4: '[' or '{' expected near 'this'"

static const want wants[N_INPUTS][N_PATHS] = {
    [IN_PPROF] = {OK_PPROF, INVALID(PPROF_AS_OTLP), INVALID(PPROF_AS_JSON), INVALID(PPROF_AS_OTLP), OK_PPROF},
    [IN_OTLP] = {OTLP_AS_PPROF, OK_OTLP, OK_OTLP, OK_OTLP, OTLP_AS_PPROF},
    [IN_MALFORMED] = {INVALID(JUNK_AS_PPROF), INVALID(JUNK_AS_OTLP), INVALID(JUNK_AS_JSON),
                      INVALID(JUNK_AS_OTLP), INVALID(JUNK_AS_PPROF)},
    [IN_OVERSIZE] = {OVERSIZE, OVERSIZE, OVERSIZE, OVERSIZE, OVERSIZE},
    [IN_LIMITED] = {LIMITED(2), LIMITED(5321), LIMITED(5321), LIMITED(5321), LIMITED(2)},
    [IN_STORE_FAIL] = {STORE_FAIL, STORE_FAIL, STORE_FAIL, STORE_FAIL, STORE_FAIL},
};

/* ---- fixture ---------------------------------------------------------- */

typedef struct {
	char *dir, *dir2;
	store_t *store, *drained;
	usage_t *usage;
	loop_t *loop;
	pool_t *pool;
	ratelimit_t *limiter;
	slice_t pprof, otlp_pb, otlp_json, junk, oversize;
	unsigned char *raw[3];
	buf_t big;
} fixture;

static slice_t load(fixture *f, int i, const char *name)
{
	char path[512];
	size_t n;
	snprintf(path, sizeof path, "%s/%s", testdata_dir(), name);
	f->raw[i] = read_file_or_fail(path, &n);
	return slice_make(f->raw[i], n);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	f->dir = tmpdir_new();
	f->dir2 = tmpdir_new();
	f->store = open_store(f->dir);
	f->drained = open_store(f->dir2);
	store_drain(f->drained); /* every submit is refused: 503 */
	f->usage = usage_open(f->store);
	f->loop = loop_new();
	f->pool = pool_new(2);
	f->limiter = ratelimit_new(1);
	f->pprof = load(f, 0, "pprof/go-cpu-two-stacks.pb.gz");
	f->otlp_pb = load(f, 1, "otlp/ebpf-profiler-v1.10.pb");
	f->otlp_json = load(f, 2, "otlp/ebpf-profiler-v1.10.json");
	f->junk = slice_cstr("this is not a profile");
	buf_init(&f->big, LIMIT_BODY_BYTES + 1);
	for (size_t i = 0; i < LIMIT_BODY_BYTES + 1; i++)
		buf_putc(&f->big, 0);
	f->oversize = buf_slice(&f->big);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	pool_free(f->pool);
	usage_close(f->usage); /* flushes into f->store */
	store_close(f->store);
	store_close(f->drained);
	loop_free(f->loop);
	ratelimit_free(f->limiter);
	buf_free(&f->big);
	for (int i = 0; i < 3; i++)
		free(f->raw[i]);
	tmpdir_free(f->dir);
	tmpdir_free(f->dir2);
	free(f);
	return 0;
}

/* ---- one push ----------------------------------------------------------- */

typedef struct {
	ingest_push_t push; /* first: the reply gets &push */
	union {
		ingest_pprof_push_t pprof;
		ingest_otlp_push_t otlp;
		api_grpc_push_t grpc;
		scrape_push_t scrape;
	} u;
	grpc_call_t call;
	scrape_target_t target;
	loop_t *loop;
	int replies, status, retry_after;
	char msg[480];
} test_job;

static void on_reply(ingest_push_t *p, const err_t *err)
{
	test_job *j = (test_job *)p;
	j->replies++;
	j->status = err ? err->status : 200;
	j->retry_after = err ? err->retry_after : 0;
	snprintf(j->msg, sizeof j->msg, "%s", err ? err->msg : "");
	loop_stop(j->loop);
}

/* Runs body through path's decoder as caller key (of project "p") into the
 * job, the loop turning until the reply. */
static void run(fixture *f, test_job *j, int path, slice_t body, const char *key, int anonymous,
                store_t *store, ratelimit_t *default_limiter)
{
	memset(j, 0, sizeof *j);
	j->loop = f->loop;
	j->push.env = (ingest_push_env_t){.loop = f->loop,
	                                  .pool = f->pool,
	                                  .store = store,
	                                  .limiter = f->limiter,
	                                  .default_limiter = default_limiter,
	                                  .usage = f->usage};
	snprintf(j->push.caller.project, sizeof j->push.caller.project, "p");
	snprintf(j->push.caller.key, sizeof j->push.caller.key, "%s", key);
	j->push.caller.anonymous = anonymous;
	j->push.body = body;
	j->push.reply = on_reply;
	j->push.ctx = &j->u;
	int64_t now = time_now_ns();
	ingest_otlp_req_t otlp = {.project = slice_cstr("p"), .now_ns = OTLP_NOW_NS};
	switch (path) {
	case P_UPLOAD:
		j->push.decode = ingest_pprof_decode;
		j->u.pprof.req = (ingest_pprof_req_t){
		    .project = slice_cstr("p"), .service = slice_cstr("svc"), .now_ns = now};
		j->u.pprof.retention_days = 14;
		break;
	case P_OTLP_PB:
	case P_OTLP_JSON:
		j->push.decode = ingest_otlp_decode;
		j->u.otlp.req = otlp;
		j->u.otlp.req.json = path == P_OTLP_JSON;
		break;
	case P_GRPC:
		j->push.decode = api_grpc_decode;
		j->u.grpc.otlp.req = otlp;
		j->call.wire = j->call.msg = body; /* not compressed: the message is the body */
		j->u.grpc.call = &j->call;
		j->push.body = slice_make(NULL, 0); /* the decoder takes the call's message */
		break;
	case P_SCRAPE:
		j->push.decode = scrape_push_decode;
		snprintf(j->target.service, sizeof j->target.service, "svc");
		j->u.scrape.t = &j->target;
		break;
	}
	ingest_push_start(&j->push);
	assert_int_equal(loop_run(f->loop), 0);
	assert_int_equal(j->replies, 1);
}

typedef struct {
	const char *key;
	uint64_t counts[USAGE_COUNTERS];
	int found;
} counts_of;

static void on_totals(slice_t project, slice_t key, const uint64_t counts[USAGE_COUNTERS], void *ctx)
{
	counts_of *c = ctx;
	if (slice_eq_cstr(project, "p") && slice_eq_cstr(key, c->key)) {
		memcpy(c->counts, counts, sizeof c->counts);
		c->found = 1;
	}
}

static void usage_of(fixture *f, const char *key, uint64_t out[USAGE_COUNTERS])
{
	counts_of c = {.key = key};
	usage_totals(f->usage, on_totals, &c);
	memcpy(out, c.counts, sizeof c.counts);
}

/* The valid body of a path (what its senders push). */
static slice_t native(const fixture *f, int path)
{
	return path == P_UPLOAD || path == P_SCRAPE ? f->pprof
	       : path == P_OTLP_JSON                ? f->otlp_json
	                                            : f->otlp_pb;
}

static void test_table(void **state)
{
	fixture *f = *state;
	int bad = 0; /* every mismatch is reported, then the test fails */
	for (int in = 0; in < N_INPUTS; in++) {
		for (int path = 0; path < N_PATHS; path++) {
			const want *w = &wants[in][path];
			char key[64], msg[480];
			snprintf(key, sizeof key, "%s-%s", input_names[in], path_names[path]);
			slice_t body = in == IN_PPROF  ? f->pprof
			               : in == IN_OTLP ? (path == P_OTLP_JSON ? f->otlp_json : f->otlp_pb)
			               : in == IN_MALFORMED ? f->junk
			               : in == IN_OVERSIZE  ? f->oversize
			                                    : native(f, path);
			if (in == IN_LIMITED) { /* the key's bucket (1 sample/s) is empty */
				int retry;
				assert_int_equal(
				    ratelimit_take(f->limiter, slice_cstr(key), 1, time_now_ns(), &retry), 0);
			}
			test_job j;
			run(f, &j, path, body, key, 0, in == IN_STORE_FAIL ? f->drained : f->store, NULL);
			snprintf(msg, sizeof msg, w->msg ? w->msg : "", key);
			if (j.status != w->status || strcmp(j.msg, msg) || j.retry_after != w->retry_after)
				bad++, print_error("%s: got %d \"%s\" retry %d, want %d \"%s\" retry %d\n",
				                   key, j.status, j.msg, j.retry_after, w->status, msg,
				                   w->retry_after);
			uint64_t got[USAGE_COUNTERS];
			usage_of(f, key, got);
			for (int r = 0; r < USAGE_COUNTERS; r++)
				if (got[r] != w->counts[r])
					bad++, print_error("%s: usage[%d] = %llu, want %llu\n", key, r,
					                   (unsigned long long)got[r],
					                   (unsigned long long)w->counts[r]);
			if (path == P_SCRAPE)
				assert_int_equal(j.u.scrape.result,
				                 w->status == 200 || w->status == 429 || w->status == 503
				                     ? SCRAPE_OK
				                     : SCRAPE_VALIDATION_ERROR);
		}
	}
}

/* OPS: Rate limits for listeners without auth: the anonymous caller (default/default)
 * is not limited unless limits.defaultSamplesPerSecond gives it a limiter;
 * its usage is counted either way. Keys named like it keep the keys' limit. */
static void test_default_caller(void **state)
{
	fixture *f = *state;
	int retry;
	/* The keys' bucket of "anon" is empty, which an anonymous caller never reads. */
	assert_int_equal(ratelimit_take(f->limiter, slice_cstr("anon"), 1, time_now_ns(), &retry), 0);
	test_job j;
	for (int i = 0; i < 50; i++) {
		run(f, &j, P_OTLP_PB, f->otlp_pb, "anon", 1, f->store, NULL);
		assert_int_equal(j.status, 200);
	}
	uint64_t got[USAGE_COUNTERS];
	usage_of(f, "anon", got);
	assert_int_equal(got[USAGE_ACCEPTED], 50 * OTLP_SAMPLES);
	assert_int_equal(got[USAGE_RATE_LIMITED], 0);

	/* With a default limit of 1 sample/s: the first push drains the full
	 * bucket (a push larger than the bucket is admitted when it is full),
	 * the next is refused and counted. */
	ratelimit_t *dl = ratelimit_new(1);
	run(f, &j, P_UPLOAD, f->pprof, "anon2", 1, f->store, dl);
	assert_int_equal(j.status, 200);
	run(f, &j, P_UPLOAD, f->pprof, "anon2", 1, f->store, dl);
	assert_int_equal(j.status, 429);
	assert_string_equal(j.msg,
	                    "key anon2 is over its rate limit of 1 samples/s: this request has 2 samples; "
	                    "retry in 2 s");
	usage_of(f, "anon2", got);
	assert_int_equal(got[USAGE_ACCEPTED], PPROF_SAMPLES);
	assert_int_equal(got[USAGE_RATE_LIMITED], PPROF_SAMPLES);
	/* A key is never limited by the default limiter. */
	run(f, &j, P_UPLOAD, f->pprof, "anon2", 0, f->store, dl);
	assert_int_equal(j.status, 200);
	ratelimit_free(dl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_default_caller),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
