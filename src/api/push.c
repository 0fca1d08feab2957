/* The api side of the push job (ingest/push.h): the job's environment from
 * the api_ctx_t (store, loop, pool, the two limiters, usage, the pod watch for
 * attribution, the in-flight counter) and the caller of a push request. */
#include "api/api.h"

static void attribute(void *ctx, slice_t peer, model_batch_t *b)
{
	api_attribute_batch(ctx, peer, b);
}

int api_push_begin(const api_listener_t *l, ingest_push_t *p, const slice_t *x_kiln_key,
                   const slice_t *authorization, const slice_t *scope_org_id, slice_t peer,
                   ingest_push_decode_fn decode, ingest_push_reply_fn reply)
{
	api_ctx_t *a = l->api;
	p->env = (ingest_push_env_t){
	    .loop = a->loop,
	    .pool = a->pool,
	    .store = a->store,
	    .limiter = a->limiter,
	    .default_limiter = a->default_limiter,
	    .usage = a->usage,
	    .attribute = attribute,
	    .attribute_ctx = a,
	    .inflight = &a->_inflight,
	};
	p->peer = peer;
	p->decode = decode;
	p->reply = reply;
	err_t err = {0};
	if (api_identify(l, x_kiln_key, authorization, NULL, scope_org_id, KEY_SCOPE_INGEST, &p->caller,
	                 &err) == 0)
		return 0;
	ingest_push_refuse(p, &err);
	return -1;
}
