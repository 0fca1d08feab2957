/* store/clickhouse writer: one thread takes the queued writes in groups and
 * turns each group into one RowBinary INSERT per table: the dictionaries
 * (frames, nodes, attrsets, series) first, then every sample row of the
 * group in one INSERT of one block, so a write is seen whole or not at all.
 * A write is acknowledged when ClickHouse answered that last INSERT 200. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/clickhouse.h"

#define CH_GROUP_WINDOW_MS 5 /* a group gathers this long after its first write (below) */
#define CH_GROUP_MAX_ROWS (4u << 20)

static void run_group(void *ctx, store_job_t **jobs, size_t n);

static char *dup_or(const char *s, const char *def)
{
	return xstrdup(s && *s ? s : def);
}

/* Database and cluster names go into SQL unquoted: keep them identifiers. */
static int identifier(const char *s)
{
	if (!*s || strlen(s) > 64 || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_'))
			return 0;
	return 1;
}

store_t *ch_open(const store_config_t *cfg, err_t *err)
{
	const char *db = cfg->ch_database && *cfg->ch_database ? cfg->ch_database : "kiln";
	if (!cfg->ch_url || strncmp(cfg->ch_url, "http", 4) != 0) {
		err_set(err, 400,
		        "store.url: the ClickHouse HTTP interface URL is required (http://host:8123)");
		return NULL;
	}
	const char *host = strstr(cfg->ch_url, "://");
	if (host && strcspn(host + 3, "@/") < strlen(host + 3) && host[3 + strcspn(host + 3, "@/")] == '@') {
		err_set(err, 400,
		        "store.url must not carry credentials: set store.user and store.password(File)");
		return NULL;
	}
	if (!identifier(db) || (cfg->ch_cluster && *cfg->ch_cluster && !identifier(cfg->ch_cluster))) {
		err_set(err, 400, "store: database and cluster names must be [A-Za-z_][A-Za-z0-9_]{0,63}");
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		err_set(err, 500, "store: libcurl failed to initialize");
		return NULL;
	}
	ch_store_t *s = xcalloc(1, sizeof *s);
	s->head_.engine = &store_clickhouse_engine;
	size_t n = strlen(cfg->ch_url);
	s->url = xmalloc(n + 2);
	memcpy(s->url, cfg->ch_url, n + 1);
	if (n && s->url[n - 1] != '/')
		strcpy(s->url + n, "/");
	s->db = xstrdup(db);
	s->user = dup_or(cfg->ch_user, "");
	s->password = dup_or(cfg->ch_password, "");
	s->cluster = cfg->ch_cluster && *cfg->ch_cluster ? xstrdup(cfg->ch_cluster) : NULL;
	s->replicated = cfg->ch_replicated;
	s->answer_max = cfg->ch_max_answer_mib ? (size_t)cfg->ch_max_answer_mib << 20 : LIMIT_CH_ANSWER_BYTES;
	s->answer_mib = (uint32_t)(s->answer_max >> 20);
	s->default_days =
	    cfg->retention_days > 0 && cfg->retention_days <= LIMIT_RETENTION_DAYS ? cfg->retention_days : 0;
	pthread_mutex_init(&s->pool_mu, NULL);
	pthread_mutex_init(&s->schema_mu, NULL);
	pthread_mutex_init(&s->ret_mu, NULL);
	u64map_init(&s->seen);
	u64map_init(&s->group);
	for (int t = 0; t < CH_T_COUNT; t++)
		buf_init(&s->rows[t], SIZE_MAX);
	/* Chunk ids: milliseconds since the epoch above 22 bits of a per-process
	 * counter with a random start, so ids of one series rarely tie and sort
	 * in write order, across processes too. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->chunk_next = hash_pair((uint64_t)ts.tv_nsec, (uint64_t)getpid()) & 0x3fffff;
	s->wconn = ch_conn_get(s);
	/* Unreachable now is fine: the writer and the views retry the schema. */
	err_t e = {0};
	if (ch_schema(s, s->wconn, &e) < 0)
		log_warn("clickhouse not ready", "url=%s error=\"%s\"", s->url, e.msg);
	/* Unlike the embedded engine, a window: an INSERT costs ClickHouse about
	 * as much for 1 write as for 16, and without a window the writer takes
	 * the first write back from a client alone while the others are still
	 * being decoded (16 writers: 180-340 uploads/s without, 330-510 with 5 ms;
	 * docs/PERFORMANCE.md, Write queue without window). -1: none. */
	store_writeq_config_t qc = {
	    .window_ms = cfg->commit_interval_ms > 0    ? cfg->commit_interval_ms
	                 : cfg->commit_interval_ms == 0 ? CH_GROUP_WINDOW_MS
	                                                : 0,
	    .max_jobs =
	        cfg->max_batches_per_commit > 0 ? cfg->max_batches_per_commit : LIMIT_STORE_GROUP_BATCHES,
	    .max_rows = CH_GROUP_MAX_ROWS,
	    .cap_jobs = cfg->queue_batches,
	    .cap_bytes = (uint64_t)cfg->queue_mib << 20,
	    .run = run_group,
	    .ctx = s,
	    .hold = cfg->hold,
	    .hold_arg = cfg->hold_arg,
	};
	if (store_writeq_start(&s->q, &qc, err) < 0 ||
	    (!cfg->keys_usage_only && ch_hours_start(s, err) < 0)) {
		ch_close((store_t *)s);
		return NULL;
	}
	return (store_t *)s;
}

void ch_drain(store_t *st)
{
	store_writeq_drain(&((ch_store_t *)st)->q);
}

void ch_close(store_t *st)
{
	ch_store_t *s = (ch_store_t *)st;
	if (!s)
		return;
	ch_drain(st);
	ch_hours_stop(s); /* after the writer, which tells it what it wrote */
	ch_conn_free(s->wconn);
	for (ch_conn_t *c = s->pool, *next; c; c = next) {
		next = c->next;
		ch_conn_free(c);
	}
	u64map_free(&s->seen);
	u64map_free(&s->group);
	for (int t = 0; t < CH_T_COUNT; t++)
		buf_free(&s->rows[t]);
	if (s->n_doubt)
		log_error("store writes left in doubt at shutdown", "chunks=%zu", s->n_doubt);
	free(s->doubt);
	free(s->doubt_days);
	free(s->ret);
	store_writeq_destroy(&s->q);
	pthread_mutex_destroy(&s->ret_mu);
	pthread_mutex_destroy(&s->schema_mu);
	pthread_mutex_destroy(&s->pool_mu);
	free(s->url);
	free(s->db);
	free(s->user);
	free(s->password);
	free(s->cluster);
	free(s);
	curl_global_cleanup();
}

void ch_submit(store_t *st, model_batch_t *b, store_done_fn done, void *ctx)
{
	ch_job_t *j = xcalloc(1, sizeof *j);
	j->base.b = b;
	j->base.done = done;
	j->base.ctx = ctx;
	store_writeq_push(&((ch_store_t *)st)->q, &j->base);
}

int ch_retention_sweep(store_t *st, slice_t project, int keep_days, int64_t now_ns, uint32_t *deleted,
                       err_t *err)
{
	uint32_t n = 0;
	ch_job_t *j = xcalloc(1, sizeof *j);
	memcpy(j->proj, project.p, project.n);
	j->project = slice_make(j->proj, project.n);
	j->keep_days = keep_days;
	j->now_ns = now_ns;
	j->deleted = &n;
	store_waiter_t w;
	store_waiter_init(&w);
	j->base.done = store_waiter_done;
	j->base.ctx = &w;
	store_writeq_push(&((ch_store_t *)st)->q, &j->base);
	int rc = store_waiter_wait(&w, err);
	if (deleted)
		*deleted = n;
	return rc;
}

uint32_t ch_queue_depth(store_t *st)
{
	return store_writeq_depth(&((ch_store_t *)st)->q);
}

void ch_get_stats(store_t *st, store_stats_t *out)
{
	ch_store_t *s = (ch_store_t *)st;
	memset(out, 0, sizeof *out);
	store_commit_read(&s->commit_stats, out);
	out->hours_written = atomic_load(&s->hours_written);
	out->hours_used = atomic_load(&s->hours_used);
	store_writeq_ack_read(&s->q, out);
	/* out->partitions stays 0: the parts are ClickHouse's (its system.parts). */
}

/* ---- encoding a batch into rows ---- */

/* Checks every index of b, so that encoding it cannot fail half-way. */
static int check_batch(const model_batch_t *b, err_t *err)
{
	if (b->project.n == 0 || b->project.n > LIMIT_NAME_BYTES)
		return err_set(err, 400, "store: project name must be 1 to %u bytes", LIMIT_NAME_BYTES);
	for (uint32_t i = 0; i < b->n_nodes; i++) {
		const model_node_t *n = &b->nodes[i];
		if ((n->parent != MODEL_NONE && n->parent >= i) || n->frame >= b->n_frames)
			return err_set(err, 500, "store: malformed batch (node %u)", i);
	}
	for (uint32_t i = 1; i < b->n_attrsets; i++)
		if ((uint64_t)b->attrsets[i].first + b->attrsets[i].count > b->n_attr_labels)
			return err_set(err, 500, "store: malformed batch (attribute set %u)", i);
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		const model_profile_t *p = &b->profiles[i];
		if ((uint64_t)p->samples_first + p->samples_count > b->n_samples ||
		    (uint64_t)p->labels_first + p->labels_count > b->n_series_labels)
			return err_set(err, 500, "store: malformed batch (profile %u)", i);
		for (uint32_t k = p->samples_first; k < p->samples_first + p->samples_count; k++)
			if ((b->samples[k].node >= b->n_nodes && b->samples[k].node != MODEL_NONE) ||
			    b->samples[k].attrset >= b->n_attrsets)
				return err_set(err, 500, "store: malformed batch (sample %u)", k);
	}
	return 0;
}

typedef struct {
	ch_store_t *s;
	const model_batch_t *b;
	uint64_t proj_hash;
	int64_t day;
	uint32_t *depth;        /* per batch node */
	uint32_t *span, *trace; /* per batch attrset: label index + 1, 0 = none */
	uint64_t *pending;      /* dictionary keys added to s->group */
	size_t n_pending, cap_pending;
	uint64_t *chunks; /* chunk ids of the group's sample rows */
	size_t n_chunks, cap_chunks;
	uint32_t *days; /* their distinct days */
	size_t n_days, cap_days;
	uint64_t rows; /* sample rows of the group */
} enc_t;

/* 1 when the dictionary row (t, id) of the current (project, day) must be written; marks it. */
static int need_row(enc_t *e, int t, uint64_t id)
{
	uint64_t key = hash_pair(hash_pair(e->proj_hash ^ (uint64_t)t, (uint64_t)e->day), id);
	uint32_t v;
	if (u64map_get(&e->s->seen, key, &v) || u64map_get(&e->s->group, key, &v))
		return 0;
	u64map_put(&e->s->group, key, 1);
	e->pending = xgrow(e->pending, &e->cap_pending, e->n_pending + 1, sizeof *e->pending);
	e->pending[e->n_pending++] = key;
	return 1;
}

static void row_head(enc_t *e, int t)
{
	buf_t *r = &e->s->rows[t];
	ch_put_str(r, e->b->project);
	ch_put_u32(r, (uint32_t)e->day);
}

static void put_labels(buf_t *r, const model_label_t *l, uint32_t n)
{
	buf_put_uvarint(r, n);
	for (uint32_t i = 0; i < n; i++)
		ch_put_str(r, l[i].key);
	buf_put_uvarint(r, n);
	for (uint32_t i = 0; i < n; i++)
		ch_put_str(r, l[i].value);
}

static void put_frame(enc_t *e, uint32_t i)
{
	const model_frame_t *f = &e->b->frames[i];
	if (!need_row(e, CH_T_FRAMES, f->id))
		return;
	buf_t *r = &e->s->rows[CH_T_FRAMES];
	row_head(e, CH_T_FRAMES);
	ch_put_u64(r, f->id);
	ch_put_str(r, f->name);
	ch_put_str(r, f->file);
	ch_put_str(r, f->binary);
	ch_put_str(r, f->build_id);
	ch_put_str(r, f->kind);
	ch_put_u8(r, f->unsymbolized);
}

/* Node i and its ancestors up to the first one already written (none for
 * MODEL_NONE, the empty stack: its sample rows have node 0). */
static void put_node(enc_t *e, uint32_t i)
{
	const model_batch_t *b = e->b;
	while (i != MODEL_NONE) {
		const model_node_t *n = &b->nodes[i];
		if (!need_row(e, CH_T_NODES, n->id))
			return;
		put_frame(e, n->frame);
		buf_t *r = &e->s->rows[CH_T_NODES];
		row_head(e, CH_T_NODES);
		ch_put_u64(r, n->id);
		ch_put_u64(r, model_node_id(b, n->parent));
		ch_put_u64(r, b->frames[n->frame].id);
		ch_put_u32(r, e->depth[i]);
		i = n->parent;
	}
}

static void put_attrset(enc_t *e, uint32_t i)
{
	const model_attrset_t *a = &e->b->attrsets[i];
	if (i == 0 || !need_row(e, CH_T_ATTRSETS, a->id))
		return;
	buf_t *r = &e->s->rows[CH_T_ATTRSETS];
	row_head(e, CH_T_ATTRSETS);
	ch_put_u64(r, a->id);
	put_labels(r, e->b->attr_labels + a->first, a->count);
}

static void put_series(enc_t *e, const model_profile_t *p)
{
	if (!need_row(e, CH_T_SERIES, p->series_id))
		return;
	buf_t *r = &e->s->rows[CH_T_SERIES];
	char type[2 * 4096 + 2];
	model_type_name(p, type, sizeof type);
	row_head(e, CH_T_SERIES);
	ch_put_u64(r, p->series_id);
	ch_put_str(r, p->service);
	ch_put_str(r, slice_cstr(type));
	ch_put_str(r, p->period_type);
	ch_put_str(r, p->period_unit);
	ch_put_i64(r, p->period);
	ch_put_u8(r, p->aggregation);
	ch_put_u8(r, p->cpu_alias);
	put_labels(r, e->b->series_labels + p->labels_first, p->labels_count);
}

/* The span link of every attribute set (store_span_labels). */
static void find_spans(enc_t *e)
{
	for (uint32_t i = 1; i < e->b->n_attrsets; i++)
		store_span_labels(e->b, &e->b->attrsets[i], &e->span[i], &e->trace[i]);
}

static void put_profile(enc_t *e, const model_profile_t *p, store_wentry_t **ent, size_t *cap)
{
	const model_batch_t *b = e->b;
	e->day = time_day(p->time_ns);
	put_series(e, p);
	uint32_t n = p->samples_count;
	*ent = xgrow(*ent, cap, (size_t)n + 1, sizeof **ent);
	store_wentry_t *en = *ent;
	for (uint32_t i = 0; i < n; i++) {
		const model_sample_t *smp = &b->samples[p->samples_first + i];
		en[i] = (store_wentry_t){smp->node, smp->attrset,
		                         store_second_offset(smp->time_ns, p->time_ns), smp->value};
	}
	uint32_t m = store_entries_merge(en, n);
	uint64_t chunk = (uint64_t)(time_now_ns() / 1000000) << 22 | (e->s->chunk_next++ & 0x3fffff);
	e->chunks = xgrow(e->chunks, &e->cap_chunks, e->n_chunks + 1, sizeof *e->chunks);
	e->chunks[e->n_chunks++] = chunk;
	size_t d = 0;
	while (d < e->n_days && e->days[d] != (uint32_t)e->day)
		d++;
	if (d == e->n_days) {
		e->days = xgrow(e->days, &e->cap_days, e->n_days + 1, sizeof *e->days);
		e->days[e->n_days++] = (uint32_t)e->day;
	}
	buf_t *r = &e->s->rows[CH_T_SAMPLES];
	char span_buf[LIMIT_SPAN_ID_BYTES], trace_buf[LIMIT_SPAN_ID_BYTES];
	for (uint32_t i = 0; i < m; i++) {
		put_node(e, en[i].node);
		put_attrset(e, en[i].attrset);
		slice_t span = slice_make("", 0), trace = slice_make("", 0);
		uint32_t a = en[i].attrset;
		if (a && e->span[a]) {
			span = ch_span_key(b->attr_labels[e->span[a] - 1].value, span_buf);
			if (span.n && e->trace[a])
				trace = ch_span_key(b->attr_labels[e->trace[a] - 1].value, trace_buf);
		}
		row_head(e, CH_T_SAMPLES);
		e->rows++;
		ch_put_u64(r, p->series_id);
		ch_put_u64(r, chunk);
		ch_put_i64(r, p->time_ns);
		ch_put_i64(r, p->duration_ns);
		ch_put_u64(r, model_node_id(b, en[i].node)); /* 0: the empty stack */
		ch_put_u64(r, a ? b->attrsets[a].id : 0);
		ch_put_i64(r, en[i].value);
		int64_t t;
		if (__builtin_mul_overflow(en[i].t_off, NS_PER_SEC, &t) ||
		    __builtin_add_overflow(t, p->time_ns, &t))
			t = p->time_ns;
		ch_put_i64(r, t);
		ch_put_str(r, span);
		ch_put_str(r, trace);
	}
	if (!m) /* a chunk without entries is not stored (as in the embedded engine) */
		return;
	/* The chunk's head row, in the same block as its entries: the count and
	 * total the heads query would group them into (an exact sum clamped to
	 * Int64, what CH_SUM_SQL reads as). */
	__int128 total = 0;
	for (uint32_t i = 0; i < m; i++)
		total += en[i].value;
	row_head(e, CH_T_SAMPLES);
	e->rows++;
	ch_put_u64(r, 0);
	ch_put_u64(r, chunk);
	ch_put_i64(r, p->time_ns);
	ch_put_i64(r, p->duration_ns);
	ch_put_u64(r, p->series_id);
	ch_put_u64(r, m);
	ch_put_i64(r, total > INT64_MAX ? INT64_MAX : total < INT64_MIN ? INT64_MIN : (int64_t)total);
	ch_put_i64(r, 0);
	ch_put_str(r, slice_make("", 0));
	ch_put_str(r, slice_make("", 0));
}

static void encode(ch_store_t *s, const model_batch_t *b, enc_t *e, store_wentry_t **ent, size_t *cap)
{
	e->s = s;
	e->b = b;
	e->proj_hash = hash_slice(b->project, 0x6b696c6e);
	e->depth = xmalloc(((size_t)b->n_nodes + 1) * sizeof *e->depth);
	for (uint32_t i = 0; i < b->n_nodes; i++)
		e->depth[i] = b->nodes[i].parent == MODEL_NONE ? 0 : e->depth[b->nodes[i].parent] + 1;
	e->span = xcalloc((size_t)b->n_attrsets + 1, sizeof *e->span);
	e->trace = xcalloc((size_t)b->n_attrsets + 1, sizeof *e->trace);
	find_spans(e);
	for (uint32_t i = 0; i < b->n_profiles; i++)
		put_profile(e, &b->profiles[i], ent, cap);
	free(e->depth);
	free(e->span);
	free(e->trace);
}

/* ---- the writer thread ---- */

static int insert_all(ch_store_t *s, err_t *err)
{
	if (ch_schema(s, s->wconn, err) < 0)
		return -1;
	char sql[128], settings[128];
	for (int t = 0; t < CH_T_COUNT; t++) {
		if (!s->rows[t].n)
			continue;
		snprintf(sql, sizeof sql, "INSERT INTO %s FORMAT RowBinary", ch_table_names[t]);
		/* One block per INSERT (atomic on one partition); on a cluster, the
		 * Distributed table answers only after the shards have the rows. */
		snprintf(settings, sizeof settings, "max_insert_block_size=%u%s", CH_GROUP_MAX_ROWS * 4,
		         s->cluster ? "&insert_distributed_sync=1" : "");
		if (ch_exec(s, s->wconn, sql, buf_slice(&s->rows[t]), settings, 1, err) < 0)
			return t == CH_T_SAMPLES && !s->wconn->unsent ? -2 : -1;
	}
	return 0;
}

/* ---- writes whose answer was lost ----
 * An INSERT can land although we got no 200: ClickHouse stopped after
 * committing but before answering, a timeout, a group spanning several
 * partitions that failed after the first. The client is told 503 and will
 * retry, so whatever landed must go: count the group's chunks; none, fine;
 * all of them, the write succeeded after all; some, delete them. When
 * ClickHouse cannot be asked, the chunks are kept in doubt and removed
 * before the next write. */

static void where_chunks(buf_t *q, const uint32_t *days, size_t n_days, const uint64_t *chunks, size_t n)
{
	buf_puts(q, " WHERE day IN (");
	for (size_t i = 0; i < n_days; i++)
		buf_printf(q, "%s%u", i ? "," : "", days[i]);
	buf_puts(q, ") AND chunk IN (");
	for (size_t i = 0; i < n; i++)
		buf_printf(q, "%s%llu", i ? "," : "", (unsigned long long)chunks[i]);
	buf_putc(q, ')');
}

/* Rows of samples with these chunks: 0, or -1 with err when ClickHouse cannot tell. */
static int count_chunks(ch_store_t *s, const uint32_t *days, size_t n_days, const uint64_t *chunks, size_t n,
                        uint64_t *count, err_t *err)
{
	buf_t q;
	buf_init(&q, SIZE_MAX);
	buf_puts(&q, "SELECT count() FROM samples");
	where_chunks(&q, days, n_days, chunks, n);
	ch_rd_t rd;
	int rc = ch_select(s, s->wconn, &q, &rd, err);
	if (rc == 0) {
		*count = ch_rd_u64(&rd);
		rc = ch_rd_end(&rd, err, 503, "count");
	}
	buf_free(&q);
	return rc;
}

static int delete_chunks(ch_store_t *s, const uint32_t *days, size_t n_days, const uint64_t *chunks, size_t n,
                         err_t *err)
{
	buf_t q;
	buf_init(&q, SIZE_MAX);
	buf_printf(&q, "ALTER TABLE %s.samples%s", s->db, s->cluster ? "_local" : "");
	if (s->cluster)
		buf_printf(&q, " ON CLUSTER %s", s->cluster);
	buf_puts(&q, " DELETE");
	where_chunks(&q, days, n_days, chunks, n);
	buf_putc(&q, 0);
	int rc = ch_exec(s, s->wconn, (const char *)q.p, (slice_t){0}, NULL, 1, err);
	buf_free(&q);
	return rc;
}

/* Settles chunks whose INSERT answer was lost: 1 all landed (the write
 * stands), 0 none is left (deleted or never there), -1 cannot tell. */
static int settle(ch_store_t *s, const uint32_t *days, size_t n_days, const uint64_t *chunks, size_t n,
                  uint64_t rows, err_t *err)
{
	uint64_t count = 0;
	if (count_chunks(s, days, n_days, chunks, n, &count, err) < 0)
		return -1;
	if (rows && count == rows)
		return 1;
	if (count == 0)
		return 0;
	if (delete_chunks(s, days, n_days, chunks, n, err) < 0)
		return -1;
	log_warn("store removed a partly written group", "rows=%llu of=%llu", (unsigned long long)count,
	         (unsigned long long)rows);
	return 0;
}

static void doubt_add(ch_store_t *s, const enc_t *e)
{
	s->doubt = xgrow(s->doubt, &s->cap_doubt, s->n_doubt + e->n_chunks, sizeof *s->doubt);
	memcpy(s->doubt + s->n_doubt, e->chunks, e->n_chunks * sizeof *e->chunks);
	s->n_doubt += e->n_chunks;
	for (size_t i = 0; i < e->n_days; i++) {
		size_t d = 0;
		while (d < s->n_doubt_days && s->doubt_days[d] != e->days[i])
			d++;
		if (d == s->n_doubt_days) {
			s->doubt_days = xgrow(s->doubt_days, &s->cap_doubt_days, s->n_doubt_days + 1,
			                      sizeof *s->doubt_days);
			s->doubt_days[s->n_doubt_days++] = e->days[i];
		}
	}
	log_warn("store write in doubt", "chunks=%zu (removed when ClickHouse answers again)", e->n_chunks);
}

/* Before a write: the chunks left in doubt are removed first. 0, or -1 with err. */
static int settle_doubt(ch_store_t *s, err_t *err)
{
	if (!s->n_doubt)
		return 0;
	if (settle(s, s->doubt_days, s->n_doubt_days, s->doubt, s->n_doubt, 0, err) < 0)
		return -1;
	s->n_doubt = s->n_doubt_days = 0;
	return 0;
}

static void write_group(ch_store_t *s, store_job_t **jobs, size_t n)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int t = 0; t < CH_T_COUNT; t++)
		buf_reset(&s->rows[t]);
	u64map_clear(&s->group);
	enc_t e = {0};
	store_wentry_t *ent = NULL;
	size_t cap_ent = 0, written = 0;
	for (size_t k = 0; k < n; k++) {
		err_t err = {0};
		if (check_batch(jobs[k]->b, &err) < 0 || ch_retention_check(s, jobs[k]->b, &err) < 0) {
			store_job_finish(jobs[k], &err);
			jobs[k] = NULL;
			continue;
		}
		encode(s, jobs[k]->b, &e, &ent, &cap_ent);
		written++;
	}
	free(ent);
	err_t err = {0};
	int rc = 0;
	if (written && (rc = settle_doubt(s, &err)) == 0)
		rc = insert_all(s, &err);
	if (rc == -2) { /* the sample rows were sent, the answer is unknown */
		err_t serr = {0};
		int st = settle(s, e.days, e.n_days, e.chunks, e.n_chunks, e.rows, &serr);
		if (st == 1)
			log_info("store write confirmed", "batches=%zu after=\"%s\"", written, err.msg);
		else if (st < 0)
			doubt_add(s, &e);
		rc = st == 1 ? 0 : -1;
	}
	if (rc == 0) {
		if (s->seen.len + e.n_pending > LIMIT_CH_SEEN)
			u64map_clear(&s->seen);
		for (size_t i = 0; i < e.n_pending; i++)
			u64map_put(&s->seen, e.pending[i], 1);
	} else {
		/* ClickHouse may have lost what we think it has (a restart without its
		 * data): forget, and write the dictionaries again. */
		u64map_clear(&s->seen);
		log_warn("store write failed", "batches=%zu error=\"%s\"", written, err.msg);
	}
	free(e.pending);
	free(e.chunks);
	free(e.days);
	/* The hours compactor learns what may have changed once it has (a write
	 * that failed may have landed in part, then been removed). */
	for (size_t k = 0; k < n; k++)
		if (jobs[k])
			for (uint32_t i = 0; i < jobs[k]->b->n_profiles; i++)
				ch_hours_touch(s, jobs[k]->b->project, jobs[k]->b->profiles[i].time_ns);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	uint64_t ns = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	store_commit_note(&s->commit_stats, ns);
	for (size_t k = 0; k < n; k++)
		if (jobs[k])
			store_job_finish(jobs[k], rc == 0 ? NULL : &err);
}

/* The queue's run: a sweep, or a group of writes; finishes every job. */
static void run_group(void *ctx, store_job_t **jobs, size_t n)
{
	ch_store_t *s = ctx;
	if (jobs[0]->b) {
		write_group(s, jobs, n);
		return;
	}
	err_t err = {0};
	int rc = ch_retention_run(s, (ch_job_t *)jobs[0], &err);
	store_job_finish(jobs[0], rc == 0 ? NULL : &err);
}
