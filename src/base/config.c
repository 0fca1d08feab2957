/* Settings from YAML (libfyaml) and defaults (base/config.h). */
#include "base/config.h"

#include <libfyaml.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

const char *const listener_names[LISTENER_COUNT] = {"upload", "otlp_http", "otlp_grpc", "ui"};
static const char *const default_addrs[LISTENER_COUNT] = {":8028", ":4318", ":4317", ":4040"};

void config_set(char **field, const char *value)
{
	free(*field);
	*field = value ? xstrdup(value) : NULL;
}

void config_defaults(kiln_config *c)
{
	memset(c, 0, sizeof *c);
	config_set(&c->data_dir, "./kiln-data");
	config_set(&c->role, "all");
	for (int i = 0; i < LISTENER_COUNT; i++)
		config_set(&c->listeners[i].addr, default_addrs[i]);
	c->max_rows = 10000;
	c->samples_per_second = 20000;
	c->retention_days = 14;
	c->retention_max_days = 14;
}

int config_retention_days(const kiln_config *c, const char *project)
{
	int days = c->retention_days;
	for (uint32_t i = 0; i < c->n_project_retention; i++)
		if (!strcmp(c->project_retention[i].project, project))
			days = c->project_retention[i].days;
	return days > c->retention_max_days ? c->retention_max_days : days;
}

void config_free(kiln_config *c)
{
	free(c->data_dir);
	free(c->role);
	for (uint32_t i = 0; i < c->n_project_retention; i++)
		free(c->project_retention[i].project);
	for (int i = 0; i < LISTENER_COUNT; i++) {
		free(c->listeners[i].addr);
		free(c->listeners[i].tls_cert);
		free(c->listeners[i].tls_key);
	}
	memset(c, 0, sizeof *c);
}

/* Scalar at path as a malloc'd string, NULL if absent; -1 if not a scalar. */
static int scalar_at(struct fy_node *root, const char *path, char **out, kn_err *err)
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

static int read_string(struct fy_node *root, const char *path, char **field, kn_err *err)
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
static int read_number(struct fy_node *root, const char *path, double min, double max, double *out, kn_err *err)
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

int config_load_file(kiln_config *c, const char *path, kn_err *err)
{
	struct fy_document *doc = fy_document_build_from_file(NULL, path);
	if (!doc)
		return err_set(err, 400, "cannot read config %s: not a readable YAML file", path);
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
	if (read_string(root, "/data", &c->data_dir, err) < 0 || read_string(root, "/role", &c->role, err) < 0)
		goto out;
	for (int i = 0; i < LISTENER_COUNT; i++) {
		char p[96];
		snprintf(p, sizeof p, "/listeners/%s/addr", listener_names[i]);
		if (read_string(root, p, &c->listeners[i].addr, err) < 0)
			goto out;
		char *auth = NULL;
		snprintf(p, sizeof p, "/listeners/%s/auth", listener_names[i]);
		if (scalar_at(root, p, &auth, err) < 0)
			goto out;
		if (auth) {
			int ok = !strcmp(auth, "none") || !strcmp(auth, "required");
			c->listeners[i].auth_required = !strcmp(auth, "required");
			free(auth);
			if (!ok) {
				err_set(err, 400, "config listeners.%s.auth must be none or required", listener_names[i]);
				goto out;
			}
		}
		snprintf(p, sizeof p, "/listeners/%s/tls/cert", listener_names[i]);
		if (read_string(root, p, &c->listeners[i].tls_cert, err) < 0)
			goto out;
		snprintf(p, sizeof p, "/listeners/%s/tls/key", listener_names[i]);
		if (read_string(root, p, &c->listeners[i].tls_key, err) < 0)
			goto out;
	}
	if (read_number(root, "/limits/samplesPerSecond", 1, 1e9, &c->samples_per_second, err) < 0)
		goto out;
	double d;
	if ((rc = read_number(root, "/retention/days", 1, 3650, &d, err)) < 0)
		goto out;
	if (rc == 1)
		c->retention_days = (int)d;
	if ((rc = read_number(root, "/retention/maxDays", 1, 3650, &d, err)) < 0)
		goto out;
	if (rc == 1)
		c->retention_max_days = (int)d;
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
			if (!k || !v || *end || days < 1 || days > 3650) {
				err_set(err, 400, "config retention.projects: each value must be a number of days (1-3650)");
				goto out;
			}
			if (c->n_project_retention == 64) {
				err_set(err, 400, "config retention.projects: at most 64 projects");
				goto out;
			}
			c->project_retention[c->n_project_retention].project = xstrndup(k, kl);
			c->project_retention[c->n_project_retention++].days = (int)days;
		}
	}
	char *rows = NULL;
	if (scalar_at(root, "/receivers/profiles/maxDecodedSampleRows", &rows, err) < 0)
		goto out;
	if (rows) {
		char *end;
		long v = strtol(rows, &end, 10);
		int bad = *end || v < 1 || v > 10000000;
		free(rows);
		if (bad) {
			err_set(err, 400, "config receivers.profiles.maxDecodedSampleRows must be a number from 1 to 10000000");
			goto out;
		}
		c->max_rows = (uint32_t)v;
	}
	rc = 0;
out:
	fy_document_destroy(doc);
	return rc;
}

int config_validate(const kiln_config *c, kn_err *err)
{
	static const char *roles[] = {"all", "sensor", "ingestor", "query"};
	int ok = 0;
	for (size_t i = 0; i < 4; i++)
		ok |= !strcmp(c->role, roles[i]);
	if (!ok)
		return err_set(err, 400, "role %s is not one of all, sensor, ingestor, query", c->role);
	for (int i = 0; i < LISTENER_COUNT; i++) {
		const char *a = c->listeners[i].addr;
		if (!a || !*a || (strcmp(a, "off") && !strchr(a, ':')))
			return err_set(err, 400, "listener %s: address %s must be host:port, :port or off", listener_names[i],
			               a ? a : "");
	}
	if (!c->data_dir || !*c->data_dir)
		return err_set(err, 400, "data directory must not be empty");
	if (c->retention_days > c->retention_max_days)
		return err_set(err, 400, "retention.days (%d) is above retention.maxDays (%d): raise maxDays to keep data longer",
		               c->retention_days, c->retention_max_days);
	for (uint32_t i = 0; i < c->n_project_retention; i++)
		if (c->project_retention[i].days > c->retention_max_days)
			return err_set(err, 400, "retention.projects.%s (%d days) is above retention.maxDays (%d)",
			               c->project_retention[i].project, c->project_retention[i].days, c->retention_max_days);
	for (int i = 0; i < LISTENER_COUNT; i++)
		if (!c->listeners[i].tls_cert != !c->listeners[i].tls_key)
			return err_set(err, 400, "listeners.%s.tls needs both cert and key", listener_names[i]);
	return 0;
}
