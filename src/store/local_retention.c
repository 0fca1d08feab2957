/* store/local retention (OPS: Retention): per-project retention days (which clamp
 * views), the sweep that deletes expired day partitions as whole files on the
 * writer thread, the floor that then refuses writes to deleted days, and the
 * list of projects on disk. Rows are never deleted one by one. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/local.h"

void local_retention_init(store_t *s, int default_days)
{
	pthread_mutex_init(&s->ret_mu, NULL);
	/* Views open partitions often, the sweep runs rarely: let it not starve. */
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->files_lock, &a);
	pthread_rwlockattr_destroy(&a);
	s->default_days = default_days;
}

void local_retention_free(store_t *s)
{
	free(s->ret);
	s->ret = NULL;
	s->n_ret = 0;
	pthread_rwlock_destroy(&s->files_lock);
	pthread_mutex_destroy(&s->ret_mu);
}

/* The entry of project dir proj, added when add is set (else NULL if none). Under ret_mu. */
static local_retention_t *ret_find(store_t *s, const char *proj, int add)
{
	for (uint32_t i = 0; i < s->n_ret; i++)
		if (strcmp(s->ret[i].proj, proj) == 0)
			return &s->ret[i];
	if (!add)
		return NULL;
	s->ret = xgrow(s->ret, &s->cap_ret, (size_t)s->n_ret + 1, sizeof *s->ret);
	local_retention_t *r = &s->ret[s->n_ret++];
	memset(r, 0, sizeof *r);
	snprintf(r->proj, sizeof r->proj, "%s", proj);
	r->floor_day = INT64_MIN;
	return r;
}

int local_set_retention(store_t *s, slice_t project, int days, err_t *err)
{
	char proj[3 * LIMIT_NAME_BYTES + 2];
	if (local_project_dir(project, proj) < 0)
		return err_set(err, 400, "store: project name must be 1 to %u bytes", LIMIT_NAME_BYTES);
	if (days < 0 || days > LIMIT_RETENTION_DAYS)
		return err_set(err, 400, "store: retention must be 0 to %d days", LIMIT_RETENTION_DAYS);
	pthread_mutex_lock(&s->ret_mu);
	ret_find(s, proj, 1)->days = days;
	pthread_mutex_unlock(&s->ret_mu);
	return 0;
}

int local_retention_days(store_t *s, const char *proj)
{
	pthread_mutex_lock(&s->ret_mu);
	const local_retention_t *r = ret_find(s, proj, 0);
	int days = r && r->days ? r->days : s->default_days;
	pthread_mutex_unlock(&s->ret_mu);
	return days;
}

int64_t local_retention_start(store_t *s, slice_t project, int64_t now_ns)
{
	char proj[3 * LIMIT_NAME_BYTES + 2];
	if (local_project_dir(project, proj) < 0)
		return INT64_MIN;
	int days = local_retention_days(s, proj);
	int64_t start;
	if (days <= 0 || __builtin_sub_overflow(now_ns, (int64_t)days * NS_PER_DAY, &start))
		return INT64_MIN;
	return start;
}

int local_retention_check(store_t *s, const char *proj, const model_batch_t *b, err_t *err)
{
	if (!b->n_profiles)
		return 0;
	int64_t oldest = store_oldest_day(b);
	pthread_mutex_lock(&s->ret_mu);
	const local_retention_t *r = ret_find(s, proj, 0);
	int64_t floor = r ? r->floor_day : INT64_MIN;
	pthread_mutex_unlock(&s->ret_mu);
	return oldest >= floor ? 0 : store_floor_error(err, oldest, floor, b->project);
}

/* The day of a partition file name "YYYY-MM-DD.db" followed by one of the
 * suffixes SQLite and the writer leave beside it, or by the merged hours
 * derived from it (local_hours.c) and their SQLite files; 0 when n is no
 * such name. */
static int part_file_day(const char *n, char day[11])
{
	static const char *const suffix[] = {"",       "-wal",       "-shm",       "-journal",      ".new",
	                                     ".hours", ".hours-wal", ".hours-shm", ".hours-journal"};
	static const char pat[] = "####-##-##.db";
	for (size_t i = 0; i < sizeof pat - 1; i++)
		if (pat[i] == '#' ? (n[i] < '0' || n[i] > '9') : n[i] != pat[i])
			return 0;
	for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++)
		if (strcmp(n + sizeof pat - 1, suffix[i]) == 0) {
			memcpy(day, n, 10);
			day[10] = 0;
			return 1;
		}
	return 0;
}

int local_retention_run(store_t *s, local_job_t *j, err_t *err)
{
	int64_t floor = time_day(j->now_ns) - j->keep_days;
	char first[11];
	time_day_str(floor, first);
	pthread_mutex_lock(&s->ret_mu);
	ret_find(s, j->proj, 1)->floor_day = floor;
	pthread_mutex_unlock(&s->ret_mu);
	/* Between groups no partition is in a transaction. */
	local_parts_close_before(s, j->proj, floor);

	size_t dn = strlen(s->dir) + strlen(j->proj) + 2;
	char *dir = xmalloc(dn);
	snprintf(dir, dn, "%s/%s", s->dir, j->proj);
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		int rc = e == ENOENT ? 0 : err_set(err, 500, "store: cannot list %s: %s", dir, strerror(e));
		free(dir);
		return rc;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	char day[11];
	/* Day strings compare like the days (four-digit years). */
	while ((de = readdir(d)))
		if (part_file_day(de->d_name, day) && strcmp(day, first) < 0) {
			names = xgrow(names, &cap, n + 1, sizeof *names);
			names[n++] = xstrdup(de->d_name);
		}
	closedir(d);

	int rc = 0;
	uint32_t deleted = 0;
	/* Groups in the log before now must never be replayed into the files
	 * deleted below (that would bring expired days back): checkpoint first. */
	if (n && local_log_checkpoint(s, err) < 0) {
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		free(dir);
		return -1;
	}
	pthread_rwlock_wrlock(&s->files_lock);
	for (size_t i = 0; i < n; i++) {
		size_t pn = dn + strlen(names[i]) + 1;
		char *path = xmalloc(pn);
		snprintf(path, pn, "%s/%s", dir, names[i]);
		if (unlink(path) == 0) {
			deleted += strcmp(names[i] + 10, ".db") == 0;
		} else if (errno != ENOENT) {
			log_error("store: retention could not delete a file", "file=%s err=\"%s\"", path,
			          strerror(errno));
			if (!rc)
				rc = err_set(err, 500, "store: cannot delete %s: %s", path, strerror(errno));
		}
		free(path);
		free(names[i]);
	}
	pthread_rwlock_unlock(&s->files_lock);
	if (n && s->sync)
		local_fsync_dir(dir);
	if (deleted)
		log_info("store: retention deleted partitions",
		         "project=%s keep_days=%d before=%s partitions=%u", j->proj, j->keep_days, first,
		         deleted);
	*j->deleted = deleted;
	free(names);
	free(dir);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int local_projects(store_t *s, void (*cb)(slice_t project, void *ctx), void *ctx, err_t *err)
{
	DIR *d = opendir(s->dir);
	if (!d)
		return err_set(err, 500, "store: cannot list %s: %s", s->dir, strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	char name[LIMIT_NAME_BYTES];
	size_t len;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && local_project_name(de->d_name, name, &len) == 0) {
			names = xgrow(names, &cap, n + 1, sizeof *names);
			names[n++] = xstrdup(de->d_name);
		}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof *names, cmp_str);
	size_t dn = strlen(s->dir) + 3 * LIMIT_NAME_BYTES + 3;
	char *path = xmalloc(dn);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		snprintf(path, dn, "%s/%s", s->dir, names[i]);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
		    local_project_name(names[i], name, &len) == 0)
			cb(slice_make(name, len), ctx);
		free(names[i]);
	}
	free(path);
	free(names);
	return 0;
}
