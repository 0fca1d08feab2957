/* The normalized batch (model/model.h): interning of frames, stack nodes and
 * attribute sets by content hash, and profile assembly. Knows no wire format
 * and no storage. */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/num.h"

/* XXH3 inlined here: a node id per frame of every stack, a frame id per
 * location, through libxxhash's out-of-line calls they were most of the
 * interning cost. id_bytes and id_pair compute exactly base/hash.h's
 * hash_bytes and hash_pair: the same stored ids (tested). */
#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint64_t id_bytes(const void *p, size_t n, uint64_t seed)
{
	uint64_t h = XXH3_64bits_withSeed(p, n, seed);
	return h ? h : 1;
}

static inline uint64_t id_pair(uint64_t a, uint64_t b)
{
	uint64_t v[2] = {a, b};
	return id_bytes(v, sizeof v, 0x6b696c6eULL);
}

#define GROW(b, arr, cap, need) ((b)->arr = xgrow((b)->arr, &(b)->cap, (need), sizeof *(b)->arr))

model_batch_t *model_batch_new(slice_t project)
{
	model_batch_t *b = xcalloc(1, sizeof *b);
	b->arena = arena_new();
	b->project = arena_slice(b->arena, project);
	u64map_init(&b->_frame_ix);
	u64map_init(&b->_node_ix);
	u64map_init(&b->_attrset_ix);
	/* attrsets[0]: the empty set */
	GROW(b, attrsets, cap_attrsets, 1);
	b->attrsets[0] = (model_attrset_t){0, 0, 0};
	b->n_attrsets = 1;
	return b;
}

void model_batch_free(model_batch_t *b)
{
	if (!b)
		return;
	arena_free(b->arena);
	free(b->frames);
	free(b->nodes);
	free(b->attr_labels);
	free(b->attrsets);
	free(b->series_labels);
	free(b->samples);
	free(b->profiles);
	u64map_free(&b->_frame_ix);
	u64map_free(&b->_node_ix);
	u64map_free(&b->_attrset_ix);
	free(b->_node_memo);
	free(b);
}

/* Shrinks *p (of *cap elements of size sz) to n elements (at least 1). */
static void shrink(void **p, size_t *cap, size_t n, size_t sz)
{
	if (!*p || *cap <= n)
		return;
	void *q = realloc(*p, (n ? n : 1) * sz);
	if (q) {
		*p = q;
		*cap = n ? n : 1;
	}
}

void model_batch_seal(model_batch_t *b)
{
	u64map_free(&b->_frame_ix);
	u64map_free(&b->_node_ix);
	u64map_free(&b->_attrset_ix);
	free(b->_node_memo);
	b->_node_memo = NULL;
	b->_cap_node_memo = 0;
	shrink((void **)&b->frames, &b->cap_frames, b->n_frames, sizeof *b->frames);
	shrink((void **)&b->nodes, &b->cap_nodes, b->n_nodes, sizeof *b->nodes);
	shrink((void **)&b->attr_labels, &b->cap_attr_labels, b->n_attr_labels, sizeof *b->attr_labels);
	shrink((void **)&b->attrsets, &b->cap_attrsets, b->n_attrsets, sizeof *b->attrsets);
	shrink((void **)&b->series_labels, &b->cap_series_labels, b->n_series_labels,
	       sizeof *b->series_labels);
	shrink((void **)&b->samples, &b->cap_samples, b->n_samples, sizeof *b->samples);
	shrink((void **)&b->profiles, &b->cap_profiles, b->n_profiles, sizeof *b->profiles);
}

/* Hashes a field with its length so ("ab","c") and ("a","bc") differ. */
static uint64_t mix_field(uint64_t h, slice_t s)
{
	uint64_t len = s.n;
	h = id_pair(h, len);
	return s.n ? id_bytes(s.p, s.n, h) : h;
}

void model_batch_reserve(model_batch_t *b, size_t frames, size_t nodes)
{
	u64map_reserve(&b->_frame_ix, b->_frame_ix.len + frames);
	u64map_reserve(&b->_node_ix, b->_node_ix.len + nodes);
}

/* s copied to *at, which moves past it; an empty s is "" as arena_slice gives. */
static inline slice_t copy_to(uint8_t **at, slice_t s)
{
	if (s.n == 0)
		return slice_make("", 0);
	uint8_t *p = *at;
	memcpy(p, s.p, s.n);
	*at = p + s.n;
	return slice_make(p, s.n);
}

uint32_t model_frame_intern(model_batch_t *b, const model_frame_t *f)
{
	uint64_t h = 0x4652414d45ULL; /* "FRAME" */
	h = mix_field(h, f->name);
	h = mix_field(h, f->file);
	h = mix_field(h, f->binary);
	h = mix_field(h, f->build_id);
	h = mix_field(h, f->kind);
	h = id_pair(h, f->unsymbolized);
	int inserted;
	uint32_t ix = u64map_get_or_put(&b->_frame_ix, h, b->n_frames, &inserted);
	if (!inserted)
		return ix;
	GROW(b, frames, cap_frames, (size_t)b->n_frames + 1);
	if (b->n_frames >= b->_cap_node_memo) {
		size_t old = b->_cap_node_memo;
		GROW(b, _node_memo, _cap_node_memo, (size_t)b->n_frames + 1);
		for (size_t i = old; i < b->_cap_node_memo; i++)
			b->_node_memo[i].node = MODEL_NONE;
	}
	model_frame_t *d = &b->frames[b->n_frames++];
	d->id = h;
	/* One arena block for the five strings: a new frame per distinct
	 * function of every upload. */
	size_t total = f->name.n + f->file.n + f->binary.n + f->build_id.n + f->kind.n;
	uint8_t *at = total ? arena_alloc(b->arena, total) : NULL;
	d->name = copy_to(&at, f->name);
	d->file = copy_to(&at, f->file);
	d->binary = copy_to(&at, f->binary);
	d->build_id = copy_to(&at, f->build_id);
	d->kind = copy_to(&at, f->kind);
	d->unsymbolized = f->unsymbolized;
	return ix;
}

/* model_node_intern without the memo. */
static uint32_t node_intern(model_batch_t *b, uint32_t parent, uint32_t frame)
{
	uint64_t h = id_pair(model_node_id(b, parent), b->frames[frame].id);
	int inserted;
	uint32_t ix = u64map_get_or_put(&b->_node_ix, h, b->n_nodes, &inserted);
	if (!inserted)
		return ix;
	GROW(b, nodes, cap_nodes, (size_t)b->n_nodes + 1);
	b->nodes[b->n_nodes] = (model_node_t){h, parent, frame};
	return b->n_nodes++;
}

uint32_t model_node_intern(model_batch_t *b, uint32_t parent, uint32_t frame)
{
	if (frame < b->_cap_node_memo && b->_node_memo[frame].node != MODEL_NONE &&
	    b->_node_memo[frame].parent == parent)
		return b->_node_memo[frame].node;
	uint32_t ix = node_intern(b, parent, frame);
	if (frame < b->_cap_node_memo) {
		b->_node_memo[frame].parent = parent;
		b->_node_memo[frame].node = ix;
	}
	return ix;
}

static int label_cmp(const void *a, const void *b)
{
	const model_label_t *x = a, *y = b;
	int c = slice_cmp(x->key, y->key);
	return c ? c : slice_cmp(x->value, y->value);
}

uint32_t model_attrset_intern(model_batch_t *b, model_label_t *labels, uint32_t n)
{
	if (n == 0)
		return 0;
	qsort(labels, n, sizeof *labels, label_cmp);
	uint64_t h = 0x41545452ULL; /* "ATTR" */
	for (uint32_t i = 0; i < n; i++) {
		h = mix_field(h, labels[i].key);
		h = mix_field(h, labels[i].value);
	}
	int inserted;
	uint32_t ix = u64map_get_or_put(&b->_attrset_ix, h, b->n_attrsets, &inserted);
	if (!inserted)
		return ix;
	GROW(b, attr_labels, cap_attr_labels, (size_t)b->n_attr_labels + n);
	for (uint32_t i = 0; i < n; i++) {
		b->attr_labels[b->n_attr_labels + i].key = arena_slice(b->arena, labels[i].key);
		b->attr_labels[b->n_attr_labels + i].value = arena_slice(b->arena, labels[i].value);
	}
	GROW(b, attrsets, cap_attrsets, (size_t)b->n_attrsets + 1);
	b->attrsets[b->n_attrsets] = (model_attrset_t){h, b->n_attr_labels, n};
	b->n_attr_labels += n;
	return b->n_attrsets++;
}

model_profile_t *model_profile_add(model_batch_t *b)
{
	GROW(b, profiles, cap_profiles, (size_t)b->n_profiles + 1);
	model_profile_t *p = &b->profiles[b->n_profiles++];
	memset(p, 0, sizeof *p);
	p->labels_first = b->n_series_labels;
	p->samples_first = b->n_samples;
	return p;
}

void model_profile_set_type(model_batch_t *b, model_profile_t *p, slice_t sample_type, slice_t sample_unit,
                            slice_t period_type, slice_t period_unit, int64_t period)
{
	p->sample_type = arena_slice(b->arena, sample_type);
	p->sample_unit = arena_slice(b->arena, sample_unit);
	p->period_type = arena_slice(b->arena, period_type);
	p->period_unit = arena_slice(b->arena, period_unit);
	p->period = period;
	p->aggregation = model_aggregation_of(sample_type);
}

void model_profile_set_service(model_batch_t *b, model_profile_t *p, slice_t service)
{
	p->service = arena_slice(b->arena, service);
}

void model_profile_add_label(model_batch_t *b, model_profile_t *p, slice_t key, slice_t value)
{
	GROW(b, series_labels, cap_series_labels, (size_t)b->n_series_labels + 1);
	model_label_t *l = &b->series_labels[b->n_series_labels++];
	l->key = arena_slice(b->arena, key);
	l->value = arena_slice(b->arena, value);
	p->labels_count++;
}

void model_sample_add(model_batch_t *b, model_profile_t *p, uint32_t node, uint32_t attrset, int64_t value,
                      int64_t time_ns)
{
	GROW(b, samples, cap_samples, (size_t)b->n_samples + 1);
	b->samples[b->n_samples++] = (model_sample_t){node, attrset, value, time_ns};
	p->samples_count++;
}

void model_samples_add(model_batch_t *b, model_profile_t *p, const model_sample_t *s, uint32_t n)
{
	if (!n)
		return;
	GROW(b, samples, cap_samples, (size_t)b->n_samples + n);
	memcpy(b->samples + b->n_samples, s, (size_t)n * sizeof *s);
	b->n_samples += n;
	p->samples_count += n;
}

static int sample_cmp(const void *a, const void *b)
{
	const model_sample_t *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->attrset != y->attrset)
		return x->attrset < y->attrset ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return 0;
}

/* The sort key of a sample as two words: (node, attrset) and the time with
 * its sign bit flipped, so that unsigned order is sample_cmp's order. */
typedef struct {
	uint64_t hi, lo;
} sample_key_t;

static inline int key_less(sample_key_t a, sample_key_t b)
{
	return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
}

static inline uint8_t key_byte(sample_key_t k, unsigned d)
{
	return (uint8_t)((d < 8 ? k.lo : k.hi) >> (8 * (d & 7)));
}

/* Stable natural merge sort of perm by k: ascending runs as they come
 * (OTLP adds each Sample's points in time order: few long runs), short ones
 * extended to 16 by insertion, then adjacent runs merged pairwise through
 * tmp. runs has room for n + 1 entries. */
static void order_merge(const sample_key_t *k, uint32_t n, uint32_t *perm, uint32_t *tmp, uint32_t *runs)
{
	uint32_t n_runs = 0;
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i + 1;
		while (j < n && !key_less(k[perm[j]], k[perm[j - 1]]))
			j++;
		if (j - i < 16) {
			uint32_t end = n - i > 16 ? i + 16 : n;
			for (; j < end; j++) {
				uint32_t x = perm[j], m = j;
				while (m > i && key_less(k[x], k[perm[m - 1]])) {
					perm[m] = perm[m - 1];
					m--;
				}
				perm[m] = x;
			}
		}
		runs[n_runs++] = i;
		i = j;
	}
	runs[n_runs] = n;
	uint32_t *from = perm, *to = tmp;
	while (n_runs > 1) {
		uint32_t out_runs = 0;
		for (uint32_t r = 0; r < n_runs; r += 2) {
			uint32_t lo = runs[r], mid = runs[r + 1 < n_runs ? r + 1 : n_runs];
			uint32_t hi = runs[r + 2 < n_runs ? r + 2 : n_runs];
			uint32_t a = lo, b = mid, o = lo;
			while (a < mid && b < hi)
				to[o++] = key_less(k[from[b]], k[from[a]]) ? from[b++] : from[a++];
			while (a < mid)
				to[o++] = from[a++];
			while (b < hi)
				to[o++] = from[b++];
			runs[out_runs++] = lo;
		}
		runs[out_runs] = n;
		n_runs = out_runs;
		uint32_t *t = from;
		from = to;
		to = t;
	}
	if (from != perm)
		memcpy(perm, from, (size_t)n * sizeof *perm);
}

/* Stable LSD radix sort of perm by k over the key bytes set in diff (those
 * that differ between samples: the time of a pprof, an empty attribute set
 * and the high bytes of node do not), one counting pass per byte. */
static void order_radix(const sample_key_t *k, uint32_t n, sample_key_t diff, uint32_t *perm, uint32_t *tmp)
{
	uint32_t count[256];
	uint32_t *from = perm, *to = tmp;
	for (unsigned d = 0; d < 16; d++) {
		if (!key_byte(diff, d))
			continue; /* one value for every sample */
		memset(count, 0, sizeof count);
		for (uint32_t i = 0; i < n; i++)
			count[key_byte(k[i], d)]++;
		uint32_t sum = 0;
		for (unsigned v = 0; v < 256; v++) {
			uint32_t c = count[v];
			count[v] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++)
			to[count[key_byte(k[from[i]], d)]++] = from[i];
		uint32_t *t = from;
		from = to;
		to = t;
	}
	if (from != perm)
		memcpy(perm, from, (size_t)n * sizeof *perm);
}

void model_samples_order(const model_sample_t *s, uint32_t n, uint32_t *perm)
{
	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	if (n < 2)
		return;
	/* Stable either way, like the merge sort (glibc qsort) this replaced, so
	 * saturating merges add up in the same order. */
	sample_key_t *k = xmalloc((size_t)n * sizeof *k);
	uint32_t *tmp = xmalloc((size_t)n * 2 * sizeof *tmp + sizeof *tmp); /* tmp, then runs */
	sample_key_t diff = {0, 0};
	for (uint32_t i = 0; i < n; i++) {
		k[i] = (sample_key_t){(uint64_t)s[i].node << 32 | s[i].attrset,
		                      (uint64_t)s[i].time_ns ^ (1ull << 63)};
		diff.hi |= k[i].hi ^ k[0].hi;
		diff.lo |= k[i].lo ^ k[0].lo;
	}
	/* Radix costs about 2n + 512 steps per differing key byte, the merge
	 * sort about n log2(n) comparisons: take the cheaper. */
	uint64_t bytes = 0, log2n = 0;
	for (unsigned d = 0; d < 16; d++)
		bytes += key_byte(diff, d) != 0;
	while ((1ull << log2n) < n)
		log2n++;
	if (bytes * (2 * (uint64_t)n + 512) < (uint64_t)n * log2n)
		order_radix(k, n, diff, perm, tmp);
	else
		order_merge(k, n, perm, tmp, tmp + n);
	free(tmp);
	free(k);
}

/* Sorts s by sample_cmp, stably; nothing to do when already in order. */
static void sort_samples(model_sample_t *s, uint32_t n)
{
	uint32_t i = 1;
	while (i < n && sample_cmp(&s[i - 1], &s[i]) <= 0)
		i++;
	if (i >= n)
		return;
	uint32_t *perm = xmalloc((size_t)n * sizeof *perm);
	model_samples_order(s, n, perm);
	model_sample_t *sorted = xmalloc((size_t)n * sizeof *sorted);
	for (uint32_t k = 0; k < n; k++)
		sorted[k] = s[perm[k]];
	memcpy(s, sorted, (size_t)n * sizeof *s);
	free(sorted);
	free(perm);
}

void model_profile_finish(model_batch_t *b, model_profile_t *p)
{
	/* The arrays may still be NULL when a profile has no labels or samples. */
	model_label_t *labels = p->labels_count ? b->series_labels + p->labels_first : NULL;
	if (p->labels_count > 1)
		qsort(labels, p->labels_count, sizeof *labels, label_cmp);

	model_sample_t *s = p->samples_count ? b->samples + p->samples_first : NULL;
	sort_samples(s, p->samples_count);
	uint32_t out = 0;
	for (uint32_t i = 0; i < p->samples_count; i++) {
		if (out && sample_cmp(&s[out - 1], &s[i]) == 0) {
			/* Values come from the network: a merged sum saturates (the OTLP fuzzer found it). */
			s[out - 1].value = num_sat_add(s[out - 1].value, s[i].value);
			continue;
		}
		s[out++] = s[i];
	}
	uint32_t kept = 0;
	for (uint32_t i = 0; i < out; i++)
		if (s[i].value != 0)
			s[kept++] = s[i];
	/* Samples of p are the batch's last, so the batch shrinks with it. */
	if (p->samples_first + p->samples_count == b->n_samples)
		b->n_samples = p->samples_first + kept;
	p->samples_count = kept;

	uint64_t h = 0x534552494553ULL; /* "SERIES" */
	h = mix_field(h, b->project);
	h = mix_field(h, p->service);
	h = mix_field(h, p->sample_type);
	h = mix_field(h, p->sample_unit);
	h = mix_field(h, p->period_type);
	h = mix_field(h, p->period_unit);
	h = id_pair(h, (uint64_t)p->period);
	for (uint32_t i = 0; i < p->labels_count; i++) {
		h = mix_field(h, labels[i].key);
		h = mix_field(h, labels[i].value);
	}
	p->series_id = h;
}

void model_type_name(const model_profile_t *p, char *out, size_t n)
{
	snprintf(out, n, "%.*s:%.*s", (int)p->sample_type.n, (const char *)p->sample_type.p,
	         (int)p->sample_unit.n, (const char *)p->sample_unit.p);
}

int model_profile_name_valid(slice_t name)
{
	if (name.n == 0 || name.n > LIMIT_PROFILE_NAME_BYTES)
		return 0;
	for (size_t i = 0; i < name.n; i++) {
		uint8_t c = name.p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

uint8_t model_aggregation_of(slice_t t)
{
	static const char *snapshot_prefix[] = {"inuse_", "goroutine", "live_", "heap_live"};
	for (size_t i = 0; i < sizeof snapshot_prefix / sizeof *snapshot_prefix; i++) {
		size_t l = strlen(snapshot_prefix[i]);
		if (t.n >= l && memcmp(t.p, snapshot_prefix[i], l) == 0)
			return MODEL_SNAPSHOT;
	}
	return MODEL_WINDOW;
}
