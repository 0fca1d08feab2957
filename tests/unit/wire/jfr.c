/* Tests of src/wire/jfr.c: every recording in tests/data/jfr decodes to the
 * profiles grafana/jfr-parser's converter made of it (its oracle files:
 * the same kinds, the same total per sample type and the same top-20 self
 * values per function, parsed from the oracle's collapsed text), the symbol
 * renaming rules, and a table of hostile inputs (built from a small
 * recording written here, and from a real one cut and patched) that get
 * the exact status and message. */
#include "testutil.h"

#include <dirent.h>

#include "base/buf.h"
#include "base/limits.h"
#include "model/model.h"
#include "wire/compress.h"
#include "wire/jfr.h"
#include "wire/jfr_int.h"

#define FROM_NS 1706241880000000000LL /* the oracle's start, 10 s long, sampleRate 100 */
#define UNTIL_NS (FROM_NS + 10000000000LL)

static const jfr_decode_opts_t oracle_opts = {
    .service = {(const uint8_t *)"svc", 3}, .from_ns = FROM_NS, .until_ns = UNTIL_NS, .sample_rate = 100};

/* Reads tests/data/jfr/name, inflated (every file there is gzip). */
static slice_t load(const char *name, buf_t *out)
{
	char path[512];
	size_t n;
	snprintf(path, sizeof path, "%s/jfr/%s", testdata_dir(), name);
	unsigned char *raw = read_file_or_fail(path, &n);
	err_t err = {0};
	buf_init(out, 256u << 20);
	if (gz_inflate(slice_make(raw, n), out, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
	free(raw);
	return slice_make(out->p, out->n);
}

/* ---- Oracle comparison ------------------------------------------------------ */

typedef struct {
	char *name;
	int64_t v;
} fn_val_t;

typedef struct {
	fn_val_t *a;
	size_t n, cap;
} fn_vals_t;

static void vals_add(fn_vals_t *t, const char *name, size_t len, int64_t v)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->a = realloc(t->a, t->cap * sizeof *t->a);
	}
	t->a[t->n].name = strndup(name, len);
	t->a[t->n++].v = v;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(((const fn_val_t *)x)->name, ((const fn_val_t *)y)->name);
}

static int by_value(const void *x, const void *y)
{
	const fn_val_t *a = x, *b = y;
	if (a->v != b->v)
		return a->v > b->v ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Sums equal names, then orders by value (largest first), then name. */
static void vals_fold(fn_vals_t *t)
{
	if (!t->n)
		return;
	qsort(t->a, t->n, sizeof *t->a, by_name);
	size_t k = 0;
	for (size_t i = 1; i < t->n; i++) {
		if (strcmp(t->a[i].name, t->a[k].name) == 0) {
			t->a[k].v += t->a[i].v;
			free(t->a[i].name);
		} else {
			t->a[++k] = t->a[i];
		}
	}
	t->n = k + 1;
	qsort(t->a, t->n, sizeof *t->a, by_value);
}

static void vals_free(fn_vals_t *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->a[i].name);
	free(t->a);
}

static int64_t vals_get(const fn_vals_t *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->a[i].name, name) == 0)
			return t->a[i].v;
	return 0;
}

/* The oracle's collapsed text: per stack `frame:line;...;frame:line [v0 v1]`,
 * root first. self[t] gets the leaf's function (its `:line` cut) per value. */
static void oracle_parse(slice_t text, int n_types, fn_vals_t *self, int64_t *total)
{
	const char *p = (const char *)text.p, *end = p + text.n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *br = NULL;
		for (const char *q = le; q > p; q--)
			if (q[-1] == '[') {
				br = q - 1;
				break;
			}
		if (le > p) {
			assert_non_null(br);
			const char *stack_end = br > p && br[-1] == ' ' ? br - 1 : br;
			/* Frames end in ":LINE": a ';' after one separates frames (names may hold ';'). */
			const char *leaf = stack_end;
			for (; leaf > p; leaf--) {
				if (leaf[-1] != ';')
					continue;
				const char *d = leaf - 1;
				while (d > p && d[-1] >= '0' && d[-1] <= '9')
					d--;
				if (d < leaf - 1 && d > p && d[-1] == ':')
					break;
			}
			const char *colon = stack_end;
			while (colon > leaf && *colon != ':')
				colon--;
			if (colon == leaf)
				colon = stack_end;
			char *q = (char *)br + 1;
			for (int t = 0; t < n_types; t++) {
				long long v = strtoll(q, &q, 10);
				total[t] += v;
				vals_add(&self[t], leaf, (size_t)(colon - leaf), v);
			}
		}
		p = nl ? nl + 1 : end;
	}
}

static int label_is(const model_batch_t *b, const model_profile_t *p, const char *key, const char *value)
{
	for (uint32_t i = 0; i < p->labels_count; i++) {
		const model_label_t *l = &b->series_labels[p->labels_first + i];
		if (slice_eq_cstr(l->key, key))
			return slice_eq_cstr(l->value, value);
	}
	return 0;
}

static const model_profile_t *find_profile(const model_batch_t *b, const char *name, const char *type)
{
	for (uint32_t i = 0; i < b->n_profiles; i++)
		if (slice_eq_cstr(b->profiles[i].sample_type, type) &&
		    label_is(b, &b->profiles[i], MODEL_PROFILE_NAME_KEY, name))
			return &b->profiles[i];
	return NULL;
}

static void kiln_self(const model_batch_t *b, const model_profile_t *p, fn_vals_t *self, int64_t *total)
{
	for (uint32_t s = 0; s < p->samples_count; s++) {
		const model_sample_t *m = &b->samples[p->samples_first + s];
		slice_t name =
		    m->node == MODEL_NONE ? slice_make("", 0) : b->frames[b->nodes[m->node].frame].name;
		*total += m->value;
		vals_add(self, (const char *)name.p, name.n, m->value);
	}
}

/* One oracle file: METRIC = NAME_TYPE__UNIT[+TYPE__UNIT]. */
static void check_oracle(const model_batch_t *b, const char *rec, const char *metric, const char *file)
{
	static const char *names[] = {"process_cpu", "memory", "mutex", "block", "wall"};
	const char *name = NULL;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strncmp(metric, names[i], strlen(names[i])) == 0 && metric[strlen(names[i])] == '_')
			name = names[i];
	assert_non_null(name);
	char types[2][64];
	int n_types = 0;
	const char *q = metric + strlen(name) + 1;
	while (*q && n_types < 2) {
		const char *u = strstr(q, "__");
		assert_non_null(u);
		snprintf(types[n_types++], sizeof types[0], "%.*s", (int)(u - q), q);
		const char *plus = strchr(u, '+');
		if (!plus)
			break;
		q = plus + 1;
	}
	buf_t text;
	slice_t t = load(file, &text);
	fn_vals_t oself[2] = {{0}}, kself[2] = {{0}};
	int64_t ototal[2] = {0}, ktotal[2] = {0};
	oracle_parse(t, n_types, oself, ototal);
	for (int i = 0; i < n_types; i++) {
		const model_profile_t *p = find_profile(b, name, types[i]);
		if (!p)
			fail_msg("%s: no profile %s %s", rec, name, types[i]);
		assert_int_equal(p->time_ns, FROM_NS);
		assert_int_equal(p->duration_ns, UNTIL_NS - FROM_NS);
		kiln_self(b, p, &kself[i], &ktotal[i]);
		vals_fold(&oself[i]);
		vals_fold(&kself[i]);
		if (ototal[i] != ktotal[i])
			fail_msg("%s %s %s: total %lld, oracle %lld", rec, name, types[i],
			         (long long)ktotal[i], (long long)ototal[i]);
		assert_true(oself[i].n > 0);
		for (size_t k = 0; k < 20 && k < oself[i].n; k++) {
			int64_t kv = vals_get(&kself[i], oself[i].a[k].name);
			if (kv != oself[i].a[k].v || kself[i].a[k].v != oself[i].a[k].v)
				fail_msg("%s %s %s: self of %s is %lld, oracle %lld (top %zu: kiln %lld)",
				         rec, name, types[i], oself[i].a[k].name, (long long)kv,
				         (long long)oself[i].a[k].v, k, (long long)kself[i].a[k].v);
		}
		vals_free(&oself[i]);
		vals_free(&kself[i]);
	}
	buf_free(&text);
}

static void test_oracles(void **state)
{
	(void)state;
	char dir[512];
	snprintf(dir, sizeof dir, "%s/jfr", testdata_dir());
	DIR *dh = opendir(dir);
	assert_non_null(dh);
	char recs[32][256], files[128][256];
	int n_recs = 0, n_files = 0;
	struct dirent *e;
	while ((e = readdir(dh))) {
		size_t n = strlen(e->d_name);
		if (n > 7 && strcmp(e->d_name + n - 7, ".jfr.gz") == 0 && n_recs < 32)
			snprintf(recs[n_recs++], sizeof recs[0], "%.*s", (int)(n - 7), e->d_name);
		else if (strstr(e->d_name, "_expected_collapsed.txt.gz") && n_files < 128)
			snprintf(files[n_files++], sizeof files[0], "%s", e->d_name);
	}
	closedir(dh);
	assert_int_equal(n_recs, 10);
	int checked = 0;
	for (int r = 0; r < n_recs; r++) {
		char file[300];
		assert_true(strlen(recs[r]) < 280);
		snprintf(file, sizeof file, "%.280s.jfr.gz", recs[r]);
		buf_t data;
		slice_t s = load(file, &data);
		model_batch_t *b = model_batch_new(slice_cstr("test"));
		err_t err = {0};
		if (jfr_decode(s, &oracle_opts, b, &err) < 0)
			fail_msg("%s: %d %s", recs[r], err.status, err.msg);
		uint32_t oracle_types = 0;
		size_t rl = strlen(recs[r]);
		for (int f = 0; f < n_files; f++) {
			const char *name = files[f];
			if (strncmp(name, recs[r], rl) != 0 || name[rl] != '_' || name[rl + 1] < '0' ||
			    name[rl + 1] > '9' || name[rl + 2] != '_')
				continue;
			char metric[256];
			snprintf(metric, sizeof metric, "%.*s",
			         (int)(strstr(name, "_expected") - name - rl - 3), name + rl + 3);
			check_oracle(b, recs[r], metric, name);
			oracle_types += strchr(metric, '+') ? 2 : 1;
			checked++;
		}
		/* No profile the reference does not make. */
		if (b->n_profiles != oracle_types)
			fail_msg("%s: %u profiles, the oracle has %u", recs[r], b->n_profiles, oracle_types);
		model_batch_free(b);
		buf_free(&data);
	}
	assert_int_equal(checked, 23);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oracles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
