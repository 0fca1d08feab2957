/* The Pyroscope Java agent's LabelsSnapshot (wire/jfr.h): the `labels`
 * part next to a JFR recording, a protobuf
 *   LabelsSnapshot { map<int64, Context> contexts = 1; map<int64, string> strings = 2; }
 *   Context { map<int64, int64> labels = 1; }   (key and value: string ids)
 * read with the pb.h message layer in two passes: the first indexes every
 * string and context by id (a map entry repeated: the last one counts, as
 * protobuf maps merge), the second checks every context's labels against
 * the strings, so a lookup during the JFR decode cannot fail. Borrows the
 * input; only the indexes are allocated. */
#include <inttypes.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "wire/jfr.h"
#include "wire/jfr_int.h"
#include "wire/pb.h"

struct jfr_labels {
	pb_src_t src;
	slice_t *strs; /* string values, in entry order */
	uint32_t n_strs;
	size_t cap_strs;
	jf_idmap_t str_ix; /* string id → index in strs */
	slice_t *ctxs;     /* Context messages, in entry order */
	uint32_t n_ctxs;
	size_t cap_ctxs;
	jf_idmap_t ctx_ix; /* context id → index in ctxs */
};

PB_SPEC(snapshot_spec, {1, PB_F_LEN, "contexts"}, {2, PB_F_LEN, "strings"});
PB_SPEC(entry_spec, {1, PB_F_VARINT, "key"}, {2, PB_F_ANY, "value"});
PB_SPEC(context_spec, {1, PB_F_LEN, "labels"});

/* One map entry (key varint; value varint or length-delimited as
 * value_len says) of message msg. */
static int read_entry(const jfr_labels_t *l, slice_t msg, const pb_path_t *p, int value_len, uint64_t *key,
                      uint64_t *ival, slice_t *sval, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	*key = *ival = 0;
	*sval = slice_make("", 0);
	while ((rc = pb_next(&l->src, &r, &entry_spec, p, &f, &wt, err)) == 1) {
		if (f->num == 1) {
			if (pb_read_varint(&l->src, &r, key, p, f->name, err) < 0)
				return -1;
		} else if (wt != (value_len ? PB_LEN : PB_VARINT)) {
			return pb_fail(&l->src, err, 400, p, f->name, "wire type %d (%s), expected %s", wt,
			               pb_wire_type_name(wt), value_len ? "length-delimited" : "varint");
		} else if ((value_len ? pb_read_len(&l->src, &r, sval, p, f->name, err)
		                      : pb_read_varint(&l->src, &r, ival, p, f->name, err)) < 0) {
			return -1;
		}
	}
	return rc;
}

static void index_put(jf_idmap_t *ix, slice_t **arr, size_t *cap, uint32_t *n, uint64_t id, slice_t v)
{
	uint32_t at;
	if (idmap_get(ix, id, &at)) { /* a repeated key: the last entry counts */
		(*arr)[at] = v;
		return;
	}
	*arr = xgrow(*arr, cap, *n + 1, sizeof **arr);
	(*arr)[*n] = v;
	idmap_put(ix, id, (*n)++);
}

/* Calls each(l, key id, value id) for the labels of Context message ctx
 * (path p); stops at the first error. */
static int context_labels(const jfr_labels_t *l, slice_t ctx, const pb_path_t *p,
                          int (*each)(const jfr_labels_t *, uint64_t, uint64_t, const pb_path_t *, void *,
                                      err_t *),
                          void *arg, err_t *err)
{
	pb_reader_t r = pb_reader_make(ctx);
	const pb_field_t *f;
	int wt, rc;
	uint32_t i = 0;
	while ((rc = pb_next(&l->src, &r, &context_spec, p, &f, &wt, err)) == 1) {
		slice_t e, unused;
		uint64_t k, v;
		pb_path_t lp = {p, "labels", i++};
		if (pb_read_len(&l->src, &r, &e, p, f->name, err) < 0 ||
		    read_entry(l, e, &lp, 0, &k, &v, &unused, err) < 0 || each(l, k, v, &lp, arg, err) < 0)
			return -1;
	}
	return rc;
}

static int check_label(const jfr_labels_t *l, uint64_t k, uint64_t v, const pb_path_t *p, void *arg,
                       err_t *err)
{
	uint32_t *n = arg, unused;
	if (!idmap_get(&l->str_ix, k, &unused) || !idmap_get(&l->str_ix, v, &unused))
		return pb_fail(&l->src, err, 400, p, idmap_get(&l->str_ix, k, &unused) ? "value" : "key",
		               "string id %" PRId64 " is not in the snapshot's strings",
		               (int64_t)(idmap_get(&l->str_ix, k, &unused) ? v : k));
	if (++*n > JFR_CONTEXT_LABELS)
		return pb_fail(&l->src, err, 413, p, NULL, "a context has more than %u labels (the limit)",
		               JFR_CONTEXT_LABELS);
	return 0;
}

int jfr_labels_parse(slice_t data, jfr_labels_t **out, err_t *err)
{
	jfr_labels_t *l = xcalloc(1, sizeof *l);
	l->src = (pb_src_t){data.p, "labels"};
	u64map_init(&l->str_ix.m);
	u64map_init(&l->ctx_ix.m);
	*out = NULL;
	pb_reader_t r = pb_reader_make(data);
	const pb_field_t *f;
	int wt, rc;
	uint32_t n[2] = {0, 0};
	const pb_path_t root = {NULL, "labels", PB_NOIX};
	while ((rc = pb_next(&l->src, &r, &snapshot_spec, &root, &f, &wt, err)) == 1) {
		slice_t e, v;
		uint64_t id, unused;
		pb_path_t p = {&root, f->name, n[f->num - 1]++};
		if (pb_read_len(&l->src, &r, &e, &root, f->name, err) < 0 ||
		    read_entry(l, e, &p, 1, &id, &unused, &v, err) < 0)
			goto fail;
		if (f->num == 1)
			index_put(&l->ctx_ix, &l->ctxs, &l->cap_ctxs, &l->n_ctxs, id, v);
		else
			index_put(&l->str_ix, &l->strs, &l->cap_strs, &l->n_strs, id, v);
	}
	if (rc < 0)
		goto fail;
	for (uint32_t i = 0; i < l->n_ctxs; i++) {
		pb_path_t p = {&root, "contexts", i};
		uint32_t count = 0;
		if (context_labels(l, l->ctxs[i], &p, check_label, &count, err) < 0)
			goto fail;
	}
	*out = l;
	return 0;
fail:
	jfr_labels_free(l);
	return -1;
}

void jfr_labels_free(jfr_labels_t *l)
{
	if (!l)
		return;
	u64map_free(&l->str_ix.m);
	u64map_free(&l->ctx_ix.m);
	free(l->strs);
	free(l->ctxs);
	free(l);
}

int jfr_labels_string(const jfr_labels_t *l, uint64_t id, slice_t *s)
{
	uint32_t ix;
	if (!l || !idmap_get(&l->str_ix, id, &ix))
		return 0;
	*s = l->strs[ix];
	return 1;
}

typedef struct {
	model_label_t *out;
	uint32_t n;
} label_out_t;

/* A label of a context into out: a key repeated replaces the earlier
 * value (a map's last entry counts); an empty key or value carries nothing. */
static int put_label(const jfr_labels_t *l, uint64_t k, uint64_t v, const pb_path_t *p, void *arg, err_t *err)
{
	label_out_t *o = arg;
	slice_t key, val;
	(void)p;
	(void)err;
	if (!jfr_labels_string(l, k, &key) || !jfr_labels_string(l, v, &val) || !key.n || !val.n)
		return 0;
	for (uint32_t i = 0; i < o->n; i++)
		if (slice_eq(o->out[i].key, key)) {
			o->out[i].value = val;
			return 0;
		}
	o->out[o->n++] = (model_label_t){key, val};
	return 0;
}

uint32_t jfr_labels_context(const jfr_labels_t *l, uint64_t id, model_label_t *out)
{
	uint32_t ix;
	err_t err;
	if (!l || !idmap_get(&l->ctx_ix, id, &ix))
		return 0;
	label_out_t o = {out, 0};
	if (context_labels(l, l->ctxs[ix], NULL, put_label, &o, &err) < 0) /* checked by jfr_labels_parse */
		return 0;
	return o.n;
}
