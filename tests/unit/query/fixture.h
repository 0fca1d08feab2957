/* Shared by the tests of src/query: a store in a temporary directory and a
 * compact way to write profiles into it. A sample is written as one line
 * "main;f;g 10 k=v,k2=v2": a root-first stack, a value and optional sample
 * attributes. A frame token is "name", "name@file", "name#kind", or
 * "!/path/to/binary" for an unsymbolized frame. */
#ifndef KILN_TESTS_QUERY_FIXTURE_H
#define KILN_TESTS_QUERY_FIXTURE_H

#include "testutil.h"

#include <stdlib.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/timeutil.h"
#include "query/query.h"
#include "store/store.h"

#define T0 1700000000LL /* 2023-11-14 22:13:20 UTC; the next UTC day starts at T0 + 6400 */

typedef struct {
	char dir[64];
	store_t *s;
} qfix;

typedef struct {
	const char *service;
	const char *type;   /* "sample_type:unit" */
	const char *labels; /* series labels "k=v,k2=v2" or NULL */
	int64_t t_s;
	int64_t period; /* 0: 10,000,000 */
	int cpu_alias;
} qprof;

static inline void qfix_open(qfix *f)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/kiln-query-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	store_config_t cfg = {.dir = f->dir, .sync = 0};
	err_t err = {0};
	f->s = store_open(&cfg, &err);
	if (!f->s)
		fail_msg("store_open: %s", err.msg);
}

static inline void qfix_close(qfix *f)
{
	store_close(f->s);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
}

/* cmocka setup/teardown: *state is a qfix with an open store. */
static inline int qfix_setup(void **state)
{
	qfix *f = calloc(1, sizeof *f);
	qfix_open(f);
	*state = f;
	return 0;
}

static inline int qfix_teardown(void **state)
{
	qfix_close(*state);
	free(*state);
	return 0;
}

static inline char *qfix_cut(char **s, char sep)
{
	char *start = *s, *p = strchr(start, sep);
	if (p) {
		*p = 0;
		*s = p + 1;
	} else {
		*s = start + strlen(start);
	}
	return start;
}

/* Parses "k=v,k2=v2" (modified in place) into l; returns the count. */
static inline uint32_t qfix_labels(char *s, model_label_t *l, uint32_t max)
{
	uint32_t n = 0;
	while (s && *s && n < max) {
		char *kv = qfix_cut(&s, ',');
		char *k = qfix_cut(&kv, '=');
		l[n].key = slice_cstr(k);
		l[n].value = slice_cstr(kv);
		n++;
	}
	return n;
}

static inline uint32_t qfix_frame(model_batch_t *b, char *tok)
{
	model_frame_t f = {0};
	if (tok[0] == '!') {
		f.unsymbolized = 1;
		f.binary = slice_cstr(tok + 1);
	} else {
		char *kind = strchr(tok, '#');
		if (kind) {
			*kind++ = 0;
			f.kind = slice_cstr(kind);
		}
		char *file = strchr(tok, '@');
		if (file) {
			*file++ = 0;
			f.file = slice_cstr(file);
		}
		f.name = slice_cstr(tok);
	}
	return model_frame_intern(b, &f);
}

/* Writes one profile with the samples in text (lines as described above). */
static inline void qfix_write(qfix *f, const qprof *pr, const char *text)
{
	model_batch_t *b = model_batch_new(slice_cstr("p"));
	char *copy = strdup(text), *lines = copy;
	char *type = strdup(pr->type), *tp = type;
	char *st = qfix_cut(&tp, ':');
	model_profile_t *p = model_profile_add(b);
	int cpu_period = !strcmp(st, "cpu") || !strcmp(st, "samples");
	model_profile_set_type(b, p, slice_cstr(st), slice_cstr(tp), slice_cstr(cpu_period ? "cpu" : "space"),
	                       slice_cstr(cpu_period ? "nanoseconds" : "bytes"),
	                       pr->period ? pr->period : 10000000);
	model_profile_set_service(b, p, slice_cstr(pr->service));
	p->cpu_alias = (uint8_t)pr->cpu_alias;
	p->time_ns = pr->t_s * NS_PER_SEC;
	p->duration_ns = 10 * NS_PER_SEC;
	model_label_t l[16];
	char *lab = pr->labels ? strdup(pr->labels) : NULL;
	uint32_t nl = qfix_labels(lab, l, 16);
	for (uint32_t i = 0; i < nl; i++)
		model_profile_add_label(b, p, l[i].key, l[i].value);
	while (*lines) {
		char *line = qfix_cut(&lines, '\n');
		char *stack = qfix_cut(&line, ' ');
		char *value = qfix_cut(&line, ' ');
		uint32_t node = MODEL_NONE;
		while (*stack)
			node = model_node_intern(b, node, qfix_frame(b, qfix_cut(&stack, ';')));
		model_label_t al[16];
		uint32_t na = qfix_labels(line, al, 16);
		uint32_t as = model_attrset_intern(b, al, na);
		model_sample_add(b, p, node, as, strtoll(value, NULL, 10), 0);
	}
	model_profile_finish(b, p);
	err_t err = {0};
	if (store_write_sync(f->s, b, &err) < 0)
		fail_msg("store_write_sync: %s", err.msg);
	free(copy);
	free(type);
	free(lab);
}

/* qfix_write of a profile with the default period and no cpu_alias. */
static inline void qfix_put(qfix *f, const char *service, const char *type, const char *labels, int64_t t_s,
                            const char *text)
{
	qprof pr = {service, type, labels, t_s, 0, 0};
	qfix_write(f, &pr, text);
}

static inline query_params_t qfix_params(const char *service, const char *type, int64_t from_s,
                                         int64_t until_s)
{
	query_params_t q = {0};
	q.project = slice_cstr("p");
	q.service = slice_cstr(service);
	q.type = slice_cstr(type);
	q.from_ns = from_s * NS_PER_SEC;
	q.until_ns = until_s * NS_PER_SEC;
	return q;
}

/* The JSON in b as a C string (b keeps it). */
static inline const char *qfix_str(buf_t *b)
{
	buf_putc(b, 0);
	b->n--;
	return (const char *)b->p;
}

#endif
