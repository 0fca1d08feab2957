/* Pyroscope's flame graph levels and flamebearer JSON from merged call trees
 * (contract in query/levels.h). Both encoders walk one shape: a tree whose
 * child lists are in byte order of names (Pyroscope keeps children sorted
 * by name) with one side of values (single) or two (diff: both trees
 * aligned by name path). The walk is Pyroscope's: a depth-first stack onto
 * which a node pushes its kept children in name order and then `other`, so
 * the last pushed is visited first; names are numbered in visit order and
 * each level lists its nodes in the reverse of their visit order, which is
 * left to right. Offsets are made relative (delta encoded) at the end. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/u64map.h"
#include "query/levels.h"
#include "query/query_int.h"

#define LV_NONE UINT32_MAX

/* Go's int64 arithmetic wraps; so does this (no undefined overflow). */
static int64_t wadd(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t wsub(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* The tree both encoders walk. */
typedef struct {
	uint32_t n;                   /* nodes; 0 is the root */
	const uint32_t *name;         /* name id of each node (unused for the root) */
	const uint32_t *start, *kids; /* children of p: kids[start[p]..start[p+1]); kids NULL: identity */
	const int64_t *total[2], *self[2];
	int sides;            /* 1: single, 2: diff */
	const slice_t *names; /* by name id */
	uint32_t n_names;
	uint32_t other; /* name id of "other"; n_names when no node has it */
	uint32_t seed;  /* name id that shares index 0 with the root, or LV_NONE */
} lv_tree_t;

static uint32_t kid(const lv_tree_t *t, uint32_t k)
{
	return t->kids ? t->kids[k] : k;
}

static uint32_t name_find(const slice_t *names, uint32_t n, const char *s)
{
	for (uint32_t i = 0; i < n; i++)
		if (slice_eq_cstr(names[i], s))
			return i;
	return LV_NONE;
}

/* One tree as shown, with its child lists in name order. */
typedef struct {
	query_names_t nm;
	query_shown_t d;
	uint32_t *start, *kids;
} lv_side_t;

static void side_open(const model_tree_t *t, lv_side_t *s)
{
	uint32_t zu[1] = {0};
	int64_t zi[1] = {0};
	model_tree_t empty = {.n_nodes = 1, .parent = zu, .frame = zu, .self = zi, .total = zi};
	if (t->n_nodes == 0)
		t = &empty;
	query_names_build(t, &s->nm);
	query_shown_build(t, &s->nm, &s->d);
	/* Siblings have distinct names, so ordering all nodes by the rank of
	 * their name (a counting sort) orders every child list by name. */
	uint32_t *rank = query_names_rank(&s->nm);
	uint32_t *pos = xcalloc((size_t)s->nm.n_names + 1, sizeof *pos);
	uint32_t *order = xmalloc(((size_t)s->d.n + 1) * sizeof *order);
	for (uint32_t i = 1; i < s->d.n; i++)
		pos[rank[s->d.name[i]] + 1]++;
	for (uint32_t r = 1; r < s->nm.n_names; r++)
		pos[r] += pos[r - 1];
	for (uint32_t i = 1; i < s->d.n; i++)
		order[pos[rank[s->d.name[i]]]++] = i;
	query_children(s->d.parent, s->d.n, order, &s->start, &s->kids);
	free(order);
	free(pos);
	free(rank);
}

static void side_close(lv_side_t *s)
{
	free(s->start);
	free(s->kids);
	query_shown_free(&s->d);
	query_names_free(&s->nm);
}

/* A min-heap of the k largest values offered so far (Pyroscope's minheap). */
typedef struct {
	int64_t *h;
	uint32_t n, k;
} lv_heap_t;

static void heap_down(lv_heap_t *p, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < p->n && p->h[l] < p->h[m])
			m = l;
		if (l + 1 < p->n && p->h[l + 1] < p->h[m])
			m = l + 1;
		if (m == i)
			return;
		int64_t v = p->h[i];
		p->h[i] = p->h[m];
		p->h[m] = v;
		i = m;
	}
}

/* Offers v: 1 when it is among the k largest so far (kept), 0 when the heap
 * is full and v is not larger than its least. */
static int heap_offer(lv_heap_t *p, int64_t v)
{
	if (p->n >= p->k) {
		if (v <= p->h[0])
			return 0;
		p->h[0] = v;
		heap_down(p, 0);
		return 1;
	}
	uint32_t i = p->n++;
	p->h[i] = v;
	while (i > 0 && p->h[(i - 1) / 2] > p->h[i]) {
		int64_t x = p->h[i];
		p->h[i] = p->h[(i - 1) / 2];
		p->h[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
	return 1;
}

/* The least total a node needs to be shown, Pyroscope's minValue (single)
 * and combineMinValues (diff): 0 when max_nodes ≤ 0 or the tree is not
 * larger; else the max_nodes-th largest total of the non-root nodes
 * (single, walked as Pyroscope does: a node not larger than the heap's
 * least is skipped with its subtree) or of max(left, right) over every node,
 * the root included (diff). */
static int64_t min_value(const lv_tree_t *t, int64_t max_nodes)
{
	int diff = t->sides == 2;
	uint64_t size = diff ? t->n : t->n - 1;
	if (max_nodes <= 0 || size <= (uint64_t)max_nodes)
		return 0;
	lv_heap_t p = {.h = xmalloc((size_t)max_nodes * sizeof *p.h), .k = (uint32_t)max_nodes};
	if (diff) {
		for (uint32_t i = 0; i < t->n; i++)
			heap_offer(&p, t->total[0][i] > t->total[1][i] ? t->total[0][i] : t->total[1][i]);
	} else {
		uint32_t *stack = xmalloc((size_t)t->n * sizeof *stack), depth = 0;
		for (uint32_t k = t->start[0]; k < t->start[1]; k++)
			stack[depth++] = kid(t, k);
		while (depth) {
			uint32_t c = stack[--depth];
			if (!heap_offer(&p, t->total[0][c]))
				continue;
			for (uint32_t k = t->start[c]; k < t->start[c + 1]; k++)
				stack[depth++] = kid(t, k);
		}
		free(stack);
	}
	int64_t v = p.n < p.k ? 0 : p.h[0];
	free(p.h);
	return v;
}

/* An entry of the walk's stack: node, or an `other` (node LV_NONE) with its values. */
typedef struct {
	uint32_t node, level;
	int64_t x[2], other[2];
} lv_entry_t;

/* State of the two walks of encode. */
typedef struct {
	const lv_tree_t *t;
	int64_t minv;
	query_levels_t *out;
	uint32_t *out_ix; /* name id -> index in out->names */
	uint32_t *count;  /* pass 0: nodes per level; pass 1: ints of each level still to fill */
	lv_entry_t *stack;
	size_t cap;
} lv_walk_t;

/* One walk of t as Pyroscope does it. Pass 0 numbers the names (in visit
 * order), finds max_self and counts each level's nodes; pass 1 writes the
 * nodes, each level filled from its end, since a level lists its nodes in
 * the reverse of their visit order. Two walks instead of one that records
 * every node: the records were as large as the result, fresh memory each
 * time (page faults cost more than the second walk). */
static void walk(lv_walk_t *w, int pass)
{
	const lv_tree_t *t = w->t;
	query_levels_t *out = w->out;
	int sides = t->sides, single = sides == 1;
	size_t depth = 0;
	w->stack = xgrow(w->stack, &w->cap, 1, sizeof *w->stack);
	w->stack[depth++] = (lv_entry_t){.node = 0};
	while (depth) {
		lv_entry_t e = w->stack[--depth];
		int64_t total[2] = {0, 0}, self[2] = {0, 0};
		uint32_t name = e.node == LV_NONE ? t->other : e.node ? t->name[e.node] : LV_NONE;
		for (int s = 0; s < sides; s++) {
			total[s] = e.node == LV_NONE ? e.other[s] : t->total[s][e.node];
			self[s] = e.node == LV_NONE ? e.other[s] : t->self[s][e.node];
		}
		if (pass == 0) {
			for (int s = 0; s < sides; s++)
				if (self[s] > out->max_self)
					out->max_self = self[s];
			if (name != LV_NONE && w->out_ix[name] == LV_NONE) {
				w->out_ix[name] = out->n_names;
				out->names[out->n_names++] =
				    name < t->n_names ? t->names[name] : slice_cstr("other");
			}
			w->count[e.level]++;
			if (e.level + 1 > out->n_levels)
				out->n_levels = e.level + 1;
			out->n_nodes++;
		} else {
			int64_t *v = out->levels[e.level] + (w->count[e.level] -= out->width);
			for (int s = 0; s < sides; s++) {
				v[3 * s] = e.x[s];
				v[3 * s + 1] = total[s];
				v[3 * s + 2] = self[s];
			}
			v[out->width - 1] = name == LV_NONE ? 0 : w->out_ix[name];
		}
		if (e.node == LV_NONE)
			continue;
		uint32_t kids = t->start[e.node + 1] - t->start[e.node];
		w->stack = xgrow(w->stack, &w->cap, depth + kids + 1, sizeof *w->stack);
		lv_entry_t next = {.level = e.level + 1}, other = {.node = LV_NONE, .level = e.level + 1};
		for (int s = 0; s < sides; s++)
			next.x[s] = wadd(e.x[s], self[s]);
		for (uint32_t k = t->start[e.node]; k < t->start[e.node + 1]; k++) {
			uint32_t c = kid(t, k);
			int keep = single ? t->total[0][c] >= w->minv && t->name[c] != t->other
			                  : t->total[0][c] >= w->minv || t->total[1][c] >= w->minv;
			if (keep) {
				next.node = c;
				w->stack[depth++] = next;
			}
			for (int s = 0; s < sides; s++) {
				if (keep)
					next.x[s] = wadd(next.x[s], t->total[s][c]);
				else
					other.other[s] = wadd(other.other[s], t->total[s][c]);
			}
		}
		if (other.other[0] != 0 || (sides == 2 && other.other[1] != 0)) {
			memcpy(other.x, next.x, sizeof other.x);
			w->stack[depth++] = other;
		}
	}
}

/* Walks t as Pyroscope does and writes out (names, levels, max_self,
 * n_nodes) in arena a; totals are the caller's. */
static void encode(const lv_tree_t *t, int64_t minv, arena_t *a, query_levels_t *out)
{
	memset(out, 0, sizeof *out);
	out->width = t->sides == 1 ? 4 : 7;
	out->names = arena_alloc(a, ((size_t)t->n_names + 2) * sizeof *out->names);
	out->names[out->n_names++] = slice_cstr("total");
	lv_walk_t w = {.t = t, .minv = minv, .out = out};
	w.out_ix = xmalloc(((size_t)t->n_names + 1) * sizeof *w.out_ix);
	for (uint32_t i = 0; i <= t->n_names; i++)
		w.out_ix[i] = LV_NONE;
	if (t->seed != LV_NONE)
		w.out_ix[t->seed] = 0;
	w.count = xcalloc((size_t)t->n + 1, sizeof *w.count); /* a tree is at most n deep */
	walk(&w, 0);
	out->len = arena_alloc(a, (size_t)out->n_levels * sizeof *out->len);
	out->levels = arena_alloc(a, (size_t)out->n_levels * sizeof *out->levels);
	for (uint32_t d = 0; d < out->n_levels; d++) {
		out->len[d] = w.count[d] * out->width;
		out->levels[d] = arena_alloc(a, (size_t)out->len[d] * sizeof **out->levels);
		w.count[d] = out->len[d];
	}
	walk(&w, 1);
	/* Delta-encode the offsets of each side: x - end of the previous node. */
	for (uint32_t d = 0; d < out->n_levels; d++)
		for (uint32_t base = 0; base < 3 * (uint32_t)t->sides; base += 3) {
			int64_t prev = 0, *v = out->levels[d];
			for (uint32_t i = base; i < out->len[d]; i += out->width) {
				v[i] = wsub(v[i], prev);
				prev = wadd(prev, wadd(v[i], v[i + 1]));
			}
		}
	free(w.stack);
	free(w.count);
	free(w.out_ix);
}

int64_t query_max_nodes(int64_t asked)
{
	return asked <= 0 || asked > LIMIT_FLAME_NODES ? LIMIT_FLAME_NODES : asked;
}

void query_levels_single(const model_tree_t *t, int64_t max_nodes, arena_t *a, query_levels_t *out)
{
	lv_side_t s;
	side_open(t, &s);
	uint32_t other = name_find(s.nm.names, s.nm.n_names, "other");
	lv_tree_t lt = {
	    .n = s.d.n,
	    .name = s.d.name,
	    .start = s.start,
	    .kids = s.kids,
	    .total = {s.d.total, s.d.total},
	    .self = {s.d.self, s.d.self},
	    .sides = 1,
	    .names = s.nm.names,
	    .n_names = s.nm.n_names,
	    .other = other == LV_NONE ? s.nm.n_names : other,
	    /* Pyroscope files the root's name under "total". */
	    .seed = name_find(s.nm.names, s.nm.n_names, "total"),
	};
	encode(&lt, min_value(&lt, max_nodes), a, out);
	out->total = s.d.total[0];
	side_close(&s);
}

/* The names of a side's node k, as a slice. */
static slice_t side_name(const lv_side_t *s, uint32_t k)
{
	return s->nm.names[s->d.name[k]];
}

int query_levels_diff(const model_tree_t *left, const model_tree_t *right, int64_t max_nodes, arena_t *a,
                      query_levels_t *out, err_t *err)
{
	lv_side_t sd[2];
	side_open(left, &sd[0]);
	side_open(right, &sd[1]);
	int neg[2] = {0, 0};
	for (int s = 0; s < 2; s++)
		for (uint32_t i = 0; i < sd[s].d.n && !neg[s]; i++)
			neg[s] = sd[s].d.self[i] < 0;
	if (neg[0] || neg[1]) {
		side_close(&sd[0]);
		side_close(&sd[1]);
		return err_set(err, 400, "%s a negative value; a diff needs values of 0 or more",
		               neg[0] && neg[1] ? "both profiles have"
		               : neg[0]         ? "the left profile has"
		                                : "the right profile has");
	}
	/* The two trees aligned by name path (Pyroscope's combineTree), breadth
	 * first, so the children of node c are c2 in [start[c], start[c + 1]). */
	size_t cap = (size_t)sd[0].d.n + sd[1].d.n;
	uint32_t *node[2] = {xmalloc(cap * sizeof *node[0]), xmalloc(cap * sizeof *node[1])};
	uint32_t *start = xmalloc((cap + 1) * sizeof *start), *name = xmalloc(cap * sizeof *name);
	slice_t *names = NULL;
	size_t names_cap = 0;
	uint32_t n_names = 0, n = 1;
	u64map_t ix;
	u64map_init(&ix);
	node[0][0] = node[1][0] = 0;
	name[0] = LV_NONE;
	for (uint32_t c = 0; c < n; c++) {
		start[c] = n;
		uint32_t i[2], end[2];
		for (int s = 0; s < 2; s++) {
			uint32_t p = node[s][c];
			i[s] = p == LV_NONE ? 0 : sd[s].start[p];
			end[s] = p == LV_NONE ? 0 : sd[s].start[p + 1];
		}
		while (i[0] < end[0] || i[1] < end[1]) {
			int cmp = i[0] == end[0]   ? 1
			          : i[1] == end[1] ? -1
			                           : slice_cmp(side_name(&sd[0], sd[0].kids[i[0]]),
			                                       side_name(&sd[1], sd[1].kids[i[1]]));
			int from = cmp > 0; /* the side the name is taken from */
			slice_t nm = side_name(&sd[from], sd[from].kids[i[from]]);
			name[n] = query_intern(&ix, &names, &names_cap, &n_names, nm, NULL);
			node[0][n] = cmp <= 0 ? sd[0].kids[i[0]++] : LV_NONE;
			node[1][n] = cmp >= 0 ? sd[1].kids[i[1]++] : LV_NONE;
			n++;
		}
	}
	start[n] = n;
	u64map_free(&ix);
	int64_t *val = xmalloc(4 * (size_t)n * sizeof *val);
	for (int s = 0; s < 2; s++)
		for (uint32_t c = 0; c < n; c++) {
			uint32_t p = node[s][c];
			val[(size_t)s * n + c] = p == LV_NONE ? 0 : sd[s].d.total[p];
			val[(size_t)(2 + s) * n + c] = p == LV_NONE ? 0 : sd[s].d.self[p];
		}
	uint32_t other = name_find(names, n_names, "other");
	lv_tree_t lt = {
	    .n = n,
	    .name = name,
	    .start = start,
	    .kids = NULL,
	    .total = {val, val + n},
	    .self = {val + 2 * (size_t)n, val + 3 * (size_t)n},
	    .sides = 2,
	    .names = names,
	    .n_names = n_names,
	    .other = other == LV_NONE ? n_names : other,
	    /* Pyroscope's diff files the root's own (empty) name under index 0. */
	    .seed = name_find(names, n_names, ""),
	};
	encode(&lt, min_value(&lt, max_nodes), a, out);
	out->left_ticks = val[0];
	out->right_ticks = val[n];
	out->total = wadd(val[0], val[n]);
	free(val);
	free(names);
	free(name);
	free(start);
	free(node[0]);
	free(node[1]);
	side_close(&sd[0]);
	side_close(&sd[1]);
	return 0;
}

static int put_i64s(buf_t *json, const int64_t *v, uint32_t n)
{
	int rc = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			rc |= buf_putc(json, ',');
		rc |= query_json_i64(json, v[i]);
	}
	return rc;
}

int query_flamebearer_head(buf_t *json, const query_levels_t *l, slice_t sample_type, slice_t sample_unit)
{
	slice_t units = sample_unit;
	const char *rate = "100";
	if (slice_eq_cstr(sample_type, "cpu")) {
		units = slice_cstr("samples");
		rate = "1000000000";
	} else if (slice_eq_cstr(sample_type, "inuse_objects") ||
	           slice_eq_cstr(sample_type, "alloc_objects") || slice_eq_cstr(sample_type, "goroutine") ||
	           slice_eq_cstr(sample_type, "samples")) {
		units = slice_cstr("objects");
	}
	/* Up to 16 bytes an int (totals in nanoseconds have 10 to 15 digits):
	 * one allocation instead of a dozen copies; pages not written cost nothing. */
	size_t guess = (size_t)l->n_nodes * l->width * 16;
	buf_reserve(json, guess < json->max - json->n ? guess : 0);
	int rc = buf_puts(json, "{\"version\":1,\"flamebearer\":{\"names\":[");
	for (uint32_t i = 0; i < l->n_names; i++) {
		if (i)
			rc |= buf_putc(json, ',');
		rc |= buf_json_str(json, l->names[i]);
	}
	rc |= buf_puts(json, "],\"levels\":[");
	for (uint32_t d = 0; d < l->n_levels && rc == 0; d++) {
		rc |= buf_puts(json, d ? ",[" : "[");
		rc |= put_i64s(json, l->levels[d], l->len[d]);
		rc |= buf_putc(json, ']');
	}
	rc |= buf_puts(json, "],\"numTicks\":");
	rc |= query_json_i64(json, l->total);
	rc |= buf_puts(json, ",\"maxSelf\":");
	rc |= query_json_i64(json, l->max_self);
	rc |= buf_puts(json, l->width == 7 ? "},\"metadata\":{\"format\":\"double\""
	                                   : "},\"metadata\":{\"format\":\"single\"");
	rc |= buf_puts(json, ",\"spyName\":\"\",\"sampleRate\":");
	rc |= buf_puts(json, rate);
	rc |= buf_puts(json, ",\"units\":");
	rc |= buf_json_str(json, units);
	rc |= buf_puts(json, ",\"name\":");
	rc |= buf_json_str(json, sample_type);
	rc |= buf_putc(json, '}');
	return rc;
}

int query_flamebearer_tail(buf_t *json, const query_levels_t *l)
{
	int rc = 0;
	if (l->left_ticks) {
		rc |= buf_puts(json, ",\"leftTicks\":");
		rc |= query_json_i64(json, l->left_ticks);
	}
	if (l->right_ticks) {
		rc |= buf_puts(json, ",\"rightTicks\":");
		rc |= query_json_i64(json, l->right_ticks);
	}
	rc |= buf_putc(json, '}');
	return rc;
}

/* ---- Pyroscope's tree bytes ---- */

static int put_uvarint(buf_t *out, uint64_t v)
{
	uint8_t b[NUM_UVARINT_MAX];
	return buf_append(out, b, num_uvarint_put(b, v));
}

/* A node of the tree-bytes walk: node (LV_NONE: a new `other`) and what
 * `other` adds to its self. */
typedef struct {
	uint32_t node;
	int64_t add;
} tb_entry_t;

int query_tree_bytes(const model_tree_t *t, int64_t max_nodes, buf_t *out)
{
	if (t->n_nodes == 0 || (t->total[0] == 0 && t->self[0] == 0 && t->n_nodes == 1))
		return 0; /* an empty tree: no bytes, as Pyroscope's */
	lv_side_t s;
	side_open(t, &s);
	uint32_t other = name_find(s.nm.names, s.nm.n_names, "other");
	lv_tree_t lt = {
	    .n = s.d.n, .start = s.start, .kids = s.kids, .total = {s.d.total, s.d.total}, .sides = 1};
	int64_t minv = min_value(&lt, max_nodes);
	tb_entry_t *stack = xmalloc((2 * (size_t)s.d.n + 2) * sizeof *stack); /* nodes and `other`s */
	uint32_t *kept = xmalloc(((size_t)s.d.n + 2) * sizeof *kept);
	size_t depth = 0;
	int rc = 0;
	stack[depth++] = (tb_entry_t){0, 0};
	while (depth && rc == 0) {
		tb_entry_t e = stack[--depth];
		slice_t name = e.node == LV_NONE ? slice_cstr("other")
		               : e.node          ? s.nm.names[s.d.name[e.node]]
		                                 : slice_make("", 0);
		int64_t self = e.node == LV_NONE ? e.add : wadd(s.d.self[e.node], e.add);
		rc |= put_uvarint(out, name.n);
		rc |= buf_append(out, name.p, name.n);
		rc |= put_uvarint(out, (uint64_t)self);
		if (e.node == LV_NONE) {
			rc |= put_uvarint(out, 0);
			continue;
		}
		/* Kept children in name order; the rest summed into `other`, at its
		 * place by name (a kept child named "other" takes the sum). */
		uint32_t n = 0, other_at = UINT32_MAX;
		int64_t cut = 0;
		for (uint32_t k = s.start[e.node]; k < s.start[e.node + 1]; k++) {
			uint32_t c = s.kids[k];
			if (s.d.total[c] >= minv || s.d.name[c] == other)
				kept[n++] = c;
			else
				cut = wadd(cut, s.d.total[c]);
		}
		uint32_t at = n;
		if (cut > 0) {
			for (at = 0;
			     at < n && slice_cmp(s.nm.names[s.d.name[kept[at]]], slice_cstr("other")) < 0;
			     at++)
				;
			if (at < n && s.d.name[kept[at]] == other) {
				other_at = at;
			} else {
				memmove(kept + at + 1, kept + at, (n - at) * sizeof *kept);
				kept[at] = LV_NONE;
				n++;
			}
		}
		rc |= put_uvarint(out, n);
		for (uint32_t i = 0; i < n; i++)
			stack[depth++] = (tb_entry_t){kept[i], kept[i] == LV_NONE || i == other_at ? cut : 0};
	}
	free(kept);
	free(stack);
	side_close(&s);
	return rc < 0 ? -1 : 0;
}

/* ---- the cut tree (SelectMergeProfile's max_nodes) ---- */

int query_tree_cut(const model_tree_t *t, int64_t max_nodes, arena_t *a, model_tree_t *out)
{
	*out = *t;
	if (t->n_nodes == 0 || max_nodes <= 0)
		return 0;
	lv_side_t s;
	side_open(t, &s);
	lv_tree_t lt = {
	    .n = s.d.n, .start = s.start, .kids = s.kids, .total = {s.d.total, s.d.total}, .sides = 1};
	int64_t minv = min_value(&lt, max_nodes);
	if (minv == 0) {
		side_close(&s);
		return 0;
	}
	uint32_t other = name_find(s.nm.names, s.nm.n_names, "other");
	uint32_t other_frame = s.nm.n_names; /* a frame named "other" (new unless a name is "other") */
	uint32_t *id = xmalloc((size_t)s.d.n * sizeof *id);
	int64_t *cut = xcalloc((size_t)s.d.n, sizeof *cut);
	uint32_t n = 0, n_other = 0;
	for (uint32_t i = 0; i < s.d.n; i++) {
		uint32_t p = s.d.parent[i];
		int keep = i == 0 || (id[p] != LV_NONE && s.d.total[i] >= minv && s.d.name[i] != other);
		id[i] = keep ? n++ : LV_NONE;
		if (!keep && id[p] != LV_NONE)
			cut[p] = wadd(cut[p], s.d.total[i]);
	}
	for (uint32_t i = 0; i < s.d.n; i++)
		n_other += id[i] != LV_NONE && cut[i] != 0;
	uint32_t nn = n + n_other;
	out->n_nodes = nn;
	out->parent = arena_alloc(a, (size_t)nn * sizeof *out->parent);
	out->frame = arena_alloc(a, (size_t)nn * sizeof *out->frame);
	out->self = arena_alloc(a, (size_t)nn * sizeof *out->self);
	out->total = arena_alloc(a, (size_t)nn * sizeof *out->total);
	out->n_frames = s.nm.n_names + 1;
	out->frames = arena_alloc(a, (size_t)out->n_frames * sizeof *out->frames);
	for (uint32_t k = 0; k < s.nm.n_names; k++)
		out->frames[k] = t->frames[s.nm.frame_of_name[k]];
	out->frames[other_frame] = (model_frame_t){.name = slice_cstr("other")};
	if (other != LV_NONE)
		other_frame = other;
	for (uint32_t i = 0, k = n; i < s.d.n; i++) {
		if (id[i] == LV_NONE)
			continue;
		uint32_t at = id[i];
		out->parent[at] = i ? id[s.d.parent[i]] : 0;
		out->frame[at] = i ? s.d.name[i] : 0;
		out->self[at] = s.d.self[i];
		out->total[at] = s.d.total[i];
		if (cut[i] == 0)
			continue;
		out->parent[k] = at;
		out->frame[k] = other_frame;
		out->self[k] = out->total[k] = cut[i];
		k++;
	}
	free(cut);
	free(id);
	side_close(&s);
	return 0;
}
