/* Tests of src/wire/jfr_labels.c and the JFR decoder's sample attributes:
 * the two recordings of tests/data/jfr that come with a labels part
 * (dump1: context labels; new_spancontext: context labels, span ids and
 * span names) decode to the same value per distinct sample label set as
 * grafana/jfr-parser's pprof oracle (its `_expected.txt.gz` text: each
 * sample's values and its `key:[value]` label line, summed here per label
 * set), and a table of bad snapshots gets the exact status and message. */
#include "testutil.h"

#include "jfr_data.h"

#include "base/buf.h"
#include "model/model.h"
#include "wire/compress.h"
#include "wire/jfr.h"
#include "wire/pb.h"

#define FROM_NS 1706241880000000000LL

/* Value per label set: "k=v,k=v" (keys sorted) → sum. */
typedef struct {
	char key[40][256];
	int64_t v[40];
	int n;
} by_labels_t;

static void add(by_labels_t *t, const char *key, int64_t v)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->key[i], key) == 0) {
			t->v[i] += v;
			return;
		}
	assert_true(t->n < 40);
	snprintf(t->key[t->n], sizeof t->key[0], "%s", key);
	t->v[t->n++] = v;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The oracle: the samples of the pprof text (first value of each), their
 * label line "  k:[v] k:[v]" turned into "k=v,k=v" with keys sorted. */
static void oracle(slice_t text, by_labels_t *t)
{
	char *s = strndup((const char *)text.p, text.n), *save = NULL;
	char *samples = strstr(s, "Samples:\n");
	assert_non_null(samples);
	char *end = strstr(samples, "\nLocations");
	assert_non_null(end);
	*end = 0;
	int64_t pending = -1;
	int line_no = 0;
	for (char *line = strtok_r(samples, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line_no++ < 2) /* "Samples:" and the type line */
			continue;
		char *colon = strchr(line, ':');
		if (colon && colon[1] == ' ' && !strchr(line, '[')) { /* "   10000000: 1 2 3" */
			if (pending >= 0)
				add(t, "", pending);
			pending = strtoll(line, NULL, 10);
			continue;
		}
		/* labels of the sample before */
		char *parts[16];
		char buf[16][128];
		int n = 0;
		for (char *p = line; (p = strstr(p, ":[")) != NULL && n < 16;) {
			char *k = p;
			while (k > line && k[-1] != ' ')
				k--;
			char *close = strchr(p, ']');
			snprintf(buf[n], sizeof buf[0], "%.*s=%.*s", (int)(p - k), k, (int)(close - p - 2),
			         p + 2);
			parts[n] = buf[n];
			n++;
			p = close;
		}
		qsort(parts, (size_t)n, sizeof parts[0], cmp_str);
		char key[256] = "";
		for (int i = 0; i < n; i++)
			snprintf(key + strlen(key), sizeof key - strlen(key), "%s%s", i ? "," : "", parts[i]);
		assert_true(pending >= 0);
		add(t, key, pending);
		pending = -1;
	}
	if (pending >= 0)
		add(t, "", pending);
	free(s);
}

static void kiln(const model_batch_t *b, const model_profile_t *p, by_labels_t *t)
{
	for (uint32_t s = 0; s < p->samples_count; s++) {
		const model_sample_t *m = &b->samples[p->samples_first + s];
		const model_attrset_t *a = &b->attrsets[m->attrset];
		char key[256] = "";
		for (uint32_t i = 0; m->attrset && i < a->count; i++) {
			const model_label_t *l = &b->attr_labels[a->first + i];
			snprintf(key + strlen(key), sizeof key - strlen(key), "%s%.*s=%.*s", i ? "," : "",
			         (int)l->key.n, (const char *)l->key.p, (int)l->value.n,
			         (const char *)l->value.p);
		}
		add(t, key, m->value);
	}
}

/* rec with its labels file: one cpu profile whose value per label set is the oracle's. */
static void check(const char *rec, const char *labels_file, int want_sets)
{
	char name[256];
	buf_t jb, lb, ob;
	snprintf(name, sizeof name, "%s.jfr.gz", rec);
	slice_t jfr = load(name, &jb), lab = load(labels_file, &lb);
	snprintf(name, sizeof name, "%s_0_process_cpu_cpu__nanoseconds_expected.txt.gz", rec);
	slice_t text = load(name, &ob);
	err_t err = {0};
	jfr_labels_t *snap;
	if (jfr_labels_parse(lab, &snap, &err) < 0)
		fail_msg("%s: %d %s", labels_file, err.status, err.msg);
	jfr_decode_opts_t o = {.service = slice_cstr("svc"),
	                       .from_ns = FROM_NS,
	                       .until_ns = FROM_NS + 10000000000LL,
	                       .sample_rate = 100,
	                       .snapshot = snap};
	model_batch_t *b = model_batch_new(slice_cstr("test"));
	if (jfr_decode(jfr, &o, b, &err) < 0)
		fail_msg("%s: %d %s", rec, err.status, err.msg);
	assert_int_equal(b->n_profiles, 1);
	static by_labels_t want, got;
	memset(&want, 0, sizeof want);
	memset(&got, 0, sizeof got);
	oracle(text, &want);
	kiln(b, &b->profiles[0], &got);
	assert_int_equal(got.n, want.n);
	assert_int_equal(want.n, want_sets);
	for (int i = 0; i < want.n; i++) {
		int found = 0;
		for (int j = 0; j < got.n; j++)
			if (strcmp(want.key[i], got.key[j]) == 0) {
				if (want.v[i] != got.v[j])
					fail_msg("%s {%s}: %lld, the oracle %lld", rec, want.key[i],
					         (long long)got.v[j], (long long)want.v[i]);
				found = 1;
			}
		if (!found)
			fail_msg("%s: no samples with {%s}", rec, want.key[i]);
	}
	model_batch_free(b);
	jfr_labels_free(snap);
	buf_free(&jb);
	buf_free(&lb);
	buf_free(&ob);
}

static void test_oracle_labels(void **state)
{
	(void)state;
	check("dump1", "dump1.labels.pb.gz", 5); /* 4 threads and samples without a context */
	check("new_spancontext", "new_spancontext.labels.gz", 3);
}

/* ---- Snapshots written here ------------------------------------------------ */

static void entry_str(buf_t *b, int64_t id, const char *s)
{
	size_t m = pb_begin(b, 2);
	pb_put_int64(b, 1, id);
	pb_put_bytes(b, 2, slice_cstr(s));
	pb_end(b, m);
}

/* A context entry with n labels k[i] → v[i] (string ids). */
static void entry_ctx(buf_t *b, int64_t id, int n, const int64_t *k, const int64_t *v)
{
	size_t m = pb_begin(b, 1);
	pb_put_int64(b, 1, id);
	size_t c = pb_begin(b, 2);
	for (int i = 0; i < n; i++) {
		size_t l = pb_begin(b, 1);
		pb_put_int64(b, 1, k[i]);
		pb_put_int64(b, 2, v[i]);
		pb_end(b, l);
	}
	pb_end(b, c);
	pb_end(b, m);
}

static void test_lookup(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	entry_ctx(&b, 7, 3, (const int64_t[]){1, 3, 1}, (const int64_t[]){2, 4, 4}); /* key 1 twice */
	entry_str(&b, 1, "k");
	entry_str(&b, 2, "old");
	entry_str(&b, 3, "");
	entry_str(&b, 4, "v");
	entry_str(&b, 2, "new"); /* a repeated key: the last counts */
	entry_ctx(&b, 0, 1, (const int64_t[]){1}, (const int64_t[]){2});
	jfr_labels_t *l;
	err_t err = {0};
	assert_int_equal(jfr_labels_parse(buf_slice(&b), &l, &err), 0);
	model_label_t out[JFR_CONTEXT_LABELS];
	assert_int_equal(jfr_labels_context(l, 7, out), 1); /* the empty key is left out */
	assert_true(slice_eq_cstr(out[0].key, "k") && slice_eq_cstr(out[0].value, "v"));
	assert_int_equal(jfr_labels_context(l, 0, out), 1);
	assert_true(slice_eq_cstr(out[0].value, "new"));
	assert_int_equal(jfr_labels_context(l, 8, out), 0);
	assert_int_equal(jfr_labels_context(NULL, 7, out), 0);
	slice_t s;
	assert_int_equal(jfr_labels_string(l, 4, &s), 1);
	assert_true(slice_eq_cstr(s, "v"));
	assert_int_equal(jfr_labels_string(l, 5, &s), 0);
	jfr_labels_free(l);
	buf_free(&b);
}

static void test_bad(void **state)
{
	(void)state;
	int64_t many_k[JFR_CONTEXT_LABELS + 1], many_v[JFR_CONTEXT_LABELS + 1];
	for (int i = 0; i <= (int)JFR_CONTEXT_LABELS; i++) {
		many_k[i] = 100 + i;
		many_v[i] = 1;
	}
	for (int c = 0; c < 7; c++) {
		buf_t b;
		buf_init(&b, SIZE_MAX);
		int status = 400;
		const char *want = NULL;
		entry_str(&b, 1, "x");
		switch (c) {
		case 0:
			entry_ctx(&b, 5, 1, (const int64_t[]){1}, (const int64_t[]){9});
			want = "labels.contexts[0].labels[0].value: string id 9 is not in the snapshot's "
			       "strings";
			break;
		case 1:
			entry_ctx(&b, 5, 1, (const int64_t[]){1}, (const int64_t[]){1});
			entry_ctx(&b, 6, 1, (const int64_t[]){-3}, (const int64_t[]){1});
			want =
			    "labels.contexts[1].labels[0].key: string id -3 is not in the snapshot's strings";
			break;
		case 2:
			for (int i = 0; i <= (int)JFR_CONTEXT_LABELS; i++)
				entry_str(&b, 100 + i, "k");
			entry_ctx(&b, 5, JFR_CONTEXT_LABELS + 1, many_k, many_v);
			status = 413;
			want = "labels.contexts[0].labels[62]: a context has more than 62 labels (the limit)";
			break;
		case 3: /* a string whose value is a varint */
			pb_put_key(&b, 2, PB_LEN);
			pb_put_varint(&b, 4);
			pb_put_uint(&b, 1, 3);
			pb_put_uint(&b, 2, 3);
			want = "labels.strings[1].value: wire type 0 (varint), expected length-delimited";
			break;
		case 4: /* contexts as a varint */
			pb_put_uint(&b, 1, 3);
			want = "labels.contexts: wire type 0 (varint), expected length-delimited (field 1 at "
			       "byte 7)";
			break;
		case 5: /* truncated: an entry's length past the end */
			pb_put_key(&b, 2, PB_LEN);
			pb_put_varint(&b, 50);
			want = "labels.strings: length at byte 8 runs past the end of its message or is "
			       "malformed";
			break;
		case 6: /* a label entry with a bad key varint */
			pb_put_key(&b, 1, PB_LEN);
			pb_put_varint(&b, 6);
			pb_put_uint(&b, 1, 5);
			pb_put_key(&b, 2, PB_LEN);
			pb_put_varint(&b, 2);
			pb_put_key(&b, 1, PB_LEN);
			pb_put_varint(&b, 0);
			want = NULL; /* an empty label entry: key 0 → value 0, id 0 not in strings */
			break;
		}
		jfr_labels_t *l = (jfr_labels_t *)1;
		err_t err = {0};
		if (c == 6) {
			assert_int_equal(jfr_labels_parse(buf_slice(&b), &l, &err), -1);
			assert_string_equal(
			    err.msg,
			    "labels.contexts[0].labels[0].key: string id 0 is not in the snapshot's strings");
		} else {
			if (jfr_labels_parse(buf_slice(&b), &l, &err) != -1)
				fail_msg("case %d parsed", c);
			assert_int_equal(err.status, status);
			assert_string_equal(err.msg, want);
		}
		assert_null(l);
		buf_free(&b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oracle_labels),
	    cmocka_unit_test(test_lookup),
	    cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
