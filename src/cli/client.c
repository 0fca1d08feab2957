/* Client subcommands (upload, top, export): libcurl against a running kiln.
 * They use only the documented HTTP API, like any other client. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/limits.h"
#include "cli/cli.h"
#include "wire/compress.h"
#include "wire/jfr.h"

typedef struct {
	const char *file, *service, *type, *from, *until, *limit, *url;
	const char *labels[64];
	int n_labels;
} client_opts_t;

static int parse_opts(int argc, char **argv, client_opts_t *o, const char *default_url)
{
	memset(o, 0, sizeof *o);
	o->url = default_url;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name, field)                                                                                     \
	if (!strcmp(a, name)) {                                                                              \
		if (!v) {                                                                                    \
			fprintf(stderr, "kiln: %s needs a value\n", name);                                   \
			return -1;                                                                           \
		}                                                                                            \
		o->field = v;                                                                                \
		i++;                                                                                         \
		continue;                                                                                    \
	}
		OPT("--service", service)
		OPT("--type", type)
		OPT("--from", from)
		OPT("--until", until)
		OPT("--limit", limit)
		OPT("--url", url)
#undef OPT
		if (!strcmp(a, "--label") && v && o->n_labels < 64) {
			o->labels[o->n_labels++] = v;
			i++;
			continue;
		}
		if (a[0] != '-' && !o->file) {
			o->file = a;
			continue;
		}
		fprintf(stderr, "kiln: unexpected argument %s\n", a);
		return -1;
	}
	return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	buf_t *b = ud;
	return buf_append(b, p, size * n) < 0 ? 0 : size * n;
}

static void add_param(CURL *c, buf_t *url, const char *key, const char *value)
{
	if (!value)
		return;
	char *k = curl_easy_escape(c, key, 0), *v = curl_easy_escape(c, value, 0);
	buf_printf(url, "%c%s=%s", memchr(url->p, '?', url->n) ? '&' : '?', k, v);
	curl_free(k);
	curl_free(v);
}

/* Performs the request; *status gets the HTTP status. Returns -1 on transport errors. */
static int perform(CURL *c, buf_t *url, buf_t *resp, long *status)
{
	buf_putc(url, 0);
	curl_easy_setopt(c, CURLOPT_URL, (const char *)url->p);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		fprintf(stderr, "kiln: %s: %s\n", (const char *)url->p, curl_easy_strerror(rc));
		return -1;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	return 0;
}

/* Prints the server's {"error": ...} message for a failed request. */
static void print_error(long status, const buf_t *resp)
{
	json_error_t je;
	json_t *j = json_loadb((const char *)resp->p, resp->n, 0, &je);
	const char *msg = j ? json_string_value(json_object_get(j, "error")) : NULL;
	fprintf(stderr, "kiln: server answered %ld: %.*s\n", status, msg ? (int)strlen(msg) : (int)resp->n,
	        msg ? msg : (const char *)resp->p);
	json_decref(j);
}

/* 1 when body is a JFR recording, raw or gzip: it starts, inflated, with
 * the chunk magic "FLR\0". A gzip past the server's decoded limit is left
 * to the pprof route, whose answer names that limit. */
static int is_jfr(const buf_t *body)
{
	slice_t s = slice_make(body->p, body->n);
	if (!gz_is_gzip(s))
		return jfr_is_jfr(s);
	buf_t plain;
	err_t err;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	int jfr = gz_inflate(s, &plain, &err) == 0 && jfr_is_jfr(buf_slice(&plain));
	buf_free(&plain);
	return jfr;
}

/* The URL of an upload: a pprof to /profiling/upload, a JFR recording to
 * Pyroscope's /ingest?format=jfr (name SERVICE{K=V,...}, the --from and
 * --until given, sampleRate as the Java agent's default). */
static void upload_url(CURL *c, const client_opts_t *o, int jfr, buf_t *url)
{
	if (!jfr) {
		buf_printf(url, "%s/profiling/upload", o->url);
		add_param(c, url, "serviceName", o->service);
		for (int i = 0; i < o->n_labels; i++) {
			const char *eq = strchr(o->labels[i], '=');
			if (!eq)
				continue;
			char key[256];
			snprintf(key, sizeof key, "label.%.*s", (int)(eq - o->labels[i]), o->labels[i]);
			add_param(c, url, key, eq + 1);
		}
		return;
	}
	buf_t name;
	buf_init(&name, SIZE_MAX);
	buf_printf(&name, "%s", o->service);
	int n = 0;
	for (int i = 0; i < o->n_labels; i++)
		if (strchr(o->labels[i], '='))
			buf_printf(&name, "%c%s", n++ ? ',' : '{', o->labels[i]);
	if (n)
		buf_putc(&name, '}');
	buf_putc(&name, 0);
	buf_printf(url, "%s/ingest", o->url);
	add_param(c, url, "name", (const char *)name.p);
	add_param(c, url, "format", "jfr");
	add_param(c, url, "sampleRate", "100");
	add_param(c, url, "from", o->from);
	add_param(c, url, "until", o->until);
	buf_free(&name);
}

int cli_upload(int argc, char **argv)
{
	client_opts_t o;
	if (parse_opts(argc, argv, &o, "http://127.0.0.1:8028") < 0 || !o.file || !o.service) {
		fprintf(stderr,
		        "usage: kiln upload FILE --service NAME [--url http://HOST:8028] [--label K=V ...]\n"
		        "  FILE: a pprof, or a JFR recording (raw or gzip: detected; pushed to "
		        "/ingest?format=jfr,\n"
		        "  with --from/--until in unix seconds when given)\n");
		return 2;
	}
	FILE *f = fopen(o.file, "rb");
	if (!f) {
		perror(o.file);
		return 1;
	}
	buf_t body;
	buf_init(&body, (size_t)64 << 20);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (buf_append(&body, chunk, n) < 0) {
			fprintf(stderr, "kiln: %s is larger than 64 MiB\n", o.file);
			fclose(f);
			buf_free(&body);
			return 1;
		}
	fclose(f);

	CURL *c = xcheck(curl_easy_init());
	buf_t url, resp;
	buf_init(&url, 1 << 16);
	buf_init(&resp, 1 << 20);
	upload_url(c, &o, is_jfr(&body), &url);
	struct curl_slist *h = xcheck(curl_slist_append(NULL, "Content-Type: application/octet-stream"));
	h = xcheck(curl_slist_append(h, "Expect:"));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.p);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.n);
	long status = 0;
	int rc = perform(c, &url, &resp, &status);
	if (rc == 0 && status == 200 && resp.n) /* /ingest answers an empty body */
		printf("%.*s\n", (int)resp.n, (const char *)resp.p);
	else if (rc == 0)
		print_error(status, &resp);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	buf_free(&url);
	buf_free(&resp);
	buf_free(&body);
	return rc == 0 && status == 200 ? 0 : 1;
}

static CURL *query_url(const client_opts_t *o, const char *route, buf_t *url)
{
	CURL *c = xcheck(curl_easy_init());
	buf_printf(url, "%s%s", o->url, route);
	add_param(c, url, "service", o->service);
	add_param(c, url, "type", o->type);
	add_param(c, url, "from", o->from);
	add_param(c, url, "until", o->until);
	add_param(c, url, "limit", o->limit);
	return c;
}

/* Formats v in the unit (bytes, nanoseconds, count) into out. */
static void format_value(double v, const char *unit, char *out, size_t n)
{
	if (!strcmp(unit, "nanoseconds")) {
		if (v >= 1e9)
			snprintf(out, n, "%.2fs", v / 1e9);
		else if (v >= 1e6)
			snprintf(out, n, "%.2fms", v / 1e6);
		else if (v >= 1e3)
			snprintf(out, n, "%.2fus", v / 1e3);
		else
			snprintf(out, n, "%.0fns", v);
	} else if (!strcmp(unit, "bytes")) {
		static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
		int i = 0;
		while (v >= 1024 && i < 4)
			v /= 1024, i++;
		snprintf(out, n, i ? "%.2f%s" : "%.0f%s", v, u[i]);
	} else {
		snprintf(out, n, "%.0f", v);
	}
}

int cli_top(int argc, char **argv)
{
	client_opts_t o;
	if (parse_opts(argc, argv, &o, "http://127.0.0.1:4040") < 0 || !o.service || !o.type) {
		fprintf(stderr, "usage: kiln top --service NAME --type TYPE [--from T] [--until T] [--limit "
		                "N] [--url URL]\n");
		return 2;
	}
	if (!o.limit)
		o.limit = "20";
	buf_t url, resp;
	buf_init(&url, 1 << 16);
	buf_init(&resp, (size_t)256 << 20);
	CURL *c = query_url(&o, "/api/top", &url);
	long status = 0;
	int rc = perform(c, &url, &resp, &status), ret = 1;
	curl_easy_cleanup(c);
	if (rc == 0 && status != 200)
		print_error(status, &resp);
	if (rc == 0 && status == 200) {
		json_error_t je;
		json_t *j = json_loadb((const char *)resp.p, resp.n, 0, &je);
		json_t *rows = j ? json_object_get(j, "rows") : NULL;
		if (!json_is_array(rows)) {
			fprintf(stderr, "kiln: unexpected answer from %s\n", o.url);
		} else {
			const char *unit = json_string_value(json_object_get(j, "unit"));
			double total = json_number_value(json_object_get(j, "total"));
			char a[32], b[32];
			format_value(total, unit ? unit : "", a, sizeof a);
			printf("%s  %s  total %s\n", o.service, o.type, a);
			printf("%12s %7s %12s %7s  %s\n", "self", "self%", "total", "total%", "name");
			size_t i;
			json_t *row;
			json_array_foreach(rows, i, row)
			{
				double self = json_number_value(json_object_get(row, "self"));
				double tot = json_number_value(json_object_get(row, "total"));
				format_value(self, unit ? unit : "", a, sizeof a);
				format_value(tot, unit ? unit : "", b, sizeof b);
				printf("%12s %6.2f%% %12s %6.2f%%  %s\n", a, total ? 100 * self / total : 0,
				       b, total ? 100 * tot / total : 0,
				       json_string_value(json_object_get(row, "name")));
			}
			ret = 0;
		}
		json_decref(j);
	}
	buf_free(&url);
	buf_free(&resp);
	return ret;
}

int cli_export(int argc, char **argv)
{
	client_opts_t o;
	if (parse_opts(argc, argv, &o, "http://127.0.0.1:4040") < 0 || !o.service || !o.type) {
		fprintf(stderr, "usage: kiln export --service NAME --type TYPE [--from T] [--until T] [--url "
		                "URL] > out.pb.gz\n");
		return 2;
	}
	buf_t url, resp;
	buf_init(&url, 1 << 16);
	buf_init(&resp, (size_t)1 << 30);
	CURL *c = query_url(&o, "/api/pprof", &url);
	long status = 0;
	int rc = perform(c, &url, &resp, &status), ret = 1;
	curl_easy_cleanup(c);
	if (rc == 0 && status != 200)
		print_error(status, &resp);
	if (rc == 0 && status == 200) {
		ret = fwrite(resp.p, 1, resp.n, stdout) == resp.n ? 0 : 1;
		fflush(stdout);
	}
	buf_free(&url);
	buf_free(&resp);
	return ret;
}
