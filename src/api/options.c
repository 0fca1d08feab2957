/* Listener names and default addresses (api/options.h). */
#include "api/options.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

const char *const listener_names[LISTENER_COUNT] = {"upload", "otlp_http", "otlp_grpc", "ui"};

static const char *const default_addrs[LISTENER_COUNT] = {":8028", ":4318", ":4317", ":4040"};

void listener_options_defaults(listener_options l[LISTENER_COUNT])
{
	for (int i = 0; i < LISTENER_COUNT; i++)
		l[i] = (listener_options){.addr = xstrdup(default_addrs[i])};
}

void listener_options_free(listener_options l[LISTENER_COUNT])
{
	for (int i = 0; i < LISTENER_COUNT; i++) {
		free(l[i].addr);
		free(l[i].tls_cert);
		free(l[i].tls_key);
		memset(&l[i], 0, sizeof l[i]);
	}
}
