/* Tests src/ingest/keys.c over the embedded store: create/list/revoke,
 * lookups, refresh seeing another process's changes within a second, crash
 * safety of create under kill -9, and lookups racing refreshes. Keys are
 * changed the way `kiln keys` does (a keys-and-usage-only store beside the
 * server's). */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#include "base/timeutil.h"
#include "ingest/keys.h"

static void create_ok(store_t *st, const char *project, const char *name, int scope, char key[KEY_TEXT_MAX])
{
	err_t err = {0};
	if (keys_create(st, project, name, scope, key, KEY_TEXT_MAX, &err) != 0)
		fail_msg("keys_create %s: %s", name, err.msg);
}

typedef struct {
	keys_row_t rows[8];
	char names[8][65];
	int n;
} rows_seen;

static void collect_row(const keys_row_t *r, void *ctx)
{
	rows_seen *s = ctx;
	assert_true(s->n < 8);
	s->rows[s->n] = *r;
	snprintf(s->names[s->n], 65, "%s", r->name);
	s->rows[s->n].name = s->names[s->n];
	s->rows[s->n].project = NULL; /* borrowed memory: not kept */
	s->n++;
}

static void test_create_list_revoke(void **state)
{
	char *dir = temp_dir(), k1[KEY_TEXT_MAX], k2[KEY_TEXT_MAX];
	err_t err = {0};
	rows_seen seen = {0};
	store_t *cli = open_store(dir, 1);
	/* No keys.db yet: an empty list, and nothing created by listing. */
	assert_int_equal(keys_list(cli, collect_row, &seen, &err), 0);
	assert_int_equal(seen.n, 0);
	char path[300];
	snprintf(path, sizeof path, "%s/keys.db", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(keys_revoke(cli, "ci", &err), -1);
	assert_int_equal(err.status, 404);
	assert_int_equal(access(path, F_OK), -1);

	create_ok(cli, "shop", "ci", KEY_SCOPE_INGEST, k1);
	create_ok(cli, "other", "grafana", KEY_SCOPE_QUERY, k2);
	assert_int_equal(strncmp(k1, "kiln_", 5), 0);
	assert_int_equal(strlen(k1), 5 + 43); /* 256 bits in base64url */
	assert_string_not_equal(k1, k2);

	/* Names are global; bad names and scopes are 400s. */
	char k3[KEY_TEXT_MAX];
	assert_int_equal(keys_create(cli, "elsewhere", "ci", KEY_SCOPE_BOTH, k3, sizeof k3, &err), -1);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "already exists"));
	assert_int_equal(keys_create(cli, "a b", "x", KEY_SCOPE_BOTH, k3, sizeof k3, &err), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(keys_create(cli, "p", "", KEY_SCOPE_BOTH, k3, sizeof k3, &err), -1);
	assert_int_equal(err.status, 400);
	char long_name[80];
	memset(long_name, 'a', 65);
	long_name[65] = 0;
	assert_int_equal(keys_create(cli, "p", long_name, KEY_SCOPE_BOTH, k3, sizeof k3, &err), -1);
	long_name[64] = 0;
	create_ok(cli, "p", long_name, KEY_SCOPE_BOTH, k3);
	assert_int_equal(keys_create(cli, "p", "y", 7, k3, sizeof k3, &err), -1);

	assert_int_equal(keys_list(cli, collect_row, &seen, &err), 0);
	assert_int_equal(seen.n, 3); /* ordered by project, name */
	assert_string_equal(seen.rows[0].name, "grafana");
	assert_int_equal(seen.rows[0].scope, KEY_SCOPE_QUERY);
	assert_string_equal(seen.rows[2].name, "ci");
	assert_true(seen.rows[2].created_ns > 0);
	assert_int_equal(seen.rows[2].revoked_ns, 0);

	assert_int_equal(keys_revoke(cli, "ci", &err), 0);
	assert_int_equal(keys_revoke(cli, "ci", &err), 1); /* already revoked */
	assert_int_equal(keys_revoke(cli, "nope", &err), -1);
	assert_int_equal(err.status, 404);
	seen.n = 0;
	assert_int_equal(keys_list(cli, collect_row, &seen, &err), 0);
	assert_true(seen.rows[2].revoked_ns >= seen.rows[2].created_ns);
	store_close(cli);
	remove_dir(dir);
}

static void test_lookup(void **state)
{
	char *dir = temp_dir(), k1[KEY_TEXT_MAX], k2[KEY_TEXT_MAX], k3[KEY_TEXT_MAX];
	err_t err = {0};
	store_t *cli = open_store(dir, 1);
	create_ok(cli, "shop", "ci", KEY_SCOPE_INGEST, k1);
	store_t *server = open_store(dir, 0);
	keys_t *k = keys_open(server, &err);
	assert_int_equal(keys_ready(k), 1);
	assert_non_null(k);
	keys_info_t info;
	assert_int_equal(keys_lookup(k, slice_cstr(k1), &info), 1);
	assert_string_equal(info.project, "shop");
	assert_string_equal(info.name, "ci");
	assert_int_equal(info.scope, KEY_SCOPE_INGEST);

	/* Wrong keys: another string, a prefix, one more byte, empty, huge. */
	assert_int_equal(keys_lookup(k, slice_cstr("kiln_nope"), &info), 0);
	assert_int_equal(keys_lookup(k, slice_make(k1, strlen(k1) - 1), &info), 0);
	char longer[KEY_TEXT_MAX + 1];
	snprintf(longer, sizeof longer, "%sx", k1);
	assert_int_equal(keys_lookup(k, slice_cstr(longer), &info), 0);
	assert_int_equal(keys_lookup(k, slice_cstr(""), &info), 0);
	char huge[1000];
	memset(huge, 'k', sizeof huge);
	assert_int_equal(keys_lookup(k, slice_make(huge, sizeof huge), &info), 0);

	/* Nothing changed: refresh is a no-op. A new key appears after refresh. */
	assert_int_equal(keys_refresh(k), 0);
	create_ok(cli, "shop", "ci2", KEY_SCOPE_BOTH, k2);
	assert_int_equal(keys_lookup(k, slice_cstr(k2), &info), 0);
	assert_int_equal(keys_refresh(k), 1);
	assert_int_equal(keys_lookup(k, slice_cstr(k2), &info), 1);
	assert_int_equal(info.scope, KEY_SCOPE_BOTH);
	assert_int_equal(keys_refresh(k), 0);

	/* Revoked: refused after refresh; the others still work. */
	assert_int_equal(keys_revoke(cli, "ci", &err), 0);
	assert_int_equal(keys_refresh(k), 1);
	assert_int_equal(keys_lookup(k, slice_cstr(k1), &info), 0);
	assert_int_equal(keys_lookup(k, slice_cstr(k2), NULL), 1);

	/* Many keys: every one found (the snapshot table grows). */
	for (int i = 0; i < 50; i++) {
		char name[16];
		snprintf(name, sizeof name, "bulk%d", i);
		create_ok(cli, "bulk", name, KEY_SCOPE_INGEST, k3);
	}
	assert_int_equal(keys_refresh(k), 1);
	assert_int_equal(keys_lookup(k, slice_cstr(k3), &info), 1);
	assert_string_equal(info.name, "bulk49");
	keys_close(k);

	/* Reopen: the revoked key stays revoked. */
	store_close(server);
	server = open_store(dir, 0);
	k = keys_open(server, &err);
	assert_int_equal(keys_lookup(k, slice_cstr(k1), &info), 0);
	assert_int_equal(keys_lookup(k, slice_cstr(k2), &info), 1);
	keys_close(k);
	store_close(server);
	store_close(cli);
	remove_dir(dir);
}

static void test_bearer(void **state)
{
	slice_t key;
	assert_int_equal(keys_parse_bearer(slice_cstr("Bearer kiln_abc"), &key), 1);
	assert_true(slice_eq_cstr(key, "kiln_abc"));
	assert_int_equal(keys_parse_bearer(slice_cstr("bearer   kiln_abc  "), &key), 1);
	assert_true(slice_eq_cstr(key, "kiln_abc"));
	assert_int_equal(keys_parse_bearer(slice_cstr("BEARER\tx"), &key), 1);
	assert_true(slice_eq_cstr(key, "x"));
	assert_int_equal(keys_parse_bearer(slice_cstr("Bearer "), &key), 0);
	assert_int_equal(keys_parse_bearer(slice_cstr("Bearer"), &key), 0);
	assert_int_equal(keys_parse_bearer(slice_cstr("Bearerx abc"), &key), 0);
	assert_int_equal(keys_parse_bearer(slice_cstr("Basic dXNlcjpwYXNz"), &key), 0);
	assert_int_equal(keys_parse_bearer(slice_make(NULL, 0), &key), 0);
}

/* Another process creates a key while this one refreshes every 50 ms, as the
 * server does every 250 ms: the key must be accepted within a second. */
static void test_refresh_other_process(void **state)
{
	char *dir = temp_dir();
	err_t err = {0};
	store_t *server = open_store(dir, 0);
	keys_t *k = keys_open(server, &err);
	assert_non_null(k);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char key[KEY_TEXT_MAX];
		err_t cerr;
		usleep(100 * 1000);
		store_config_t c = {.dir = dir, .keys_usage_only = 1};
		store_t *cli = store_open(&c, &cerr);
		if (!cli || keys_create(cli, "p", "late", KEY_SCOPE_INGEST, key, sizeof key, &cerr) != 0)
			_exit(3);
		_exit(write(fds[1], key, KEY_TEXT_MAX) == KEY_TEXT_MAX ? 0 : 4);
	}
	close(fds[1]);
	char key[KEY_TEXT_MAX];
	assert_int_equal(read(fds[0], key, KEY_TEXT_MAX), KEY_TEXT_MAX);
	int64_t t0 = time_mono_ns();
	int found = 0;
	while (!found && time_mono_ns() - t0 < NS_PER_SEC) {
		keys_refresh(k);
		found = keys_lookup(k, slice_cstr(key), NULL);
		if (!found)
			usleep(50 * 1000);
	}
	assert_true(found);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	close(fds[0]);
	keys_close(k);
	store_close(server);
	remove_dir(dir);
}

/* A child creates keys in a loop and prints each one after keys_create
 * returned; kill -9 at some moment. Every printed key works after reopen. */
static void test_create_crash_safety(void **state)
{
	char *dir = temp_dir();
	size_t total = 0;
	for (int round = 0; round < 4; round++) {
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		if (pid == 0) {
			close(fds[0]);
			store_config_t c = {.dir = dir, .keys_usage_only = 1};
			err_t oerr;
			store_t *cli = store_open(&c, &oerr);
			if (!cli)
				_exit(2);
			for (int i = 0;; i++) {
				char name[32], key[KEY_TEXT_MAX];
				err_t cerr;
				snprintf(name, sizeof name, "r%d-%d", round, i);
				if (keys_create(cli, "crash", name, KEY_SCOPE_INGEST, key, sizeof key,
				                &cerr) != 0)
					_exit(3);
				if (write(fds[1], key, KEY_TEXT_MAX) != KEY_TEXT_MAX)
					_exit(4);
			}
		}
		close(fds[1]);
		usleep((useconds_t)(50000 + round * 37000));
		kill(pid, SIGKILL);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));

		err_t err = {0};
		store_t *server = open_store(dir, 0);
		keys_t *k = keys_open(server, &err);
		if (!k || !keys_ready(k))
			fail_msg("reopen after kill -9: %s", err.msg);
		char key[KEY_TEXT_MAX];
		size_t n = 0;
		while (read(fds[0], key, KEY_TEXT_MAX) == KEY_TEXT_MAX) {
			n++;
			if (!keys_lookup(k, slice_cstr(key), NULL))
				fail_msg("round %d: printed key %zu lost after kill -9", round, n);
		}
		total += n;
		close(fds[0]);
		keys_close(k);
		store_close(server);
	}
	assert_true(total > 0);
	remove_dir(dir);
}

typedef struct {
	keys_t *k;
	const char *key;
	int stop;
	long hits;
} lookup_ctx;

static void *lookup_loop(void *arg)
{
	lookup_ctx *c = arg;
	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED))
		if (keys_lookup(c->k, slice_cstr(c->key), NULL))
			__atomic_add_fetch(&c->hits, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Lookups from several threads while snapshots are swapped underneath
 * (meaningful under ASan/TSan: no use of a freed snapshot). */
static void test_lookup_during_refresh(void **state)
{
	char *dir = temp_dir(), key[KEY_TEXT_MAX], other[KEY_TEXT_MAX];
	err_t err = {0};
	store_t *cli = open_store(dir, 1), *server = open_store(dir, 0);
	create_ok(cli, "p", "stable", KEY_SCOPE_INGEST, key);
	keys_t *k = keys_open(server, &err);
	lookup_ctx c = {.k = k, .key = key};
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, lookup_loop, &c);
	for (int i = 0; i < 20; i++) {
		char name[16];
		snprintf(name, sizeof name, "n%d", i);
		create_ok(cli, "p", name, KEY_SCOPE_INGEST, other);
		assert_int_equal(keys_refresh(k), 1);
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	assert_true(c.hits > 0);
	assert_int_equal(keys_lookup(k, slice_cstr(other), NULL), 1);
	keys_close(k);
	store_close(server);
	store_close(cli);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_create_list_revoke),
	    cmocka_unit_test(test_lookup),
	    cmocka_unit_test(test_bearer),
	    cmocka_unit_test(test_refresh_other_process),
	    cmocka_unit_test(test_create_crash_safety),
	    cmocka_unit_test(test_lookup_during_refresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
