/* Tests of src/cli/config.c: defaults, YAML file, validation messages. */
#include "testutil.h"

#include <unistd.h>

#include "cli/config.h"

static int load(config_t *c, const char *yaml, err_t *e)
{
	char path[] = "/tmp/kiln-config-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, yaml, strlen(yaml)), (int)strlen(yaml));
	close(fd);
	config_defaults(c);
	int rc = config_load_file(c, path, e);
	if (rc == 0)
		rc = config_validate(c, e);
	unlink(path);
	return rc;
}

static void test_defaults(void **state)
{
	config_t c;
	config_defaults(&c);
	err_t e;
	assert_int_equal(config_validate(&c, &e), 0);
	assert_string_equal(c.data_dir, "./kiln-data");
	assert_string_equal(c.listeners[API_LISTENER_UPLOAD].addr, ":8028");
	assert_string_equal(c.listeners[API_LISTENER_UI].addr, ":4040");
	assert_true(c.limits.samples_per_second == 20000);
	assert_true(c.limits.default_samples_per_second == 0); /* the project default is not limited */
	assert_int_equal(store_retention_days(&c.retention, "default"), 14);
	assert_null(c.kubernetes.api_server);
	assert_null(c.kubernetes.node);
	config_free(&c);
}

static void test_file(void **state)
{
	config_t c;
	err_t e;
	int rc = load(&c,
	              "data: /var/lib/kiln\n"
	              "role: query\n"
	              "listeners:\n"
	              "  upload: {addr: ':9000', auth: required, tls: {cert: c.pem, key: k.pem}}\n"
	              "  ui: {trustScopeOrgId: true}\n"
	              "limits: {samplesPerSecond: 500, defaultSamplesPerSecond: 2500}\n"
	              "retention: {days: 7, maxDays: 30, projects: {team-a: 30, team-b: 3}}\n"
	              "receivers: {profiles: {maxDecodedSampleRows: 20000}}\n"
	              "kubernetes: {apiServer: 'http://127.0.0.1:6443', tokenFile: /t, caFile: /ca.crt, node: n1}\n",
	              &e);
	assert_int_equal(rc, 0);
	assert_string_equal(c.data_dir, "/var/lib/kiln");
	assert_string_equal(c.role, "query");
	assert_string_equal(c.listeners[API_LISTENER_UPLOAD].addr, ":9000");
	assert_int_equal(c.listeners[API_LISTENER_UPLOAD].auth_required, 1);
	assert_string_equal(c.listeners[API_LISTENER_UPLOAD].tls_cert, "c.pem");
	assert_int_equal(c.listeners[API_LISTENER_UI].auth_required, 0);
	assert_int_equal(c.listeners[API_LISTENER_UI].trust_scope_org_id, 1);
	assert_int_equal(c.listeners[API_LISTENER_UPLOAD].trust_scope_org_id, 0); /* off by default */
	assert_true(c.limits.samples_per_second == 500);
	assert_true(c.limits.default_samples_per_second == 2500);
	assert_int_equal(c.limits.max_rows, 20000);
	assert_int_equal(store_retention_days(&c.retention, "team-a"), 30);
	assert_int_equal(store_retention_days(&c.retention, "team-b"), 3);
	assert_int_equal(store_retention_days(&c.retention, "other"), 7);
	assert_string_equal(c.kubernetes.api_server, "http://127.0.0.1:6443");
	assert_string_equal(c.kubernetes.token_file, "/t");
	assert_string_equal(c.kubernetes.ca_file, "/ca.crt");
	assert_string_equal(c.kubernetes.node, "n1");
	config_free(&c);
	/* the retention bound itself is accepted (test_invalid: one day more is not) */
	assert_int_equal(load(&c, "retention: {days: 3650, maxDays: 3650, projects: {a: 3650}}\n", &e), 0);
	assert_int_equal(store_retention_days(&c.retention, "a"), 3650);
	assert_int_equal(store_retention_days(&c.retention, "b"), 3650);
	config_free(&c);
}

static void test_invalid(void **state)
{
	static const struct {
		const char *yaml, *msg;
	} cases[] = {
	    {"role: boss\n", "role boss is not one of all, sensor, ingestor, query"},
	    {"listeners: {ui: {auth: maybe}}\n", "config listeners.ui.auth must be none or required"},
	    {"limits: {samplesPerSecond: fast}\n", "config /limits/samplesPerSecond must be a number from 1 to 1e+09"},
	    {"limits: {defaultSamplesPerSecond: -1}\n", "config /limits/defaultSamplesPerSecond must be a number from 0 to 1e+09"},
	    {"limits: {defaultSamplesPerSecond: lots}\n", "config /limits/defaultSamplesPerSecond must be a number from 0 to 1e+09"},
	    {"retention: {days: 30}\n", "retention.days (30) is above retention.maxDays (14): raise maxDays to keep data longer"},
	    {"retention: {projects: {a: 100}}\n", "retention.projects.a (100 days) is above retention.maxDays (14)"},
	    /* one bound with the store (LIMIT_RETENTION_DAYS): 3,650 days */
	    {"retention: {maxDays: 3651}\n", "config /retention/maxDays must be a number from 1 to 3650"},
	    {"retention: {days: 3651}\n", "config /retention/days must be a number from 1 to 3650"},
	    {"retention: {maxDays: 3650, projects: {a: 3651}}\n",
	     "config retention.projects: each value must be a number of days (1-3650)"},
	    {"listeners: {upload: {tls: {cert: c.pem}}}\n", "listeners.upload.tls needs both cert and key"},
	    {"listeners: {ui: {auth: required, trustScopeOrgId: true}}\n",
	     "listeners.ui.trustScopeOrgId needs auth: none (with auth required, the key names the project)"},
	    {"listeners: {upload: {trustScopeOrgId: yes}}\n", "config /listeners/upload/trustScopeOrgId must be true or false"},
	    {"listeners: {upload: {addr: nowhere}}\n", "listener upload: address nowhere must be host:port, :port or off"},
	    {"- a\n- b\n", "the top level must be a mapping"},
	    {"kubernetes: [a]\n", "config kubernetes must be a mapping {apiServer, tokenFile, caFile, node}"},
	    {"kubernetes: {node: [a]}\n", "config /kubernetes/node must be a single value"},
	    {"kubernetes: {apiServer: 'ftp://x'}\n", "config kubernetes.apiServer ftp://x must start with https://"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		config_t c;
		err_t e;
		assert_int_equal(load(&c, cases[i].yaml, &e), -1);
		if (!strstr(e.msg, cases[i].msg))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, e.msg, cases[i].msg);
		config_free(&c);
	}
}

/* From memory: the same settings as from a file; not NUL-terminated; bad YAML is a 400. */
static void test_yaml(void **state)
{
	static const char yaml[] = "role: sensor\nretention: {days: 7}\nXX";
	config_t c;
	err_t e = {0};
	config_defaults(&c);
	assert_int_equal(config_load_yaml(&c, yaml, sizeof yaml - 3, &e), 0);
	assert_string_equal(c.role, "sensor");
	assert_int_equal(c.retention.days, 7);
	assert_int_equal(config_load_yaml(&c, "a: [b", 5, &e), -1);
	assert_int_equal(e.status, 400);
	/* libfyaml 0.7.12 never returns on this: refused as not UTF-8 first */
	assert_int_equal(config_load_yaml(&c, "%\x84" "e\n", 4, &e), -1);
	assert_string_equal(e.msg, "config (in memory) is not UTF-8 text: invalid byte at offset 1");
	config_free(&c);
}

/* The store block (OPS: Storage) and misspelt keys, which must not pass silently. */
static void test_store_and_unknown_keys(void **state)
{
	(void)state;
	static const char ok[] = "store: {engine: clickhouse, url: 'http://ch:8123', database: kiln, user: k,\n"
	                         "        passwordFile: /run/pw, cluster: c1, replicated: true}\n";
	config_t c;
	err_t e = {0};
	config_defaults(&c);
	assert_string_equal(c.store.engine, "local");
	assert_int_equal(config_load_yaml(&c, ok, sizeof ok - 1, &e), 0);
	assert_string_equal(c.store.engine, "clickhouse");
	assert_string_equal(c.store.url, "http://ch:8123");
	assert_string_equal(c.store.password_file, "/run/pw");
	assert_string_equal(c.store.cluster, "c1");
	assert_int_equal(c.store.replicated, 1);
	assert_int_equal(c.store.max_answer_mib, 0); /* unset: the store uses LIMIT_CH_ANSWER_BYTES */
	assert_int_equal(config_validate(&c, &e), 0);
	config_free(&c);
	static const char mib[] = "store: {engine: clickhouse, url: 'http://ch:8123', maxAnswerMiB: 1}\n";
	config_defaults(&c);
	assert_int_equal(config_load_yaml(&c, mib, sizeof mib - 1, &e), 0);
	assert_int_equal(c.store.max_answer_mib, 1);
	assert_int_equal(c.store.queue_batches, 0); /* unset: LIMIT_STORE_QUEUE_BATCHES */
	assert_int_equal(c.store.queue_mib, 0);     /* unset: LIMIT_STORE_QUEUE_BYTES */
	assert_int_equal(config_validate(&c, &e), 0);
	config_free(&c);
	static const char queue[] = "store: {queueBatches: 1, queueMiB: 3}\n";
	config_defaults(&c);
	assert_int_equal(config_load_yaml(&c, queue, sizeof queue - 1, &e), 0);
	assert_int_equal(c.store.queue_batches, 1);
	assert_int_equal(c.store.queue_mib, 3);
	config_free(&c);

	static const struct {
		const char *yaml, *msg;
	} bad[] = {
	    {"store: {engine: clickhouse, pasword_file: x}",
	     "config store.pasword_file is not a setting; known: engine, url, database, user, password, "
	     "passwordFile, cluster, replicated, maxAnswerMiB, queueBatches, queueMiB"},
	    {"store: {queueBatches: 0}", "config /store/queueBatches must be a number from 1 to 100000"},
	    {"store: {queueBatches: 2.5}", "config /store/queueBatches must be a whole number of batches"},
	    {"store: {queueMiB: 65537}", "config /store/queueMiB must be a number from 1 to 65536"},
	    {"store: {queueMiB: 0.5}", "config /store/queueMiB must be a number from 1 to 65536"},
	    {"store: {maxAnswerMiB: 0}", "config /store/maxAnswerMiB must be a number from 1 to 65536"},
	    {"store: {maxAnswerMiB: 65537}", "config /store/maxAnswerMiB must be a number from 1 to 65536"},
	    {"store: {maxAnswerMiB: 1.5}", "config /store/maxAnswerMiB must be a whole number of MiB"},
	    {"store: {maxAnswerMiB: lots}", "config /store/maxAnswerMiB must be a number from 1 to 65536"},
	    {"listners: {}", "config listners is not a setting; known: data, role, listeners, limits, retention, "
	                     "receivers, kubernetes, store"},
	    {"store: [clickhouse]", "config store must be a mapping {engine, url, database, user, password, cluster}"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		config_defaults(&c);
		assert_int_equal(config_load_yaml(&c, bad[i].yaml, strlen(bad[i].yaml), &e), -1);
		assert_int_equal(e.status, 400);
		assert_string_equal(e.msg, bad[i].msg);
		config_free(&c);
	}
	static const struct {
		const char *yaml, *msg;
	} invalid[] = {
	    {"store: {engine: mongo}", "store.engine mongo is not one of local, clickhouse"},
	    {"store: {engine: clickhouse}", "store.url must be the ClickHouse HTTP interface, http://host:8123"},
	    {"store: {engine: clickhouse, url: 'http://x', password: a, passwordFile: b}",
	     "store: set password or passwordFile, not both"},
	};
	for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
		config_defaults(&c);
		assert_int_equal(config_load_yaml(&c, invalid[i].yaml, strlen(invalid[i].yaml), &e), 0);
		assert_int_equal(config_validate(&c, &e), -1);
		assert_string_equal(e.msg, invalid[i].msg);
		config_free(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_file),
	    cmocka_unit_test(test_invalid),
	    cmocka_unit_test(test_yaml),
	    cmocka_unit_test(test_store_and_unknown_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
