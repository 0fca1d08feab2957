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
}

void config_free(kiln_config *c)
{
	free(c->data_dir);
	free(c->role);
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
	return 0;
}
