/* The listeners' settings as the config file gives them (listeners.NAME:
 * addr, auth, tls, trustScopeOrgId) and their names and default addresses.
 * api/ owns the listener identities (LISTENER_*: metrics, caller identification); the
 * config loader (cli/config.c) fills the options, kiln serve opens them. */
#ifndef KILN_API_OPTIONS_H
#define KILN_API_OPTIONS_H

enum {
	API_LISTENER_UPLOAD,
	API_LISTENER_OTLP_HTTP,
	API_LISTENER_OTLP_GRPC,
	API_LISTENER_UI,
	API_LISTENER_COUNT
};

/* Strings are malloc'd; NULL = not set. */
typedef struct {
	char *addr; /* "host:port", ":port" or "off" */
	int auth_required;
	int trust_scope_org_id; /* OPS: Trusting X-Scope-OrgID (auth none only) */
	char *tls_cert, *tls_key;
} api_listener_options_t;

extern const char *const api_listener_names[API_LISTENER_COUNT]; /* "upload", "otlp_http", ... */

/* Every listener's defaults (its port, no auth, no TLS). */
void api_listener_options_defaults(api_listener_options_t l[API_LISTENER_COUNT]);
void api_listener_options_free(api_listener_options_t l[API_LISTENER_COUNT]);

#endif
