/* The listeners' settings as the config file gives them (listeners.NAME:
 * addr, auth, tls) and their names and default addresses. api/ owns the
 * listener identities (LISTENER_*: metrics, caller identification); the
 * config loader (cli/config.c) fills the options, kiln serve opens them. */
#ifndef KILN_API_OPTIONS_H
#define KILN_API_OPTIONS_H

enum { LISTENER_UPLOAD, LISTENER_OTLP_HTTP, LISTENER_OTLP_GRPC, LISTENER_UI, LISTENER_COUNT };

/* Strings are malloc'd; NULL = not set. */
typedef struct {
	char *addr; /* "host:port", ":port" or "off" */
	int auth_required;
	char *tls_cert, *tls_key;
} listener_options;

extern const char *const listener_names[LISTENER_COUNT]; /* "upload", "otlp_http", ... */

/* Every listener's defaults (its port, no auth, no TLS). */
void listener_options_defaults(listener_options l[LISTENER_COUNT]);
void listener_options_free(listener_options l[LISTENER_COUNT]);

#endif
