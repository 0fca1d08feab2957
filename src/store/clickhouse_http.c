/* store/clickhouse: talking to ClickHouse's HTTP interface with libcurl
 * (pooled connections, one POST per statement), the schema, and the
 * RowBinary encoding both ways. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/num.h"
#include "base/timeutil.h"
#include "store/clickhouse.h"

#define CH_CONNECT_TIMEOUT_MS 3000L
#define CH_TIMEOUT_MS 120000L
#define CH_RETRY_AFTER_S 5
#define CH_ERR_LOG_EVERY_NS (5 * 1000000000LL)

const char *const ch_table_names[CH_T_COUNT] = {"frames", "nodes", "attrsets", "series", "samples", "summed"};

size_t ch_on_answer(char *p, size_t size, size_t n, void *conn)
{
	ch_conn_t *c = conn;
	if (buf_append(&c->resp, p, size * n) < 0) {
		c->over = 1;
		return 0; /* libcurl stops the transfer: CURLE_WRITE_ERROR */
	}
	return size * n;
}

ch_conn_t *ch_conn_get(ch_store_t *s)
{
	pthread_mutex_lock(&s->pool_mu);
	ch_conn_t *c = s->pool;
	if (c)
		s->pool = c->next;
	pthread_mutex_unlock(&s->pool_mu);
	if (c)
		return c;
	c = xcalloc(1, sizeof *c);
	c->curl = xcheck(curl_easy_init());
	buf_init(&c->resp, SIZE_MAX);
	return c;
}

void ch_conn_free(ch_conn_t *c)
{
	if (!c)
		return;
	curl_easy_cleanup(c->curl);
	buf_free(&c->resp);
	free(c);
}

void ch_conn_put(ch_store_t *s, ch_conn_t *c)
{
	if (!c)
		return;
	/* Keep big answer buffers from living on in the pool. */
	if (c->resp.cap > (4u << 20)) {
		buf_free(&c->resp);
		buf_init(&c->resp, SIZE_MAX);
	}
	pthread_mutex_lock(&s->pool_mu);
	c->next = s->pool;
	s->pool = c;
	pthread_mutex_unlock(&s->pool_mu);
}

static void url_param(buf_t *u, CURL *curl, const char *name, const char *value)
{
	char *e = curl_easy_escape(curl, value, 0);
	buf_printf(u, "%s%s=%s", u->n && u->p[u->n - 1] != '?' ? "&" : "", name, e ? e : "");
	curl_free(e);
}

/* The first line of ClickHouse's error text, bounded. */
static void first_line(const buf_t *b, char *out, size_t n)
{
	size_t k = 0;
	while (k < b->n && k + 1 < n && b->p[k] != '\n' && b->p[k] != '\r') {
		out[k] = (b->p[k] >= 0x20 && b->p[k] < 0x7f && b->p[k] != '"') ? (char)b->p[k] : '?';
		k++;
	}
	out[k] = 0;
}

int ch_exec(ch_store_t *s, ch_conn_t *c, const char *sql, slice_t data, const char *settings, int use_db,
            err_t *err)
{
	CURL *h = c->curl;
	buf_t url;
	buf_init(&url, SIZE_MAX);
	buf_printf(&url, "%s?", s->url);
	if (use_db)
		url_param(&url, h, "database", s->db);
	if (data.p)
		url_param(&url, h, "query", sql);
	else
		url_param(&url, h, "wait_end_of_query",
		          "1"); /* errors become the HTTP status, not a cut answer */
	if (settings)
		buf_printf(&url, "%s%s", url.p[url.n - 1] == '?' ? "" : "&", settings);
	buf_putc(&url, 0);

	buf_reset(&c->resp);
	c->resp.max = s->answer_max;
	c->over = 0;
	curl_easy_reset(h);
	struct curl_slist *hdr = xcheck(curl_slist_append(NULL, "Expect:"));
	curl_easy_setopt(h, CURLOPT_URL, (const char *)url.p);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	/* Credentials as HTTP basic auth, never in the URL (proxies log URLs). */
	if (*s->user || *s->password) {
		curl_easy_setopt(h, CURLOPT_USERNAME, *s->user ? s->user : "default");
		curl_easy_setopt(h, CURLOPT_PASSWORD, s->password);
	}
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	if (data.p) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)data.p);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)data.n);
	} else {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, sql);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(sql));
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, ch_on_answer);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CH_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, CH_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	c->errbuf[0] = 0;
	CURLcode rc = curl_easy_perform(h);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	c->unsent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
	            rc == CURLE_COULDNT_RESOLVE_PROXY;
	curl_slist_free_all(hdr);
	buf_free(&url);
	/* Clients get a plain 503; the details (which may name hosts) go to the
	 * log, at most every few seconds while ClickHouse stays away. */
	if (rc != CURLE_OK || status != 200) {
		char line[320];
		if (c->over)
			snprintf(line, sizeof line, "answer cut off at %zu bytes (store.maxAnswerMiB)",
			         s->answer_max);
		else if (rc != CURLE_OK)
			snprintf(line, sizeof line, "%s", c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
		else
			first_line(&c->resp, line, sizeof line);
		int64_t now = time_mono_ns(), last = atomic_load(&s->last_err_log);
		if (now - last >= CH_ERR_LOG_EVERY_NS &&
		    atomic_compare_exchange_strong(&s->last_err_log, &last, now))
			log_warn("clickhouse request failed", "url=%s status=%ld error=\"%s\"", s->url,
			         status, line);
		/* Database or table gone (dropped by hand, a new empty ClickHouse):
		 * create the schema again on the next request. */
		if (rc == CURLE_OK && (!strncmp(line, "Code: 81,", 9) || !strncmp(line, "Code: 60,", 9)))
			atomic_store(&s->schema_ok, 0);
		/* Past the ceiling, by our count or ClickHouse's (396: TOO_MANY_ROWS_OR_BYTES,
		 * from max_result_bytes / max_result_rows): asking again would not help. */
		int too_many = rc == CURLE_OK && !strncmp(line, "Code: 396,", 10);
		if (c->over || (too_many && !strstr(line, "max rows")))
			return err_set(
			    err, 503,
			    "store: the answer from ClickHouse exceeded %u MiB (store.maxAnswerMiB)",
			    s->answer_mib);
		if (too_many)
			return err_set(err, 503, "store: the answer from ClickHouse exceeded %u rows",
			               LIMIT_CH_ROWS);
		err_set(err, 503,
		        rc != CURLE_OK ? "store: ClickHouse is unreachable; retry later"
		                       : "store: ClickHouse refused the request; retry later");
		if (err)
			err->retry_after = CH_RETRY_AFTER_S;
		return -1;
	}
	return 0;
}

/* ---- schema ---- */

static const char *const columns[CH_T_COUNT] = {
    [CH_T_FRAMES] = "project String, day UInt32, id UInt64, name String, file String, bin String, "
                    "build_id String, kind String, unsymbolized UInt8",
    [CH_T_NODES] = "project String, day UInt32, id UInt64, parent UInt64, frame UInt64, depth UInt32",
    [CH_T_ATTRSETS] = "project String, day UInt32, id UInt64, keys Array(String), vals Array(String)",
    [CH_T_SERIES] = "project String, day UInt32, id UInt64, service String, type String, period_type String, "
                    "period_unit String, period Int64, aggregation UInt8, cpu_alias UInt8, "
                    "keys Array(String), vals Array(String)",
    [CH_T_SAMPLES] =
        "project String, day UInt32, series UInt64, chunk UInt64, t_ns Int64, duration_ns Int64, "
        "node UInt64, attrset UInt64, value Int64, sample_t Int64, span_id String, trace_id String",
    /* hours: 1 (a UTC hour) or 24 (the day); hour: its first hour since
     * 1970; n, max_chunk, hash: the stamp of the chunks summed (their head
     * rows); made: when (ReplacingMergeTree keeps the last); exact: 0 when a
     * sum did not fit Int64 or chunks lacked head rows (never used). */
    [CH_T_SUMMED] = "project String, day UInt32, series UInt64, hours UInt8, hour UInt32, n UInt64, "
                    "max_chunk UInt64, hash UInt64, made Int64, exact UInt8, nodes Array(UInt64), "
                    "attrsets Array(UInt64), vals Array(Int64)",
};

/* family may carry a version column after a space: "ReplacingMergeTree version". */
static void engine_clause(ch_store_t *s, buf_t *q, const char *family, const char *table)
{
	const char *sp = strchr(family, ' ');
	int fn = sp ? (int)(sp - family) : (int)strlen(family);
	if (s->replicated)
		buf_printf(q, "ENGINE = Replicated%.*s('/clickhouse/tables/{shard}/%s/%s', '{replica}'%s%s)",
		           fn, family, s->db, table, sp ? ", " : "", sp ? sp + 1 : "");
	else
		buf_printf(q, "ENGINE = %.*s%s%s%s", fn, family, sp ? "(" : "", sp ? sp + 1 : "",
		           sp ? ")" : "");
}

static int create_table(ch_store_t *s, ch_conn_t *c, buf_t *q, const char *name, const char *cols,
                        const char *family, const char *keys, err_t *err)
{
	/* Every name is qualified with the database: an ON CLUSTER statement
	 * runs on each host through the distributed DDL queue, where 18.16 does
	 * not resolve an unqualified `AS T_local` in the initiator's database but
	 * in `default` ("Table default.frames_local doesn't exist"). */
	const char *local = s->cluster ? "_local" : "";
	buf_reset(q);
	buf_printf(q, "CREATE TABLE IF NOT EXISTS %s.%s%s", s->db, name, local);
	if (s->cluster)
		buf_printf(q, " ON CLUSTER %s", s->cluster);
	buf_printf(q, " (%s) ", cols);
	char tname[64];
	snprintf(tname, sizeof tname, "%s%s", name, local);
	engine_clause(s, q, family, tname);
	buf_printf(q, " %s", keys);
	buf_putc(q, 0);
	if (ch_exec(s, c, (const char *)q->p, (slice_t){0}, NULL, 1, err) < 0)
		return -1;
	if (!s->cluster)
		return 0;
	buf_reset(q);
	buf_printf(q,
	           "CREATE TABLE IF NOT EXISTS %s.%s ON CLUSTER %s AS %s.%s_local "
	           "ENGINE = Distributed(%s, %s, %s_local, rand())",
	           s->db, name, s->cluster, s->db, name, s->cluster, s->db, name);
	buf_putc(q, 0);
	return ch_exec(s, c, (const char *)q->p, (slice_t){0}, NULL, 1, err);
}

int ch_schema(ch_store_t *s, ch_conn_t *c, err_t *err)
{
	if (atomic_load(&s->schema_ok))
		return 0;
	pthread_mutex_lock(&s->schema_mu);
	int rc = 0;
	buf_t q;
	buf_init(&q, SIZE_MAX);
	if (atomic_load(&s->schema_ok))
		goto out;
	buf_printf(&q, "CREATE DATABASE IF NOT EXISTS %s", s->db);
	if (s->cluster)
		buf_printf(&q, " ON CLUSTER %s", s->cluster);
	buf_putc(&q, 0);
	rc = ch_exec(s, c, (const char *)q.p, (slice_t){0}, NULL, 0, err);
	for (int t = 0; t < CH_T_COUNT && rc == 0; t++) {
		const char *family = t == CH_T_SAMPLES  ? "MergeTree"
		                     : t == CH_T_SUMMED ? "ReplacingMergeTree made"
		                                        : "ReplacingMergeTree";
		const char *keys =
		    t == CH_T_SAMPLES
		        ? "PARTITION BY (project, day) ORDER BY (project, day, series, t_ns, chunk)"
		    /* A granule per row: a view reads the arrays of the rows it uses, not of
		     * their neighbours (a day row beside 24 hour rows of thousands of sums). */
		    : t == CH_T_SUMMED
		        ? "PARTITION BY (project, day) ORDER BY (project, day, series, hours, hour) "
		          "SETTINGS index_granularity = 1"
		        : "PARTITION BY (project, day) ORDER BY (project, day, id)";
		rc = create_table(s, c, &q, ch_table_names[t], columns[t], family, keys, err);
	}
	if (rc == 0)
		rc = create_table(
		    s, c, &q, "usage",
		    "day UInt32, project String, key String, accepted UInt64, rate_limited UInt64, "
		    "too_large UInt64, invalid UInt64, out_of_window UInt64",
		    "SummingMergeTree", "ORDER BY (day, project, key)", err);
	if (rc == 0)
		rc = create_table(s, c, &q, "keys",
		                  "name String, project String, scope String, hash String, created_ns Int64, "
		                  "revoked_ns Int64, version Int64",
		                  "ReplacingMergeTree version", "ORDER BY name", err);
	if (rc == 0) {
		atomic_store(&s->schema_ok, 1);
		log_info("clickhouse schema ready", "url=%s database=%s cluster=%s", s->url, s->db,
		         s->cluster ? s->cluster : "");
	}
out:
	buf_free(&q);
	pthread_mutex_unlock(&s->schema_mu);
	return rc;
}

/* ---- encodings ---- */

void ch_sql_str(buf_t *b, slice_t v)
{
	buf_putc(b, '\'');
	for (size_t i = 0; i < v.n; i++) {
		uint8_t ch = (uint8_t)v.p[i];
		if (ch == '\\' || ch == '\'')
			buf_putc(b, '\\'), buf_putc(b, ch);
		else if (ch < 0x20 || ch == 0x7f)
			buf_printf(b, "\\x%02x", ch);
		else
			buf_putc(b, ch);
	}
	buf_putc(b, '\'');
}

void ch_put_u8(buf_t *b, uint8_t v)
{
	buf_putc(b, v);
}

void ch_put_u32(buf_t *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	buf_append(b, x, 4);
}

void ch_put_u64(buf_t *b, uint64_t v)
{
	uint8_t x[8];
	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	buf_append(b, x, 8);
}

void ch_put_str(buf_t *b, slice_t v)
{
	buf_put_uvarint(b, v.n);
	buf_append(b, v.p, v.n);
}

void ch_rd_init(ch_rd_t *r, const uint8_t *p, size_t n)
{
	r->start = r->p = p;
	r->end = n ? p + n : p; /* a buffer's p is NULL until a first byte */
	memset(&r->err, 0, sizeof r->err);
}

void ch_rd_fail(ch_rd_t *r, const char *what)
{
	if (r->err.status)
		return;
	err_set(&r->err, 503, "%s at byte %zu of %zu", what, (size_t)(r->p - r->start),
	        (size_t)(r->end - r->start));
}

int ch_rd_end(ch_rd_t *r, err_t *err, int status, const char *what)
{
	if (!r->err.status && r->p < r->end) {
		char left[64];
		snprintf(left, sizeof left, "%zu bytes after the last row", (size_t)(r->end - r->p));
		ch_rd_fail(r, left);
	}
	if (!r->err.status)
		return 0;
	return err_set(err, status, "store: ClickHouse sent a malformed %s: %s", what, r->err.msg);
}

/* 1 when n more bytes are there; else records what was cut short and 0. */
static int rd_need(ch_rd_t *r, size_t n, const char *what)
{
	if (r->err.status)
		return 0;
	if ((size_t)(r->end - r->p) < n) {
		char m[64];
		snprintf(m, sizeof m, "%s cut short", what);
		ch_rd_fail(r, m);
		return 0;
	}
	return 1;
}

uint8_t ch_rd_u8(ch_rd_t *r)
{
	return rd_need(r, 1, "a UInt8") ? *r->p++ : 0;
}

uint32_t ch_rd_u32(ch_rd_t *r)
{
	if (!rd_need(r, 4, "a UInt32"))
		return 0;
	uint32_t v =
	    (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
	r->p += 4;
	return v;
}

uint64_t ch_rd_u64(ch_rd_t *r)
{
	if (!rd_need(r, 8, "a 64-bit value"))
		return 0;
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | r->p[i];
	r->p += 8;
	return v;
}

__int128 ch_rd_sum128(ch_rd_t *r)
{
	int64_t sum = ch_rd_i64(r);
	uint64_t bits = ch_rd_u64(r);
	double f;
	memcpy(&f, &bits, sizeof f);
	/* The Int64 holds the low 64 bits of the exact sum; the Float64, within
	 * far less than 2^63 of it, tells how many times it wrapped. */
	double wraps = (f - (double)sum) / 0x1p64;
	if (!(wraps > -0x1p60 && wraps < 0x1p60)) /* NaN or absurd: a broken answer */
		return sum;
	long long k = (long long)(wraps + (wraps >= 0 ? 0.5 : -0.5));
	return (__int128)sum + (__int128)k * ((__int128)1 << 64);
}

int64_t ch_rd_sum(ch_rd_t *r)
{
	int64_t sum = ch_rd_i64(r);
	uint64_t bits = ch_rd_u64(r);
	double f;
	memcpy(&f, &bits, sizeof f);
	/* Rounding in the Float64 sum stays far below 2^62 (n terms of at most
	 * 2^63 lose at most n * 2^10); each wrap moves the Int64 sum by 2^64. */
	if (f - (double)sum > 0x1p62)
		return INT64_MAX;
	if ((double)sum - f > 0x1p62)
		return INT64_MIN;
	return sum; /* NaN from a broken answer compares false: the Int64 stands */
}

uint64_t ch_rd_varint(ch_rd_t *r)
{
	uint64_t v;
	if (r->err.status)
		return 0;
	if (num_uvarint_get(&r->p, r->end, &v) < 0) {
		/* Fewer than NUM_UVARINT_MAX bytes fail only by ending inside the varint. */
		ch_rd_fail(r, r->end - r->p < NUM_UVARINT_MAX ? "a length cut short" : "a malformed length");
		return 0;
	}
	return v;
}

slice_t ch_rd_str(ch_rd_t *r)
{
	uint64_t n = ch_rd_varint(r);
	if (r->err.status)
		return slice_make("", 0);
	if ((uint64_t)(r->end - r->p) < n) {
		char m[80];
		snprintf(m, sizeof m, "a String of %llu bytes cut short", (unsigned long long)n);
		ch_rd_fail(r, m);
		return slice_make("", 0);
	}
	slice_t s = slice_make((const char *)r->p, (size_t)n);
	r->p += n;
	return s;
}

slice_t ch_span_key(slice_t v, char *out)
{
	if (v.n == 0 || v.n > LIMIT_SPAN_ID_BYTES)
		return slice_make("", 0);
	int hex = v.n % 2 == 0;
	for (size_t i = 0; i < v.n && hex; i++)
		hex = num_hex_digit(v.p[i]) >= 0;
	if (!hex)
		return v;
	for (size_t i = 0; i < v.n; i++)
		out[i] = (v.p[i] >= 'A' && v.p[i] <= 'F') ? (char)(v.p[i] + 32) : v.p[i];
	return slice_make(out, v.n);
}

int ch_select(ch_store_t *s, ch_conn_t *c, buf_t *sql, ch_rd_t *rd, err_t *err)
{
	if (ch_schema(s, c, err) < 0)
		return -1;
	buf_puts(sql, " FORMAT RowBinary");
	buf_putc(sql, 0);
	char limits[128];
	snprintf(limits, sizeof limits, "max_result_bytes=%zu&max_result_rows=%u&result_overflow_mode=throw",
	         s->answer_max, LIMIT_CH_ROWS);
	int rc = ch_exec(s, c, (const char *)sql->p, (slice_t){0}, limits, 1, err);
	sql->n--; /* callers may append and run again */
	if (rc < 0)
		return -1;
	ch_rd_init(rd, c->resp.p, c->resp.n);
	return 0;
}
