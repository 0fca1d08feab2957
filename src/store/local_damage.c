/* store/local damaged partitions: a day file SQLite calls corrupt (or not a
 * database) is reported once — a log line and the
 * kiln_store_partitions_damaged counter — and then:
 *  - views read it as empty, so a query over several days still answers
 *    from the others (local_view.c);
 *  - the writer moves it aside (DAY.db.damaged-UNIXSECONDS, with its -wal and
 *    -shm) and starts a fresh file for the day, so ingestion goes on; the
 *    moved file is kept for recovery (`sqlite3 FILE .recover`), never
 *    deleted (docs/OPERATIONS.md, "Damaged partitions"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/log.h"
#include "store/local.h"

int local_is_damage(int sqlite_rc)
{
	int primary = sqlite_rc & 0xff;
	return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

void local_damage_init(store_t *s)
{
	pthread_mutex_init(&s->damage_mu, NULL);
}

void local_damage_free(store_t *s)
{
	for (uint32_t i = 0; i < s->n_damaged; i++)
		free(s->damaged[i]);
	free(s->damaged);
	pthread_mutex_destroy(&s->damage_mu);
}

void local_report_damaged(store_t *s, const char *path, const char *why, const char *action)
{
	pthread_mutex_lock(&s->damage_mu);
	int seen = 0;
	for (uint32_t i = 0; i < s->n_damaged && !seen; i++)
		seen = strcmp(s->damaged[i], path) == 0;
	if (!seen && s->n_damaged < LIMIT_DAMAGED_FILES) {
		s->damaged = xgrow(s->damaged, &s->cap_damaged, (size_t)s->n_damaged + 1, sizeof *s->damaged);
		s->damaged[s->n_damaged++] = xstrdup(path);
	}
	pthread_mutex_unlock(&s->damage_mu);
	if (seen)
		return;
	atomic_fetch_add(&s->damaged_count, 1);
	log_error("store partition is damaged", "file=%s action=%s error=\"%s\"", path, action, why);
}

/* rename(from + suffix, to + suffix); a missing source is fine. */
static int move_one(const char *from, const char *to, const char *suffix)
{
	char a[4200], b[4200];
	snprintf(a, sizeof a, "%s%s", from, suffix);
	snprintf(b, sizeof b, "%s%s", to, suffix);
	if (rename(a, b) == 0 || errno == ENOENT)
		return 0;
	log_error("store: cannot move a damaged partition aside", "file=%s to=%s error=\"%s\"", a, b,
	          strerror(errno));
	return -1;
}

int local_quarantine(store_t *s, const char *path, const char *why)
{
	char to[4200];
	snprintf(to, sizeof to, "%s.damaged-%lld", path, (long long)time(NULL));
	local_report_damaged(s, path, why, "moved_aside");
	/* The WAL first: a -wal beside a fresh DAY.db would be replayed into it. */
	if (move_one(path, to, "-wal") < 0 || move_one(path, to, "-shm") < 0 || move_one(path, to, "") < 0)
		return -1;
	log_warn("store: damaged partition moved aside; a new one is started", "file=%s moved_to=%s", path,
	         to);
	char dir[4200];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		local_fsync_dir(dir);
	}
	return 0;
}
