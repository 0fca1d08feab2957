/* Go heap profile deltas (API: Aggregation over time): alloc_* becomes the growth since the
 * previous scrape of the same target; the first scrape and a counter reset
 * store no alloc_* at all, so no value is ever negative. */
#include "scrape/delta.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/u64map.h"

struct scrape_delta {
	u64map_t ix; /* value key → index into vals */
	int64_t *vals;
	uint32_t n, cap;
	uint32_t max_entries;
	int have_prev;
};

scrape_delta_t *scrape_delta_new(uint32_t max_entries)
{
	scrape_delta_t *d = xcalloc(1, sizeof *d);
	u64map_init(&d->ix);
	d->max_entries = max_entries;
	return d;
}

void scrape_delta_free(scrape_delta_t *d)
{
	if (!d)
		return;
	u64map_free(&d->ix);
	free(d->vals);
	free(d);
}

static int is_alloc(const model_profile_t *p, void *ctx)
{
	(void)ctx;
	return p->sample_type.n > 6 && !memcmp(p->sample_type.p, "alloc_", 6);
}

void scrape_drop_profiles(model_batch_t *b, const uint8_t *drop)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++)
		if (!drop[i])
			b->profiles[k++] = b->profiles[i];
	b->n_profiles = k;
}

static uint64_t value_key(const model_batch_t *b, const model_profile_t *p, const model_sample_t *s)
{
	uint64_t type = hash_slice(p->sample_type, 0);
	uint64_t where = hash_pair(model_node_id(b, s->node), b->attrsets[s->attrset].id);
	return hash_pair(hash_pair(type, where), (uint64_t)s->time_ns);
}

/* The batch's cumulative alloc values into (m, vals); -1 when there are more
 * than max. Sets *down when a value is below the previous scrape's. */
static int collect(const scrape_delta_t *d, const model_batch_t *b, scrape_delta_pick_fn pick, void *ctx,
                   u64map_t *m, int64_t **vals, uint32_t *n, uint32_t *cap, int *down)
{
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		const model_profile_t *p = &b->profiles[i];
		if (!pick(p, ctx))
			continue;
		for (uint32_t k = 0; k < p->samples_count; k++) {
			const model_sample_t *s = &b->samples[p->samples_first + k];
			int inserted;
			uint32_t ix = u64map_get_or_put(m, value_key(b, p, s), *n, &inserted);
			if (!inserted) {
				(*vals)[ix] += s->value; /* finished profiles have none; be exact anyway */
				continue;
			}
			if (*n == d->max_entries)
				return -1;
			if (*n == *cap) {
				*cap = *cap ? *cap * 2 : 1024;
				*vals = xrealloc(*vals, (size_t)*cap * sizeof **vals);
			}
			(*vals)[(*n)++] = s->value;
		}
	}
	/* Compare totals per key against the previous scrape (after summing). */
	if (d->have_prev)
		for (size_t slot = 0; slot < m->cap; slot++) {
			uint32_t prev;
			if (m->keys[slot] && u64map_get(&d->ix, m->keys[slot], &prev) &&
			    (*vals)[m->vals[slot]] < d->vals[prev])
				*down = 1;
		}
	return 0;
}

/* Replaces each alloc value by its growth and drops rows that did not grow. */
static void subtract(const scrape_delta_t *d, model_batch_t *b, scrape_delta_pick_fn pick, void *ctx)
{
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		model_profile_t *p = &b->profiles[i];
		if (!pick(p, ctx))
			continue;
		uint32_t kept = 0;
		for (uint32_t k = 0; k < p->samples_count; k++) {
			model_sample_t s = b->samples[p->samples_first + k];
			uint32_t prev;
			if (u64map_get(&d->ix, value_key(b, p, &s), &prev))
				s.value -= d->vals[prev];
			if (s.value > 0)
				b->samples[p->samples_first + kept++] = s;
		}
		p->samples_count = kept;
	}
}

uint32_t scrape_delta_entries(const scrape_delta_t *d)
{
	return d->n;
}

int scrape_delta_apply(scrape_delta_t *d, model_batch_t *b)
{
	return scrape_delta_apply_picked(d, b, is_alloc, NULL);
}

int scrape_delta_apply_picked(scrape_delta_t *d, model_batch_t *b, scrape_delta_pick_fn pick, void *ctx)
{
	int any = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++)
		any |= pick(&b->profiles[i], ctx);
	if (!any) {
		d->have_prev = 0;
		u64map_clear(&d->ix);
		d->n = 0;
		return SCRAPE_DELTA_NO_ALLOC;
	}
	u64map_t m;
	u64map_init(&m);
	int64_t *vals = NULL;
	uint32_t n = 0, cap = 0;
	int down = 0;
	int over = collect(d, b, pick, ctx, &m, &vals, &n, &cap, &down) < 0;
	int outcome = !d->have_prev    ? SCRAPE_DELTA_FIRST
	              : (down || over) ? SCRAPE_DELTA_RESET
	                               : SCRAPE_DELTA_APPLIED;
	if (outcome == SCRAPE_DELTA_APPLIED) {
		subtract(d, b, pick, ctx);
	} else {
		uint8_t *drop = xcalloc(b->n_profiles ? b->n_profiles : 1, 1);
		for (uint32_t i = 0; i < b->n_profiles; i++)
			drop[i] = (uint8_t)pick(&b->profiles[i], ctx);
		scrape_drop_profiles(b, drop);
		free(drop);
	}
	u64map_free(&d->ix);
	free(d->vals);
	d->ix = m;
	d->vals = vals;
	d->n = n;
	d->cap = cap;
	d->have_prev = !over;
	if (over) {
		u64map_clear(&d->ix);
		d->n = 0;
	}
	return outcome;
}
