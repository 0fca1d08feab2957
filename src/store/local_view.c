/* store/local views: a read snapshot of one project's partitions over a time
 * range. Each partition gets its own read-only connection, opened on first
 * use, holding one read transaction (WAL: writers go on); dictionaries load
 * lazily, once, with one prepared SELECT each; span lookups use the spans
 * index. Sums (store_view_sums) add the merged hours of local_hours.c
 * whose stamp matches the chunks listed, and the chunks of every other hour.
 * Never writes; never trusts what it reads. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/timeutil.h"
#include "store/local.h"
#include "store/local_block.h"

typedef struct {
	char *path;
	sqlite3 *db;
	sqlite3_stmt *heads, *payload;
	sqlite3_stmt *block; /* format 2: prepared on the first sealed chunk read */
	uint32_t gen;        /* connections opened so far: decoded blocks of an earlier one are stale */
	sqlite3_stmt *by_span, *by_trace; /* prepared on first span lookup */
	int spans_table;                  /* 0 unknown, 1 present, -1 absent (written before the index) */
	arena_t *arena;
	int format; /* meta.format: 1 or 2 */
	int have_series, have_frames, have_nodes, have_attrsets, have_counts;
	store_series_t *series;
	uint32_t n_series;
	model_frame_t *frames;
	uint32_t n_frames;
	uint32_t n_nodes;
	uint32_t *parent, *frame;
	uint64_t *node_id;
	model_attrset_t *attrsets;
	model_label_t *attr_labels;
	uint32_t n_attrsets;
	uint32_t max_node, max_attrset, max_frame; /* largest local ids in the snapshot */
	int damage;     /* the last failure was damage (corrupt file, impossible values, another format) */
	int bad;        /* reported; reads as empty for the rest of the view */
	uint64_t ident; /* local_file_ident of the file this connection opened; 0 unknown */
	/* The last heads_read, in the order the index gave them (series by
	 * series in the order asked, each by time): what sums_read adds up. */
	store_chunk_head_t *sheads;
	size_t cap_sheads;
	uint32_t n_sheads;
	uint32_t *sseries;
	size_t cap_sseries;
	uint32_t n_sseries;
	int have_sheads;
	/* The merged hours of this partition (opened on the first sums_read). */
	int hours_tried;
	sqlite3 *hours;
	sqlite3_stmt *hours_get[2]; /* merged hour, merged day */
} view_part_t;

/* A decoded block in a view's cache (block_get). */
struct view_block {
	const view_part_t *vp;
	uint32_t gen;
	int64_t id;
	size_t bytes;
	uint64_t used;
	local_block_t b;
};

struct store_view {
	store_head_t head_; /* first: store.c dispatches through it */
	store_t *s;
	int64_t from_ns, until_ns;
	view_part_t *parts;
	uint32_t n_parts;
	store_chunk_head_t *heads;
	size_t cap_heads;
	store_span_hit_t *hits;
	size_t cap_hits;
	store_entry_t *entries;
	size_t cap_entries;
	uint8_t *tmp;
	size_t cap_tmp;
	ZSTD_DCtx *zd; /* made at first use (view_zd): a span lookup that finds nothing makes none */
	/* store_view_sums: the accumulator, merged rows, the answer. */
	local_hacc_t acc;
	local_hsum_t *hrows;
	size_t cap_hrows;
	store_sum_t *sums;
	size_t cap_sums;
	/* Decoded blocks (sealed chunks' entries), least recently used first
	 * out when they pass LIMIT_STORE_VIEW_BLOCK_BYTES. */
	struct view_block *blocks;
	uint32_t n_blocks;
	size_t cap_blocks, block_bytes;
	uint64_t block_tick;
	uint32_t last_block; /* index of the block the last sealed chunk came from */
	local_block_scratch_t bs;
	/* The last decoded chunk's payload: equal payloads decode once. */
	uint32_t last_part;
	int64_t last_payload, last_scale, last_t;
	uint32_t last_n;
};

/* The view's zstd context, made on first use: a view that decodes nothing
 * (a span lookup that finds no span) does not pay for one. */
static ZSTD_DCtx *view_zd(store_view_t *v)
{
	if (!v->zd)
		v->zd = xcheck(ZSTD_createDCtx());
	return v->zd;
}

static int part_err(err_t *err, view_part_t *vp, int rc, const char *what)
{
	vp->damage = local_is_damage(rc);
	return local_sqlite_err(err, vp->db, rc, vp->path, what);
}

static int damaged(err_t *err, view_part_t *vp, const char *why)
{
	vp->damage = 1;
	return err_set(err, 500, "store: %s is damaged: %s", vp->path, why);
}

/* After a failure on vp: when it was damage, vp is reported (once per file,
 * local_report_damaged) and reads as empty from now on, so the query answers
 * from the other partitions; 1 then. 0 for any other failure (err stands). */
static int part_skip(store_view_t *v, view_part_t *vp, const err_t *err)
{
	if (!vp->damage)
		return 0;
	if (!vp->bad) {
		vp->bad = 1;
		local_report_damaged(v->s, vp->path, err->msg, "skipped");
	}
	return 1;
}

int local_name_is_day(const char *n)
{
	static const char pat[] = "####-##-##.db";
	if (strlen(n) != sizeof pat - 1)
		return 0;
	for (size_t i = 0; pat[i]; i++)
		if (pat[i] == '#' ? (n[i] < '0' || n[i] > '9') : n[i] != pat[i])
			return 0;
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted "YYYY-MM-DD.db" names in dir whose day is in [first, last]. */
static char **list_days(const char *dir, const char *first, const char *last, uint32_t *n)
{
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char **names = NULL;
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!local_name_is_day(de->d_name) || strncmp(de->d_name, first, 10) < 0 ||
		    strncmp(de->d_name, last, 10) > 0)
			continue;
		names = xgrow(names, &cap, (size_t)*n + 1, sizeof *names);
		names[(*n)++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (*n > 1)
		qsort(names, *n, sizeof *names, cmp_str);
	return names;
}

/* Opens vp read-only, or, when retention deleted it since the view listed it,
 * an empty partition in memory in its place (expired data reads as none). */
static int part_open_ro(view_part_t *vp, err_t *err)
{
	struct stat stbuf;
	int rc;
	vp->ident = 0;
	uint64_t ident = local_file_ident(vp->path);
	if (stat(vp->path, &stbuf) != 0 && errno == ENOENT) {
		rc = sqlite3_open_v2(":memory:", &vp->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
		if (rc == SQLITE_OK)
			rc = local_schema_init(vp->db, LOCAL_FORMAT);
	} else {
		rc = sqlite3_open_v2(vp->path, &vp->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	}
	if (rc != SQLITE_OK)
		return part_err(err, vp, rc, "opening");
	sqlite3_busy_timeout(vp->db, 5000);
	/* One read transaction for the view's life: every later SELECT sees the
	 * snapshot the format check below pins. */
	if ((rc = sqlite3_exec(vp->db, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK)
		return part_err(err, vp, rc, "BEGIN");
	sqlite3_stmt *st;
	if ((rc = sqlite3_prepare_v2(vp->db, "SELECT value FROM meta WHERE key = 'format'", -1, &st, NULL)) !=
	    SQLITE_OK)
		return part_err(err, vp, rc, "reading the format");
	rc = sqlite3_step(st);
	int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return part_err(err, vp, rc, "reading the format");
	if (v < LOCAL_FORMAT_MIN || v > LOCAL_FORMAT) {
		vp->damage = 1; /* unreadable here, as good as damaged: skipped, reported */
		return err_set(err, 500, "store: %s has partition format %lld, this Kiln reads %d to %d",
		               vp->path, (long long)v, LOCAL_FORMAT_MIN, LOCAL_FORMAT);
	}
	vp->format = (int)v;
	/* The file read is the one stat()ed before and after opening (a file
	 * renamed in between, e.g. moved aside as damaged, gets none): merged
	 * hours are used only when made from this very file. */
	if (ident && local_file_ident(vp->path) == ident)
		vp->ident = ident;
	vp->arena = arena_new();
	return 0;
}

/* *st, prepared from sql on vp's connection at its first use (a view uses
 * few of a partition's statements: a span lookup neither heads nor
 * payloads). 0, or -1 with err. */
static int part_stmt(view_part_t *vp, sqlite3_stmt **st, const char *sql, err_t *err)
{
	if (*st)
		return 0;
	int rc = sqlite3_prepare_v3(vp->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
	return rc == SQLITE_OK ? 0 : part_err(err, vp, rc, "preparing a statement");
}

/* Closes the connection; the partition may be opened again (after a failed open). */
static void part_disconnect(view_part_t *vp)
{
	sqlite3_finalize(vp->heads);
	sqlite3_finalize(vp->payload);
	sqlite3_finalize(vp->block);
	vp->block = NULL;
	vp->gen++;
	sqlite3_finalize(vp->by_span);
	sqlite3_finalize(vp->by_trace);
	sqlite3_finalize(vp->hours_get[0]);
	sqlite3_finalize(vp->hours_get[1]);
	vp->heads = vp->payload = vp->by_span = vp->by_trace = vp->hours_get[0] = vp->hours_get[1] = NULL;
	if (vp->hours)
		sqlite3_close_v2(vp->hours);
	vp->hours = NULL;
	vp->hours_tried = 0;
	if (vp->db) {
		sqlite3_exec(vp->db, "COMMIT", NULL, NULL, NULL);
		sqlite3_close_v2(vp->db);
		vp->db = NULL;
	}
}

static void part_close_ro(view_part_t *vp)
{
	part_disconnect(vp);
	if (vp->arena)
		arena_free(vp->arena);
	free(vp->series);
	free(vp->frames);
	free(vp->parent);
	free(vp->frame);
	free(vp->node_id);
	free(vp->attrsets);
	free(vp->sheads);
	free(vp->sseries);
	free(vp->path);
}

int local_view_open(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, store_view_t **out,
                    err_t *err)
{
	char proj[3 * LIMIT_NAME_BYTES + 2];
	*out = NULL;
	if (local_project_dir(project, proj) < 0)
		return err_set(err, 400, "store: project name must be 1 to %u bytes", LIMIT_NAME_BYTES);
	/* Expired samples are never returned, whether or not their day is deleted yet. */
	int64_t start = local_retention_start(s, project, time_now_ns());
	if (from_ns < start)
		from_ns = start;
	store_view_t *v = xcalloc(1, sizeof *v);
	v->head_.engine = &store_local_engine;
	v->s = s;
	v->from_ns = from_ns;
	v->until_ns = until_ns;
	local_block_scratch_init(&v->bs);
	v->last_payload = -1;
	local_hacc_init(&v->acc);
	if (until_ns <= from_ns) {
		*out = v;
		return 0;
	}
	char first[11], last[11];
	time_day_str(time_day(from_ns < 0 ? 0 : from_ns), first);
	time_day_str(time_day(until_ns - 1 < 0 ? 0 : until_ns - 1), last);
	size_t dn = strlen(s->dir) + strlen(proj) + 2;
	char *dir = xmalloc(dn);
	snprintf(dir, dn, "%s/%s", s->dir, proj);
	uint32_t n;
	char **names = list_days(dir, first, last, &n);
	/* Files are opened by get_part, on first use: a span lookup over the
	 * whole retention opens only what it reads. */
	v->parts = xcalloc(n ? n : 1, sizeof *v->parts);
	for (uint32_t i = 0; i < n; i++) {
		size_t pn = dn + strlen(names[i]) + 1;
		view_part_t *vp = &v->parts[v->n_parts++];
		vp->path = xmalloc(pn);
		snprintf(vp->path, pn, "%s/%s", dir, names[i]);
		free(names[i]);
	}
	free(names);
	free(dir);
	*out = v;
	return 0;
}

void local_view_close(store_view_t *v)
{
	if (!v)
		return;
	for (uint32_t i = 0; i < v->n_parts; i++)
		part_close_ro(&v->parts[i]);
	free(v->parts);
	free(v->heads);
	free(v->hits);
	free(v->entries);
	free(v->tmp);
	local_hacc_free(&v->acc);
	free(v->hrows);
	free(v->sums);
	if (v->zd)
		ZSTD_freeDCtx(v->zd);
	for (uint32_t i = 0; i < v->n_blocks; i++)
		local_block_free(&v->blocks[i].b);
	free(v->blocks);
	local_block_scratch_free(&v->bs);
	free(v);
}

uint32_t local_view_partitions(const store_view_t *v)
{
	return v->n_parts;
}

static view_part_t *get_part(store_view_t *v, uint32_t p, err_t *err)
{
	if (p >= v->n_parts) {
		err_set(err, 500, "store: partition %u out of range (%u)", p, v->n_parts);
		return NULL;
	}
	view_part_t *vp = &v->parts[p];
	if (!vp->arena && !vp->bad) {
		/* Not while the retention sweep unlinks: once open (and its read
		 * transaction begun) every file is held, and unlinking no longer matters. */
		pthread_rwlock_rdlock(&v->s->files_lock);
		int rc = part_open_ro(vp, err);
		pthread_rwlock_unlock(&v->s->files_lock);
		if (rc < 0) {
			part_disconnect(vp);
			return part_skip(v, vp, err) ? vp : NULL;
		}
	}
	return vp;
}

/* Largest local ids: bounds for what chunks and nodes may reference. */
static int load_counts(view_part_t *vp, err_t *err)
{
	if (vp->have_counts)
		return 0;
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(
	    vp->db,
	    vp->format == 1
	        ? "SELECT (SELECT coalesce(max(local), 0) FROM nodes),"
	          " (SELECT coalesce(max(local), 0) FROM attrsets),"
	          " (SELECT coalesce(max(local), 0) FROM frames)"
	        : "SELECT coalesce((SELECT first + n - 1 FROM node_runs ORDER BY first DESC LIMIT 1), 0),"
	          " (SELECT coalesce(max(local), 0) FROM attrsets),"
	          " (SELECT coalesce(max(local), 0) FROM frames)",
	    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return part_err(err, vp, rc, "counting");
	rc = sqlite3_step(st);
	int64_t c[3];
	for (int i = 0; i < 3; i++)
		c[i] = sqlite3_column_int64(st, i);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return part_err(err, vp, rc, "counting");
	for (int i = 0; i < 3; i++)
		if (c[i] < 0 || c[i] > (int64_t)LIMIT_DICT_ROWS)
			return damaged(err, vp, "local ids out of range");
	vp->max_node = (uint32_t)c[0];
	vp->max_attrset = (uint32_t)c[1];
	vp->max_frame = (uint32_t)c[2];
	vp->have_counts = 1;
	return 0;
}

/* Column i of the current row as a slice copied into the view's arena. */
static slice_t col_slice(view_part_t *vp, sqlite3_stmt *st, int i)
{
	const void *p = sqlite3_column_blob(st, i);
	int n = sqlite3_column_bytes(st, i);
	return arena_slice(vp->arena, slice_make(p, p ? (size_t)n : 0));
}

/* Checks that row i of a "... ORDER BY local" scan has local id i: ids run
 * 1..n without gaps, so arrays indexed by local id are safe. */
static int dense_rows(view_part_t *vp, sqlite3_stmt *st, uint32_t i, err_t *err)
{
	if (sqlite3_column_int64(st, 0) != (int64_t)i)
		return damaged(err, vp, "local ids are not dense");
	return 0;
}

static int series_read(store_view_t *v, uint32_t p, view_part_t *vp, const store_series_t **out, uint32_t *n,
                       err_t *err)
{
	if (!vp->have_series) {
		sqlite3_stmt *st;
		int rc =
		    sqlite3_prepare_v2(vp->db,
		                       "SELECT local, id, service, type, period_type, period_unit, period,"
		                       " aggregation, cpu_alias, labels FROM series ORDER BY local",
		                       -1, &st, NULL);
		if (rc != SQLITE_OK)
			return part_err(err, vp, rc, "reading series");
		size_t cap = 0;
		uint32_t k = 0;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (dense_rows(vp, st, k + 1, err) < 0)
				break;
			vp->series = xgrow(vp->series, &cap, (size_t)k + 1, sizeof *vp->series);
			store_series_t *se = &vp->series[k];
			memset(se, 0, sizeof *se);
			se->local = k + 1;
			se->id = (uint64_t)sqlite3_column_int64(st, 1);
			se->service = col_slice(vp, st, 2);
			se->type = col_slice(vp, st, 3);
			se->period_type = col_slice(vp, st, 4);
			se->period_unit = col_slice(vp, st, 5);
			se->period = sqlite3_column_int64(st, 6);
			se->aggregation = (uint8_t)sqlite3_column_int(st, 7);
			se->cpu_alias = (uint8_t)sqlite3_column_int(st, 8);
			model_label_t *labels;
			slice_t blob =
			    slice_make(sqlite3_column_blob(st, 9), (size_t)sqlite3_column_bytes(st, 9));
			if (local_labels_decode(blob, vp->arena, &labels, &se->n_labels) < 0) {
				damaged(err, vp, "series labels");
				break;
			}
			se->labels = labels;
			k++;
		}
		sqlite3_finalize(st);
		if (rc == SQLITE_ROW)
			return -1;
		if (rc != SQLITE_DONE)
			return part_err(err, vp, rc, "reading series");
		vp->n_series = k;
		vp->have_series = 1;
	}
	*out = vp->series;
	*n = vp->n_series;
	return 0;
}

static int head_cmp(const void *a, const void *b)
{
	const store_chunk_head_t *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	return x->chunk_id < y->chunk_id ? -1 : x->chunk_id > y->chunk_id;
}

/* Reads the chunk columns local, series, t_ns, duration_ns, n_entries,
 * total, scale, payload starting at column c of the current row. */
static int read_head(view_part_t *vp, sqlite3_stmt *st, int c, store_chunk_head_t *h, err_t *err)
{
	int64_t n_entries = sqlite3_column_int64(st, c + 4);
	h->chunk_id = sqlite3_column_int64(st, c);
	h->series = (uint32_t)sqlite3_column_int64(st, c + 1);
	h->t_ns = sqlite3_column_int64(st, c + 2);
	h->duration_ns = sqlite3_column_int64(st, c + 3);
	h->n_entries = (uint32_t)n_entries;
	h->total = sqlite3_column_int64(st, c + 5);
	h->_scale = sqlite3_column_int64(st, c + 6);
	h->_payload = sqlite3_column_int64(st, c + 7);
	if (n_entries < 0 || n_entries > (int64_t)LIMIT_CHUNK_ENTRIES || h->_scale < 1)
		return damaged(err, vp, "chunk header out of range");
	return 0;
}

static int heads_read(store_view_t *v, uint32_t p, view_part_t *vp, const uint32_t *series, uint32_t n_series,
                      const store_chunk_head_t **out, uint32_t *n, err_t *err)
{
	size_t k = 0;
	if (part_stmt(vp, &vp->heads,
	              "SELECT local, series, t_ns, duration_ns, n_entries, total, scale, payload FROM chunks"
	              " WHERE series = ?1 AND t_ns >= ?2 AND t_ns < ?3 ORDER BY t_ns, local",
	              err) < 0)
		return -1;
	sqlite3_stmt *st = vp->heads;
	vp->have_sheads = 0;
	for (uint32_t i = 0; i < n_series; i++) {
		sqlite3_bind_int64(st, 1, series[i]);
		sqlite3_bind_int64(st, 2, v->from_ns);
		sqlite3_bind_int64(st, 3, v->until_ns);
		int rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			v->heads = xgrow(v->heads, &v->cap_heads, k + 1, sizeof *v->heads);
			if (read_head(vp, st, 0, &v->heads[k++], err) < 0) {
				sqlite3_reset(st);
				return -1;
			}
		}
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			return part_err(err, vp, rc, "reading chunk headers");
	}
	/* Kept for sums_read in this order: each series' chunks together. */
	vp->sheads = xgrow(vp->sheads, &vp->cap_sheads, k + 1, sizeof *vp->sheads);
	if (k)
		memcpy(vp->sheads, v->heads, k * sizeof *vp->sheads);
	vp->n_sheads = (uint32_t)k;
	vp->sseries = xgrow(vp->sseries, &vp->cap_sseries, (size_t)n_series + 1, sizeof *vp->sseries);
	if (n_series)
		memcpy(vp->sseries, series, n_series * sizeof *series);
	vp->n_sseries = n_series;
	vp->have_sheads = 1;
	/* One series comes in head_cmp's order already (the index is on (series, t_ns), then local). */
	size_t sorted = 1;
	while (sorted < k && head_cmp(&v->heads[sorted - 1], &v->heads[sorted]) <= 0)
		sorted++;
	if (sorted < k)
		qsort(v->heads, k, sizeof *v->heads, head_cmp);
	*out = v->heads;
	*n = (uint32_t)k;
	return 0;
}

/* Block id of vp decoded into the view's cache (the least recently used
 * ones out past LIMIT_STORE_VIEW_BLOCK_BYTES); NULL with err on damage. */
static struct view_block *block_get(store_view_t *v, view_part_t *vp, int64_t id, err_t *err)
{
	/* Chunks come mostly block by block: the last one first, then the rest. */
	for (uint32_t k = 0; k <= v->n_blocks; k++) {
		uint32_t i = k ? k - 1 : v->last_block;
		if (i < v->n_blocks && v->blocks[i].vp == vp && v->blocks[i].gen == vp->gen &&
		    v->blocks[i].id == id) {
			v->blocks[i].used = ++v->block_tick;
			v->last_block = i;
			return &v->blocks[i];
		}
	}
	if (part_stmt(vp, &vp->block, "SELECT head, data FROM blocks WHERE local = ?1", err) < 0)
		return NULL;
	int rc;
	sqlite3_bind_int64(vp->block, 1, id);
	if ((rc = sqlite3_step(vp->block)) != SQLITE_ROW) {
		sqlite3_reset(vp->block);
		if (rc == SQLITE_DONE) {
			char what[64];
			snprintf(what, sizeof what, "block %lld missing", (long long)id);
			return damaged(err, vp, what), NULL;
		}
		return part_err(err, vp, rc, "reading a block"), NULL;
	}
	local_block_t b = {0};
	slice_t head =
	    slice_make(sqlite3_column_blob(vp->block, 0), (size_t)sqlite3_column_bytes(vp->block, 0));
	slice_t data =
	    slice_make(sqlite3_column_blob(vp->block, 1), (size_t)sqlite3_column_bytes(vp->block, 1));
	rc = local_block_decode_head(head, view_zd(v), &v->bs, &b, err);
	if (rc == 0)
		rc =
		    local_block_decode_data(data, vp->max_node, vp->max_attrset, view_zd(v), &v->bs, &b, err);
	sqlite3_reset(vp->block);
	if (rc < 0) {
		local_block_free(&b);
		char what[sizeof err->msg];
		snprintf(what, sizeof what, "block %lld: %.200s", (long long)id, err->msg);
		return damaged(err, vp, what), NULL;
	}
	size_t bytes = b.n * sizeof *b.chunks + b.n_entries * sizeof *b.entries;
	while (v->n_blocks && v->block_bytes + bytes > LIMIT_STORE_VIEW_BLOCK_BYTES) {
		uint32_t old = 0;
		for (uint32_t i = 1; i < v->n_blocks; i++)
			if (v->blocks[i].used < v->blocks[old].used)
				old = i;
		v->block_bytes -= v->blocks[old].bytes;
		local_block_free(&v->blocks[old].b);
		v->blocks[old] = v->blocks[--v->n_blocks];
	}
	v->blocks = xgrow(v->blocks, &v->cap_blocks, (size_t)v->n_blocks + 1, sizeof *v->blocks);
	v->last_block = v->n_blocks;
	struct view_block *vb = &v->blocks[v->n_blocks++];
	*vb = (struct view_block){
	    .vp = vp, .gen = vp->gen, .id = id, .bytes = bytes, .used = ++v->block_tick, .b = b};
	v->block_bytes += bytes;
	return vb;
}

/* A sealed chunk's entries: its block's (payload column = -block id), the
 * chunk found there by id and checked against its row. */
static int block_entries(store_view_t *v, view_part_t *vp, const store_chunk_head_t *h,
                         const store_entry_t **out, uint32_t *n, err_t *err)
{
	struct view_block *vb = block_get(v, vp, -h->_payload, err);
	if (!vb)
		return -1;
	const local_block_t *b = &vb->b;
	uint32_t lo = 0, hi = b->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (b->chunks[mid].id < h->chunk_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	const local_block_chunk_t *c = lo < b->n ? &b->chunks[lo] : NULL;
	if (!c || c->id != h->chunk_id || c->t_ns != h->t_ns || c->n_entries != h->n_entries ||
	    c->total != h->total || c->scale != h->_scale) {
		char what[96];
		snprintf(what, sizeof what, "chunk %lld: %s its block", (long long)h->chunk_id,
		         c && c->id == h->chunk_id ? "header differs from" : "not in");
		return damaged(err, vp, what);
	}
	*out = b->entries + c->first;
	*n = c->n_entries;
	return 0;
}

static int entries_read(store_view_t *v, uint32_t p, view_part_t *vp, const store_chunk_head_t *h,
                        const store_entry_t **out, uint32_t *n, err_t *err)
{
	if (load_counts(vp, err) < 0)
		return -1;
	if (h->_payload < 0 && vp->format >= 2)
		return block_entries(v, vp, h, out, n, err);
	if (v->last_part == p && v->last_payload == h->_payload && v->last_scale == h->_scale &&
	    v->last_t == h->t_ns && v->last_n == h->n_entries) {
		*out = v->entries;
		*n = h->n_entries;
		return 0;
	}
	v->last_payload = -1;
	if (part_stmt(vp, &vp->payload, "SELECT data FROM payloads WHERE local = ?1", err) < 0)
		return -1;
	sqlite3_stmt *st = vp->payload;
	sqlite3_bind_int64(st, 1, h->_payload);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(st);
		if (rc == SQLITE_DONE)
			return damaged(err, vp, "chunk payload missing");
		return part_err(err, vp, rc, "reading a chunk");
	}
	slice_t data = slice_make(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
	rc = local_payload_decode(data, h->t_ns, h->_scale, h->n_entries, h->total, vp->max_node,
	                          vp->max_attrset, view_zd(v), &v->tmp, &v->cap_tmp, &v->entries,
	                          &v->cap_entries, err);
	sqlite3_reset(st);
	if (rc < 0) {
		char what[sizeof err->msg];
		snprintf(what, sizeof what, "chunk %lld: %.200s", (long long)h->chunk_id, err->msg);
		return damaged(err, vp, what);
	}
	v->last_part = p;
	v->last_payload = h->_payload;
	v->last_scale = h->_scale;
	v->last_t = h->t_ns;
	v->last_n = h->n_entries;
	*out = v->entries;
	*n = h->n_entries;
	return 0;
}

static int frames_read(store_view_t *v, uint32_t p, view_part_t *vp, const model_frame_t **out, uint32_t *n,
                       err_t *err);

/* Format 1: one nodes row each, with its id. */
static int nodes_rows_read(view_part_t *vp, err_t *err)
{
	uint32_t n = vp->max_node;
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(vp->db, "SELECT local, id, parent, frame FROM nodes ORDER BY local", -1,
	                            &st, NULL);
	if (rc != SQLITE_OK)
		return part_err(err, vp, rc, "reading nodes");
	uint32_t k = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t parent = sqlite3_column_int64(st, 2), frame = sqlite3_column_int64(st, 3);
		if (k >= n || dense_rows(vp, st, k + 1, err) < 0)
			break;
		k++;
		if (parent < 0 || parent >= (int64_t)k || frame < 1 || frame > (int64_t)vp->max_frame) {
			damaged(err, vp, "node parent or frame out of range");
			break;
		}
		vp->parent[k] = (uint32_t)parent;
		vp->frame[k] = (uint32_t)frame;
		vp->node_id[k] = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW)
		return k >= n ? damaged(err, vp, "node ids are not dense") : -1;
	if (rc != SQLITE_DONE)
		return part_err(err, vp, rc, "reading nodes");
	if (k != n)
		return damaged(err, vp, "node ids are not dense");
	return 0;
}

/* Format 2: node_runs (local_node_run_decode), ids recomputed from the frames'. */
static int node_runs_read(store_view_t *v, uint32_t p, view_part_t *vp, err_t *err)
{
	const model_frame_t *frames;
	uint32_t n_frames, n = vp->max_node;
	if (frames_read(v, p, vp, &frames, &n_frames, err) < 0)
		return -1;
	const char *what;
	int rc = local_node_runs_load(vp->db, n, vp->max_frame, vp->parent, vp->frame, &what);
	if (what)
		return damaged(err, vp, what);
	if (rc != SQLITE_DONE)
		return part_err(err, vp, rc, "reading node runs");
	uint64_t *fid = xmalloc(((size_t)n_frames + 1) * sizeof *fid);
	for (uint32_t k = 1; k <= n_frames; k++)
		fid[k] = frames[k].id;
	local_node_ids(vp->parent, vp->frame, fid, 1, n, vp->node_id);
	free(fid);
	return 0;
}

static int nodes_read(store_view_t *v, uint32_t p, view_part_t *vp, store_nodes_t *out, err_t *err)
{
	if (load_counts(vp, err) < 0)
		return -1;
	if (!vp->have_nodes) {
		uint32_t n = vp->max_node;
		free(vp->parent);
		free(vp->frame);
		free(vp->node_id);
		vp->parent = xcalloc((size_t)n + 1, sizeof *vp->parent);
		vp->frame = xcalloc((size_t)n + 1, sizeof *vp->frame);
		vp->node_id = xcalloc((size_t)n + 1, sizeof *vp->node_id);
		if ((vp->format == 1 ? nodes_rows_read(vp, err) : node_runs_read(v, p, vp, err)) < 0)
			return -1;
		vp->n_nodes = n;
		vp->have_nodes = 1;
	}
	out->n = vp->n_nodes;
	out->parent = vp->parent;
	out->frame = vp->frame;
	out->id = vp->node_id;
	return 0;
}

static int frames_read(store_view_t *v, uint32_t p, view_part_t *vp, const model_frame_t **out, uint32_t *n,
                       err_t *err)
{
	if (load_counts(vp, err) < 0)
		return -1;
	if (!vp->have_frames) {
		uint32_t max = vp->max_frame;
		vp->frames = xcalloc((size_t)max + 1, sizeof *vp->frames);
		sqlite3_stmt *st;
		int rc = sqlite3_prepare_v2(
		    vp->db,
		    "SELECT local, id, name, file, binary, build_id, kind, unsym FROM frames"
		    " ORDER BY local",
		    -1, &st, NULL);
		if (rc != SQLITE_OK)
			return part_err(err, vp, rc, "reading frames");
		uint32_t k = 0;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (k >= max || dense_rows(vp, st, k + 1, err) < 0)
				break;
			model_frame_t *f = &vp->frames[++k];
			f->id = (uint64_t)sqlite3_column_int64(st, 1);
			f->name = col_slice(vp, st, 2);
			f->file = col_slice(vp, st, 3);
			f->binary = col_slice(vp, st, 4);
			f->build_id = col_slice(vp, st, 5);
			f->kind = col_slice(vp, st, 6);
			f->unsymbolized = (uint8_t)(sqlite3_column_int(st, 7) != 0);
		}
		sqlite3_finalize(st);
		if (rc == SQLITE_ROW || (rc == SQLITE_DONE && k != max))
			return damaged(err, vp, "frame ids are not dense");
		if (rc != SQLITE_DONE)
			return part_err(err, vp, rc, "reading frames");
		vp->n_frames = max;
		vp->have_frames = 1;
	}
	*out = vp->frames;
	*n = vp->n_frames;
	return 0;
}

static int attrsets_read(store_view_t *v, uint32_t p, view_part_t *vp, const model_attrset_t **sets,
                         const model_label_t **labels, uint32_t *n, err_t *err)
{
	if (load_counts(vp, err) < 0)
		return -1;
	if (!vp->have_attrsets) {
		uint32_t max = vp->max_attrset;
		vp->attrsets = xcalloc((size_t)max + 1, sizeof *vp->attrsets);
		sqlite3_stmt *st;
		int rc = sqlite3_prepare_v2(vp->db, "SELECT local, id, labels FROM attrsets ORDER BY local",
		                            -1, &st, NULL);
		if (rc != SQLITE_OK)
			return part_err(err, vp, rc, "reading attribute sets");
		/* Labels of all sets in one array: decode each set, then lay them end to end. */
		model_label_t **per = xcalloc((size_t)max + 1, sizeof *per);
		size_t total = 0;
		uint32_t k = 0;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (k >= max || dense_rows(vp, st, k + 1, err) < 0)
				break;
			model_attrset_t *a = &vp->attrsets[++k];
			a->id = (uint64_t)sqlite3_column_int64(st, 1);
			slice_t blob =
			    slice_make(sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2));
			if (local_labels_decode(blob, vp->arena, &per[k], &a->count) < 0) {
				rc = SQLITE_CORRUPT;
				break;
			}
			total += a->count;
			if (total > UINT32_MAX) {
				rc = SQLITE_CORRUPT;
				break;
			}
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE || k != max) {
			free(per);
			if (rc == SQLITE_ROW || rc == SQLITE_CORRUPT || rc == SQLITE_DONE)
				return damaged(err, vp, "attribute sets");
			return part_err(err, vp, rc, "reading attribute sets");
		}
		vp->attr_labels = arena_alloc(vp->arena, (total ? total : 1) * sizeof *vp->attr_labels);
		uint32_t at = 0;
		for (uint32_t i = 1; i <= max; i++) {
			vp->attrsets[i].first = at;
			if (vp->attrsets[i].count)
				memcpy(vp->attr_labels + at, per[i],
				       vp->attrsets[i].count * sizeof *vp->attr_labels);
			at += vp->attrsets[i].count;
		}
		free(per);
		vp->n_attrsets = max;
		vp->have_attrsets = 1;
	}
	*sets = vp->attrsets;
	*labels = vp->attr_labels;
	*n = vp->n_attrsets;
	return 0;
}

/* ---- sums: merged hours, and the chunks of every other hour ---- */

uint64_t local_view_ident(store_view_t *v, uint32_t p)
{
	return p < v->n_parts ? v->parts[p].ident : 0;
}

/* vp's derived file of merged hours, opened read-only at the first need (NULL: none usable). */
static sqlite3 *view_hours(view_part_t *vp)
{
	if (!vp->hours_tried) {
		vp->hours_tried = 1;
		vp->hours = local_hours_open_ro(vp->path, vp->ident);
	}
	return vp->hours;
}

/* Adds to acc the merged row of (series, hour) or with day set (series,
 * day) when its stamp is st and it decodes; 0 when there is none to add. */
static int merged_add(store_view_t *v, view_part_t *vp, int day, uint32_t series, int64_t key,
                      const local_hstamp_t *st, local_hacc_t *acc)
{
	uint32_t nr;
	if (!view_hours(vp) || !local_hours_lookup(vp->hours, &vp->hours_get[day], day, series, key, st,
	                                           vp->max_node, vp->max_attrset, view_zd(v), &v->tmp,
	                                           &v->cap_tmp, &v->hrows, &v->cap_hrows, &nr))
		return 0;
	for (uint32_t k = 0; k < nr; k++)
		local_hacc_add(acc, v->hrows[k].node, v->hrows[k].attrset, v->hrows[k].value);
	return 1;
}

int local_view_merged_hour(store_view_t *v, uint32_t p, uint32_t series, int64_t hour,
                           const local_hstamp_t *st, local_hacc_t *acc, err_t *err)
{
	if (p >= v->n_parts)
		return 0;
	view_part_t *vp = &v->parts[p];
	if (load_counts(vp, err) < 0)
		return -1;
	return merged_add(v, vp, 0, series, hour, st, acc);
}

/* Adds the sums of one series' chunks h[0..n) (each hour's together, by
 * time): the whole day's merged row when the view covers the day and the
 * row's stamp is that of all these chunks; else a whole hour of the view's range whose merged row has the
 * stamp of exactly these chunks is added from that row, every other hour chunk by chunk. *used, *chunks count
 * the two. */
static int sums_series(store_view_t *v, uint32_t p, view_part_t *vp, const store_chunk_head_t *h, uint32_t n,
                       uint64_t *used, uint64_t *chunks, err_t *err)
{
	const int64_t hour_ns = 3600 * NS_PER_SEC;
	if (!n)
		return 0;
	int64_t day = time_day(h[0].t_ns);
	if (vp->hours && day * NS_PER_DAY >= v->from_ns && day * NS_PER_DAY + NS_PER_DAY <= v->until_ns) {
		local_hstamp_t st = {0};
		for (uint32_t i = 0; i < n; i++)
			local_hstamp_add(&st, &h[i]);
		if (merged_add(v, vp, 1, h[0].series, day, &st, &v->acc)) {
			(*used)++;
			return 0;
		}
	}
	for (uint32_t i = 0, j; i < n; i = j) {
		int64_t hour = local_hour(h[i].t_ns);
		local_hstamp_t st = {0};
		for (j = i; j < n && local_hour(h[j].t_ns) == hour; j++)
			local_hstamp_add(&st, &h[j]);
		if (vp->hours && hour * hour_ns >= v->from_ns && hour * hour_ns + hour_ns <= v->until_ns &&
		    merged_add(v, vp, 0, h[i].series, hour, &st, &v->acc)) {
			(*used)++;
			continue;
		}
		for (uint32_t c = i; c < j; c++) {
			const store_entry_t *e;
			uint32_t ne;
			if (entries_read(v, p, vp, &h[c], &e, &ne, err) < 0)
				return -1;
			for (uint32_t k = 0; k < ne; k++)
				local_hacc_add(&v->acc, e[k].node, e[k].attrset, e[k].value);
		}
		*chunks += j - i;
	}
	return 0;
}

static int sums_read(store_view_t *v, uint32_t p, view_part_t *vp, const uint32_t *series, uint32_t n_series,
                     const store_sum_t **out, uint32_t *n, err_t *err)
{
	const store_chunk_head_t *unused;
	uint32_t nh;
	if (load_counts(vp, err) < 0)
		return -1;
	/* The heads the caller listed are kept; list them again only when it asked for others. */
	if (!vp->have_sheads || vp->n_sseries != n_series ||
	    (n_series && memcmp(vp->sseries, series, n_series * sizeof *series) != 0))
		if (heads_read(v, p, vp, series, n_series, &unused, &nh, err) < 0)
			return -1;
	view_hours(vp);
	uint64_t used = 0, chunks = 0;
	size_t k = 0;
	const store_chunk_head_t *h = vp->sheads;
	for (uint32_t i = 0, j; i < vp->n_sheads; i = j) {
		for (j = i; j < vp->n_sheads && h[j].series == h[i].series; j++)
			;
		local_hacc_clear(&v->acc);
		if (sums_series(v, p, vp, h + i, j - i, &used, &chunks, err) < 0)
			return -1;
		uint32_t nr;
		local_hacc_rows(&v->acc, &v->hrows, &v->cap_hrows, &nr);
		v->sums = xgrow(v->sums, &v->cap_sums, k + nr + 1, sizeof *v->sums);
		for (uint32_t r = 0; r < nr; r++)
			v->sums[k++] = (store_sum_t){h[i].series, v->hrows[r].node, v->hrows[r].attrset,
			                             v->hrows[r].value};
	}
	atomic_fetch_add(&v->s->hours_used, used);
	atomic_fetch_add(&v->s->hours_chunks, chunks);
	/* Each series' rows together, by (node, attrset). */
	*out = v->sums;
	*n = (uint32_t)k;
	return 0;
}

/* ---- span links ---- */

/* Is there a spans table in vp's file? 0 with *have set, or -1 with err. */
static int spans_table_there(view_part_t *vp, int *have, err_t *err)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(
	    vp->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'spans'", -1, &st,
	    NULL);
	if (rc != SQLITE_OK)
		return part_err(err, vp, rc, "looking for the span index");
	rc = sqlite3_step(st);
	*have = rc == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : part_err(err, vp, rc, "looking for the span index");
}

/* The span lookup by span (by_trace 0) or by trace (1) in *out, prepared
 * at its first use; *absent when the file predates the index (format 1,
 * not opened for writing since: the writer makes it). The table is looked
 * for only when the statement cannot be prepared. */
static int prepare_spans(view_part_t *vp, int by_trace, sqlite3_stmt **out, int *absent, err_t *err)
{
#define HIT_COLS                                                                                             \
	"SELECT s.attrset, c.local, c.series, c.t_ns, c.duration_ns, c.n_entries, c.total, c.scale, "        \
	"c.payload"                                                                                          \
	" FROM spans s JOIN chunks c ON c.local = s.chunk"
	static const char *const sql[2] = {
	    HIT_COLS " WHERE s.span = ?1 AND (?2 IS NULL OR s.trace IS NULL OR s.trace = ?2)"
	             " AND c.t_ns >= ?3 AND c.t_ns < ?4",
	    HIT_COLS " WHERE s.trace = ?2 AND c.t_ns >= ?3 AND c.t_ns < ?4"};
#undef HIT_COLS
	sqlite3_stmt **st = by_trace ? &vp->by_trace : &vp->by_span;
	*out = *st;
	*absent = vp->spans_table < 0;
	if (*absent || *st)
		return 0;
	int rc = sqlite3_prepare_v3(vp->db, sql[by_trace], -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
	if (rc != SQLITE_OK && !vp->spans_table) {
		int have;
		if (spans_table_there(vp, &have, err) < 0)
			return -1;
		vp->spans_table = have ? 1 : -1;
		*absent = !have;
		if (!have)
			return 0;
		rc = sqlite3_prepare_v3(vp->db, sql[by_trace], -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
	}
	if (rc != SQLITE_OK)
		return part_err(err, vp, rc, "preparing the span lookup");
	vp->spans_table = 1;
	*out = *st;
	return 0;
}

static int span_chunks_read(store_view_t *v, uint32_t p, view_part_t *vp, slice_t span_id, slice_t trace_id,
                            const store_span_hit_t **out, uint32_t *n, err_t *err)
{
	*out = v->hits;
	*n = 0;
	if (!span_id.n && !trace_id.n)
		return 0; /* nothing to look up by */
	int absent;
	sqlite3_stmt *st;
	if (prepare_spans(vp, !span_id.n, &st, &absent, err) < 0)
		return -1;
	if (absent)
		return 0;
	int ok = 1;
	if (span_id.n)
		ok = local_bind_span_key(st, 1, span_id);
	if (trace_id.n)
		ok &= local_bind_span_key(st, 2, trace_id);
	else if (!span_id.n)
		ok = 0;
	sqlite3_bind_int64(st, 3, v->from_ns);
	sqlite3_bind_int64(st, 4, v->until_ns);
	size_t k = 0;
	int rc = SQLITE_DONE;
	while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (k == 0 && (rc = load_counts(vp, err)) < 0) /* a hit's attribute set is checked */
			break;
		v->hits = xgrow(v->hits, &v->cap_hits, k + 1, sizeof *v->hits);
		store_span_hit_t *h = &v->hits[k++];
		int64_t a = sqlite3_column_int64(st, 0);
		if (a < 1 || a > (int64_t)vp->max_attrset) {
			rc = damaged(err, vp, "span index names a missing attribute set");
			break;
		}
		h->attrset = (uint32_t)a;
		if ((rc = read_head(vp, st, 1, &h->head, err)) < 0)
			break;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc < 0)
		return -1;
	if (rc != SQLITE_DONE)
		return part_err(err, vp, rc, "reading the span index");
	if (k > 1)
		qsort(v->hits, k, sizeof *v->hits, store_span_hit_cmp);
	*out = v->hits;
	*n = (uint32_t)k;
	return 0;
}

/* ---- the interface: a damaged partition reads as empty (part_skip) ---- */

int local_view_skipped(const store_view_t *v, uint32_t p)
{
	return p < v->n_parts && v->parts[p].bad;
}

int local_view_series(store_view_t *v, uint32_t p, const store_series_t **out, uint32_t *n, err_t *err)
{
	view_part_t *vp = get_part(v, p, err);
	if (!vp)
		return -1;
	if (!vp->bad && series_read(v, p, vp, out, n, err) == 0)
		return 0;
	if (!part_skip(v, vp, err))
		return -1;
	*out = NULL;
	*n = 0;
	return 0;
}

int local_view_heads(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                     const store_chunk_head_t **out, uint32_t *n, err_t *err)
{
	view_part_t *vp = get_part(v, p, err);
	if (!vp)
		return -1;
	if (!vp->bad && heads_read(v, p, vp, series, n_series, out, n, err) == 0)
		return 0;
	if (!part_skip(v, vp, err))
		return -1;
	*out = v->heads;
	*n = 0;
	return 0;
}

int local_view_entries(store_view_t *v, uint32_t p, const store_chunk_head_t *h, const store_entry_t **out,
                       uint32_t *n, err_t *err)
{
	view_part_t *vp = get_part(v, p, err);
	if (!vp)
		return -1;
	if (!vp->bad && entries_read(v, p, vp, h, out, n, err) == 0)
		return 0;
	if (!part_skip(v, vp, err))
		return -1;
	*out = v->entries;
	*n = 0;
	return 0;
}

int local_view_nodes(store_view_t *v, uint32_t p, store_nodes_t *out, err_t *err)
{
	view_part_t *vp = get_part(v, p, err);
	if (!vp)
		return -1;
	if (!vp->bad && nodes_read(v, p, vp, out, err) == 0)
		return 0;
	if (!part_skip(v, vp, err))
		return -1;
	memset(out, 0, sizeof *out);
	return 0;
}

int local_view_frames(store_view_t *v, uint32_t p, const model_frame_t **out, uint32_t *n, err_t *err)
{
	view_part_t *vp = get_part(v, p, err);
	if (!vp)
		return -1;
	if (!vp->bad && frames_read(v, p, vp, out, n, err) == 0)
		return 0;
	if (!part_skip(v, vp, err))
		return -1;
	*out = NULL;
	*n = 0;
	return 0;
}

int local_view_attrsets(store_view_t *v, uint32_t p, const model_attrset_t **sets,
                        const model_label_t **labels, uint32_t *n, err_t *err)
{
	static const model_attrset_t empty_set;
	view_part_t *vp = get_part(v, p, err);
	if (!vp)
		return -1;
	if (!vp->bad && attrsets_read(v, p, vp, sets, labels, n, err) == 0)
		return 0;
	if (!part_skip(v, vp, err))
		return -1;
	*sets = &empty_set; /* attrsets[0], the empty set, stays valid */
	*labels = NULL;
	*n = 0;
	return 0;
}

int local_view_sums(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                    const store_sum_t **out, uint32_t *n, err_t *err)
{
	view_part_t *vp = get_part(v, p, err);
	if (!vp)
		return -1;
	if (!vp->bad && sums_read(v, p, vp, series, n_series, out, n, err) == 0)
		return 0;
	if (!part_skip(v, vp, err))
		return -1;
	*out = v->sums;
	*n = 0;
	return 0;
}

int local_view_span_chunks(store_view_t *v, uint32_t p, slice_t span_id, slice_t trace_id,
                           const store_span_hit_t **out, uint32_t *n, err_t *err)
{
	view_part_t *vp = get_part(v, p, err);
	if (!vp)
		return -1;
	if (!vp->bad && span_chunks_read(v, p, vp, span_id, trace_id, out, n, err) == 0)
		return 0;
	if (!part_skip(v, vp, err))
		return -1;
	*out = v->hits;
	*n = 0;
	return 0;
}
