/* store/local lifecycle and the writer thread: the submit queue, group commit
 * (everything queued when the writer is free, up to max_batches_per_commit:
 * checked, then one record of the store's log, local_log.c), and the done
 * callbacks after the group is durable. Knows nothing of the file format
 * (local_partition.c, local_chunk.c) or of reading. */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/batch_codec.h"
#include "store/local.h"

/* The engine's job of a queued store_job_t (its first member). */
#define JOB(sj) ((local_job_t *)(sj))

int local_mkdir_p(const char *dir, err_t *err)
{
	char *d = xstrdup(dir);
	for (char *c = d + 1;; c++) {
		if (*c != '/' && *c != 0)
			continue;
		char saved = *c;
		*c = 0;
		if (mkdir(d, 0755) != 0 && errno != EEXIST) {
			err_set(err, 500, "store: cannot create %s: %s", d, strerror(errno));
			free(d);
			return -1;
		}
		*c = saved;
		if (!saved)
			break;
	}
	free(d);
	return 0;
}

static void run_group(void *ctx, store_job_t **jobs, size_t n);
static int apply_start(store_t *s, err_t *err);
static void apply_stop(store_t *s);

/* What local_open set up, undone (the writer thread already joined or never started). */
static void local_free(store_t *s)
{
	local_hours_stop(s);
	apply_stop(s);
	local_scratch_t *sc = &s->sc;
	free(sc->frame_map);
	free(sc->node_map);
	free(sc->attr_map);
	free(sc->span_ref);
	free(sc->span_sets);
	free(sc->chain);
	free(sc->entries);
	buf_free(&sc->raw);
	buf_free(&sc->packed);
	buf_free(&sc->labels);
	buf_free(&s->log_rec);
	ZSTD_freeCCtx(sc->zc);
	local_sealer_free(s->sealer);
	local_parts_close_all(s);
	free(s->part_tmpl);
	if (s->log_inited)
		local_log_close(s);
	local_shared_close(s);
	local_retention_free(s);
	local_damage_free(s);
	store_writeq_destroy(&s->q);
	pthread_cond_destroy(&s->ap_room);
	pthread_cond_destroy(&s->ap_idle);
	pthread_cond_destroy(&s->ap_work);
	pthread_mutex_destroy(&s->ap_mu);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	free(s->dir);
	free(s);
}

store_t *local_open(const store_config_t *cfg, err_t *err)
{
	if (!cfg || !cfg->dir || !*cfg->dir) {
		err_set(err, 500, "store: no data directory configured");
		return NULL;
	}
	int lock_fd = -1;
	if (!cfg->keys_usage_only) {
		if (local_mkdir_p(cfg->dir, err) < 0)
			return NULL;
		/* Two processes writing one embedded store would each cache ids and open
		 * partitions as if alone: refuse the second. The lock dies with the
		 * process (kill -9 included). */
		char lock_path[4096];
		snprintf(lock_path, sizeof lock_path, "%s/LOCK", cfg->dir);
		lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (lock_fd < 0) {
			err_set(err, 500, "store: cannot open %s: %s", lock_path, strerror(errno));
			return NULL;
		}
		if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
			err_set(err, 503, "store: data directory %s is in use by another kiln process",
			        cfg->dir);
			close(lock_fd);
			return NULL;
		}
	}
	store_t *s = xcalloc(1, sizeof *s);
	s->head_.engine = &store_local_engine;
	s->lock_fd = lock_fd;
	s->keys_usage_only = cfg->keys_usage_only;
	s->dir = xstrdup(cfg->dir);
	s->sync = cfg->sync >= 0; /* 0 (unset) and 1 fsync; -1 turns it off (benchmarks only) */
	s->seal_off = cfg->seal_off;
	local_parts_init(s);
	local_retention_init(s, cfg->retention_days > 0 && cfg->retention_days <= LIMIT_RETENTION_DAYS
	                            ? cfg->retention_days
	                            : 0);
	buf_init(&s->sc.raw, SIZE_MAX);
	buf_init(&s->sc.packed, SIZE_MAX);
	buf_init(&s->sc.labels, SIZE_MAX);
	buf_init(&s->log_rec, SIZE_MAX);
	s->sc.zc = xcheck(ZSTD_createCCtx());
	pthread_mutex_init(&s->ap_mu, NULL);
	pthread_cond_init(&s->ap_work, NULL);
	pthread_cond_init(&s->ap_room, NULL);
	pthread_cond_init(&s->ap_idle, NULL);
	local_damage_init(s);
	store_writeq_config_t qc = {
	    .window_ms = cfg->commit_interval_ms > 0 ? cfg->commit_interval_ms : 0,
	    .max_jobs =
	        cfg->max_batches_per_commit > 0 ? cfg->max_batches_per_commit : LIMIT_STORE_GROUP_BATCHES,
	    .cap_jobs = cfg->queue_batches,
	    .cap_bytes = (uint64_t)cfg->queue_mib << 20,
	    .run = run_group,
	    .ctx = s,
	    .hold = cfg->hold,
	    .hold_arg = cfg->hold_arg,
	};
	int rc = local_shared_open(s, err);
	if (rc == 0 && !cfg->keys_usage_only) {
		s->log_inited = 1;
		rc = local_log_open(s, err);
		if (rc == 0)
			rc = apply_start(s, err);
		if (rc == 0)
			rc = store_writeq_start(&s->q, &qc, err);
		if (rc == 0)
			rc = local_hours_start(s, err);
	} else { /* no writer thread: the queue refuses every job (503), as while draining */
		s->q.cfg = qc;
		pthread_mutex_init(&s->q.mu, NULL);
		pthread_cond_init(&s->q.cv, NULL);
		s->q.closing = s->q.joined = 1;
	}
	if (rc < 0) {
		local_free(s);
		return NULL;
	}
	return s;
}

void local_drain(store_t *s)
{
	store_writeq_drain(&s->q);
	apply_stop(s);
}

void local_close(store_t *s)
{
	if (!s)
		return;
	local_drain(s);
	local_free(s);
}

void local_submit(store_t *s, model_batch_t *b, store_done_fn done, void *ctx)
{
	local_job_t *j = xcalloc(1, sizeof *j);
	j->base.b = b;
	j->base.done = done;
	j->base.ctx = ctx;
	store_writeq_push(&s->q, &j->base);
}

/* Queues j (done and ctx set here) and waits for the writer to finish it. */
static int run_sync(store_t *s, local_job_t *j, err_t *err)
{
	store_waiter_t w;
	store_waiter_init(&w);
	j->base.done = store_waiter_done;
	j->base.ctx = &w;
	store_writeq_push(&s->q, &j->base);
	return store_waiter_wait(&w, err);
}

int local_retention_sweep(store_t *s, slice_t project, int keep_days, int64_t now_ns, uint32_t *deleted,
                          err_t *err)
{
	uint32_t n = 0;
	local_job_t *j = xcalloc(1, sizeof *j);
	if (local_project_dir(project, j->proj) < 0) {
		free(j);
		return err_set(err, 400, "store: project name must be 1 to %u bytes", LIMIT_NAME_BYTES);
	}
	j->keep_days = keep_days;
	j->now_ns = now_ns;
	j->deleted = &n;
	int rc = run_sync(s, j, err);
	if (deleted)
		*deleted = n;
	return rc;
}

uint32_t local_queue_depth(store_t *s)
{
	return store_writeq_depth(&s->q);
}

/* ---- group commit ---- */

/* What must hold before a batch goes into the log, so that applying it can
 * fail only on I/O or damage: its project name, the retention floor, its shape. */
static int check_job(store_t *s, local_job_t *j, err_t *err)
{
	const model_batch_t *b = j->base.b;
	if (local_project_dir(b->project, j->proj) < 0)
		return err_set(err, 400, "store: project name must be 1 to %u bytes", LIMIT_NAME_BYTES);
	if (local_retention_check(s, j->proj, b, err) < 0)
		return -1;
	return batch_codec_check(b, err);
}

/* A group the log thread hands to the apply thread (or a sweep). */
typedef struct local_apply_item {
	struct local_apply_item *next;
	store_job_t **jobs; /* all of the group, answered by the log thread, finished after applying */
	size_t n;
	model_batch_t **b; /* the appended ones, with their project dirs */
	char **proj;
	uint32_t m;
	uint64_t lsn;   /* 0: nothing was appended */
	uint64_t bytes; /* the memory of its batches (counted in ap_bytes) */
	uint64_t rec_n; /* its record's bytes in the log */
	int64_t t_ns;   /* when it was handed over */
} local_apply_item_t;

/* Fails every job of it that has not failed yet. */
static void fail_rest(local_apply_item_t *it, const err_t *err)
{
	for (size_t k = 0; k < it->n; k++) {
		local_job_t *j = JOB(it->jobs[k]);
		if (!j->failed && j->base.b->n_profiles) {
			j->err = *err;
			j->failed = 1;
		}
	}
}

/* The log thread's half of a group: checks jobs, then appends those with
 * profiles as one record; the others fail with their own error. */
static void log_group(store_t *s, local_apply_item_t *it)
{
	it->b = xmalloc(it->n * sizeof *it->b);
	it->proj = xmalloc(it->n * sizeof *it->proj);
	for (size_t k = 0; k < it->n; k++) {
		local_job_t *j = JOB(it->jobs[k]);
		if (!j->base.b->n_profiles)
			continue;
		if (check_job(s, j, &j->err) < 0) {
			j->failed = 1;
			continue;
		}
		it->b[it->m] = j->base.b;
		it->proj[it->m++] = j->proj;
		it->bytes += it->jobs[k]->bytes;
	}
	if (!it->m)
		return;
	err_t err = {0};
	if (atomic_load(&s->behind)) {
		/* A durable group waits for its partitions: nothing more is appended until it is in. */
		pthread_mutex_lock(&s->ap_mu);
		err = s->behind_err;
		pthread_mutex_unlock(&s->ap_mu);
		fail_rest(it, &err);
		return;
	}
	if (local_log_append(s, it->b, it->m, &it->lsn, &it->rec_n, &err) < 0) {
		it->lsn = 0;
		fail_rest(it, &err);
	}
}

/* Nanoseconds until what waits is due for a pass (ap_mu held, ap_head set):
 * 0 when it is (LOCAL_APPLY_DELAY_MS). */
static int64_t apply_due_in(const store_t *s)
{
	if (s->ap_urgent || s->ap_stop || atomic_load(&s->behind) || s->ap_n >= LOCAL_APPLY_DEPTH / 2 ||
	    s->ap_bytes >= LIMIT_STORE_APPLY_BYTES / 2 || s->ap_batches >= LOCAL_APPLY_PASS_BATCHES)
		return 0;
	int64_t left = s->ap_head->t_ns + (int64_t)LOCAL_APPLY_DELAY_MS * 1000000 - time_mono_ns();
	return left > 0 ? left : 0;
}

/* Hands it to the apply thread; waits while the groups handed over reach
 * LOCAL_APPLY_DEPTH or LIMIT_STORE_APPLY_BYTES (ap_mu held). The apply
 * thread is woken only when its wait changes: the first group it will
 * gather (its gathering delay starts), or a pass due now; other groups
 * would wake it only to wait again (no CPU difference was measured,
 * bench/commit at 1,000 projects). */
static void hand_over(store_t *s, local_apply_item_t *it)
{
	while (s->ap_n >= LOCAL_APPLY_DEPTH || (s->ap_n && s->ap_bytes + it->bytes > LIMIT_STORE_APPLY_BYTES))
		pthread_cond_wait(&s->ap_room, &s->ap_mu);
	int first = !s->ap_head;
	if (s->ap_tail)
		s->ap_tail->next = it;
	else
		s->ap_head = it;
	s->ap_tail = it;
	it->t_ns = time_mono_ns();
	s->ap_n++;
	s->ap_bytes += it->bytes;
	s->ap_batches += it->m;
	if (!it->jobs[0]->b)
		s->ap_urgent++; /* a sweep: everything before it is written now */
	if (first || apply_due_in(s) == 0)
		pthread_cond_signal(&s->ap_work);
}

/* The queue's run (the log thread): a group is checked and appended, its
 * jobs answered (durable in the log, the commit point), then it is handed
 * to the apply thread, which writes it to its partitions. A sweep is handed
 * over as it is, and the log thread waits for it, so every later group is
 * checked against the floor it sets. */
static void run_group(void *ctx, store_job_t **jobs, size_t n)
{
	store_t *s = ctx;
	int64_t t0 = time_mono_ns();
	local_apply_item_t *it = xcalloc(1, sizeof *it);
	it->jobs = xmalloc(n * sizeof *jobs);
	memcpy(it->jobs, jobs, n * sizeof *jobs);
	it->n = n;
	int sweep = !jobs[0]->b;
	if (!sweep) {
		log_group(s, it);
		/* Counted before any answer, so a client answered reads its commit in the stats. */
		store_commit_note(&s->commit_stats, (uint64_t)(time_mono_ns() - t0));
		for (size_t k = 0; k < n; k++) {
			local_job_t *j = JOB(jobs[k]);
			store_job_answer(jobs[k], j->failed ? &j->err : NULL);
		}
	}
	pthread_mutex_lock(&s->ap_mu);
	hand_over(s, it);
	pthread_mutex_unlock(&s->ap_mu);
	if (sweep)
		local_apply_wait(s);
}

void local_apply_wait(store_t *s)
{
	pthread_mutex_lock(&s->ap_mu);
	s->ap_urgent++;
	pthread_cond_signal(&s->ap_work);
	while (s->ap_n || s->ap_busy || s->ap_open)
		pthread_cond_wait(&s->ap_idle, &s->ap_mu);
	s->ap_urgent--;
	pthread_mutex_unlock(&s->ap_mu);
}

void local_apply_hurry(store_t *s, int delta)
{
	pthread_mutex_lock(&s->ap_mu);
	s->ap_urgent += (uint32_t)delta;
	if (delta > 0)
		pthread_cond_signal(&s->ap_work);
	pthread_mutex_unlock(&s->ap_mu);
}

/* Finishes every job of it (answered already, unless a sweep) and frees it. */
static void item_free(local_apply_item_t *it)
{
	for (size_t k = 0; k < it->n; k++) {
		local_job_t *j = JOB(it->jobs[k]);
		store_job_finish(it->jobs[k], j->failed ? &j->err : NULL);
	}
	free(it->b);
	free(it->proj);
	free(it->jobs);
	free(it);
}

/* The apply thread's half: a sweep runs alone, after every open partition
 * transaction is committed; appended groups taken together are written to
 * their partitions in one pass, then the transactions that are due (all of
 * them when all is set: someone waits) are committed. */
static void apply_items(store_t *s, local_apply_item_t *first, int all)
{
	if (!first->jobs[0]->b) { /* a retention sweep, always alone */
		local_log_settle(s, 1);
		err_t err = {0};
		if (local_retention_run(s, JOB(first->jobs[0]), &err) < 0) {
			JOB(first->jobs[0])->err = err;
			JOB(first->jobs[0])->failed = 1;
		}
	} else {
		uint32_t n = 0;
		for (local_apply_item_t *it = first; it; it = it->next)
			n += it->lsn != 0;
		local_group_t *g = xmalloc((n ? n : 1) * sizeof *g);
		n = 0;
		for (local_apply_item_t *it = first; it; it = it->next)
			if (it->lsn)
				g[n++] = (local_group_t){it->lsn, it->b, it->proj, it->m, it->rec_n};
		if (n)
			local_log_apply(s, g, n);
		free(g);
		local_log_settle(s, all);
	}
	local_parts_trim(s, LIMIT_STORE_OPEN_PARTS);
	while (first) {
		local_apply_item_t *next = first->next;
		item_free(first);
		first = next;
	}
}

/* Takes what waits (ap_mu held, ap_head set): a sweep alone, else groups up
 * to the next sweep and LOCAL_APPLY_PASS_BATCHES batches (at least one). */
static local_apply_item_t *take_items(store_t *s)
{
	local_apply_item_t *first = s->ap_head, *last = first;
	uint32_t batches = first->m;
	if (first->jobs[0]->b)
		while (last->next && last->next->jobs[0]->b &&
		       batches + last->next->m <= LOCAL_APPLY_PASS_BATCHES) {
			last = last->next;
			batches += last->m;
		}
	s->ap_head = last->next;
	if (!s->ap_head)
		s->ap_tail = NULL;
	last->next = NULL;
	for (local_apply_item_t *it = first; it; it = it->next) {
		s->ap_n--;
		s->ap_bytes -= it->bytes;
		s->ap_batches -= it->m;
		if (!it->jobs[0]->b)
			s->ap_urgent--;
	}
	return first;
}

/* ap_mu held: one sealing step (local_log_seal_step) when one is due or
 * asked for (local_seal_wait), with ap_mu released meanwhile. 1 when it ran. */
static int seal_if_due(store_t *s)
{
	int asked = s->seal_req != s->seal_gen;
	if (atomic_load(&s->behind) || (!asked && (s->seal_off || time_mono_ns() < s->seal_next)))
		return 0;
	uint64_t req = s->seal_req;
	s->ap_busy = 1;
	pthread_mutex_unlock(&s->ap_mu);
	int more = local_log_seal_step(s, asked, asked && !s->seal_wait_quiet);
	if (!more && s->sealer) {
		/* Nothing left to seal for now: its zstd contexts and buffers are
		 * not kept between bursts. */
		local_sealer_free(s->sealer);
		s->sealer = NULL;
	}
	pthread_mutex_lock(&s->ap_mu);
	s->ap_busy = 0;
	s->seal_next = time_mono_ns() + (more ? 0 : (int64_t)LOCAL_SEAL_STEP_MS * 1000000);
	if (asked && !more)
		s->seal_gen = req;
	pthread_cond_broadcast(&s->ap_idle);
	return 1;
}

void local_seal_wait(store_t *s)
{
	pthread_mutex_lock(&s->ap_mu);
	uint64_t want = ++s->seal_req;
	pthread_cond_signal(&s->ap_work);
	while (s->seal_gen < want && s->ap_running)
		pthread_cond_wait(&s->ap_idle, &s->ap_mu);
	pthread_mutex_unlock(&s->ap_mu);
	local_apply_wait(s);
}

static void *apply_main(void *arg)
{
	store_t *s = arg;
	int64_t last_retry = 0;
	pthread_mutex_lock(&s->ap_mu);
	for (;;) {
		/* Kept groups are tried again every second (and before each new group). */
		if (atomic_load(&s->behind) && time_mono_ns() / 1000000 - last_retry >= 1000) {
			pthread_mutex_unlock(&s->ap_mu);
			err_t err = {0};
			local_log_retry(s, &err);
			last_retry = time_mono_ns() / 1000000;
			pthread_mutex_lock(&s->ap_mu);
			continue;
		}
		if (!s->ap_head && !s->ap_stop) {
			/* Nothing to write: open transactions are committed when due, or
			 * at once when someone waits for them. */
			int64_t due = s->ap_open ? s->txn_oldest + (int64_t)LOCAL_APPLY_TXN_MS * 1000000 -
			                               time_mono_ns()
			                         : -1;
			if (s->ap_open && (s->ap_urgent || due <= 0)) {
				int all = s->ap_urgent > 0;
				s->ap_busy = 1;
				pthread_mutex_unlock(&s->ap_mu);
				local_log_settle(s, all);
				local_parts_trim(s, LIMIT_STORE_OPEN_PARTS);
				pthread_mutex_lock(&s->ap_mu);
				s->ap_busy = 0;
				if (!s->ap_head)
					pthread_cond_broadcast(&s->ap_idle);
				continue;
			}
			if (seal_if_due(s))
				continue;
			/* Until work comes, a transaction is due, the next sealing
			 * step, or (kept groups) the next retry. */
			int64_t ns = atomic_load(&s->behind) ? 250 * 1000000 : s->seal_next - time_mono_ns();
			if (due >= 0 && due < ns)
				ns = due;
			struct timespec t;
			time_deadline(&t, ns > 0 ? ns : 0);
			pthread_cond_timedwait(&s->ap_work, &s->ap_mu, &t);
			continue;
		}
		if (!s->ap_head) {
			/* Stopping: what is open is committed before the thread ends. */
			pthread_mutex_unlock(&s->ap_mu);
			local_log_settle(s, 1);
			pthread_mutex_lock(&s->ap_mu);
			break;
		}
		int64_t wait_ns = apply_due_in(s);
		if (wait_ns > 0 && seal_if_due(s))
			continue;
		if (wait_ns > 0) {
			struct timespec t;
			time_deadline(&t, wait_ns);
			pthread_cond_timedwait(&s->ap_work, &s->ap_mu, &t);
			continue;
		}
		local_apply_item_t *first = take_items(s);
		int all = s->ap_urgent || s->ap_stop;
		s->ap_busy = 1;
		pthread_cond_signal(&s->ap_room);
		pthread_mutex_unlock(&s->ap_mu);
		apply_items(s, first, all);
		pthread_mutex_lock(&s->ap_mu);
		s->ap_busy = 0;
		if (!s->ap_head)
			pthread_cond_broadcast(&s->ap_idle);
	}
	pthread_mutex_unlock(&s->ap_mu);
	return NULL;
}

static int apply_start(store_t *s, err_t *err)
{
	if (pthread_create(&s->ap_thread, NULL, apply_main, s) != 0)
		return err_set(err, 500, "store: cannot start the apply thread");
	pthread_setname_np(s->ap_thread, "kiln-apply");
	s->ap_running = 1;
	return 0;
}

/* After the log thread stopped: the apply thread finishes what was handed to it and exits. */
static void apply_stop(store_t *s)
{
	if (!s->ap_running)
		return;
	pthread_mutex_lock(&s->ap_mu);
	s->ap_stop = 1;
	pthread_cond_signal(&s->ap_work);
	pthread_mutex_unlock(&s->ap_mu);
	pthread_join(s->ap_thread, NULL);
	s->ap_running = 0;
}

/* Counts DIR/<project>/YYYY-MM-DD.db files. */
static uint32_t count_partitions(const char *dir)
{
	uint32_t n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char sub[4096];
		snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
		DIR *p = opendir(sub);
		if (!p)
			continue;
		struct dirent *f;
		while ((f = readdir(p))) {
			size_t l = strlen(f->d_name);
			if (l == 13 && !strcmp(f->d_name + 10, ".db"))
				n++;
		}
		closedir(p);
	}
	closedir(d);
	return n;
}

/* No read barrier: /metrics calls it on the event loop, which must not wait
 * for the apply thread (a partition file may appear a pass after its 200). */
void local_get_stats(store_t *s, store_stats_t *out)
{
	store_commit_read(&s->commit_stats, out);
	out->partitions = count_partitions(s->dir);
	out->damaged = atomic_load(&s->damaged_count);
	out->sealed_blocks = atomic_load(&s->sealed_blocks);
	out->sealed_chunks = atomic_load(&s->sealed_chunks);
	out->hours_written = atomic_load(&s->hours_written);
	out->hours_used = atomic_load(&s->hours_used);
	store_writeq_ack_read(&s->q, out);
}

/* Reads see every write answered before they began (local_read_barrier). */
static int view_open_after_writes(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns,
                                  store_view_t **out, err_t *err)
{
	local_read_barrier(s);
	return local_view_open(s, project, from_ns, until_ns, out, err);
}

const store_engine_t store_local_engine = {
    .name = "local",
    .drain = local_drain,
    .close = local_close,
    .submit = local_submit,
    .queue_depth = local_queue_depth,
    .read_barrier = local_read_barrier,
    .set_retention = local_set_retention,
    .retention_start = local_retention_start,
    .projects = local_projects,
    .retention_sweep = local_retention_sweep,
    .get_stats = local_get_stats,
    .usage_write = local_usage_write,
    .usage_read = local_usage_read,
    .keys_create = local_keys_create,
    .keys_revoke = local_keys_revoke,
    .keys_read = local_keys_read,
    .keys_poll = local_keys_poll,
    .view_open = view_open_after_writes,
    .view_close = local_view_close,
    .view_partitions = local_view_partitions,
    .view_skipped = local_view_skipped,
    .view_series = local_view_series,
    .view_heads = local_view_heads,
    .view_entries = local_view_entries,
    .view_nodes = local_view_nodes,
    .view_frames = local_view_frames,
    .view_attrsets = local_view_attrsets,
    .view_span_chunks = local_view_span_chunks,
    .view_sums = local_view_sums,
};
