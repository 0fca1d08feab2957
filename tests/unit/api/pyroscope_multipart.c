/* Tests of src/api/pyroscope_multipart.c, the multipart /ingest decoder of
 * the push job, called directly (no socket): a cumulative type stored as its
 * growth per series (first push none, then exact deltas, a counter that
 * went down as a new baseline), series kept apart by their labels, the
 * least recently pushed series forgotten past LIMIT_PYRO_DELTA_SERIES, a
 * prev_profile subtracted without any baseline, and the profile name
 * (__name__) from display-name while the type stays the pprof's. The pprof
 * bodies are written by pprof_encode from one-stack trees. */
#include "testutil.h"

#include "api/api.h"
#include "base/buf.h"
#include "base/limits.h"
#include "wire/pprof.h"

#define NOW_NS 1760000000000000000LL

/* A pprof with one sample type TYPE/count and one stack main;work of value v. */
static void pprof_of(const char *type, int64_t v, buf_t *out)
{
	uint32_t parent[] = {0, 0, 1}, frame[] = {0, 0, 1};
	int64_t self[] = {0, 0, v}, total[] = {v, v, v};
	model_frame_t frames[] = {{.name = slice_cstr("main")}, {.name = slice_cstr("work")}};
	model_tree_t t = {.n_nodes = 3, .n_frames = 2, .time_ns = NOW_NS};
	t.parent = parent, t.frame = frame, t.frames = frames;
	t.self = self, t.total = total;
	t.sample_type = slice_cstr(type), t.sample_unit = slice_cstr("count");
	err_t err = {0};
	buf_init(out, 1 << 20);
	if (pprof_encode(&t, out, &err) < 0)
		fail_msg("pprof_encode: %s", err.msg);
}

static void add_part(buf_t *b, const char *name, slice_t data)
{
	char head[256];
	int n = snprintf(head, sizeof head,
	                 "--XB\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"f\"\r\n\r\n", name);
	buf_append(b, head, (size_t)n);
	buf_append(b, data.p, data.n);
	buf_append(b, "\r\n", 2);
}

typedef struct {
	int64_t value; /* the stored value of the one stack; 0: no profile of the type */
	char type[64]; /* the stored type:unit */
	char name[64]; /* the stored series label __name__; "" when none */
	int aggregation;
	int status; /* 0 decoded, else the error's */
	char msg[480];
} result_t;

/* Decodes one multipart push of service svc with profile value v (and a
 * prev_profile of value prev when prev >= 0) under config. */
static result_t push(api_pyro_deltas_t *d, const char *svc, const char *type, int64_t v, int64_t prev,
                     const char *config)
{
	buf_t body, p1, p2;
	buf_init(&body, 1 << 20);
	pprof_of(type, v, &p1);
	add_part(&body, "profile", buf_slice(&p1));
	if (prev >= 0) {
		pprof_of(type, prev, &p2);
		add_part(&body, "prev_profile", buf_slice(&p2));
		buf_free(&p2);
	}
	if (config)
		add_part(&body, "sample_type_config", slice_cstr(config));
	buf_append(&body, "--XB--\r\n", 8);
	ingest_pprof_push_t pp = {.req = {.project = slice_cstr("p"),
	                                  .service = slice_cstr(svc),
	                                  .now_ns = NOW_NS,
	                                  .pyro_derive_name = 1}};
	api_pyro_multipart_t m = {&pp, slice_cstr("multipart/form-data; boundary=XB"), d};
	ingest_push_t p = {.ctx = &m, .body = buf_slice(&body)};
	err_t err = {0};
	result_t r = {0};
	if (api_pyro_multipart_decode(&p, &err) < 0) {
		r.status = err.status;
		snprintf(r.msg, sizeof r.msg, "%s", err.msg);
	} else {
		assert_ptr_equal(p.ctx, &m);
		for (uint32_t i = 0; i < p.batch->n_profiles; i++) {
			const model_profile_t *pr = &p.batch->profiles[i];
			model_type_name(pr, r.type, sizeof r.type);
			r.aggregation = pr->aggregation;
			for (uint32_t k = 0; k < pr->labels_count; k++) {
				const model_label_t *l = &p.batch->series_labels[pr->labels_first + k];
				if (slice_eq_cstr(l->key, "__name__"))
					snprintf(r.name, sizeof r.name, "%.*s", (int)l->value.n,
					         (const char *)l->value.p);
			}
			for (uint32_t k = 0; k < pr->samples_count; k++)
				r.value += p.batch->samples[pr->samples_first + k].value;
		}
		assert_int_equal(p.samples, r.value ? 1 : 0);
		model_batch_free(p.batch);
	}
	buf_free(&p1);
	buf_free(&body);
	return r;
}

#define CUMULATIVE "{\"alloc_objects\":{\"cumulative\":true,\"units\":\"objects\"}}"

static void test_cumulative(void **state)
{
	(void)state;
	api_pyro_deltas_t *d = api_pyro_deltas_new();
	assert_int_equal(push(d, "a", "alloc_objects", 100, -1, CUMULATIVE).value, 0); /* first: none */
	assert_int_equal(push(d, "b", "alloc_objects", 7, -1, CUMULATIVE).value, 0);   /* another series */
	result_t r = push(d, "a", "alloc_objects", 130, -1, CUMULATIVE);
	assert_int_equal(r.value, 30);
	assert_string_equal(r.type, "alloc_objects:count"); /* the pprof's unit: "units" changes nothing */
	assert_string_equal(r.name, "memory");
	assert_int_equal(push(d, "a", "alloc_objects", 130, -1, CUMULATIVE).value, 0); /* no growth */
	assert_int_equal(push(d, "b", "alloc_objects", 17, -1, CUMULATIVE).value, 10);
	assert_int_equal(push(d, "a", "alloc_objects", 40, -1, CUMULATIVE).value, 0); /* restarted */
	assert_int_equal(push(d, "a", "alloc_objects", 45, -1, CUMULATIVE).value, 5);
	/* Without a config nothing is cumulative and nothing is remembered. */
	assert_int_equal(push(d, "a", "alloc_objects", 50, -1, NULL).value, 50);
	assert_int_equal(push(d, "a", "alloc_objects", 60, 50, NULL).value, 60); /* prev_profile ignored */
	/* Series "a" is forgotten once LIMIT_PYRO_DELTA_SERIES others were pushed after it. */
	assert_int_equal(push(d, "a", "alloc_objects", 70, -1, CUMULATIVE).value, 25);
	char svc[32];
	for (uint32_t i = 0; i < LIMIT_PYRO_DELTA_SERIES - 1; i++) {
		snprintf(svc, sizeof svc, "s%u", i);
		push(d, svc, "alloc_objects", 1, -1, CUMULATIVE);
	}
	assert_int_equal(push(d, "a", "alloc_objects", 80, -1, CUMULATIVE).value,
	                 10); /* b was evicted, a kept */
	assert_int_equal(push(d, "b", "alloc_objects", 20, -1, CUMULATIVE).value,
	                 0); /* b: a first push again */
	api_pyro_deltas_free(d);
}

#define MUTEX "{\"contentions\":{\"display-name\":\"mutex_count\",\"cumulative\":true}}"
#define BLOCK "{\"contentions\":{\"display-name\":\"block_count\",\"cumulative\":true}}"

/* A block and a mutex profile of one service are two series (their
 * __name__ differs): each grows against its own baseline. */
static void test_names_apart(void **state)
{
	(void)state;
	api_pyro_deltas_t *d = api_pyro_deltas_new();
	assert_int_equal(push(d, "a", "contentions", 100, -1, MUTEX).value, 0);
	assert_int_equal(push(d, "a", "contentions", 5, -1, BLOCK).value, 0); /* its own first push */
	result_t r = push(d, "a", "contentions", 130, -1, MUTEX);
	assert_int_equal(r.value, 30);
	assert_string_equal(r.name, "mutex");
	r = push(d, "a", "contentions", 12, -1, BLOCK);
	assert_int_equal(r.value, 7);
	assert_string_equal(r.name, "block");
	api_pyro_deltas_free(d);
}

static void test_prev_and_config(void **state)
{
	(void)state;
	/* prev_profile: the growth at once, with no baseline at all. */
	result_t r = push(NULL, "a", "alloc_objects", 130, 100, CUMULATIVE);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.value, 30);
	/* No baselines: a cumulative type without prev_profile is never stored. */
	assert_int_equal(push(NULL, "a", "alloc_objects", 130, -1, CUMULATIVE).value, 0);
	/* display-name names the profile, the type and unit stay the pprof's;
	 * average; an unlisted type is dropped. */
	r = push(
	    NULL, "a", "contentions", 9, -1,
	    "{\"contentions\":{\"display-name\":\"mutex_count\",\"units\":\"lock_samples\",\"aggregation\":"
	    "\"average\"}}");
	assert_string_equal(r.type, "contentions:count");
	assert_string_equal(r.name, "mutex");
	assert_int_equal(r.value, 9);
	assert_int_equal(r.aggregation, MODEL_SNAPSHOT);
	r = push(NULL, "a", "contentions", 9, -1, "{\"contentions\":{\"display-name\":\"block_count\"}}");
	assert_string_equal(r.type, "contentions:count");
	assert_string_equal(r.name, "block");
	/* Without a config: Pyroscope's default config names it. */
	r = push(NULL, "a", "samples", 9, -1, NULL);
	assert_string_equal(r.type, "samples:count");
	assert_string_equal(r.name, "process_cpu");
	r = push(NULL, "a", "alloc_objects", 9, -1, "{\"alloc_objects\":{}}");
	assert_string_equal(r.name, "memory");
	r = push(NULL, "a", "frobs", 9, -1, NULL); /* no rule matches: Pyroscope's fallback */
	assert_string_equal(r.type, "frobs:count");
	assert_string_equal(r.name, "frobs");
	r = push(NULL, "a", "Frobs", 9, -1, NULL); /* not a Kiln profile name: unnamed */
	assert_string_equal(r.type, "Frobs:count");
	assert_string_equal(r.name, "");
	r = push(NULL, "a", "inuse_space", 9, -1, "{\"inuse_space\":{\"aggregation\":\"sum\"}}");
	assert_int_equal(r.aggregation, MODEL_WINDOW);
	r = push(NULL, "a", "inuse_space", 9, -1, "{\"inuse_space\":{}}");
	assert_int_equal(r.aggregation, MODEL_SNAPSHOT);
	r = push(NULL, "a", "cpu", 9, -1, "{\"other\":{}}");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.type, "");
	r = push(NULL, "a", "cpu", 9, -1, "{\"cpu\":{\"cumulative\":1}}");
	assert_int_equal(r.status, 400);
	assert_string_equal(r.msg, "sample_type_config: \"cpu\".cumulative must be true or false");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cumulative),
	    cmocka_unit_test(test_names_apart),
	    cmocka_unit_test(test_prev_and_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
