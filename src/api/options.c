/* Listener names and default addresses (api/options.h). */
#include "api/options.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

const char *const api_listener_names[API_LISTENER_COUNT] = {"upload", "otlp_http", "otlp_grpc", "ui"};

static const char *const default_addrs[API_LISTENER_COUNT] = {":8028", ":4318", ":4317", ":4040"};

void api_listener_options_defaults(api_listener_options_t l[API_LISTENER_COUNT])
{
	for (int i = 0; i < API_LISTENER_COUNT; i++)
		l[i] = (api_listener_options_t){.addr = xstrdup(default_addrs[i])};
}

void api_listener_options_free(api_listener_options_t l[API_LISTENER_COUNT])
{
	for (int i = 0; i < API_LISTENER_COUNT; i++) {
		free(l[i].addr);
		free(l[i].tls_cert);
		free(l[i].tls_key);
		memset(&l[i], 0, sizeof l[i]);
	}
}
