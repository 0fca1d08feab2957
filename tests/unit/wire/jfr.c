/* Tests of the JFR decoder (src/wire/jfr*.c): every recording in
 * tests/data/jfr decodes to the profiles grafana/jfr-parser's converter
 * made of it (its oracle files: the same kinds, the same total per sample
 * type and the same top-20 self values per function, parsed from the
 * oracle's collapsed text), the symbol renaming rules, and a table of
 * hostile inputs (built from a small recording written here, and from a
 * real one cut and patched) that get the exact status and message. */
#include "testutil.h"

#include <dirent.h>

#include "jfr_data.h"

#include "base/arena.h"
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

/* ---- A small recording written here ------------------------------------------ */

typedef struct {
	uint8_t *p;
	size_t n, cap;
} wb_t;

static void w_bytes(wb_t *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2 + 64;
		w->p = realloc(w->p, w->cap);
	}
	memcpy(w->p + w->n, p, n);
	w->n += n;
}

static void w_byte(wb_t *w, uint8_t b)
{
	w_bytes(w, &b, 1);
}

/* A JFR varint (9 bytes at most, the 9th carrying 8 bits). */
static void w_var(wb_t *w, uint64_t v)
{
	for (int i = 0; i < 8 && v >= 0x80; i++, v >>= 7)
		w_byte(w, (uint8_t)(v | 0x80));
	w_byte(w, (uint8_t)v);
}

static void w_be(wb_t *w, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--)
		w_byte(w, (uint8_t)(v >> (8 * i)));
}

static void w_str(wb_t *w, const char *s)
{
	w_byte(w, 3);
	w_var(w, strlen(s));
	w_bytes(w, s, strlen(s));
}

/* An event: its size (including the size's own varint), then body. */
static void w_event(wb_t *w, const wb_t *body)
{
	size_t n = body->n + 1;
	while (n - body->n < (n < 0x80 ? 1u : n < 0x4000 ? 2u : 3u))
		n++;
	w_var(w, n);
	w_bytes(w, body->p, body->n);
}

/* What a test changes in the recording the builder writes. */
typedef struct {
	unsigned major;             /* 0 = 2 */
	int uncompressed;           /* features 0: fixed-width integers */
	uint64_t stack_id;          /* id of the stack trace in the pool; 0 = 1 */
	uint64_t event_stack;       /* the id events refer to; 0 = stack_id */
	uint64_t frame_method_type; /* type id of StackFrame.method; 0 = 23 (jdk.types.Method) */
	int self_nested;            /* a type with a field of itself */
	int dup_type;               /* jdk.types.Method defined twice */
	int dim2;                   /* a field with dimension 2 */
	int meta_bad_string;        /* an attribute index past the string table */
	int meta_pooled_string;     /* a metadata string with encoding 2 */
	int meta_deep;              /* annotations nested 20 deep */
	int meta_type;              /* type of the metadata event; 0 = 0 */
	int cp_type;                /* type of the checkpoint event; 0 = 1 */
	int64_t cp_delta;           /* the checkpoint's delta */
	uint64_t cp_undefined;      /* a pool of this (undefined) type id */
	int sym_encoding;           /* encoding of symbol "work"; 0 = 3 */
	int event_size0;            /* an event of size 0 after the others */
	int event_past_end;         /* an event whose size runs past the chunk */
	int event_varint10;         /* an event whose size is 10 bytes of varint */
	int frames_count_huge;      /* the stack's frame count is 2^40 */
	int missing_method;         /* the stack's root frame names a method not in the pool */
	int str_overrun;            /* the checkpoint's last value, a string in this encoding (3 or 5),
	                               declares one byte more than the event holds */
	size_t marks[8];            /* out: section starts (see build) */
} spec_t;

enum { M_EVENTS, M_META, M_META_END, M_CP, M_CP_END };

static void w_int(wb_t *w, const spec_t *sp, uint64_t v, int bytes)
{
	if (sp->uncompressed)
		w_be(w, v, bytes);
	else
		w_var(w, v);
}

/* Metadata strings, indexed in order of first use. */
static const char *mstrs[64];
static int n_mstrs;
static uint64_t si(const char *s)
{
	for (int i = 0; i < n_mstrs; i++)
		if (strcmp(mstrs[i], s) == 0)
			return (uint64_t)i;
	mstrs[n_mstrs] = s;
	return (uint64_t)n_mstrs++;
}

/* An element with n_attr (name, value) pairs and n_children children. */
static void w_elem(wb_t *w, const char *name, int n_attr, const char *const *attrs, uint64_t n_children)
{
	w_var(w, si(name));
	w_var(w, (uint64_t)n_attr);
	for (int i = 0; i < n_attr; i++) {
		w_var(w, si(attrs[2 * i]));
		w_var(w, si(attrs[2 * i + 1]));
	}
	w_var(w, n_children);
}

static void w_class(wb_t *w, const char *id, const char *name, int n_fields)
{
	w_elem(w, "class", 2, (const char *const[]){"id", id, "name", name}, (uint64_t)n_fields);
}

static void w_field(wb_t *w, const char *name, const char *cls, int cp, int array)
{
	const char *a[8] = {"name", name, "class", cls, "constantPool", "true", "dimension", "1"};
	if (!cp && array) {
		a[4] = "dimension";
		a[5] = "1";
	}
	w_elem(w, "field", 2 + (cp ? 1 : 0) + (array ? 1 : 0), a, 0);
}

/* The recording: ExecutionSample ×2 (RUNNABLE) + ×1 (SLEEPING) on the
 * stack com/x/App.main → com/x/App.work, one JavaMonitorEnter of 500 ns. */
static void build(spec_t *sp, wb_t *out)
{
	wb_t w = {0}, b = {0};
	uint64_t stack = sp->stack_id ? sp->stack_id : 1;
	uint64_t ev_stack = sp->event_stack ? sp->event_stack : stack;
	w_bytes(&w, "FLR\0", 4);
	w_be(&w, sp->major ? sp->major : 2, 2);
	w_be(&w, 0, 2);
	for (int i = 0; i < 7; i++)
		w_be(&w, 0, 8); /* size, offsets, times: patched below */
	w_be(&w, sp->uncompressed ? 0 : 1, 4);
	sp->marks[M_EVENTS] = w.n;
	for (int i = 0; i < 4; i++) {
		b.n = 0;
		w_var(&b, i < 3 ? 100 : 101);
		w_int(&b, sp, 1000 + (uint64_t)i, 8); /* startTime */
		if (i == 3)
			w_int(&b, sp, 500, 8); /* duration */
		w_var(&b, ev_stack);
		if (i < 3)
			w_var(&b, i < 2 ? 1 : 2); /* state */
		w_event(&w, &b);
	}
	if (sp->event_size0)
		w_byte(&w, 0);
	if (sp->event_past_end)
		w_var(&w, 1000);
	if (sp->event_varint10)
		w_bytes(&w, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);

	/* Metadata. */
	sp->marks[M_META] = w.n;
	wb_t m = {0};
	n_mstrs = 0;
	w_var(&m, (uint64_t)(sp->meta_type ? sp->meta_type : 0));
	w_var(&m, 0);
	w_var(&m, 0);
	w_var(&m, 1);
	wb_t tree = {0};
	int n_classes = 13 + (sp->self_nested ? 1 : 0) + (sp->dup_type ? 1 : 0);
	char method_type[24];
	snprintf(method_type, sizeof method_type, "%llu",
	         (unsigned long long)(sp->frame_method_type ? sp->frame_method_type : 23));
	w_elem(&tree, "root", 0, NULL, 1);
	w_elem(&tree, "metadata", 0, NULL, (uint64_t)n_classes);
	w_class(&tree, "4", "int", 0);
	w_class(&tree, "5", "long", 0);
	w_class(&tree, "6", "boolean", 0);
	w_class(&tree, "20", "java.lang.String", 0);
	w_class(&tree, "21", "jdk.types.Symbol", 1);
	w_field(&tree, "string", "20", 0, 0);
	w_class(&tree, "22", "java.lang.Class", 1);
	w_field(&tree, "name", "21", 1, 0);
	w_class(&tree, "23", "jdk.types.Method", 2);
	w_field(&tree, "type", "22", 1, 0);
	w_field(&tree, "name", "21", 1, 0);
	if (sp->dup_type) {
		w_class(&tree, "23", "jdk.types.Method2", 0);
	}
	w_class(&tree, "24", "jdk.types.StackFrame", 3);
	w_field(&tree, "method", method_type, 1, 0);
	w_field(&tree, "lineNumber", "4", 0, 0);
	if (sp->meta_deep) {
		/* the type field carries an annotation chain 20 deep */
		w_elem(&tree, "field", 4,
		       (const char *const[]){"name", "type", "class", "25", "constantPool", "true", "x", "y"},
		       1);
		for (int i = 0; i < 20; i++)
			w_elem(&tree, "annotation", 0, NULL, i < 19 ? 1 : 0);
	} else {
		w_field(&tree, "type", "25", 1, 0);
	}
	w_class(&tree, "25", "jdk.types.FrameType", 1);
	w_field(&tree, "description", "20", 0, 0);
	w_class(&tree, "26", "jdk.types.StackTrace", 2);
	w_field(&tree, "truncated", "6", 0, 0);
	if (sp->dim2)
		w_elem(&tree, "field", 3,
		       (const char *const[]){"name", "frames", "class", "24", "dimension", "2"}, 0);
	else
		w_field(&tree, "frames", "24", 0, 1);
	w_class(&tree, "27", "jdk.types.ThreadState", 1);
	w_field(&tree, "name", "20", 0, 0);
	w_class(&tree, "100", "jdk.ExecutionSample", 3);
	w_field(&tree, "startTime", "5", 0, 0);
	w_field(&tree, "stackTrace", "26", 1, 0);
	w_field(&tree, "state", "27", 1, 0);
	w_class(&tree, "101", "jdk.JavaMonitorEnter", 3);
	w_field(&tree, "startTime", "5", 0, 0);
	w_field(&tree, "duration", "5", 0, 0);
	w_field(&tree, "stackTrace", "26", 1, 0);
	if (sp->self_nested) {
		w_class(&tree, "30", "x.Loop", 1);
		w_field(&tree, "next", "30", 0, 0);
	}
	w_var(&m, (uint64_t)n_mstrs + (sp->meta_bad_string ? 0 : 0));
	for (int i = 0; i < n_mstrs; i++) {
		if (sp->meta_pooled_string && i == 1) {
			w_byte(&m, 2);
			w_var(&m, 7);
		} else {
			w_str(&m, mstrs[i]);
		}
	}
	if (sp->meta_bad_string) { /* the root's name: one past the table */
		w_var(&m, (uint64_t)n_mstrs);
		w_bytes(&m, tree.p + 1, tree.n - 1);
	} else {
		w_bytes(&m, tree.p, tree.n);
	}
	w_event(&w, &m);
	sp->marks[M_META_END] = w.n;

	/* Checkpoint. */
	sp->marks[M_CP] = w.n;
	wb_t c = {0};
	w_var(&c, (uint64_t)(sp->cp_type ? sp->cp_type : 1));
	w_var(&c, 0);
	w_var(&c, 0);
	w_var(&c, (uint64_t)sp->cp_delta);
	w_var(&c, 0);
	w_var(&c, 6 + (sp->cp_undefined ? 1 : 0));
	w_var(&c, 21); /* symbols */
	w_var(&c, 3);
	const char *syms[] = {"com/x/App", "main", "work"};
	for (int i = 0; i < 3; i++) {
		w_var(&c, (uint64_t)i + 1);
		if (i == 2 && sp->sym_encoding) {
			w_byte(&c, (uint8_t)sp->sym_encoding);
			w_var(&c, 0);
		} else {
			w_str(&c, syms[i]);
		}
	}
	w_var(&c, 22); /* classes */
	w_var(&c, 1);
	w_var(&c, 1);
	w_var(&c, 1);
	w_var(&c, 23); /* methods */
	w_var(&c, 2);
	w_var(&c, 1);
	w_var(&c, 1);
	w_var(&c, 2);
	w_var(&c, 2);
	w_var(&c, 1);
	w_var(&c, 3);
	w_var(&c, 25); /* frame types */
	w_var(&c, 1);
	w_var(&c, 1);
	w_str(&c, "JIT compiled");
	w_var(&c, 26); /* stack traces: leaf first */
	w_var(&c, 1);
	w_var(&c, stack);
	w_byte(&c, 0);
	if (sp->frames_count_huge)
		w_var(&c, 1ull << 40);
	else
		w_var(&c, 2);
	w_var(&c, 2);
	w_int(&c, sp, 5, 4);
	w_var(&c, 1);
	w_var(&c, sp->missing_method ? 9 : 1);
	w_int(&c, sp, 9, 4);
	w_var(&c, 1);
	w_var(&c, 27); /* thread states */
	w_var(&c, 2);
	w_var(&c, 1);
	w_str(&c, "STATE_RUNNABLE");
	w_var(&c, 2);
	if (sp->str_overrun) { /* its length's own byte counted: the fuzzer's overrun */
		w_byte(&c, (uint8_t)sp->str_overrun);
		w_var(&c, strlen("STATE_SLEEPING") + 1);
		w_bytes(&c, "STATE_SLEEPING", strlen("STATE_SLEEPING"));
	} else {
		w_str(&c, "STATE_SLEEPING");
	}
	if (sp->cp_undefined) {
		w_var(&c, sp->cp_undefined);
		w_var(&c, 0);
	}
	w_event(&w, &c);
	sp->marks[M_CP_END] = w.n;

	/* Header: size, constant pool offset, metadata offset. */
	for (int i = 0; i < 8; i++) {
		w.p[8 + i] = (uint8_t)((uint64_t)w.n >> (56 - 8 * i));
		w.p[16 + i] = (uint8_t)((uint64_t)sp->marks[M_CP] >> (56 - 8 * i));
		w.p[24 + i] = (uint8_t)((uint64_t)sp->marks[M_META] >> (56 - 8 * i));
	}
	*out = w;
	free(b.p);
	free(m.p);
	free(tree.p);
	free(c.p);
}

static int decode(slice_t data, model_batch_t **bp, err_t *err)
{
	*bp = model_batch_new(slice_cstr("test"));
	return jfr_decode(data, &oracle_opts, *bp, err);
}

static slice_t profile_name(const model_batch_t *b, const model_profile_t *p)
{
	for (uint32_t l = 0; l < p->labels_count; l++)
		if (slice_eq_cstr(b->series_labels[p->labels_first + l].key, MODEL_PROFILE_NAME_KEY))
			return b->series_labels[p->labels_first + l].value;
	return slice_cstr("?");
}

/* "name(type)=frame[kind];frame[kind]:value,...|..." of every profile, stacks root first. */
static void render(const model_batch_t *b, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		const model_profile_t *p = &b->profiles[i];
		slice_t name = profile_name(b, p);
		o += (size_t)snprintf(out + o, cap - o, "%s%.*s(%.*s)=", i ? "|" : "", (int)name.n,
		                      (const char *)name.p, (int)p->sample_type.n,
		                      (const char *)p->sample_type.p);
		for (uint32_t s = 0; s < p->samples_count; s++) {
			const model_sample_t *m = &b->samples[p->samples_first + s];
			uint32_t path[64], n = 0;
			for (uint32_t k = m->node; k != MODEL_NONE && n < 64; k = b->nodes[k].parent)
				path[n++] = k;
			o += (size_t)snprintf(out + o, cap - o, "%s", s ? "," : "");
			while (n-- > 0) {
				const model_frame_t *f = &b->frames[b->nodes[path[n]].frame];
				o += (size_t)snprintf(out + o, cap - o, "%.*s[%.*s]%s", (int)f->name.n,
				                      (const char *)f->name.p, (int)f->kind.n,
				                      (const char *)f->kind.p, n ? ";" : "");
			}
			o += (size_t)snprintf(out + o, cap - o, ":%lld", (long long)m->value);
		}
	}
}

/* With KILN_JFR_SEEDS=DIR, the recordings built here are written there
 * (the hand-made seeds of tests/fuzz/corpus/jfr). */
static void dump_seed(const wb_t *w, const char *what, size_t v)
{
	const char *dir = getenv("KILN_JFR_SEEDS");
	if (!dir)
		return;
	char path[512];
	snprintf(path, sizeof path, "%s/seed-%s-%zu.jfr", dir, what, v);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(w->p, 1, w->n, f), w->n);
	fclose(f);
}

static void test_small(void **state)
{
	(void)state;
	static const char *want = "process_cpu(cpu)=com/x/App.main[jvm];com/x/App.work[jvm]:20000000|"
	                          "mutex(contentions)=com/x/App.main[jvm];com/x/App.work[jvm]:1|"
	                          "mutex(delay)=com/x/App.main[jvm];com/x/App.work[jvm]:500";
	char got[4096];
	spec_t variants[] = {{0}, {.uncompressed = 1}, {.stack_id = 0xfedcba9876543210ull}, {.stack_id = 0}};
	for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
		wb_t w;
		model_batch_t *b;
		err_t err = {0};
		build(&variants[v], &w);
		if (decode(slice_make(w.p, w.n), &b, &err) < 0)
			fail_msg("variant %zu: %s", v, err.msg);
		dump_seed(&w, "small", v);
		render(b, got, sizeof got);
		assert_string_equal(got, want);
		model_batch_free(b);
		/* Two chunks: every value twice. */
		wb_t two = {0};
		w_bytes(&two, w.p, w.n);
		w_bytes(&two, w.p, w.n);
		assert_int_equal(decode(slice_make(two.p, two.n), &b, &err), 0);
		render(b, got, sizeof got);
		assert_string_equal(got, "process_cpu(cpu)=com/x/App.main[jvm];com/x/App.work[jvm]:40000000|"
		                         "mutex(contentions)=com/x/App.main[jvm];com/x/App.work[jvm]:2|"
		                         "mutex(delay)=com/x/App.main[jvm];com/x/App.work[jvm]:1000");
		model_batch_free(b);
		free(two.p);
		free(w.p);
	}
	/* A frame whose method is not in the pool is left out, as the reference does. */
	spec_t sp = {.missing_method = 1};
	wb_t w;
	model_batch_t *b;
	err_t err = {0};
	build(&sp, &w);
	assert_int_equal(decode(slice_make(w.p, w.n), &b, &err), 0);
	render(b, got, sizeof got);
	assert_string_equal(got, "process_cpu(cpu)=com/x/App.work[jvm]:20000000|mutex(contentions)=com/x/"
	                         "App.work[jvm]:1|mutex(delay)=com/x/App.work[jvm]:500");
	model_batch_free(b);
	free(w.p);
}

/* ---- Hostile inputs ------------------------------------------------------------ */

enum { X_NONE, X_MAGIC, X_EMPTY, X_HEADER30, X_SIZE0, X_SIZE_PAST, X_CP_PAST, X_CP_LOW, X_META_PAST, X_TAIL };

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static const struct {
	spec_t spec;
	int patch;
	int cut; /* 1 + the mark to cut the file at (the chunk size follows); 0 none */
	int cut_plus;
	int status;
	const char *msg;
} bad[] = {
    {{0}, X_MAGIC, 0, 0, 400, "chunk 0 at offset 0: not a JFR chunk: magic 58 4c 52 00, expected 'FLR\\0'"},
    {{0}, X_EMPTY, 0, 0, 400, "empty body: not a JFR recording"},
    {{0}, X_HEADER30, 0, 0, 400, "chunk 0 at offset 0: chunk header truncated (30 of 68 bytes)"},
    {{.major = 1}, 0, 0, 0, 400, "chunk 0 at offset 4: unsupported JFR version 1.0 (Kiln reads 2.x)"},
    {{0}, X_SIZE0, 0, 0, 400, "chunk 0 at offset 8: chunk size 0 is smaller than its 68-byte header"},
    {{0},
     X_SIZE_PAST,
     0,
     0,
     400,
     "chunk 0 at offset 8: chunk size 998 runs past the end of the file (898 bytes left)"},
    {{0},
     X_CP_PAST,
     0,
     0,
     400,
     "chunk 0 at offset 16: constant pool offset 898 out of range (chunk of 898 bytes)"},
    {{0},
     X_CP_LOW,
     0,
     0,
     400,
     "chunk 0 at offset 16: constant pool offset 10 out of range (chunk of 898 bytes)"},
    {{0},
     X_META_PAST,
     0,
     0,
     400,
     "chunk 0 at offset 24: metadata offset 1099511627776 out of range (chunk of 898 bytes)"},
    {{0}, X_TAIL, 0, 0, 400, "chunk 1 at offset 898: chunk header truncated (10 of 68 bytes)"},
    {{0},
     0,
     1 + M_EVENTS,
     0,
     400,
     "chunk 0 at offset 16: constant pool offset 787 out of range (chunk of 68 bytes)"},
    {{0},
     0,
     1 + M_META,
     20,
     400,
     "chunk 0 at offset 16: constant pool offset 787 out of range (chunk of 113 bytes)"},
    {{0},
     0,
     1 + M_META_END,
     0,
     400,
     "chunk 0 at offset 16: constant pool offset 787 out of range (chunk of 787 bytes)"},
    {{0},
     0,
     1 + M_CP,
     10,
     400,
     "chunk 0 at offset 787: checkpoint event size 111 is out of range (at most 10)"},
    {{0},
     0,
     1 + M_CP_END,
     -1,
     400,
     "chunk 0 at offset 787: checkpoint event size 111 is out of range (at most 110)"},
    {{.frame_method_type = 999},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 93: metadata: field method has type 999, which is not defined"},
    {{.self_nested = 1},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 93: metadata: type x.Loop contains itself (recursion in nested types)"},
    {{.dup_type = 1}, 0, 0, 0, 400, "chunk 0 at offset 668: metadata: type id 23 defined twice"},
    {{.dim2 = 1},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 702: metadata: field frames has dimension 2 (only 1 is supported)"},
    {{.meta_bad_string = 1},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 554: metadata: string index 47 out of range (47 strings)"},
    {{.meta_pooled_string = 1},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 106: metadata string: a pooled string (encoding 2) where none may be"},
    {{.meta_deep = 1}, 0, 0, 0, 400, "chunk 0 at offset 733: metadata elements nested deeper than 16"},
    {{.meta_type = 5}, 0, 0, 0, 400, "chunk 0 at offset 93: metadata event has type 5, expected 0"},
    {{.cp_type = 3}, 0, 0, 0, 400, "chunk 0 at offset 787: checkpoint event has type 3, expected 1"},
    {{.cp_delta = 5},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 787: checkpoint delta 5 does not point to an earlier checkpoint in the chunk"},
    {{.cp_delta = -100000},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 787: checkpoint delta -100000 does not point to an earlier checkpoint in the chunk"},
    {{.cp_undefined = 777},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 898: constant pool of type 777, which the metadata does not define"},
    {{.sym_encoding = 9}, 0, 0, 0, 400, "chunk 0 at offset 816: string: unknown string encoding 9"},
    {{.event_size0 = 1}, 0, 0, 0, 400, "chunk 0 at offset 93: event size is 0"},
    {{.event_past_end = 1},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 93: event size 1000 is out of range (at most 807)"},
    {{.event_varint10 = 1}, 0, 0, 0, 400, "chunk 0 at offset 93: event size: varint of 10 or more bytes"},
    {{.frames_count_huge = 1},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 855: array length 1099511627776 is out of range (at most 48)"},
    {{.event_stack = 7}, 0, 0, 0, 400, "chunk 0 at offset 68: stack trace id 7 is not in the constant pool"},
    /* The string starts 16 bytes before the end of the 898-byte file (encoding, length, 14 bytes). */
    {{.str_overrun = 3},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 882: string: string of 15 bytes runs past the end (14 left)"},
    {{.str_overrun = 5},
     0,
     0,
     0,
     400,
     "chunk 0 at offset 882: string: string of 15 bytes runs past the end (14 left)"},
};

static void test_bad(void **state)
{
	(void)state;
	int failed = 0;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		spec_t sp = bad[i].spec;
		wb_t w;
		build(&sp, &w);
		switch (bad[i].patch) {
		case X_MAGIC:
			w.p[0] = 'X';
			break;
		case X_EMPTY:
			w.n = 0;
			break;
		case X_HEADER30:
			w.n = 30;
			break;
		case X_SIZE0:
			put_be64(w.p + 8, 0);
			break;
		case X_SIZE_PAST:
			put_be64(w.p + 8, w.n + 100);
			break;
		case X_CP_PAST:
			put_be64(w.p + 16, w.n);
			break;
		case X_CP_LOW:
			put_be64(w.p + 16, 10);
			break;
		case X_META_PAST:
			put_be64(w.p + 24, 1ull << 40);
			break;
		case X_TAIL:
			w_bytes(&w, "FLR\0\0\2\0\0\0\0", 10);
			break;
		}
		if (bad[i].cut) {
			w.n = (size_t)((int64_t)sp.marks[bad[i].cut - 1] + bad[i].cut_plus);
			put_be64(w.p + 8, w.n);
		}
		model_batch_t *b;
		err_t err = {0};
		int rc = decode(slice_make(w.p, w.n), &b, &err);
		if (rc != -1 || err.status != bad[i].status || strcmp(err.msg, bad[i].msg) != 0) {
			print_message("case %zu: rc %d status %d \"%s\"\n", i, rc, err.status, err.msg);
			failed++;
		}
		model_batch_free(b);
		free(w.p);
	}
	assert_int_equal(failed, 0);
}

/* Every prefix of a real recording, its chunk size set to the prefix:
 * a 400 naming chunk 0 and an offset inside the prefix, never a crash. */
static void test_cuts(void **state)
{
	(void)state;
	buf_t data;
	slice_t s = load("nativemem.jfr.gz", &data);
	uint8_t *p = malloc(s.n);
	int n = 0;
	for (size_t cut = 1; cut < s.n; cut += cut < 4096 ? 1 : 13) {
		memcpy(p, s.p, cut);
		if (cut >= 16)
			put_be64(p + 8, cut);
		model_batch_t *b;
		err_t err = {0};
		int rc = decode(slice_make(p, cut), &b, &err);
		if (rc != -1 || err.status != 400 || strncmp(err.msg, "chunk 0 at offset ", 18) != 0 ||
		    strtoull(err.msg + 18, NULL, 10) > cut)
			fail_msg("cut %zu: rc %d %d %s", cut, rc, err.status, err.msg);
		model_batch_free(b);
		n++;
	}
	assert_true(n > 5000);
	free(p);
	buf_free(&data);
}

static void test_symbols(void **state)
{
	(void)state;
	static const char *const t[][2] = {
	    {"jdk/internal/reflect/GeneratedMethodAccessor31",
	     "jdk/internal/reflect/GeneratedMethodAccessor_"},
	    {"jdk/internal/reflect/GeneratedMethodAccessor", "jdk/internal/reflect/GeneratedMethodAccessor"},
	    {"jdk/internal/reflect/GeneratedMethodAccessor3x",
	     "jdk/internal/reflect/GeneratedMethodAccessor3x"},
	    {"org/example/rideshare/OrderService$$Lambda$669.0x0000000800fd7318",
	     "org/example/rideshare/OrderService$$Lambda_"},
	    {"Fib$$Lambda.0x00007ffa600c4da0", "Fib$$Lambda_"},
	    {"App$$Lambda$13/0x0000000800c03000", "App$$Lambda_"},
	    {"App$$Lambda123", "App$$Lambda_"},
	    {"App$$Lambda$12/abc", "App$$Lambda_"},
	    {"App$$Lambda", "App$$Lambda"},
	    {"$$Lambda123", "$$Lambda123"},
	    {"A$$Lambda$1/0x12$$Lambda$2/0x34", "A$$Lambda$1/0x12$$Lambda_"},
	    {"App$$Lambda$12/0xZZ", "App$$Lambda$12/0xZZ"},
	    {"libzstd-jni-1.5.1-16931311898282279136.so", "libzstd-jni-_.so"},
	    {"./tmp/libzstd-jni-1.5.1-16931311898282279136.so (deleted)", "libzstd-jni-_.so"},
	    {"/tmp/libzstd-jni-1.5-1.so", "/tmp/libzstd-jni-1.5-1.so"},
	    {"./tmp/libamazonCorrettoCryptoProvider109b39cf33c563eb.so",
	     "libamazonCorrettoCryptoProvider_.so"},
	    {"./tmp/amazonCorrettoCryptoProviderNativeLibraries.7382c2f79097f415/libcrypto.so (deleted)",
	     "libamazonCorrettoCryptoProvider_.so"},
	    {"libamazonCorrettoCryptoProvider109b39cf33c563e.so",
	     "libamazonCorrettoCryptoProvider109b39cf33c563e.so"},
	    {"libasyncProfiler-linux-arm64-17b9a1d8156277a98ccc871afa9a8f69215f92.so",
	     "libasyncProfiler-_.so"},
	    {"/tmp/libasyncProfiler-macos-17b9a1d8156277a98ccc871afa9a8f69215f92.so (deleted)",
	     "libasyncProfiler-_.so"},
	    {"libasyncProfiler-linux-x64-0000.so", "libasyncProfiler-linux-x64-0000.so"},
	    {"com/x/Svc$$EnhancerBySpringCGLIB$$a1b2c3", "com/x/Svc$$EnhancerBySpringCGLIB$$_"},
	    {"$$EnhancerBySpringCGLIB$$a1", "$$EnhancerBySpringCGLIB$$a1"},
	    {"java/lang/Thread", "java/lang/Thread"},
	    {"", ""},
	};
	arena_t *a = arena_new();
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		slice_t got = jfr_symbol_merge(a, slice_cstr(t[i][0]));
		char buf[256];
		snprintf(buf, sizeof buf, "%.*s", (int)got.n, (const char *)got.p);
		assert_string_equal(buf, t[i][1]);
	}
	/* Linear in the symbol: 2^20 occurrences of $$Lambda, the last one renamed. */
	size_t reps = 1u << 20, n = reps * 8 + 8;
	char *big = malloc(n + 1);
	for (size_t i = 0; i < reps; i++)
		memcpy(big + 8 * i, "$$Lambda", 8);
	memcpy(big + reps * 8, "$12/0x1f", 9);
	slice_t got = jfr_symbol_merge(a, slice_make(big, n));
	assert_int_equal(got.n, n - 7);
	assert_memory_equal(got.p, big, n - 8);
	assert_int_equal(got.p[n - 8], '_');
	free(big);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oracles), cmocka_unit_test(test_small),   cmocka_unit_test(test_bad),
	    cmocka_unit_test(test_cuts),    cmocka_unit_test(test_symbols),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
