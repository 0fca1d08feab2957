/* Tests keys and usage through their one API (ingest/keys.h, ingest/usage.h
 * over store.h) with the same table of operations on every engine: the
 * embedded store as a server opens it, the embedded store as `kiln keys`
 * opens it beside a server (keys_usage_only), and ClickHouse when
 * KILN_TEST_CLICKHOUSE_URL names one (a fresh database per run; skipped
 * otherwise: the black-box ClickHouse pass covers it). Expected values are
 * written out by hand, not computed by the code under test. */
#include <sqlite3.h>
#include <unistd.h>

#include "helpers.h"

#include "base/timeutil.h"
#include "ingest/keys.h"
#include "ingest/usage.h"

#define DAY0 (20789LL * NS_PER_DAY) /* 2026-12-02 */

enum {
	OP_CREATE,  /* project, name, scope → want (0, or -1 with status); the key goes to slot */
	OP_REVOKE,  /* name → want (0 now, 1 already, -1 with status) */
	OP_LIST,    /* → text: "name/project/scope/active|revoked" joined by ' ', in list order */
	OP_REFRESH, /* the snapshot rereads the store (waits out ClickHouse's one-second cadence) */
	OP_LOOKUP, /* the key of slot (or text when slot < 0) → text: "project/name/scope", "" if refused */
	OP_ADD,    /* project, name (the key name), t_ns, accepted, reason, samples */
	OP_FLUSH,  /* → want */
	OP_READ,   /* project, from_ns, until_ns → text: "day/project/key:a,rl,tl,inv,oow" joined by ' ';
	              fresh: through a new usage_t (only what the store holds) */
};

typedef struct {
	int op;
	const char *project, *name;
	int scope, slot;
	int want, status;
	const char *text;
	int64_t t_ns, from_ns, until_ns;
	uint64_t accepted, samples;
	int reason, fresh;
} step;

static const step STEPS[] = {
    {OP_LIST, .text = ""},
    {OP_CREATE, .project = "shop", .name = "ci", .scope = KEY_SCOPE_INGEST, .slot = 0},
    {OP_CREATE, .project = "other", .name = "grafana", .scope = KEY_SCOPE_QUERY, .slot = 1},
    {OP_CREATE, .project = "elsewhere", .name = "ci", .scope = KEY_SCOPE_BOTH, .slot = 2, .want = -1,
     .status = 400}, /* names are global */
    {OP_CREATE, .project = "a b", .name = "x", .scope = KEY_SCOPE_BOTH, .slot = 2, .want = -1, .status = 400},
    {OP_CREATE, .project = "p", .name = "y", .scope = 7, .slot = 2, .want = -1, .status = 400},
    {OP_LIST, .text = "grafana/other/query/active ci/shop/ingest/active"},
    {.op = OP_REFRESH},
    {OP_LOOKUP, .slot = 0, .text = "shop/ci/ingest"},
    {OP_LOOKUP, .slot = 1, .text = "other/grafana/query"},
    {OP_LOOKUP, .slot = -1, .name = "kiln_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", .text = ""},
    {OP_REVOKE, .name = "ci", .want = 0},
    {OP_REVOKE, .name = "ci", .want = 1},
    {OP_REVOKE, .name = "nope", .want = -1, .status = 404},
    {.op = OP_REFRESH},
    {OP_LOOKUP, .slot = 0, .text = ""},
    {OP_LOOKUP, .slot = 1, .text = "other/grafana/query"},
    {OP_LIST, .text = "grafana/other/query/active ci/shop/ingest/revoked"},
    {OP_CREATE, .project = "shop", .name = "ci", .scope = KEY_SCOPE_INGEST, .slot = 2, .want = -1,
     .status = 400}, /* a revoked name stays taken */

    {OP_READ, .project = "", .text = ""},
    {OP_ADD, .project = "shop", .name = "ci", .t_ns = DAY0 + 10, .accepted = 100, .reason = USAGE_ACCEPTED},
    {OP_ADD, .project = "shop", .name = "ci", .t_ns = DAY0 + 20, .reason = USAGE_RATE_LIMITED, .samples = 40},
    {OP_ADD, .project = "shop", .name = "ci", .t_ns = DAY0 + NS_PER_DAY, .reason = USAGE_INVALID,
     .samples = 2},
    {OP_ADD, .project = "other", .name = "ci2", .t_ns = DAY0 + 5, .accepted = 5,
     .reason = USAGE_OUT_OF_WINDOW, .samples = 3},
    /* Pending only, then flushed (and read through a usage_t with nothing pending): the same rows. */
    {OP_READ, .project = "shop", .text = "20789/shop/ci:100,40,0,0,0 20790/shop/ci:0,0,0,2,0"},
    {.op = OP_FLUSH},
    {OP_READ, .project = "shop", .fresh = 1, .text = "20789/shop/ci:100,40,0,0,0 20790/shop/ci:0,0,0,2,0"},
    /* Flushed counts add to what is stored. */
    {OP_ADD, .project = "shop", .name = "ci", .t_ns = DAY0 + 30, .accepted = 7, .reason = USAGE_TOO_LARGE,
     .samples = 1},
    {.op = OP_FLUSH},
    {.op = OP_FLUSH}, /* nothing pending */
    {OP_READ, .project = "", .fresh = 1,
     .text = "20789/other/ci2:5,0,0,0,3 20789/shop/ci:107,40,1,0,0 20790/shop/ci:0,0,0,2,0"},
    {OP_READ, .project = "", .from_ns = DAY0 + NS_PER_DAY, .until_ns = DAY0 + NS_PER_DAY + 5, .fresh = 1,
     .text = "20790/shop/ci:0,0,0,2,0"},
    {OP_READ, .project = "other", .from_ns = DAY0, .until_ns = DAY0, .text = "20789/other/ci2:5,0,0,0,3"},
    {OP_READ, .project = "nobody", .fresh = 1, .text = ""},
};

static void append(char *out, size_t n, const char *s)
{
	size_t len = strlen(out);
	snprintf(out + len, n - len, "%s%s", len ? " " : "", s);
}

static void list_row(const keys_row_t *r, void *ctx)
{
	char one[200];
	snprintf(one, sizeof one, "%s/%s/%s/%s", r->name, r->project, keys_scope_name(r->scope),
	         r->revoked_ns ? "revoked" : "active");
	assert_true(r->created_ns > 0);
	append(ctx, 1000, one);
}

static void usage_row_text(const usage_row_t *r, void *ctx)
{
	char one[200];
	snprintf(one, sizeof one, "%lld/%.*s/%.*s:%llu,%llu,%llu,%llu,%llu", (long long)r->day,
	         (int)r->project.n, (const char *)r->project.p, (int)r->key.n, (const char *)r->key.p,
	         (unsigned long long)r->counts[0], (unsigned long long)r->counts[1],
	         (unsigned long long)r->counts[2], (unsigned long long)r->counts[3],
	         (unsigned long long)r->counts[4]);
	append(ctx, 1000, one);
}

/* Runs STEPS: keys and usage changed through admin (as `kiln keys` does),
 * looked up and counted through server (as `kiln serve` does). */
static void run_steps(const char *engine, store_t *server, store_t *admin)
{
	err_t err = {0};
	keys_t *k = keys_open(server, &err);
	assert_non_null(k);
	usage_t *u = usage_open(server);
	char keys[3][KEY_TEXT_MAX] = {{0}};
	for (size_t i = 0; i < sizeof STEPS / sizeof *STEPS; i++) {
		const step *s = &STEPS[i];
		char got[1000] = "";
		int rc = 0;
		err = (err_t){0};
		switch (s->op) {
		case OP_CREATE:
			rc = keys_create(admin, s->project, s->name, s->scope, keys[s->slot], KEY_TEXT_MAX,
			                 &err);
			break;
		case OP_REVOKE:
			rc = keys_revoke(admin, s->name, &err);
			break;
		case OP_LIST:
			rc = keys_list(admin, list_row, got, &err);
			break;
		case OP_REFRESH: {
			int64_t t0 = time_mono_ns();
			while ((rc = keys_refresh(k)) == 0 && time_mono_ns() - t0 < 3 * NS_PER_SEC)
				usleep(50 * 1000);
			if (rc != 1)
				fail_msg("%s step %zu: keys_refresh %d", engine, i, rc);
			rc = 0;
			break;
		}
		case OP_LOOKUP: {
			keys_info_t info;
			const char *key = s->slot >= 0 ? keys[s->slot] : s->name;
			if (keys_lookup(k, slice_cstr(key), &info))
				snprintf(got, sizeof got, "%s/%s/%s", info.project, info.name,
				         keys_scope_name(info.scope));
			break;
		}
		case OP_ADD:
			usage_add(u, slice_cstr(s->project), slice_cstr(s->name), s->t_ns, s->accepted,
			          s->reason, s->samples);
			break;
		case OP_FLUSH:
			rc = usage_flush(u, &err);
			break;
		case OP_READ: {
			usage_t *r = s->fresh ? usage_open(admin) : u;
			rc = usage_rows(r, slice_cstr(s->project), s->from_ns, s->until_ns, usage_row_text,
			                got, &err);
			if (s->fresh)
				usage_close(r);
			break;
		}
		}
		if (rc != s->want || (rc < 0 && err.status != s->status))
			fail_msg("%s step %zu: returned %d (status %d: %s), want %d (status %d)", engine, i,
			         rc, err.status, err.msg, s->want, s->status);
		if (s->text && strcmp(got, s->text) != 0)
			fail_msg("%s step %zu:\n got  \"%s\"\n want \"%s\"", engine, i, got, s->text);
	}
	assert_int_equal(keys_ready(k), 1);
	usage_close(u);
	keys_close(k);
}

/* DIR/file holds exactly one table, created by sql (its indexes are those of the table). */
static void assert_schema(const char *dir, const char *file, const char *sql)
{
	char path[300];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(
	    sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE type = 'table'", -1, &st, NULL),
	    SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), sql);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_local(void **state)
{
	char *dir = temp_dir();
	store_t *server = open_store(dir, 0), *admin = open_store(dir, 1);
	run_steps("local", server, admin);
	store_close(admin);
	store_close(server);
	/* The files and their schema are the ones Kiln always wrote. */
	assert_schema(
	    dir, "keys.db",
	    "CREATE TABLE keys( name TEXT PRIMARY KEY, project TEXT NOT NULL, scope TEXT NOT NULL, hash "
	    "BLOB NOT NULL UNIQUE, created_ns INTEGER NOT NULL, revoked_ns INTEGER)");
	assert_schema(
	    dir, "usage.db",
	    "CREATE TABLE usage( day INTEGER NOT NULL, project TEXT NOT NULL, key TEXT NOT NULL, accepted "
	    "INTEGER NOT NULL DEFAULT 0, rejected_rate_limited INTEGER NOT NULL DEFAULT 0, "
	    "rejected_too_large INTEGER NOT NULL DEFAULT 0, rejected_invalid INTEGER NOT NULL DEFAULT 0, "
	    "rejected_out_of_window INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(day, project, key))");
	remove_dir(dir);
}

/* The server's store alone: the admin side is the same store. */
static void test_local_one_store(void **state)
{
	char *dir = temp_dir();
	store_t *server = open_store(dir, 0);
	run_steps("local (one store)", server, server);
	store_close(server);
	remove_dir(dir);
}

/* A keys-and-usage-only store does not lock the directory, starts no writer
 * (a write is a 503) and creates nothing until a key or count is written. */
static void test_keys_usage_only(void **state)
{
	char *dir = temp_dir(), path[300];
	store_t *server = open_store(dir, 0), *admin = open_store(dir, 1);
	model_batch_t *b = model_batch_new(slice_cstr("p"));
	err_t err = {0};
	assert_int_equal(store_write_sync(admin, b, &err), -1);
	assert_int_equal(err.status, 503);
	store_close(admin);
	store_close(server);
	remove_dir(dir);

	dir = temp_dir();
	admin = open_store(dir, 1);
	usage_t *u = usage_open(admin);
	char got[1000] = "";
	assert_int_equal(usage_rows(u, slice_cstr(""), 0, 0, usage_row_text, got, &err), 0);
	assert_string_equal(got, "");
	usage_close(u);
	snprintf(path, sizeof path, "%s/usage.db", dir);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof path, "%s/LOCK", dir);
	assert_int_equal(access(path, F_OK), -1);
	store_close(admin);
	remove_dir(dir);
}

static void test_clickhouse(void **state)
{
	const char *url = getenv("KILN_TEST_CLICKHOUSE_URL");
	if (!url || !*url) {
		skip();
		return;
	}
	char db[64];
	snprintf(db, sizeof db, "kiln_unit_keys_%d_%lld", (int)getpid(),
	         (long long)(time_now_ns() / NS_PER_SEC));
	store_config_t c = {.engine = STORE_ENGINE_CLICKHOUSE, .ch_url = url, .ch_database = db};
	err_t err = {0};
	store_t *server = store_open(&c, &err);
	if (!server)
		fail_msg("store_open %s: %s", url, err.msg);
	c.keys_usage_only = 1;
	store_t *admin = store_open(&c, &err);
	assert_non_null(admin);
	run_steps("clickhouse", server, admin);
	store_close(admin);
	store_close(server);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_local),
	    cmocka_unit_test(test_local_one_store),
	    cmocka_unit_test(test_keys_usage_only),
	    cmocka_unit_test(test_clickhouse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
