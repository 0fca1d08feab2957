/* Pyroscope's multipart /ingest (API: Push: POST /ingest (Pyroscope)), as the
 * Go SDK, the Node SDK up to 0.5 and Alloy's receive_http forwarding send it:
 * part `profile` (pprof, gzipped or not; required), `sample_type_config`
 * (JSON, optional) and `prev_profile` (pprof, optional: older Go SDKs). The
 * push job's decoder (worker thread): the profile goes through the pprof
 * decoder with the route's request (same limits and window), then the config
 * is applied to the batch, as Pyroscope's own ingester did (pkg/og/convert/
 * pprof of grafana/pyroscope before v1):
 *   - with a config, only the sample types it lists are stored;
 *   - cumulative types become their growth: against prev_profile when the
 *     push has one, else against the previous push of the same series (the
 *     baselines below, scrape/delta.c's rule: the first push and a push after
 *     a counter went down store none of them, so no value is negative);
 *   - the sample types and units stay the pprof's (as from a pprof push);
 *     display-name only names the profile, as current Pyroscope does: the
 *     pprof decoder derives __name__ from the sample types and display names
 *     (pyro_stc_profile_name) when the push names none; units and sampled
 *     are taken and have no effect; aggregation "average" makes a type a
 *     snapshot type, "sum" a window type (absent: Kiln's rule for the type).
 * Without a config the profile is stored as a raw pprof push to /ingest is
 * (named by Pyroscope's default config), and prev_profile (which only means
 * something for cumulative types) is ignored. */
#include <pthread.h>
#include <stdlib.h>

#include "api/api.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/hash.h"
#include "base/limits.h"
#include "scrape/delta.h"
#include "wire/compress.h"
#include "wire/multipart.h"
#include "wire/sample_type_config.h"

/* ---- Baselines: one scrape_delta_t per series key, LRU-bounded. ---- */

typedef struct {
	uint64_t key;
	uint64_t used; /* clock of the last use; 0 = free slot */
	scrape_delta_t *d;
} pyro_baseline_t;

struct api_pyro_deltas {
	pthread_mutex_t mu;
	pyro_baseline_t slots[LIMIT_PYRO_DELTA_SERIES];
	uint64_t clock;
};

api_pyro_deltas_t *api_pyro_deltas_new(void)
{
	api_pyro_deltas_t *d = xcalloc(1, sizeof *d);
	pthread_mutex_init(&d->mu, NULL);
	return d;
}

void api_pyro_deltas_free(api_pyro_deltas_t *d)
{
	if (!d)
		return;
	for (uint32_t i = 0; i < LIMIT_PYRO_DELTA_SERIES; i++)
		scrape_delta_free(d->slots[i].d);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static void evict(pyro_baseline_t *s)
{
	scrape_delta_free(s->d);
	*s = (pyro_baseline_t){0};
}

/* The slot of key: found, a free one, or the least recently used one emptied. */
static pyro_baseline_t *slot_of(api_pyro_deltas_t *d, uint64_t key)
{
	pyro_baseline_t *free_slot = NULL, *oldest = NULL;
	for (uint32_t i = 0; i < LIMIT_PYRO_DELTA_SERIES; i++) {
		pyro_baseline_t *s = &d->slots[i];
		if (s->used && s->key == key)
			return s;
		if (!s->used && !free_slot)
			free_slot = s;
		if (s->used && (!oldest || s->used < oldest->used))
			oldest = s;
	}
	if (!free_slot) {
		evict(oldest);
		free_slot = oldest;
	}
	free_slot->key = key;
	free_slot->d = scrape_delta_new(LIMIT_PYRO_DELTA_ENTRIES);
	return free_slot;
}

/* Applies the baseline of key to b, then keeps all baselines within
 * LIMIT_PYRO_DELTA_ENTRIES values by dropping the least recently used others. */
static void baseline_apply(api_pyro_deltas_t *d, uint64_t key, model_batch_t *b, scrape_delta_pick_fn pick,
                           void *ctx)
{
	pthread_mutex_lock(&d->mu);
	pyro_baseline_t *s = slot_of(d, key);
	s->used = ++d->clock;
	scrape_delta_apply_picked(s->d, b, pick, ctx);
	for (;;) {
		uint64_t total = 0;
		pyro_baseline_t *oldest = NULL;
		for (uint32_t i = 0; i < LIMIT_PYRO_DELTA_SERIES; i++) {
			pyro_baseline_t *o = &d->slots[i];
			if (!o->used)
				continue;
			total += scrape_delta_entries(o->d);
			if (o != s && (!oldest || o->used < oldest->used))
				oldest = o;
		}
		if (total <= LIMIT_PYRO_DELTA_ENTRIES || !oldest)
			break;
		evict(oldest);
	}
	pthread_mutex_unlock(&d->mu);
}

/* ---- The config applied to a batch. ---- */

static int is_cumulative(const model_profile_t *p, void *ctx)
{
	const pyro_stc_entry_t *e = pyro_stc_find(ctx, p->sample_type);
	return e && e->cumulative;
}

/* The series key of b's cumulative profiles: their series (project,
 * service, type, unit, period, labels with the profile name __name__); 0
 * when b has none. */
static uint64_t baseline_key(const model_batch_t *b, const pyro_stc_t *c)
{
	uint64_t h = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		const model_profile_t *p = &b->profiles[i];
		const pyro_stc_entry_t *e = pyro_stc_find(c, p->sample_type);
		if (!e || !e->cumulative)
			continue;
		h = hash_pair(h ? h : 0x5059524f, p->series_id);
	}
	return h;
}

/* Drops the profiles the config does not list. */
static void keep_listed(model_batch_t *b, const pyro_stc_t *c)
{
	uint8_t *drop = xcalloc(b->n_profiles ? b->n_profiles : 1, 1);
	for (uint32_t i = 0; i < b->n_profiles; i++)
		drop[i] = !pyro_stc_find(c, b->profiles[i].sample_type);
	scrape_drop_profiles(b, drop);
	free(drop);
}

/* The aggregation of each listed profile (its type and unit stay the
 * pprof's: display-name named the profile when it was decoded). */
static void set_aggregation(model_batch_t *b, const pyro_stc_t *c)
{
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		model_profile_t *p = &b->profiles[i];
		const pyro_stc_entry_t *e = pyro_stc_find(c, p->sample_type);
		if (!e)
			continue;
		p->aggregation = e->aggregation == PYRO_STC_AGG_AVERAGE ? MODEL_SNAPSHOT
		                 : e->aggregation == PYRO_STC_AGG_SUM   ? MODEL_WINDOW
		                                                      : model_aggregation_of(p->sample_type);
	}
}

/* prev_profile's cumulative values subtracted from b's (a throwaway
 * baseline: prev is its first push, b the next). */
static void subtract_prev(model_batch_t *b, model_batch_t *prev, pyro_stc_t *c)
{
	scrape_delta_t *d = scrape_delta_new(LIMIT_PYRO_DELTA_ENTRIES);
	scrape_delta_apply_picked(d, prev, is_cumulative, c);
	scrape_delta_apply_picked(d, b, is_cumulative, c);
	scrape_delta_free(d);
}

/* ---- The decoder. ---- */

/* A pprof part through the route's pprof decoder (limits, gunzip, window):
 * the push job's decoder run on the part's bytes. */
static int decode_part(ingest_push_t *p, ingest_pprof_push_t *pp, const multipart_part_t *part, err_t *err)
{
	if (!part->body.n)
		return err_set(err, 400,
		               "multipart: the \"%.*s\" part is empty: send a pprof profile (raw or gzip)",
		               (int)part->name.n, (const char *)part->name.p);
	void *ctx = p->ctx;
	slice_t body = p->body;
	p->ctx = pp;
	p->body = part->body;
	int rc = ingest_pprof_decode(p, err);
	p->ctx = ctx;
	p->body = body;
	if (rc < 0)
		err_prefix(err, "multipart part \"%.*s\"", (int)part->name.n, (const char *)part->name.p);
	return rc;
}

static int decode_prev(const ingest_pprof_req_t *r, const multipart_part_t *part, model_batch_t **out,
                       err_t *err)
{
	ingest_result_t res;
	if (!part->body.n)
		return err_set(
		    err, 400,
		    "multipart: the \"prev_profile\" part is empty: send a pprof profile (raw or gzip)");
	if (ingest_pprof(r, part->body, out, &res, err) < 0)
		return err_prefix(err, "multipart part \"prev_profile\"");
	return 0;
}

int api_pyro_multipart_decode(ingest_push_t *p, err_t *err)
{
	api_pyro_multipart_t *m = p->ctx;
	ingest_pprof_push_t *pp = m->pprof;
	multipart_form_t *form = xmalloc(sizeof *form);
	pyro_stc_t *stc = NULL;
	model_batch_t *prev = NULL;
	buf_t plain;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	int rc = -1;
	slice_t body = p->body;
	/* Content-Encoding: gzip on a multipart body is the whole form's. */
	if (pp->req.content_gzip) {
		if (!gz_is_gzip(body)) {
			err_set(
			    err, 400,
			    "Content-Encoding: gzip but the body does not start with the gzip magic bytes");
			goto out;
		}
		if (gz_inflate(body, &plain, err) < 0)
			goto out;
		body = buf_slice(&plain);
		pp->req.content_gzip = 0;
	}
	if (multipart_boundary(m->content_type, form->boundary, err) < 0 ||
	    multipart_parse(body, form, err) < 0)
		goto out;
	const multipart_part_t *profile = multipart_find(form, "profile");
	const multipart_part_t *config = multipart_find(form, "sample_type_config");
	const multipart_part_t *prev_part = multipart_find(form, "prev_profile");
	if (!profile) {
		err_set(err, 400, "multipart: no part named \"profile\" (the pprof profile)");
		goto out;
	}
	if (config) {
		stc = xmalloc(sizeof *stc);
		if (pyro_stc_parse(config->body, stc, err) < 0)
			goto out;
		pp->req.pyro_config = stc; /* its display names name the profile */
	}
	if (stc && prev_part && decode_prev(&pp->req, prev_part, &prev, err) < 0)
		goto out;
	if (decode_part(p, pp, profile, err) < 0)
		goto out;
	rc = 0;
	if (!stc)
		goto out;
	model_batch_t *b = p->batch;
	keep_listed(b, stc);
	uint64_t key = baseline_key(b, stc);
	if (key && prev)
		subtract_prev(b, prev, stc);
	else if (key && m->deltas)
		baseline_apply(m->deltas, key, b, is_cumulative, stc);
	else if (key) { /* no baselines: as the first push of every series */
		scrape_delta_t *d = scrape_delta_new(1);
		scrape_delta_apply_picked(d, b, is_cumulative, stc);
		scrape_delta_free(d);
	}
	set_aggregation(b, stc);
	p->samples = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++)
		p->samples += b->profiles[i].samples_count;
	pp->res.profiles = b->n_profiles;
	pp->res.samples = p->samples;
out:
	pp->req.pyro_config = NULL;
	model_batch_free(prev);
	buf_free(&plain);
	free(stc);
	free(form);
	return rc;
}
