/* JFR's stack traces and events (wire/jfr_int.h: jfr_parse_events): each
 * event the converter reads has its stack trace resolved through the
 * constant pools (methods as Class.method with symbols renamed as the
 * reference does, frame types, thread states; each entry resolved once per
 * chunk) into model nodes, its correlation into sample attributes, and its
 * value added to its profile's row for that stack and attrset. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/limits.h"
#include "base/num.h"
#include "base/u64map.h"
#include "wire/jfr.h"
#include "wire/jfr_int.h"

static const char *const frame_kinds[] = {"jvm", "native", "kernel"};

/* ---- Symbols as the reference names them ------------------------------------ */

/* The string of symbol id, renamed as the reference does; empty when the
 * symbol is not in the pool (as the reference's GetSymbolString). */
static int symbol_string(jf_dec_t *d, uint64_t id, slice_t *out)
{
	size_t pos;
	uint32_t ix;
	if (idmap_get(&d->sym_cache, id, &ix)) { /* each symbol read and renamed once */
		*out = d->strs[ix];
		return 0;
	}
	*out = slice_make("", 0);
	if (d->t_symbol == NO_IX || !jfr_pool_find(d, d->t_symbol, id, &pos))
		return 0;
	uint32_t f = jfr_field_ix(d, d->t_symbol, "string");
	if (f == NO_IX || d->cls[d->fld[d->cls[d->t_symbol].first + f].type].prim != P_STRING ||
	    d->fld[d->cls[d->t_symbol].first + f].cp || d->fld[d->cls[d->t_symbol].first + f].array)
		return 0;
	if (jfr_seek_field(d, d->t_symbol, f, &pos, d->cend) < 0 ||
	    jfr_rd_string(d, &pos, d->cend, out, 1, "symbol") < 0)
		return -1;
	*out = jfr_symbol_merge(d->scratch, *out);
	idmap_put(&d->sym_cache, id, jfr_keep_str(d, *out));
	return 0;
}

/* ---- Stacks ------------------------------------------------------------------ */

/* Class.method of a method id, as an index into d->names; NO_IX when the
 * method or its class is not in the pools (the frame is left out). */
/* Reads an object of class c at *pos: ids[k] is the pool id of its
 * reference field named name[k] whose type is class type[k] (bit k of the
 * answer set when there is one); other fields are skipped. */
static int read_refs(jf_dec_t *d, uint32_t c, size_t *pos, const char *const name[2], const uint32_t type[2],
                     uint64_t ids[2], int *has)
{
	const jf_class_t *k = &d->cls[c];
	*has = 0;
	for (uint32_t i = 0; i < k->n; i++) {
		const jf_field_t *f = &d->fld[k->first + i];
		int r = !f->cp || f->array                                      ? -1
		        : f->type == type[0] && slice_eq_cstr(f->name, name[0]) ? 0
		        : f->type == type[1] && slice_eq_cstr(f->name, name[1]) ? 1
		                                                                : -1;
		if (r < 0 ? jfr_skip_value(d, f, pos, d->cend, 1) < 0
		          : jfr_rd_u64(d, pos, d->cend, &ids[r], name[r]) < 0)
			return -1;
		if (r >= 0)
			*has |= 1 << r;
	}
	return 0;
}

/* Class.method of a method id, as an index into d->names; NO_IX when the
 * method or its class is not in the pools (the frame is left out). */
static int resolve_method(jf_dec_t *d, uint64_t id, uint32_t *out)
{
	static const char *const method_refs[2] = {"type", "name"}, *const class_refs[2] = {"name", ""};
	uint64_t m[2] = {0}, c[2] = {0};
	int has_m, has_c;
	size_t pos;
	if (idmap_get(&d->method_cache, id, out))
		return 0;
	*out = NO_IX;
	if (d->t_method == NO_IX || !jfr_pool_find(d, d->t_method, id, &pos))
		goto done;
	if (read_refs(d, d->t_method, &pos, method_refs, (const uint32_t[2]){d->t_class, d->t_symbol}, m,
	              &has_m) < 0)
		return -1;
	uint32_t cix;
	slice_t cname = slice_make("", 0), mname = slice_make("", 0);
	if (!(has_m & 1))
		goto done;
	if (!idmap_get(&d->cls_cache, m[0], &cix)) { /* each class read once */
		cix = NO_IX;
		if (d->t_class != NO_IX && jfr_pool_find(d, d->t_class, m[0], &pos)) {
			if (read_refs(d, d->t_class, &pos, class_refs,
			              (const uint32_t[2]){d->t_symbol, NO_IX}, c, &has_c) < 0 ||
			    ((has_c & 1) && symbol_string(d, c[0], &cname) < 0))
				return -1;
			cix = jfr_keep_str(d, cname);
		}
		idmap_put(&d->cls_cache, m[0], cix);
	}
	if (cix == NO_IX)
		goto done;
	cname = d->strs[cix];
	if ((has_m & 2) && symbol_string(d, m[1], &mname) < 0)
		return -1;
	/* Class.method, cut at LIMIT_STRING_BYTES (so a long symbol costs its length once) */
	size_t cn = cname.n < LIMIT_STRING_BYTES ? cname.n : LIMIT_STRING_BYTES;
	size_t mn = mname.n < LIMIT_STRING_BYTES - cn ? mname.n : LIMIT_STRING_BYTES - cn;
	size_t n = cn + 1 + mn;
	uint8_t *s = arena_alloc(d->scratch, n);
	memcpy(s, cname.p, cn);
	s[cn] = '.';
	memcpy(s + cn + 1, mname.p, mn);
	if (d->n_names == d->cap_names) {
		d->names = xgrow(d->names, &d->cap_names, d->n_names + 1, sizeof *d->names);
		d->name_frame = xrealloc(d->name_frame, d->cap_names * sizeof *d->name_frame);
	}
	d->names[d->n_names] = slice_make(s, n > LIMIT_STRING_BYTES ? LIMIT_STRING_BYTES : n);
	memset(d->name_frame[d->n_names], 0xff, sizeof d->name_frame[0]);
	*out = d->n_names++;
done:
	idmap_put(&d->method_cache, id, *out);
	return 0;
}

/* Kind index (frame_kinds) of a frame type id. */
static int resolve_ftype(jf_dec_t *d, uint64_t id, uint8_t *kind)
{
	uint32_t v;
	size_t pos;
	if (idmap_get(&d->ftype_cache, id, &v)) {
		*kind = (uint8_t)v;
		return 0;
	}
	*kind = 0;
	if (d->t_ftype != NO_IX && jfr_pool_find(d, d->t_ftype, id, &pos)) {
		uint32_t f = jfr_field_ix(d, d->t_ftype, "description");
		slice_t s;
		if (f != NO_IX && d->fld[d->cls[d->t_ftype].first + f].type == d->t_string &&
		    !d->fld[d->cls[d->t_ftype].first + f].cp && !d->fld[d->cls[d->t_ftype].first + f].array) {
			if (jfr_seek_field(d, d->t_ftype, f, &pos, d->cend) < 0 ||
			    jfr_rd_string(d, &pos, d->cend, &s, 1, "frame type") < 0)
				return -1;
			if (slice_eq_cstr(s, "Native") || slice_eq_cstr(s, "C++"))
				*kind = 1;
			else if (slice_eq_cstr(s, "Kernel"))
				*kind = 2;
		}
	}
	idmap_put(&d->ftype_cache, id, *kind);
	return 0;
}

/* The model node of stack trace id (MODEL_NONE: an empty stack). */
static int resolve_stack(jf_dec_t *d, uint64_t id, size_t at, uint32_t *node)
{
	if (idmap_get(&d->stack_cache, id, node))
		return 0;
	size_t pos;
	if (d->t_stack == NO_IX || !jfr_pool_find(d, d->t_stack, id, &pos))
		return jfr_fail(d, at, "stack trace id %" PRIu64 " is not in the constant pool", id);
	const jf_class_t *st = &d->cls[d->t_stack];
	uint32_t n = 0;
	uint64_t depth = 0;
	for (uint32_t i = 0; i < st->n; i++) {
		const jf_field_t *f = &d->fld[st->first + i];
		const jf_class_t *fr = &d->cls[f->type];
		if (!(slice_eq_cstr(f->name, "frames") && f->array && !f->cp && !fr->prim)) {
			if (jfr_skip_value(d, f, &pos, d->cend, 1) < 0)
				return -1;
			continue;
		}
		if (jfr_rd_len(d, &pos, d->cend, d->cend - pos, &depth, "stack frame count") < 0)
			return -1;
		for (uint64_t j = 0; j < depth; j++) {
			static const char *const frame_refs[2] = {"method", "type"};
			uint64_t ids[2] = {0};
			int has;
			if (read_refs(d, f->type, &pos, frame_refs,
			              (const uint32_t[2]){d->t_method, d->t_ftype}, ids, &has) < 0)
				return -1;
			uint32_t name;
			uint8_t kind = 0;
			if (!(has & 1) || n >= LIMIT_STACK_DEPTH)
				continue;
			if (resolve_method(d, ids[0], &name) < 0 ||
			    ((has & 2) && resolve_ftype(d, ids[1], &kind) < 0))
				return -1;
			if (name == NO_IX)
				continue;
			d->frames[n] = name;
			d->kinds[n++] = kind;
		}
	}
	uint32_t parent = MODEL_NONE;
	for (uint32_t i = n; i-- > 0;) {
		uint32_t *fr = &d->name_frame[d->frames[i]][d->kinds[i]];
		if (*fr == NO_IX) {
			model_frame_t f = {0};
			f.name = d->names[d->frames[i]];
			f.kind = slice_cstr(frame_kinds[d->kinds[i]]);
			*fr = model_frame_intern(d->b, &f);
		}
		parent = model_node_intern(d->b, parent, *fr);
	}
	d->frames_total += n;
	if (d->frames_total > LIMIT_REQUEST_FRAMES)
		return err_set(d->err, 413,
		               "the recording's distinct stacks write out more than %u frames (the limit)",
		               LIMIT_REQUEST_FRAMES);
	*node = parent;
	idmap_put(&d->stack_cache, id, parent);
	return 0;
}

/* STATE_* of a thread state id: 1 sleeping, 2 runnable, 3 other, 0 not in the pool. */
static int resolve_state(jf_dec_t *d, uint64_t id, uint32_t *state)
{
	size_t pos;
	slice_t s;
	if (idmap_get(&d->state_cache, id, state))
		return 0;
	*state = 0;
	if (d->t_state != NO_IX && jfr_pool_find(d, d->t_state, id, &pos)) {
		uint32_t f = jfr_field_ix(d, d->t_state, "name");
		*state = 3;
		if (f != NO_IX && d->fld[d->cls[d->t_state].first + f].type == d->t_string &&
		    !d->fld[d->cls[d->t_state].first + f].cp && !d->fld[d->cls[d->t_state].first + f].array) {
			if (jfr_seek_field(d, d->t_state, f, &pos, d->cend) < 0 ||
			    jfr_rd_string(d, &pos, d->cend, &s, 1, "thread state") < 0)
				return -1;
			*state = slice_eq_cstr(s, "STATE_SLEEPING")   ? 1
			         : slice_eq_cstr(s, "STATE_RUNNABLE") ? 2
			                                              : 3;
		}
	}
	idmap_put(&d->state_cache, id, *state);
	return 0;
}

/* ---- Events ------------------------------------------------------------------- */

/* The map key of a row: node and attrset, mixed (never 0: the pair is
 * offset by 1 and the mix is a bijection that keeps only 0 at 0). */
static inline uint64_t row_key(uint32_t node, uint32_t attr)
{
	return num_mix64(((uint64_t)attr << 32 | node) + 1);
}

static int add_row(jf_dec_t *d, int kind, uint32_t node, uint32_t attr, int64_t v0, int64_t v1, size_t at)
{
	jf_rows_t *r = &d->rows[kind];
	int inserted;
	uint32_t row = u64map_get_or_put(&r->ix, row_key(node, attr), r->n, &inserted);
	if (inserted) {
		if (r->n >= d->max_rows)
			return jfr_fail413(
			    d, at,
			    "profile %s has more than %" PRIu32
			    " distinct stacks (the limit, receivers.profiles.maxDecodedSampleRows)",
			    jfr_kinds[kind].name, d->max_rows);
		r->node = xgrow(r->node, &r->cap, r->n + 1, sizeof *r->node);
		r->attr = xrealloc(r->attr, r->cap * sizeof *r->attr);
		r->v = xrealloc(r->v, r->cap * sizeof *r->v);
		r->node[r->n] = node;
		r->attr[r->n] = attr;
		r->v[r->n][0] = r->v[r->n][1] = 0;
		r->n++;
	}
	r->v[row][0] = num_sat_add(r->v[row][0], v0);
	r->v[row][1] = num_sat_add(r->v[row][1], v1);
	return 0;
}

/* The value of field i (an integer) of an event: 0 when the field is
 * absent or not an integer. *pos moves past it. */
static int event_int(jf_dec_t *d, const jf_field_t *f, size_t *pos, size_t end, int64_t *v)
{
	uint64_t x = 0;
	uint8_t prim = d->cls[f->type].prim;
	*v = 0;
	if (f->cp || f->array || prim == P_NONE || prim == P_STRING || prim == P_FLOAT || prim == P_DOUBLE)
		return jfr_skip_value(d, f, pos, end, 1);
	if (jfr_rd_int(d, prim, pos, end, &x, "event field") < 0)
		return -1;
	*v = (int64_t)x;
	return 0;
}

/* The attrset of an event's correlation (contextId, spanId, spanName):
 * wire/jfr.h's sample attributes; 0 when they come to no label. */
static uint32_t correlation_attr(jf_dec_t *d, const uint64_t corr[3])
{
	uint32_t n = jfr_labels_context(d->opts->snapshot, corr[0], d->attr_labels);
	slice_t name;
	if (corr[1]) {
		static const char hex[] = "0123456789abcdef";
		for (int i = 0; i < 16; i++)
			d->span_hex[i] = hex[(corr[1] >> (60 - 4 * i)) & 15];
		d->attr_labels[n++] = (model_label_t){slice_cstr("profile_id"), slice_make(d->span_hex, 16)};
	}
	if (corr[2] && jfr_labels_string(d->opts->snapshot, corr[2], &name) && name.n)
		d->attr_labels[n++] = (model_label_t){slice_cstr("span_name"), name};
	return model_attrset_intern(d->b, d->attr_labels, n);
}

/* The sample attrset of an event's correlation, cached: per context id
 * (events without a span) and the last correlation asked. */
static uint32_t sample_attr_of(jf_dec_t *d, const uint64_t corr[3])
{
	uint32_t a;
	if (d->has_memo && !memcmp(d->memo_corr, corr, sizeof d->memo_corr))
		return d->memo_attr;
	int plain = !corr[1] && !corr[2];
	if (!plain || !idmap_get(&d->ctx_attr, corr[0], &a)) {
		a = correlation_attr(d, corr);
		if (plain)
			idmap_put(&d->ctx_attr, corr[0], a);
	}
	memcpy(d->memo_corr, corr, sizeof d->memo_corr);
	d->memo_attr = a;
	d->has_memo = 1;
	return a;
}

static int parse_event(jf_dec_t *d, const jf_class_t *k, size_t at, size_t pos, size_t end)
{
	uint64_t stack = 0, state = 0, corr[3] = {0, 0, 0};
	int64_t value = 0;
	int has_stack = 0, has_state = 0;
	slice_t sname = {0}, svalue = {0};
	uint32_t last = 0;
	if (k->f_stack != NO_IX && k->f_stack + 1 > last)
		last = k->f_stack + 1;
	if (k->f_state != NO_IX && k->f_state + 1 > last)
		last = k->f_state + 1;
	if (k->f_value != NO_IX && k->f_value + 1 > last)
		last = k->f_value + 1;
	if (k->f_name != NO_IX && k->f_name + 1 > last)
		last = k->f_name + 1;
	if (k->f_val2 != NO_IX && k->f_val2 + 1 > last)
		last = k->f_val2 + 1;
	for (int j = 0; j < 3; j++)
		if (k->f_corr[j] != NO_IX && k->f_corr[j] + 1 > last)
			last = k->f_corr[j] + 1;
	for (uint32_t i = 0; i < last; i++) {
		const jf_field_t *f = &d->fld[k->first + i];
		int c = i == k->f_corr[0] ? 0 : i == k->f_corr[1] ? 1 : i == k->f_corr[2] ? 2 : -1;
		if (c >= 0) {
			int64_t v;
			if (event_int(d, f, &pos, end, &v) < 0)
				return -1;
			corr[c] = (uint64_t)v;
		} else if ((i == k->f_stack || i == k->f_state) && f->cp && !f->array) {
			uint64_t v;
			if (jfr_rd_u64(d, &pos, end, &v,
			               i == k->f_stack ? "event stackTrace" : "event state") < 0)
				return -1;
			if (i == k->f_stack && f->type == d->t_stack) {
				stack = v;
				has_stack = 1;
			} else if (i == k->f_state && f->type == d->t_state) {
				state = v;
				has_state = 1;
			}
		} else if (i == k->f_value) {
			if (event_int(d, f, &pos, end, &value) < 0)
				return -1;
		} else if ((i == k->f_name || i == k->f_val2) && d->cls[f->type].prim == P_STRING && !f->cp &&
		           !f->array) {
			if (jfr_rd_string(d, &pos, end, i == k->f_name ? &sname : &svalue, 1, "setting") < 0)
				return -1;
		} else if ((f->skip != SK_SLOW ? jfr_skip_simple(d, f, &pos, end)
		                               : jfr_skip_value(d, f, &pos, end, 1)) < 0) {
			return -1;
		}
	}
	if (k->ev == EV_SETTING) {
		if (slice_eq_cstr(sname, "event"))
			d->wall_setting = slice_eq_cstr(svalue, "wall");
		return 0;
	}
	if (!has_stack || stack == 0) /* no stack: nothing to place */
		return 0;
	uint32_t node, st = 0, attr = 0;
	if (resolve_stack(d, stack, at, &node) < 0)
		return -1;
	if (corr[0] || corr[1] || corr[2])
		attr = sample_attr_of(d, corr);
	if (has_state && resolve_state(d, state, &st) < 0)
		return -1;
	switch (k->ev) {
	case EV_EXEC:
		if (st && st != 1 && add_row(d, JFR_CPU, node, attr, d->period, 0, at) < 0)
			return -1;
		if (d->wall_setting && add_row(d, JFR_WALL, node, attr, d->period, 0, at) < 0)
			return -1;
		return 0;
	case EV_WALL:
		if (st == 2 && d->wall_setting &&
		    add_row(d, JFR_CPU, node, attr, num_sat_mul(value, d->period), 0, at) < 0)
			return -1;
		return add_row(d, JFR_WALL, node, attr, num_sat_mul(value, d->period), 0, at);
	default: /* live objects count 1 (their value field is none) */
		return add_row(d, jfr_ev_tab[k->ev].kind, node, attr, 1, value, at);
	}
	return 0;
}

int jfr_parse_events(jf_dec_t *d)
{
	size_t pos = d->cstart + HEADER_BYTES;
	while (pos < d->cend) {
		size_t at = pos;
		uint64_t size, type;
		uint32_t c;
		if (jfr_rd_len(d, &pos, d->cend, d->cend - at, &size, "event size") < 0)
			return -1;
		if (size == 0)
			return jfr_fail(d, at, "event size is 0");
		size_t end = at + (size_t)size;
		if (jfr_rd_u64(d, &pos, end, &type, "event type") < 0)
			return -1;
		if (type < JF_DENSE_TYPES)
			c = d->ev_cls[type];
		else if (!idmap_get(&d->cls_ix, type, &c))
			c = NO_IX;
		if (type > 1 && c != NO_IX && d->cls[c].ev != EV_NONE &&
		    parse_event(d, &d->cls[c], at, pos, end) < 0)
			return -1;
		pos = end;
	}
	return 0;
}
