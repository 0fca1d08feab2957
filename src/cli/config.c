/* Settings from YAML (libfyaml) into each module's options struct
 * (cli/config.h). Every message here is part of the interface: tests assert
 * them byte for byte. */
#include "cli/config.h"

#include <errno.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/limits.h"
#include "base/timeutil.h"

void config_set(char **field, const char *value)
{
	free(*field);
	*field = value ? xstrdup(value) : NULL;
}

void config_defaults(config_t *c)
{
	memset(c, 0, sizeof *c);
	config_set(&c->data_dir, "./kiln-data");
	config_set(&c->role, "all");
	api_listener_options_defaults(c->listeners);
	ingest_options_defaults(&c->limits);
	store_retention_defaults(&c->retention);
	store_options_defaults(&c->store);
	scrape_options_defaults(&c->scrape);
}

void config_free(config_t *c)
{
	free(c->data_dir);
	free(c->role);
	api_listener_options_free(c->listeners);
	store_retention_free(&c->retention);
	store_options_free(&c->store);
	scrape_options_free(&c->scrape);
	k8s_options_free(&c->kubernetes);
	memset(c, 0, sizeof *c);
}

/* Scalar at path as a malloc'd string, NULL if absent; -1 if not a scalar. */
static int scalar_at(struct fy_node *root, const char *path, char **out, err_t *err)
{
	*out = NULL;
	struct fy_node *n = fy_node_by_path(root, path, (size_t)-1, FYNWF_DONT_FOLLOW);
	if (!n)
		return 0;
	if (!fy_node_is_scalar(n))
		return err_set(err, 400, "config %s must be a single value", path);
	size_t len;
	const char *s = fy_node_get_scalar(n, &len);
	*out = xstrndup(s ? s : "", s ? len : 0);
	return 0;
}

static int read_string(struct fy_node *root, const char *path, char **field, err_t *err)
{
	char *v;
	if (scalar_at(root, path, &v, err) < 0)
		return -1;
	if (v) {
		free(*field);
		*field = v;
	}
	return 0;
}

/* Reads a number at path into *out: 1 if set, 0 if absent, -1 if invalid. */
static int read_number(struct fy_node *root, const char *path, double min, double max, double *out,
                       err_t *err)
{
	char *v;
	if (scalar_at(root, path, &v, err) < 0)
		return -1;
	if (!v)
		return 0;
	char *end;
	double d = strtod(v, &end);
	int bad = !*v || *end || !(d >= min && d <= max);
	free(v);
	if (bad)
		return err_set(err, 400, "config %s must be a number from %g to %g", path, min, max);
	*out = d;
	return 1;
}

/* A boolean at path: 1/0 into *out when set; -1 if not true/false. */
static int read_bool(struct fy_node *root, const char *path, int *out, err_t *err)
{
	char *v;
	if (scalar_at(root, path, &v, err) < 0)
		return -1;
	if (!v)
		return 0;
	int t = !strcmp(v, "true"), f = !strcmp(v, "false");
	free(v);
	if (!t && !f)
		return err_set(err, 400, "config %s must be true or false", path);
	*out = t;
	return 0;
}

/* One entry of receivers.profiles.scrape.static (a mapping). */
static int load_static_target(struct fy_node *n, uint32_t i, scrape_static_options_t *t, err_t *err)
{
	if (!fy_node_is_mapping(n))
		return err_set(err, 400, "config receivers.profiles.scrape.static[%u] must be a mapping", i);
	static const char *const fields[] = {"name", "url", "host", "service", "namespace", "pod", "container",
	                                     "workload"};
	char **dst[] = {&t->name, &t->url, &t->host, &t->service, &t->namespace_, &t->pod, &t->container, &t->workload};
	for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
		if (read_string(n, fields[k], dst[k], err) < 0)
			return -1;
	double port = 0;
	if (read_number(n, "port", 1, 65535, &port, err) < 0)
		return -1;
	t->port = (int)port;
	if (!t->name || !*t->name)
		return err_set(err, 400, "config receivers.profiles.scrape.static[%u] needs a name", i);
	if (!t->url == !t->host)
		return err_set(err, 400, "config receivers.profiles.scrape.static[%u] (%s) needs either url or host + port",
		               i, t->name);
	if (t->host && !t->port)
		return err_set(err, 400, "config receivers.profiles.scrape.static[%u] (%s): host needs a port", i, t->name);
	struct fy_node *types = fy_node_by_path(n, "types", (size_t)-1, FYNWF_DONT_FOLLOW);
	if (!types || !fy_node_is_mapping(types))
		return err_set(err, 400,
		               "config receivers.profiles.scrape.static[%u] (%s) needs types: {cpu: {scrape: true}, ...}", i,
		               t->name);
	void *it = NULL;
	struct fy_node_pair *pair;
	while ((pair = fy_node_mapping_iterate(types, &it))) {
		size_t kl;
		const char *k = fy_node_get_scalar(fy_node_pair_key(pair), &kl);
		int type = -1;
		for (int ty = 0; k && ty < SCRAPE_TYPES; ty++)
			if (strlen(scrape_type_name(ty)) == kl && !memcmp(k, scrape_type_name(ty), kl))
				type = ty;
		struct fy_node *v = fy_node_pair_value(pair);
		_Static_assert(SCRAPE_TYPES == 5,
		               "the message below lists the scrape types of scrape/target.h");
		if (type < 0 || !v || !fy_node_is_mapping(v))
			return err_set(err, 400,
			               "config receivers.profiles.scrape.static[%u].types: each key is one of cpu, memory, "
			               "goroutine, block, mutex with a mapping {scrape, path, scheme, sample_types}",
			               i);
		scrape_type_options_t *tc = &t->types[type];
		if (read_bool(v, "scrape", &tc->scrape, err) < 0 || read_string(v, "path", &tc->path, err) < 0 ||
		    read_string(v, "scheme", &tc->scheme, err) < 0 ||
		    read_string(v, "sample_types", &tc->sample_types, err) < 0)
			return -1;
	}
	return 0;
}

/* receivers.profiles.scrape (OPS: Scrape settings, OPS: Discovery). */
static int load_scrape(struct fy_node *root, scrape_options_t *sc, err_t *err)
{
	if (read_bool(root, "/receivers/profiles/scrape/enabled", &sc->enabled, err) < 0)
		return -1;
	char *v = NULL;
	if (scalar_at(root, "/receivers/profiles/scrape/interval", &v, err) < 0)
		return -1;
	if (v) {
		int bad = time_parse_duration(v, &sc->interval_ns) < 0;
		free(v);
		if (bad)
			return err_set(err, 400, "config receivers.profiles.scrape.interval must be a duration such as 1m or 30s");
	}
	double port;
	int rc = read_number(root, "/receivers/profiles/scrape/defaultPort", 0, 65535, &port, err);
	if (rc < 0)
		return -1;
	if (rc == 1)
		sc->default_port = (int)port;
	struct fy_node *pre = fy_node_by_path(root, "/receivers/profiles/scrape/extraAnnotationPrefixes", (size_t)-1,
	                                      FYNWF_DONT_FOLLOW);
	if (pre) {
		if (!fy_node_is_sequence(pre))
			return err_set(err, 400, "config receivers.profiles.scrape.extraAnnotationPrefixes must be a list");
		void *it = NULL;
		struct fy_node *n;
		while ((n = fy_node_sequence_iterate(pre, &it))) {
			size_t len;
			const char *s = fy_node_is_scalar(n) ? fy_node_get_scalar(n, &len) : NULL;
			if (!s)
				return err_set(err, 400, "config receivers.profiles.scrape.extraAnnotationPrefixes: each item is a "
				                         "prefix such as example.com/profiles");
			if (sc->n_prefixes == LIMIT_ANNOTATION_PREFIXES)
				return err_set(
				    err, 400,
				    "config receivers.profiles.scrape.extraAnnotationPrefixes: at most %d",
				    LIMIT_ANNOTATION_PREFIXES);
			sc->prefixes[sc->n_prefixes++] = xstrndup(s, len);
		}
	}
	struct fy_node *st = fy_node_by_path(root, "/receivers/profiles/scrape/static", (size_t)-1, FYNWF_DONT_FOLLOW);
	if (st) {
		if (!fy_node_is_sequence(st))
			return err_set(err, 400, "config receivers.profiles.scrape.static must be a list of targets");
		void *it = NULL;
		struct fy_node *n;
		while ((n = fy_node_sequence_iterate(st, &it))) {
			if (sc->n_statics == LIMIT_STATIC_TARGETS)
				return err_set(err, 400,
				               "config receivers.profiles.scrape.static: at most %d targets",
				               LIMIT_STATIC_TARGETS);
			if (load_static_target(n, sc->n_statics, &sc->statics[sc->n_statics], err) < 0) {
				sc->n_statics++; /* freed by config_free */
				return -1;
			}
			sc->n_statics++;
		}
	}
	return 0;
}

/* kubernetes: {apiServer, tokenFile, caFile, node} (OPS: Discovery). */
static int load_kubernetes(struct fy_node *root, k8s_options_t *k, err_t *err)
{
	struct fy_node *n = fy_node_by_path(root, "/kubernetes", (size_t)-1, FYNWF_DONT_FOLLOW);
	if (!n)
		return 0;
	if (!fy_node_is_mapping(n))
		return err_set(err, 400, "config kubernetes must be a mapping {apiServer, tokenFile, caFile, node}");
	if (read_string(root, "/kubernetes/apiServer", &k->api_server, err) < 0 ||
	    read_string(root, "/kubernetes/tokenFile", &k->token_file, err) < 0 ||
	    read_string(root, "/kubernetes/caFile", &k->ca_file, err) < 0 ||
	    read_string(root, "/kubernetes/node", &k->node, err) < 0)
		return -1;
	if (k->api_server && strncmp(k->api_server, "http://", 7) && strncmp(k->api_server, "https://", 8))
		return err_set(err, 400, "config kubernetes.apiServer %.200s must start with https:// (or http://)",
		               k->api_server);
	return 0;
}

/* A whole number of unit at path from min to max into *out (untouched when
 * absent): 0, or -1 with a 400. */
static int read_whole(struct fy_node *root, const char *path, int min, int max, const char *unit, int *out,
                      err_t *err)
{
	double d;
	int rc = read_number(root, path, min, max, &d, err);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		if (d != (double)(int)d)
			return err_set(err, 400, "config %s must be a whole number of %s", path, unit);
		*out = (int)d;
	}
	return 0;
}

/* A misspelt key must not be silently ignored (a typo in store.passwordFile
 * would only show up later as a login failure): every key of the mapping at
 * path must be one of known (NULL-terminated). 0, or -1 with a 400 naming it. */
static int known_keys(struct fy_node *root, const char *path, const char *const *known, err_t *err)
{
	struct fy_node *n = *path ? fy_node_by_path(root, path, (size_t)-1, FYNWF_DONT_FOLLOW) : root;
	if (!n || !fy_node_is_mapping(n))
		return 0;
	void *it = NULL;
	struct fy_node_pair *pair;
	while ((pair = fy_node_mapping_iterate(n, &it))) {
		size_t kl = 0;
		const char *k = fy_node_get_scalar(fy_node_pair_key(pair), &kl);
		int ok = 0;
		for (size_t i = 0; k && known[i] && !ok; i++)
			ok = strlen(known[i]) == kl && !memcmp(known[i], k, kl);
		if (!ok) {
			buf_t list;
			buf_init(&list, 512);
			for (size_t i = 0; known[i]; i++)
				buf_printf(&list, "%s%s", i ? ", " : "", known[i]);
			buf_putc(&list, 0);
			err_set(err, 400, "config %s%s%.*s is not a setting; known: %s", *path ? path + 1 : "", *path ? "." : "",
			        (int)(k ? kl : 0), k ? k : "", (const char *)list.p);
			buf_free(&list);
			return -1;
		}
	}
	return 0;
}

static int load_store(struct fy_node *root, config_t *c, err_t *err)
{
	static const char *const keys[] = {"engine", "url", "database", "user", "password", "passwordFile",
	                                   "cluster", "replicated", "maxAnswerMiB", "queueBatches", "queueMiB",
	                                   NULL};
	if (known_keys(root, "/store", keys, err) < 0)
		return -1;
	struct fy_node *n = fy_node_by_path(root, "/store", (size_t)-1, FYNWF_DONT_FOLLOW);
	if (!n)
		return 0;
	if (!fy_node_is_mapping(n))
		return err_set(err, 400,
		               "config store must be a mapping {engine, url, database, user, password, cluster}");
	if (read_string(root, "/store/engine", &c->store.engine, err) < 0 ||
	    read_string(root, "/store/url", &c->store.url, err) < 0 ||
	    read_string(root, "/store/database", &c->store.database, err) < 0 ||
	    read_string(root, "/store/user", &c->store.user, err) < 0 ||
	    read_string(root, "/store/password", &c->store.password, err) < 0 ||
	    read_string(root, "/store/passwordFile", &c->store.password_file, err) < 0 ||
	    read_string(root, "/store/cluster", &c->store.cluster, err) < 0 ||
	    read_bool(root, "/store/replicated", &c->store.replicated, err) < 0)
		return -1;
	if (read_whole(root, "/store/maxAnswerMiB", LIMIT_CH_ANSWER_MIB_MIN, LIMIT_CH_ANSWER_MIB_MAX, "MiB",
	               &c->store.max_answer_mib, err) < 0 ||
	    read_whole(root, "/store/queueBatches", LIMIT_STORE_QUEUE_BATCHES_MIN, LIMIT_STORE_QUEUE_BATCHES_MAX,
	               "batches", &c->store.queue_batches, err) < 0 ||
	    read_whole(root, "/store/queueMiB", LIMIT_STORE_QUEUE_MIB_MIN, LIMIT_STORE_QUEUE_MIB_MAX, "MiB",
	               &c->store.queue_mib, err) < 0)
		return -1;
	return 0;
}

/* The settings in doc over c (path names it in messages); destroys doc. */
static int load_doc(config_t *c, struct fy_document *doc, const char *path, err_t *err)
{
	int rc = -1;
	struct fy_node *root = fy_document_root(doc);
	if (!root) {
		rc = 0; /* empty file: defaults */
		goto out;
	}
	if (!fy_node_is_mapping(root)) {
		err_set(err, 400, "config %s: the top level must be a mapping", path);
		goto out;
	}
	static const char *const top[] = {"data", "role", "listeners", "limits", "retention", "receivers",
	                                  "kubernetes", "store", NULL};
	if (known_keys(root, "", top, err) < 0)
		goto out;
	if (read_string(root, "/data", &c->data_dir, err) < 0 || read_string(root, "/role", &c->role, err) < 0)
		goto out;
	for (int i = 0; i < API_LISTENER_COUNT; i++) {
		char p[96];
		snprintf(p, sizeof p, "/listeners/%s/addr", api_listener_names[i]);
		if (read_string(root, p, &c->listeners[i].addr, err) < 0)
			goto out;
		char *auth = NULL;
		snprintf(p, sizeof p, "/listeners/%s/auth", api_listener_names[i]);
		if (scalar_at(root, p, &auth, err) < 0)
			goto out;
		if (auth) {
			int ok = !strcmp(auth, "none") || !strcmp(auth, "required");
			c->listeners[i].auth_required = !strcmp(auth, "required");
			free(auth);
			if (!ok) {
				err_set(err, 400, "config listeners.%s.auth must be none or required",
				        api_listener_names[i]);
				goto out;
			}
		}
		snprintf(p, sizeof p, "/listeners/%s/trustScopeOrgId", api_listener_names[i]);
		if (read_bool(root, p, &c->listeners[i].trust_scope_org_id, err) < 0)
			goto out;
		snprintf(p, sizeof p, "/listeners/%s/tls/cert", api_listener_names[i]);
		if (read_string(root, p, &c->listeners[i].tls_cert, err) < 0)
			goto out;
		snprintf(p, sizeof p, "/listeners/%s/tls/key", api_listener_names[i]);
		if (read_string(root, p, &c->listeners[i].tls_key, err) < 0)
			goto out;
	}
	if (read_number(root, "/limits/samplesPerSecond", 1, LIMIT_SAMPLES_PER_SECOND_MAX,
	                &c->limits.samples_per_second, err) < 0)
		goto out;
	if (read_number(root, "/limits/defaultSamplesPerSecond", 0, LIMIT_SAMPLES_PER_SECOND_MAX,
	                &c->limits.default_samples_per_second, err) < 0)
		goto out;
	if (read_number(root, "/limits/requestBodiesMiB", LIMIT_BODIES_MIB_MIN, LIMIT_BODIES_MIB_MAX,
	                &c->limits.bodies_mib, err) < 0)
		goto out;
	double d;
	if ((rc = read_number(root, "/retention/days", 1, LIMIT_RETENTION_DAYS, &d, err)) < 0)
		goto out;
	if (rc == 1)
		c->retention.days = (int)d;
	if ((rc = read_number(root, "/retention/maxDays", 1, LIMIT_RETENTION_DAYS, &d, err)) < 0)
		goto out;
	if (rc == 1)
		c->retention.max_days = (int)d;
	rc = -1;
	struct fy_node *projects = fy_node_by_path(root, "/retention/projects", (size_t)-1, FYNWF_DONT_FOLLOW);
	if (projects) {
		if (!fy_node_is_mapping(projects)) {
			err_set(err, 400, "config retention.projects must be a mapping of project name to days");
			goto out;
		}
		void *it = NULL;
		struct fy_node_pair *pair;
		while ((pair = fy_node_mapping_iterate(projects, &it))) {
			size_t kl, vl;
			const char *k = fy_node_get_scalar(fy_node_pair_key(pair), &kl);
			const char *v = fy_node_get_scalar(fy_node_pair_value(pair), &vl);
			char num[32];
			snprintf(num, sizeof num, "%.*s", (int)(v ? vl : 0), v ? v : "");
			char *end;
			long days = strtol(num, &end, 10);
			if (!k || !v || *end || days < 1 || days > LIMIT_RETENTION_DAYS) {
				err_set(
				    err, 400,
				    "config retention.projects: each value must be a number of days (1-%d)",
				    LIMIT_RETENTION_DAYS);
				goto out;
			}
			if (c->retention.n_projects == LIMIT_RETENTION_PROJECTS) {
				err_set(err, 400, "config retention.projects: at most %d projects",
				        LIMIT_RETENTION_PROJECTS);
				goto out;
			}
			c->retention.projects[c->retention.n_projects].project = xstrndup(k, kl);
			c->retention.projects[c->retention.n_projects++].days = (int)days;
		}
	}
	char *rows = NULL;
	if (scalar_at(root, "/receivers/profiles/maxDecodedSampleRows", &rows, err) < 0)
		goto out;
	if (rows) {
		char *end;
		long v = strtol(rows, &end, 10);
		int bad = *end || v < 1 || v > LIMIT_SAMPLE_ROWS_MAX;
		free(rows);
		if (bad) {
			err_set(
			    err, 400,
			    "config receivers.profiles.maxDecodedSampleRows must be a number from 1 to %d",
			    LIMIT_SAMPLE_ROWS_MAX);
			goto out;
		}
		c->limits.max_rows = (uint32_t)v;
	}
	if (load_scrape(root, &c->scrape, err) < 0 || load_kubernetes(root, &c->kubernetes, err) < 0 ||
	    load_store(root, c, err) < 0)
		goto out;
	rc = 0;
out:
	fy_document_destroy(doc);
	return rc;
}

/* YAML text over c; name is for messages. cfg NULL: libfyaml prints its
 * diagnostics (line, column) on stderr. Text that is not UTF-8 is refused
 * before libfyaml sees it: 0.7.12 loops forever on an invalid byte in a
 * "%" directive line (found by tests/fuzz/config.c). */
static int load_text(config_t *c, const char *yaml, size_t n, const struct fy_parse_cfg *cfg,
                     const char *name, err_t *err)
{
	size_t ok = utf8_valid_prefix(slice_make(yaml, n));
	if (ok < n)
		return err_set(err, 400, "config %s is not UTF-8 text: invalid byte at offset %zu", name, ok);
	struct fy_document *doc = fy_document_build_from_string(cfg, yaml, n);
	if (!doc)
		return err_set(err, 400, "cannot read config %s: not a readable YAML file", name);
	return load_doc(c, doc, name, err);
}

int config_load_file(config_t *c, const char *path, err_t *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return err_set(err, 400, "cannot read config %s: %s", path, strerror(errno));
	buf_t b;
	buf_init(&b, LIMIT_CONFIG_BYTES);
	char chunk[4096];
	size_t got;
	int rc = 0;
	while (rc == 0 && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (buf_append(&b, chunk, got) < 0)
			rc = err_set(err, 400, "config %s is larger than %u bytes", path, LIMIT_CONFIG_BYTES);
	if (rc == 0 && ferror(f))
		rc = err_set(err, 400, "cannot read config %s: %s", path, strerror(errno));
	fclose(f);
	if (rc == 0)
		rc = load_text(c, b.p ? (const char *)b.p : "", b.n, NULL, path, err);
	buf_free(&b);
	return rc;
}

int config_load_yaml(config_t *c, const char *yaml, size_t n, err_t *err)
{
	static const struct fy_parse_cfg quiet = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG};
	return load_text(c, yaml, n, &quiet, "(in memory)", err);
}

int config_validate(const config_t *c, err_t *err)
{
	static const char *roles[] = {"all", "sensor", "ingestor", "query"};
	int ok = 0;
	for (size_t i = 0; i < 4; i++)
		ok |= !strcmp(c->role, roles[i]);
	if (!ok)
		return err_set(err, 400, "role %s is not one of all, sensor, ingestor, query", c->role);
	for (int i = 0; i < API_LISTENER_COUNT; i++) {
		const char *a = c->listeners[i].addr;
		if (!a || !*a || (strcmp(a, "off") && !strchr(a, ':')))
			return err_set(err, 400, "listener %s: address %s must be host:port, :port or off",
			               api_listener_names[i], a ? a : "");
	}
	if (!c->data_dir || !*c->data_dir)
		return err_set(err, 400, "data directory must not be empty");
	const store_retention_options_t *r = &c->retention;
	if (r->days > r->max_days)
		return err_set(
		    err, 400,
		    "retention.days (%d) is above retention.maxDays (%d): raise maxDays to keep data longer",
		    r->days, r->max_days);
	for (uint32_t i = 0; i < r->n_projects; i++)
		if (r->projects[i].days > r->max_days)
			return err_set(err, 400,
			               "retention.projects.%s (%d days) is above retention.maxDays (%d)",
			               r->projects[i].project, r->projects[i].days, r->max_days);
	for (int i = 0; i < API_LISTENER_COUNT; i++) {
		if (!c->listeners[i].tls_cert != !c->listeners[i].tls_key)
			return err_set(err, 400, "listeners.%s.tls needs both cert and key",
			               api_listener_names[i]);
		/* OPS: Trusting X-Scope-OrgID: a key names its project; the header must not override it. */
		if (c->listeners[i].trust_scope_org_id && c->listeners[i].auth_required)
			return err_set(
			    err, 400,
			    "listeners.%s.trustScopeOrgId needs auth: none (with auth required, the key "
			    "names the project)",
			    api_listener_names[i]);
	}
	if (strcmp(c->store.engine, "local") && strcmp(c->store.engine, "clickhouse"))
		return err_set(err, 400, "store.engine %.100s is not one of local, clickhouse", c->store.engine);
	if (!strcmp(c->store.engine, "clickhouse") &&
	    (!c->store.url || (strncmp(c->store.url, "http://", 7) && strncmp(c->store.url, "https://", 8))))
		return err_set(err, 400, "store.url must be the ClickHouse HTTP interface, http://host:8123");
	if (c->store.password && c->store.password_file)
		return err_set(err, 400, "store: set password or passwordFile, not both");
	return 0;
}
