/* The push job (see push.h): decoder on a worker, attribution, admission,
 * store_submit, usage after the store's done callback, reply on the loop.
 * The one place a push's usage is counted. */
#include "ingest/push.h"

#include <stdatomic.h>

#include "base/limits.h"
#include "base/timeutil.h"

void ingest_account_reason(const ingest_push_env_t *env, const ingest_caller_t *c, uint64_t accepted,
                           int reason, uint64_t samples)
{
	if (env->usage)
		usage_add(env->usage, slice_cstr(c->project), slice_cstr(c->key), time_now_ns(), accepted,
		          reason, samples);
}

static int reason_of(const err_t *err)
{
	switch (err->status) {
	case 429:
		return USAGE_RATE_LIMITED;
	case 413:
		return USAGE_TOO_LARGE;
	default:
		return USAGE_INVALID;
	}
}

void ingest_account(const ingest_push_env_t *env, const ingest_caller_t *c, uint64_t samples,
                    const err_t *err)
{
	if (!err)
		ingest_account_reason(env, c, samples, USAGE_ACCEPTED,
		                      0); /* usage_add counts accepted once */
	else if (err->status != 503 && err->status != 500 && err->status != 401 && err->status != 403)
		ingest_account_reason(env, c, 0, reason_of(err), samples);
}

int ingest_admit(const ingest_push_env_t *env, const ingest_caller_t *c, uint64_t samples, err_t *err)
{
	ratelimit_t *rl = c->anonymous ? env->default_limiter : env->limiter;
	int retry = 0;
	if (!rl || ratelimit_take(rl, slice_cstr(c->key), samples, time_now_ns(), &retry) == 0)
		return 0;
	err_set(
	    err, 429,
	    "key %s is over its rate limit of %.0f samples/s: this request has %llu samples; retry in %d s",
	    c->key, ratelimit_rate(rl), (unsigned long long)samples, retry);
	err->retry_after = retry;
	ingest_account(env, c, samples, err);
	return -1;
}

/* Loop thread: the last step of every job. */
static void push_reply(void *arg)
{
	ingest_push_t *p = arg;
	_Atomic uint32_t *inflight = p->env.inflight;
	p->reply(p, p->_failed ? &p->_err : NULL); /* frees p */
	if (inflight)
		atomic_fetch_sub(inflight, 1);
}

/* Writer thread: the batch is durable (or refused). */
static void push_stored(void *arg, const err_t *err)
{
	ingest_push_t *p = arg;
	if (err) {
		p->_err = *err;
		p->_failed = 1;
		ingest_account(&p->env, &p->caller, p->samples, err);
	} else {
		ingest_account_reason(&p->env, &p->caller, p->samples, p->reason, p->rejected);
	}
	loop_post(p->env.loop, push_reply, p);
}

/* Worker thread: decode, attribute, admit, submit. */
static void push_work(void *arg)
{
	ingest_push_t *p = arg;
	if (p->decode(p, &p->_err) < 0) {
		model_batch_free(p->batch);
		p->batch = NULL;
		if (p->reason != USAGE_ACCEPTED)
			ingest_account_reason(&p->env, &p->caller, 0, p->reason, p->rejected);
		else
			ingest_account(&p->env, &p->caller, 1, &p->_err); /* sample count unknown: counts 1 */
		p->_failed = 1;
		loop_post(p->env.loop, push_reply, p);
		return;
	}
	model_batch_t *b = p->batch;
	p->batch = NULL;
	if (!b || !b->n_profiles) { /* nothing to store: an empty request, or all of it out of the window */
		if (p->rejected || p->reason != USAGE_ACCEPTED)
			ingest_account_reason(&p->env, &p->caller, 0, p->reason, p->rejected);
		model_batch_free(b);
		loop_post(p->env.loop, push_reply, p);
		return;
	}
	if (p->env.attribute && p->peer.n)
		p->env.attribute(p->env.attribute_ctx, p->peer, b); /* API: Push attribution */
	if (ingest_admit(&p->env, &p->caller, p->samples, &p->_err) < 0) {
		model_batch_free(b);
		p->_failed = 1;
		loop_post(p->env.loop, push_reply, p);
		return;
	}
	store_submit(p->env.store, b, push_stored, p);
}

void ingest_push_start(ingest_push_t *p)
{
	if (p->env.inflight)
		atomic_fetch_add(p->env.inflight, 1);
	if (pool_try_submit(p->env.pool, push_work, p, LIMIT_PUSH_JOBS) == 0)
		return;
	if (p->env.inflight)
		atomic_fetch_sub(p->env.inflight, 1);
	err_t err = {0};
	err_set(&err, 503, "busy: %u pushes are waiting to be decoded; retry later", LIMIT_PUSH_JOBS);
	err.retry_after = 1;
	ingest_push_refuse(p, &err);
}

void ingest_push_refuse(ingest_push_t *p, const err_t *err)
{
	if (p->env.inflight)
		atomic_fetch_add(p->env.inflight, 1);
	p->_err = *err;
	p->_failed = 1;
	ingest_account(&p->env, &p->caller, 1, err);
	push_reply(p);
}
