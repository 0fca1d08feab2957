/* Pod annotations → scrape targets (OPS: Annotations, Scraped profile types, Port and container) and the
 * workload and service a scraped profile is attributed to (OPS: Scrape attribution). Reads one Pod object;
 * does no I/O and keeps no state: discovery and scraping happen elsewhere. */
#include "scrape/annotations.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define KEY_MAX (LIMIT_ANNOTATION_PREFIX_BYTES + 32) /* "PREFIX/goroutine.sample_types" */
#define IP_TEXT_MAX 46                  /* INET6_ADDRSTRLEN */

/* The pod fields every target of it shares. */
typedef struct {
	const json_t *pod;
	const json_t *annotations;
	const char *ns, *name, *ip;
	int ipv6;
} pod_view_t;

/* A string member of obj (NULL when obj is not an object, the member is
 * missing or not a string, or holds a NUL byte). */
static const char *jstr(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	if (!json_is_string(v))
		return NULL;
	const char *s = json_string_value(v);
	return strlen(s) == json_string_length(v) ? s : NULL;
}

static int str_eq(const char *a, const char *b)
{
	return a && strcmp(a, b) == 0;
}

static int is_alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A DNS-1123 subdomain of at most max bytes. */
static int dns_name(const char *p, size_t max)
{
	size_t n = p ? strlen(p) : 0;
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (is_alnum_lower(c))
			continue;
		if (c != '-' && c != '.')
			return 0;
		/* '-' and '.' sit between alphanumerics, except "-" after "-" */
		if (i == 0 || i == n - 1 || p[i - 1] == '.' || (c == '.' && p[i - 1] == '-') ||
		    (p[i + 1] == '.'))
			return 0;
	}
	return 1;
}

int annot_prefix_valid(const char *p)
{
	return dns_name(p, LIMIT_ANNOTATION_PREFIX_BYTES);
}

const char *annot_skip_reason_name(int reason)
{
	switch (reason) {
	case ANNOT_NO_PORT:
		return "no_port";
	case ANNOT_INVALID_PORT:
		return "invalid_port";
	case ANNOT_INVALID_TARGET:
		return "invalid_target";
	}
	return "?";
}

/* Copies s into dst[cap]; -1 (dst untouched) when it does not fit. */
static int copy_str(char *dst, size_t cap, const char *s)
{
	size_t n = strlen(s);
	if (n >= cap)
		return -1;
	memcpy(dst, s, n + 1);
	return 0;
}

/* No control bytes (a name that goes into labels and log lines). */
static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/* ---- workload (OPS: Scrape attribution) ---- */

/* The last "-SEGMENT" of name: its offset of the '-', or 0 when there is none
 * or nothing before it. */
static size_t last_dash(const char *name)
{
	const char *d = strrchr(name, '-');
	return d && d > name ? (size_t)(d - name) : 0;
}

/* Characters of a pod-template-hash (Kubernetes' rand.SafeEncodeString). */
static int hash_segment(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 10)
		return 0;
	for (; *s; s++)
		if (!strchr("bcdfghjklmnpqrstvwxz2456789", *s))
			return 0;
	return 1;
}

static int digits(const char *s, size_t min)
{
	size_t n = 0;
	for (; *s; s++, n++)
		if (*s < '0' || *s > '9')
			return 0;
	return n >= min;
}

/* The controller owner reference, else the first one; NULL when none. */
static const json_t *controller_owner(const json_t *md)
{
	const json_t *refs = json_object_get(md, "ownerReferences");
	const json_t *first = NULL;
	for (size_t i = 0; i < json_array_size(refs); i++) {
		const json_t *o = json_array_get(refs, i);
		if (!json_is_object(o))
			continue;
		if (json_is_true(json_object_get(o, "controller")))
			return o;
		if (!first)
			first = o;
	}
	return first;
}

void annot_pod_workload(const json_t *pod, char out[LIMIT_SCRAPE_NAME_BYTES], const char **kind)
{
	const json_t *md = json_object_get(pod, "metadata");
	const char *name = jstr(md, "name"), *k = "Pod";
	out[0] = '\0';
	if (name && dns_name(name, LIMIT_SCRAPE_NAME_BYTES - 1))
		copy_str(out, LIMIT_SCRAPE_NAME_BYTES, name);
	const json_t *owner = controller_owner(md);
	const char *okind = jstr(owner, "kind"), *oname = jstr(owner, "name");
	if (!okind || !oname || !dns_name(oname, LIMIT_SCRAPE_NAME_BYTES - 1))
		goto done;
	size_t dash = last_dash(oname);
	if (strcmp(okind, "ReplicaSet") == 0) {
		const char *hash = jstr(json_object_get(md, "labels"), "pod-template-hash");
		size_t n = strlen(oname), hn = hash ? strlen(hash) : 0;
		k = "ReplicaSet";
		copy_str(out, LIMIT_SCRAPE_NAME_BYTES, oname);
		if (hn && n > hn + 1 && oname[n - hn - 1] == '-' && strcmp(oname + n - hn, hash) == 0)
			dash = n - hn - 1;
		else if (!dash || !hash_segment(oname + dash + 1))
			goto done;
		k = "Deployment";
		out[dash] = '\0';
	} else if (strcmp(okind, "Job") == 0) {
		k = "Job";
		copy_str(out, LIMIT_SCRAPE_NAME_BYTES, oname);
		if (dash && digits(oname + dash + 1, 8)) {
			k = "CronJob";
			out[dash] = '\0';
		}
	} else if (strcmp(okind, "StatefulSet") == 0 || strcmp(okind, "DaemonSet") == 0) {
		k = okind[0] == 'S' ? "StatefulSet" : "DaemonSet";
		copy_str(out, LIMIT_SCRAPE_NAME_BYTES, oname);
	}
done:
	if (kind)
		*kind = k;
}

/* ---- containers and ports (OPS: Port and container) ---- */

/* Walks the containers that run beside the app: spec.containers, then the
 * native sidecars (initContainers with restartPolicy Always), skipping
 * entries without a valid name. */
typedef struct {
	const json_t *lists[2];
	size_t list, i;
} container_iter_t;

static void container_iter_init(container_iter_t *it, const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec");
	it->lists[0] = json_object_get(spec, "containers");
	it->lists[1] = json_object_get(spec, "initContainers");
	it->list = it->i = 0;
}

static const json_t *container_next(container_iter_t *it)
{
	while (it->list < 2) {
		const json_t *a = it->lists[it->list];
		if (it->i >= json_array_size(a)) {
			it->list++;
			it->i = 0;
			continue;
		}
		const json_t *c = json_array_get(a, it->i++);
		if (it->list == 1 && !str_eq(jstr(c, "restartPolicy"), "Always"))
			continue;
		if (dns_name(jstr(c, "name"), LIMIT_SCRAPE_NAME_BYTES - 1))
			return c;
	}
	return NULL;
}

/* The number of a TCP port entry (protocol absent means TCP); 0 when the
 * entry is not one. */
static int tcp_port(const json_t *p)
{
	const json_t *num = json_object_get(p, "containerPort");
	const char *proto = jstr(p, "protocol");
	if (!json_is_integer(num) || (json_object_get(p, "protocol") && !str_eq(proto, "TCP")))
		return 0;
	json_int_t v = json_integer_value(num);
	return v >= 1 && v <= 65535 ? (int)v : 0;
}

enum port_match { MATCH_EXACT, MATCH_SUFFIX };

/* The first TCP port of a running container whose name matches; its number
 * (0 when none) and *owner the container. */
static int find_named_port(const json_t *pod, const char *want, enum port_match m, const json_t **owner)
{
	container_iter_t it;
	container_iter_init(&it, pod);
	size_t wn = strlen(want);
	for (const json_t *c; (c = container_next(&it));) {
		const json_t *ports = json_object_get(c, "ports");
		for (size_t i = 0; i < json_array_size(ports); i++) {
			const json_t *p = json_array_get(ports, i);
			const char *name = jstr(p, "name");
			int num = tcp_port(p);
			if (!name || !num)
				continue;
			size_t n = strlen(name);
			if (m == MATCH_EXACT ? strcmp(name, want) == 0
			                     : n >= wn && memcmp(name + n - wn, want, wn) == 0) {
				*owner = c;
				return num;
			}
		}
	}
	return 0;
}

/* 1 when status.containerStatuses or status.initContainerStatuses says the
 * container named name is running. */
static int status_running(const json_t *pod, const char *name)
{
	static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
	const json_t *status = json_object_get(pod, "status");
	for (size_t l = 0; l < 2; l++) {
		const json_t *a = json_object_get(status, lists[l]);
		for (size_t i = 0; i < json_array_size(a); i++) {
			const json_t *st = json_array_get(a, i);
			if (str_eq(jstr(st, "name"), name))
				return json_is_object(
				    json_object_get(json_object_get(st, "state"), "running"));
		}
	}
	return 0;
}

/* The container a profile from port is attributed to: the running
 * container declaring it as a TCP port (one the statuses call running
 * first, else the first declaring it); an undeclared port → the only
 * container when there is exactly one; else NULL. */
static const json_t *port_container(const json_t *pod, int port)
{
	container_iter_t it;
	container_iter_init(&it, pod);
	const json_t *first = NULL, *only = NULL;
	size_t count = 0;
	for (const json_t *c; (c = container_next(&it));) {
		count++;
		only = c;
		const json_t *ports = json_object_get(c, "ports");
		for (size_t i = 0; i < json_array_size(ports); i++) {
			if (tcp_port(json_array_get(ports, i)) != port)
				continue;
			if (status_running(pod, jstr(c, "name")))
				return c;
			if (!first)
				first = c;
			break;
		}
	}
	if (first)
		return first;
	return count == 1 ? only : NULL;
}

/* ---- settings of one type ---- */

/* The annotation PREFIX/TYPE.SETTING (or PREFIX/SETTING when type is NULL). */
static const char *annotation(const pod_view_t *v, const char *prefix, const char *type, const char *setting)
{
	char key[KEY_MAX];
	int n = type ? snprintf(key, sizeof key, "%s/%s.%s", prefix, type, setting)
	             : snprintf(key, sizeof key, "%s/%s", prefix, setting);
	if (n < 0 || (size_t)n >= sizeof key)
		return NULL;
	return jstr(v->annotations, key);
}

/* "1".."65535" in decimal digits only; 0 otherwise. */
static int parse_port(const char *s)
{
	long v = 0;
	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (*s - '0');
		if (v > 65535)
			return 0;
	}
	return (int)v;
}

/* The `seconds` query parameter of path: 0 when absent, 1 with *secs set
 * when present once with 1–9 decimal digits, -1 otherwise. */
static int query_seconds(const char *path, long *secs)
{
	const char *q = strchr(path, '?');
	int found = 0;
	if (!q)
		return 0;
	for (const char *p = q + 1; *p;) {
		size_t n = strcspn(p, "&");
		if (n >= 7 && memcmp(p, "seconds", 7) == 0 && (n == 7 || p[7] == '=')) {
			const char *d = p + 8;
			size_t dn = n > 8 ? n - 8 : 0;
			if (found++ || dn == 0 || dn > 9 || strspn(d, "0123456789") < dn)
				return -1;
			*secs = 0;
			for (size_t i = 0; i < dn; i++)
				*secs = *secs * 10 + (d[i] - '0');
		}
		p += n + (p[n] == '&');
	}
	return found;
}

/* printable ASCII without space or '#' (a fragment means nothing to a scrape). */
static int path_chars_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '#')
			return 0;
	return 1;
}

/* ".sample_types" into out[cap] as "a,b": items trimmed of spaces and tabs,
 * empty items dropped; -1 on control bytes or when it does not fit. */
static int normalize_sample_types(const char *s, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	while (*s) {
		size_t n = strcspn(s, ",");
		const char *b = s, *e = s + n;
		s = *e ? e + 1 : e;
		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (b == e)
			continue;
		for (const char *c = b; c < e; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return -1;
		size_t need = (size_t)(e - b) + (o ? 1 : 0);
		if (o + need >= cap)
			return -1;
		if (o)
			out[o++] = ',';
		memcpy(out + o, b, (size_t)(e - b));
		o += (size_t)(e - b);
		out[o] = '\0';
	}
	return 0;
}

__attribute__((format(printf, 5, 6))) static int skip(const pod_view_t *v, int type, int reason,
                                                      annot_skip_t *sk, const char *fmt, ...)
{
	memset(sk, 0, sizeof *sk);
	sk->reason = reason;
	sk->type = type;
	copy_str(sk->namespace_, sizeof sk->namespace_, v->ns);
	copy_str(sk->pod, sizeof sk->pod, v->name);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sk->detail, sizeof sk->detail, fmt, ap);
	va_end(ap);
	return 0;
}

/* The port of type under prefix by the OPS: Port and container order; 0 with *sk filled when
 * there is none or .port is not a number. */
static int choose_port(const pod_view_t *v, const annot_settings_t *s, const char *prefix, int type,
                       annot_skip_t *sk)
{
	const char *tn = scrape_type_name(type), *ps = annotation(v, prefix, tn, "port");
	const char *pn = annotation(v, prefix, tn, "port_name");
	const json_t *owner;
	if (ps) {
		int port = parse_port(ps);
		if (!port)
			skip(v, type, ANNOT_INVALID_PORT, sk, "%s/%s.port is not a port number 1-65535",
			     prefix, tn);
		return port;
	}
	if (pn) {
		int port = find_named_port(v->pod, pn, MATCH_EXACT, &owner);
		if (!port)
			skip(v, type, ANNOT_NO_PORT, sk,
			     "no running container has the TCP port named by %s/%s.port_name", prefix, tn);
		return port;
	}
	if (s->default_port >= 1 && s->default_port <= 65535)
		return s->default_port;
	static const struct {
		const char *name;
		enum port_match m;
	} conventional[] = {{"-profiles", MATCH_SUFFIX}, {"-metrics", MATCH_SUFFIX}, {"http2", MATCH_EXACT}};
	for (size_t i = 0; i < sizeof conventional / sizeof *conventional; i++) {
		int port = find_named_port(v->pod, conventional[i].name, conventional[i].m, &owner);
		if (port)
			return port;
	}
	skip(v, type, ANNOT_NO_PORT, sk,
	     "no %s/%s.port or .port_name, no defaultPort and no TCP port named *-profiles, *-metrics or "
	     "http2",
	     prefix, tn);
	return 0;
}

/* The target of type under prefix, or a skip: 1 when *t was filled, 0 when *sk was. */
static int type_target(const pod_view_t *v, const annot_settings_t *s, const char *prefix, int type,
                       const char *service, scrape_target_t *t, annot_skip_t *sk)
{
	const scrape_type_info_t *ti = scrape_type_get(type);
	const char *tn = ti->name;
	int port = choose_port(v, s, prefix, type, sk);
	if (!port)
		return 0;

	const char *scheme = annotation(v, prefix, tn, "scheme");
	if (!scheme)
		scheme = "http";
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
		return skip(v, type, ANNOT_INVALID_TARGET, sk, "%s/%s.scheme is neither http nor https",
		            prefix, tn);

	const char *path = annotation(v, prefix, tn, "path");
	if (!path)
		path = ti->default_path;
	if (path[0] != '/' || !path_chars_ok(path))
		return skip(v, type, ANNOT_INVALID_TARGET, sk,
		            "%s/%s.path must start with / and be printable ASCII without spaces or #", prefix,
		            tn);
	long secs = 0;
	const char *add = NULL; /* what goes before an appended "seconds=N" */
	if (ti->default_seconds) {
		int has = query_seconds(path, &secs);
		if (has < 0 || (has && (secs < 1 || secs > ti->max_seconds)))
			return skip(v, type, ANNOT_INVALID_TARGET, sk,
			            "%s/%s.path: seconds must be a whole number from 1 to %d", prefix, tn,
			            ti->max_seconds);
		if (!has) {
			size_t pl = strlen(path);
			secs = ti->default_seconds;
			add = !strchr(path, '?')                             ? "?"
			      : (path[pl - 1] == '?' || path[pl - 1] == '&') ? ""
			                                                     : "&";
		}
	}

	memset(t, 0, sizeof *t);
	char window[32] = "";
	if (add)
		snprintf(window, sizeof window, "%sseconds=%ld", add, secs);
	int n = snprintf(t->url, sizeof t->url, "%s://%s%s%s:%d%s%s", scheme, v->ipv6 ? "[" : "", v->ip,
	                 v->ipv6 ? "]" : "", port, path, window);
	if (n < 0 || (size_t)n >= sizeof t->url)
		return skip(v, type, ANNOT_INVALID_TARGET, sk, "%s/%s: the URL is longer than %d bytes",
		            prefix, tn, LIMIT_SCRAPE_URL_BYTES - 1);

	const char *st = annotation(v, prefix, tn, "sample_types");
	if (st && normalize_sample_types(st, t->sample_types, sizeof t->sample_types) < 0)
		return skip(v, type, ANNOT_INVALID_TARGET, sk,
		            "%s/%s.sample_types has control characters or is longer than %d bytes", prefix,
		            tn, LIMIT_SCRAPE_SAMPLE_TYPES_BYTES - 1);
	if (!service)
		return skip(v, type, ANNOT_INVALID_TARGET, sk,
		            "service_name has control characters or is longer than %d bytes",
		            LIMIT_SCRAPE_NAME_BYTES - 1);

	t->type = type;
	t->https = scheme[4] == 's';
	t->timeout_ns = ti->timeout_ns;
	t->window_ns = secs * 1000000000LL;
	copy_str(t->namespace_, sizeof t->namespace_, v->ns);
	copy_str(t->pod, sizeof t->pod, v->name);
	const json_t *c = port_container(v->pod, port);
	if (c)
		copy_str(t->container, sizeof t->container, jstr(c, "name"));
	annot_pod_workload(v->pod, t->workload, NULL);
	copy_str(t->service, sizeof t->service, *service ? service : t->workload);
	snprintf(t->key, sizeof t->key, "%s/%s/%s", v->ns, v->name, tn);
	return 1;
}

/* ---- the pod ---- */

/* PREFIX/service_name of the first prefix that sets one (not empty): that
 * value; "" when none does; NULL when the first one set is unusable. */
static const char *service_name(const pod_view_t *v, const annot_settings_t *s)
{
	for (size_t i = 0; i <= s->n_extra; i++) {
		const char *prefix = i ? s->extra_prefixes[i - 1] : ANNOT_PREFIX;
		const char *name =
		    prefix && annot_prefix_valid(prefix) ? annotation(v, prefix, NULL, "service_name") : NULL;
		if (!name || !*name)
			continue;
		return strlen(name) < LIMIT_SCRAPE_NAME_BYTES && printable(name) ? name : NULL;
	}
	return "";
}

/* The first prefix whose PREFIX/TYPE.scrape is "true"; NULL when none. */
static const char *type_prefix(const pod_view_t *v, const annot_settings_t *s, int type)
{
	for (size_t i = 0; i <= s->n_extra; i++) {
		const char *prefix = i ? s->extra_prefixes[i - 1] : ANNOT_PREFIX;
		if (prefix && annot_prefix_valid(prefix) &&
		    str_eq(annotation(v, prefix, scrape_type_name(type), "scrape"), "true"))
			return prefix;
	}
	return NULL;
}

int annot_pod_targets(const json_t *pod, const annot_settings_t *s, scrape_target_t *out, size_t *n,
                      annot_skip_t *skips, size_t *n_skips, err_t *err)
{
	*n = *n_skips = 0;
	const json_t *md = json_object_get(pod, "metadata"), *status = json_object_get(pod, "status");
	pod_view_t v = {.pod = pod, .annotations = json_object_get(md, "annotations")};
	v.ns = jstr(md, "namespace");
	v.name = jstr(md, "name");
	if (!json_is_object(pod) || !dns_name(v.ns, LIMIT_SCRAPE_NAME_BYTES - 1) ||
	    !dns_name(v.name, LIMIT_SCRAPE_NAME_BYTES - 1))
		return err_set(
		    err, 400,
		    "not a Pod: metadata.name and metadata.namespace must be DNS names of at most %d bytes",
		    LIMIT_SCRAPE_NAME_BYTES - 1);
	v.ip = jstr(status, "podIP");
	if (!str_eq(jstr(status, "phase"), "Running") || !v.ip || strlen(v.ip) >= IP_TEXT_MAX)
		return 0;
	unsigned char addr[16];
	v.ipv6 = strchr(v.ip, ':') != NULL;
	if (inet_pton(v.ipv6 ? AF_INET6 : AF_INET, v.ip, addr) != 1)
		return 0;
	const char *service = service_name(&v, s);
	for (int type = 0; type < SCRAPE_TYPES; type++) {
		const char *prefix = type_prefix(&v, s, type);
		if (!prefix)
			continue;
		if (type_target(&v, s, prefix, type, service, &out[*n], &skips[*n_skips]))
			(*n)++;
		else
			(*n_skips)++;
	}
	return 0;
}
