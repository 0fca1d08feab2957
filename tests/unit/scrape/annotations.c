/* Tests of src/scrape/annotations.c and src/scrape/target.c: one table of
 * Pod objects (JSON as the API server sends them) with the exact targets and
 * skips each must give (OPS: Annotations, Scraped profile types, Port and
 * container, Scrape attribution), then odd and hostile JSON. */
#include "testutil.h"

#include "scrape/annotations.h"

/* An annotation under the built-in prefix, and under the first extra one. */
#define K(key, val) "\"profiles.kiln.dev/" key "\":\"" val "\""
#define X(key, val) "\"profiles.example.com/" key "\":\"" val "\""
#define IP "10.0.0.7"
#define CPU "/debug/pprof/profile?seconds=10"
#define HEAP "/debug/pprof/heap"

typedef struct {
	const char *type, *url, *container, *workload, *service;
	int window; /* seconds */
} want_target;

typedef struct {
	const char *type, *reason;
} want_skip;

typedef struct {
	const char *what;
	const char *annotations; /* members of metadata.annotations */
	const char *containers;  /* spec.containers; NULL: [{"name":"app"}] */
	const char *init;        /* spec.initContainers; NULL: [] */
	const char *owners;      /* metadata.ownerReferences; NULL: [] */
	const char *labels;      /* members of metadata.labels */
	const char *statuses;    /* status.containerStatuses; NULL: [] */
	const char *name;        /* metadata.name; NULL: "app-1" */
	const char *phase;       /* NULL: Running */
	const char *ip;          /* NULL: IP; "-" leaves podIP out */
	int default_port;
	want_target t[SCRAPE_TYPES];
	want_skip sk[SCRAPE_TYPES];
} pod_case;

static const char *const extra[] = {"profiles.example.com", "Not_A_Prefix", "third.example"};

/* The timeouts of OPS: Scraped profile types, written out here rather than read from the table
 * under test. */
static int64_t want_timeout(const char *type)
{
	if (strcmp(type, "cpu") == 0)
		return 20 * 1000000000LL;
	if (strcmp(type, "block") == 0 || strcmp(type, "mutex") == 0)
		return 40 * 1000000000LL;
	return 10 * 1000000000LL;
}

static const char TWO[] = "[{\"name\":\"app\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080}]},"
                          "{\"name\":\"proxy\",\"ports\":[{\"name\":\"admin\",\"containerPort\":9901}]}]";

/* One pod per entry reads better than what clang-format makes of it. */
/* clang-format off */
static const pod_case cases[] = {
    /* ---- port order (OPS: Port and container) ---- */
    {"port, undeclared, single container", K("cpu.scrape", "true") "," K("cpu.port", "6060"), NULL, .t = {{"cpu", "http://" IP ":6060" CPU, "app", "app-1", "app-1", 10}}},
    {"port declared by the second container", K("memory.scrape", "true") "," K("memory.port", "9901"), TWO, .t = {{"memory", "http://" IP ":9901" HEAP, "proxy", "app-1", "app-1", 0}}},
    {"port undeclared, two containers: no container", K("memory.scrape", "true") "," K("memory.port", "7070"), TWO, .t = {{"memory", "http://" IP ":7070" HEAP, "", "app-1", "app-1", 0}}},
    {"port not a number", K("cpu.scrape", "true") "," K("cpu.port", "http") "," K("memory.scrape", "true") "," K("memory.port", "0") "," K("goroutine.scrape", "true") "," K("goroutine.port", "65536") "," K("block.scrape", "true") "," K("block.port", "") "," K("mutex.scrape", "true") "," K("mutex.port", "+80"),
     .sk = {{"cpu", "invalid_port"}, {"memory", "invalid_port"}, {"goroutine", "invalid_port"}, {"block", "invalid_port"}, {"mutex", "invalid_port"}}},
    {"port edge values", K("cpu.scrape", "true") "," K("cpu.port", "1") "," K("memory.scrape", "true") "," K("memory.port", "65535") "," K("goroutine.scrape", "true") "," K("goroutine.port", " 80") "," K("block.scrape", "true") "," K("block.port", "8080x"),
     .t = {{"cpu", "http://" IP ":1" CPU, "app", "app-1", "app-1", 10}, {"memory", "http://" IP ":65535" HEAP, "app", "app-1", "app-1", 0}},
     .sk = {{"goroutine", "invalid_port"}, {"block", "invalid_port"}}},
    {"an invalid port does not fall back to defaultPort", K("cpu.scrape", "true") "," K("cpu.port", "x"), .default_port = 6060, .sk = {{"cpu", "invalid_port"}}},
    {"port_name of the second container", K("goroutine.scrape", "true") "," K("goroutine.port_name", "admin"), TWO, .t = {{"goroutine", "http://" IP ":9901/debug/pprof/goroutine", "proxy", "app-1", "app-1", 0}}},
    {"port_name of a UDP port: no_port", K("cpu.scrape", "true") "," K("cpu.port_name", "dns"), "[{\"name\":\"app\",\"ports\":[{\"name\":\"dns\",\"containerPort\":53,\"protocol\":\"UDP\"}]}]", .sk = {{"cpu", "no_port"}}},
    {"port_name TCP when given explicitly", K("cpu.scrape", "true") "," K("cpu.port_name", "dbg"), "[{\"name\":\"app\",\"ports\":[{\"name\":\"dbg\",\"containerPort\":6060,\"protocol\":\"TCP\"}]}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "app-1", "app-1", 10}}},
    {"unknown port_name: no_port, no fallback to defaultPort or *-profiles", K("cpu.scrape", "true") "," K("cpu.port_name", "nope"), "[{\"name\":\"app\",\"ports\":[{\"name\":\"x-profiles\",\"containerPort\":6060}]}]", .default_port = 8080, .sk = {{"cpu", "no_port"}}},
    {"port wins over port_name", K("cpu.scrape", "true") "," K("cpu.port", "7000") "," K("cpu.port_name", "admin"), TWO, .t = {{"cpu", "http://" IP ":7000" CPU, "", "app-1", "app-1", 10}}},
    {"defaultPort before *-profiles, attributed to its declarer", K("cpu.scrape", "true"), "[{\"name\":\"app\",\"ports\":[{\"name\":\"app-profiles\",\"containerPort\":6060}]},{\"name\":\"side\",\"ports\":[{\"containerPort\":8080}]}]", .default_port = 8080,
     .t = {{"cpu", "http://" IP ":8080" CPU, "side", "app-1", "app-1", 10}}},
    {"*-profiles before *-metrics before http2, any container order", K("cpu.scrape", "true"),
     "[{\"name\":\"a\",\"ports\":[{\"name\":\"http2\",\"containerPort\":8443},{\"name\":\"app-metrics\",\"containerPort\":9090}]},{\"name\":\"b\",\"ports\":[{\"name\":\"go-profiles\",\"containerPort\":6060}]}]",
     .t = {{"cpu", "http://" IP ":6060" CPU, "b", "app-1", "app-1", 10}}},
    {"*-metrics before http2", K("memory.scrape", "true"),
     "[{\"name\":\"a\",\"ports\":[{\"name\":\"http2\",\"containerPort\":8443}]},{\"name\":\"b\",\"ports\":[{\"name\":\"b-metrics\",\"containerPort\":9090}]}]",
     .t = {{"memory", "http://" IP ":9090" HEAP, "b", "app-1", "app-1", 0}}},
    {"http2 exactly", K("memory.scrape", "true"), "[{\"name\":\"a\",\"ports\":[{\"name\":\"xhttp2\",\"containerPort\":1},{\"name\":\"http2\",\"containerPort\":8443}]}]",
     .t = {{"memory", "http://" IP ":8443" HEAP, "a", "app-1", "app-1", 0}}},
    {"no port at all", K("memory.scrape", "true") "," K("cpu.scrape", "true"), "[{\"name\":\"a\",\"ports\":[{\"name\":\"xhttp2\",\"containerPort\":1},{\"name\":\"profiles\",\"containerPort\":2}]}]",
     .sk = {{"cpu", "no_port"}, {"memory", "no_port"}}},
    {"*-profiles of a UDP port is not a candidate", K("cpu.scrape", "true"), "[{\"name\":\"a\",\"ports\":[{\"name\":\"u-profiles\",\"containerPort\":6060,\"protocol\":\"UDP\"},{\"name\":\"a-metrics\",\"containerPort\":9090}]}]",
     .t = {{"cpu", "http://" IP ":9090" CPU, "a", "app-1", "app-1", 10}}},
    {"native sidecar's port counts, a plain init container's does not", K("cpu.scrape", "true") "," K("memory.scrape", "true") "," K("memory.port", "7777"),
     "[{\"name\":\"app\"}]", "[{\"name\":\"setup\",\"ports\":[{\"name\":\"s-profiles\",\"containerPort\":5000}]},{\"name\":\"agent\",\"restartPolicy\":\"Always\",\"ports\":[{\"name\":\"a-metrics\",\"containerPort\":9090},{\"containerPort\":7777}]}]",
     .t = {{"cpu", "http://" IP ":9090" CPU, "agent", "app-1", "app-1", 10}, {"memory", "http://" IP ":7777" HEAP, "agent", "app-1", "app-1", 0}}},
    {"undeclared port, one container plus a native sidecar: no container", K("cpu.scrape", "true") "," K("cpu.port", "6060"), NULL, "[{\"name\":\"agent\",\"restartPolicy\":\"Always\"}]",
     .t = {{"cpu", "http://" IP ":6060" CPU, "", "app-1", "app-1", 10}}},
    {"undeclared port, one container plus a plain init container: that container", K("cpu.scrape", "true") "," K("cpu.port", "6060"), NULL, "[{\"name\":\"setup\",\"restartPolicy\":\"OnFailure\"}]",
     .t = {{"cpu", "http://" IP ":6060" CPU, "app", "app-1", "app-1", 10}}},
    {"a port declared twice: the container the statuses call running", K("cpu.scrape", "true") "," K("cpu.port", "6060"),
     "[{\"name\":\"old\",\"ports\":[{\"containerPort\":6060}]},{\"name\":\"new\",\"ports\":[{\"containerPort\":6060}]}]", .statuses = "[{\"name\":\"old\",\"state\":{\"waiting\":{}}},{\"name\":\"new\",\"state\":{\"running\":{}}}]",
     .t = {{"cpu", "http://" IP ":6060" CPU, "new", "app-1", "app-1", 10}}},
    {"a port declared twice, no statuses: the first", K("cpu.scrape", "true") "," K("cpu.port", "6060"),
     "[{\"name\":\"old\",\"ports\":[{\"containerPort\":6060}]},{\"name\":\"new\",\"ports\":[{\"containerPort\":6060}]}]",
     .t = {{"cpu", "http://" IP ":6060" CPU, "old", "app-1", "app-1", 10}}},

    /* ---- paths and windows (OPS: Scraped profile types) ---- */
    {"all five types with their defaults", K("cpu.scrape", "true") "," K("memory.scrape", "true") "," K("goroutine.scrape", "true") "," K("block.scrape", "true") "," K("mutex.scrape", "true"), .default_port = 6060,
     .t = {{"cpu", "http://" IP ":6060" CPU, "app", "app-1", "app-1", 10}, {"memory", "http://" IP ":6060" HEAP, "app", "app-1", "app-1", 0}, {"goroutine", "http://" IP ":6060/debug/pprof/goroutine", "app", "app-1", "app-1", 0},
	   {"block", "http://" IP ":6060/debug/pprof/block?seconds=30", "app", "app-1", "app-1", 30}, {"mutex", "http://" IP ":6060/debug/pprof/mutex?seconds=30", "app", "app-1", "app-1", 30}}},
    {"seconds given, and the largest ones", K("cpu.scrape", "true") "," K("cpu.path", "/p?seconds=15") "," K("block.scrape", "true") "," K("block.path", "/b?seconds=35&x=1") "," K("mutex.scrape", "true") "," K("mutex.path", "/m?seconds=1"), .default_port = 6060,
     .t = {{"cpu", "http://" IP ":6060/p?seconds=15", "app", "app-1", "app-1", 15}, {"block", "http://" IP ":6060/b?seconds=35&x=1", "app", "app-1", "app-1", 35}, {"mutex", "http://" IP ":6060/m?seconds=1", "app", "app-1", "app-1", 1}}},
    {"seconds appended to a path without it", K("cpu.scrape", "true") "," K("cpu.path", "/custom") "," K("block.scrape", "true") "," K("block.path", "/x?debug=1") "," K("mutex.scrape", "true") "," K("mutex.path", "/y?"), .default_port = 6060,
     .t = {{"cpu", "http://" IP ":6060/custom?seconds=10", "app", "app-1", "app-1", 10}, {"block", "http://" IP ":6060/x?debug=1&seconds=30", "app", "app-1", "app-1", 30}, {"mutex", "http://" IP ":6060/y?seconds=30", "app", "app-1", "app-1", 30}}},
    {"a parameter ending in seconds is not seconds", K("cpu.scrape", "true") "," K("cpu.path", "/p?myseconds=3&") , .default_port = 6060,
     .t = {{"cpu", "http://" IP ":6060/p?myseconds=3&seconds=10", "app", "app-1", "app-1", 10}}},
    {"seconds over the limit or below 1", K("cpu.scrape", "true") "," K("cpu.path", "/p?seconds=16") "," K("block.scrape", "true") "," K("block.path", "/b?seconds=0") "," K("mutex.scrape", "true") "," K("mutex.path", "/m?seconds=36"), .default_port = 6060,
     .sk = {{"cpu", "invalid_target"}, {"block", "invalid_target"}, {"mutex", "invalid_target"}}},
    {"seconds not a whole number, empty or twice", K("cpu.scrape", "true") "," K("cpu.path", "/p?seconds=1.5") "," K("block.scrape", "true") "," K("block.path", "/b?seconds=") "," K("mutex.scrape", "true") "," K("mutex.path", "/m?seconds=5&seconds=5"), .default_port = 6060,
     .sk = {{"cpu", "invalid_target"}, {"block", "invalid_target"}, {"mutex", "invalid_target"}}},
    {"snapshot paths are kept as they are", K("memory.scrape", "true") "," K("memory.path", "/heap?gc=1&seconds=99") "," K("goroutine.scrape", "true") "," K("goroutine.path", "/g?debug=0"), .default_port = 6060,
     .t = {{"memory", "http://" IP ":6060/heap?gc=1&seconds=99", "app", "app-1", "app-1", 0}, {"goroutine", "http://" IP ":6060/g?debug=0", "app", "app-1", "app-1", 0}}},
    {"a path must start with / and have no spaces or fragment", K("cpu.scrape", "true") "," K("cpu.path", "debug/pprof/profile") "," K("memory.scrape", "true") "," K("memory.path", "/a b") "," K("goroutine.scrape", "true") "," K("goroutine.path", "/g#x") "," K("block.scrape", "true") "," K("block.path", ""), .default_port = 6060,
     .sk = {{"cpu", "invalid_target"}, {"memory", "invalid_target"}, {"goroutine", "invalid_target"}, {"block", "invalid_target"}}},

    /* ---- scheme and sample types (OPS: Annotations) ---- */
    {"https", K("memory.scrape", "true") "," K("memory.scheme", "https") "," K("cpu.scrape", "true") "," K("cpu.scheme", "http"), .default_port = 6443,
     .t = {{"cpu", "http://" IP ":6443" CPU, "app", "app-1", "app-1", 10}, {"memory", "https://" IP ":6443" HEAP, "app", "app-1", "app-1", 0}}},
    {"other schemes", K("memory.scrape", "true") "," K("memory.scheme", "HTTPS") "," K("cpu.scrape", "true") "," K("cpu.scheme", "ftp"), .default_port = 6443,
     .sk = {{"cpu", "invalid_target"}, {"memory", "invalid_target"}}},
    {"sample types", K("memory.scrape", "true") "," K("memory.sample_types", " inuse_space , inuse_objects,,") "," K("cpu.scrape", "true") "," K("cpu.sample_types", "a\\u0001b"), .default_port = 6060,
     .t = {{"memory", "http://" IP ":6060" HEAP, "app", "app-1", "app-1", 0}}, .sk = {{"cpu", "invalid_target"}}},

    /* ---- prefixes (OPS: Annotations) ---- */
    {"an extra prefix alone", X("cpu.scrape", "true") "," X("cpu.port", "6061"), .t = {{"cpu", "http://" IP ":6061" CPU, "app", "app-1", "app-1", 10}}},
    {"the built-in prefix first; settings not mixed", K("cpu.scrape", "true") "," K("cpu.port", "6060") "," X("cpu.scrape", "true") "," X("cpu.port", "6061") "," X("cpu.path", "/other"),
     .t = {{"cpu", "http://" IP ":6060" CPU, "app", "app-1", "app-1", 10}}},
    {"a prefix that does not scrape the type is passed over", K("cpu.scrape", "false") "," K("cpu.port", "1") "," X("cpu.scrape", "true") "," X("cpu.port", "6061"),
     .t = {{"cpu", "http://" IP ":6061" CPU, "app", "app-1", "app-1", 10}}},
    {"the third prefix; an invalid one between is ignored", "\"Not_A_Prefix/cpu.scrape\":\"true\",\"Not_A_Prefix/cpu.port\":\"1\",\"third.example/cpu.scrape\":\"true\",\"third.example/cpu.port\":\"3\"",
     .t = {{"cpu", "http://" IP ":3" CPU, "app", "app-1", "app-1", 10}}},
    {"settings do not carry over between types", K("cpu.scrape", "true") "," K("cpu.port", "6060") "," K("memory.scrape", "true") "," K("cpu.path", "/p"),
     .t = {{"cpu", "http://" IP ":6060/p?seconds=10", "app", "app-1", "app-1", 10}}, .sk = {{"memory", "no_port"}}},
    {"settings of another prefix do not fill in", K("memory.scrape", "true") "," X("memory.port", "6061"), .sk = {{"memory", "no_port"}}},
    {"scrape other than \"true\" is ignored", K("cpu.scrape", "True") "," K("cpu.port", "1") "," K("memory.scrape", "yes") "," K("memory.port", "1") "," K("goroutine.port", "1") ",\"profiles.kiln.dev/heap.scrape\":\"true\"", .default_port = 6060},

    /* ---- workload and service (OPS: Scrape attribution) ---- */
    {"Deployment by the pod-template-hash label", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .name = "web-7d9f8c6b5-x2x9k", .owners = "[{\"kind\":\"ReplicaSet\",\"name\":\"web-7d9f8c6b5\",\"controller\":true}]", .labels = "\"pod-template-hash\":\"7d9f8c6b5\"",
     .t = {{"cpu", "http://" IP ":6060" CPU, "app", "web", "web", 10}}},
    {"Deployment by the hash-shaped last segment", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .owners = "[{\"kind\":\"ReplicaSet\",\"name\":\"api-v2-5c7b9d8f4d\",\"controller\":true}]",
     .t = {{"cpu", "http://" IP ":6060" CPU, "app", "api-v2", "api-v2", 10}}},
    {"a bare ReplicaSet keeps its name", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .owners = "[{\"kind\":\"ReplicaSet\",\"name\":\"legacy-frontend\",\"controller\":true}]",
     .t = {{"cpu", "http://" IP ":6060" CPU, "app", "legacy-frontend", "legacy-frontend", 10}}},
    {"StatefulSet", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .name = "db-0", .owners = "[{\"kind\":\"StatefulSet\",\"name\":\"db\",\"controller\":true}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "db", "db", 10}}},
    {"DaemonSet", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .owners = "[{\"kind\":\"DaemonSet\",\"name\":\"node-agent\",\"controller\":true}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "node-agent", "node-agent", 10}}},
    {"Job", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .owners = "[{\"kind\":\"Job\",\"name\":\"migrate-2\",\"controller\":true}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "migrate-2", "migrate-2", 10}}},
    {"CronJob from its Job's name", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .owners = "[{\"kind\":\"Job\",\"name\":\"nightly-backup-28333920\",\"controller\":true}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "nightly-backup", "nightly-backup", 10}}},
    {"the controller owner, not the first", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .owners = "[{\"kind\":\"ConfigMap\",\"name\":\"cfg\"},{\"kind\":\"StatefulSet\",\"name\":\"kafka\",\"controller\":true}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "kafka", "kafka", 10}}},
    {"no controller flag: the first owner", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .owners = "[{\"kind\":\"DaemonSet\",\"name\":\"ds\"}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "ds", "ds", 10}}},
    {"a static pod (owned by its Node): the pod name", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .name = "etcd-node1", .owners = "[{\"kind\":\"Node\",\"name\":\"node1\",\"controller\":true}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "etcd-node1", "etcd-node1", 10}}},
    {"an owner with an unusable name: the pod name", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .owners = "[{\"kind\":\"StatefulSet\",\"name\":\"Bad/Name\",\"controller\":true}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "app-1", "app-1", 10}}},
    {"service_name", K("cpu.scrape", "true") "," K("cpu.port", "6060") "," K("service_name", "checkout") "," X("service_name", "other"), .owners = "[{\"kind\":\"StatefulSet\",\"name\":\"db\",\"controller\":true}]", .t = {{"cpu", "http://" IP ":6060" CPU, "app", "db", "checkout", 10}}},
    {"service_name of an extra prefix, for a type of the built-in one", K("cpu.scrape", "true") "," K("cpu.port", "6060") "," K("service_name", "") "," X("service_name", "payments"), .t = {{"cpu", "http://" IP ":6060" CPU, "app", "app-1", "payments", 10}}},
    {"an unusable service_name", K("cpu.scrape", "true") "," K("cpu.port", "6060") "," K("memory.scrape", "true") "," K("service_name", "a\\nb"), .sk = {{"cpu", "invalid_target"}, {"memory", "no_port"}}},

    /* ---- pod state ---- */
    {"Pending", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .phase = "Pending"},
    {"Succeeded", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .phase = "Succeeded"},
    {"no pod IP", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .ip = "-"},
    {"an empty pod IP", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .ip = ""},
    {"not an IP", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .ip = "localhost"},
    {"IPv6 in brackets", K("cpu.scrape", "true") "," K("cpu.port", "6060"), .ip = "fd00:10::7", .t = {{"cpu", "http://[fd00:10::7]:6060" CPU, "app", "app-1", "app-1", 10}}},
    {"no annotations", "", .default_port = 6060},
};
/* clang-format on */

static void build_pod(const pod_case *c, char *out, size_t cap)
{
	char ip[96] = "";
	const char *ipv = c->ip ? c->ip : IP;
	if (strcmp(ipv, "-") != 0)
		snprintf(ip, sizeof ip, ",\"podIP\":\"%s\"", ipv);
	int n = snprintf(
	    out, cap,
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"shop\","
	    "\"uid\":\"0b5e\",\"annotations\":{%s},\"ownerReferences\":%s,\"labels\":{%s}},"
	    "\"spec\":{\"nodeName\":\"node1\",\"containers\":%s,\"initContainers\":%s},"
	    "\"status\":{\"phase\":\"%s\"%s,\"containerStatuses\":%s}}",
	    c->name ? c->name : "app-1", c->annotations, c->owners ? c->owners : "[]",
	    c->labels ? c->labels : "", c->containers ? c->containers : "[{\"name\":\"app\"}]",
	    c->init ? c->init : "[]", c->phase ? c->phase : "Running", ip, c->statuses ? c->statuses : "[]");
	assert_true(n > 0 && (size_t)n < cap);
}

static void run_case(const pod_case *c)
{
	char text[8192];
	build_pod(c, text, sizeof text);
	json_error_t jerr;
	json_t *pod = json_loads(text, 0, &jerr);
	if (!pod)
		fail_msg("%s: bad test JSON: %s", c->what, jerr.text);
	annot_settings_t s = {.extra_prefixes = extra, .n_extra = 3, .default_port = c->default_port};
	scrape_target_t t[SCRAPE_TYPES];
	annot_skip_t sk[SCRAPE_TYPES];
	size_t n, nsk;
	err_t err = {0};
	assert_int_equal(annot_pod_targets(pod, &s, t, &n, sk, &nsk, &err), 0);
	size_t want_n = 0, want_nsk = 0;
	while (want_n < SCRAPE_TYPES && c->t[want_n].type)
		want_n++;
	while (want_nsk < SCRAPE_TYPES && c->sk[want_nsk].type)
		want_nsk++;
	if (n != want_n || nsk != want_nsk)
		fail_msg("%s: %zu targets and %zu skips, want %zu and %zu (first skip: %s)", c->what, n, nsk,
		         want_n, want_nsk, nsk ? sk[0].detail : "-");
	for (size_t i = 0; i < n; i++) {
		const want_target *w = &c->t[i];
		char key[600];
		snprintf(key, sizeof key, "shop/%s/%s", c->name ? c->name : "app-1", w->type);
		if (strcmp(scrape_type_name(t[i].type), w->type) || strcmp(t[i].url, w->url) ||
		    strcmp(t[i].container, w->container) || strcmp(t[i].workload, w->workload) ||
		    strcmp(t[i].service, w->service) || strcmp(t[i].key, key))
			fail_msg("%s: target %zu is %s %s container=%s workload=%s service=%s key=%s\n"
			         "  want %s %s container=%s workload=%s service=%s key=%s",
			         c->what, i, scrape_type_name(t[i].type), t[i].url, t[i].container,
			         t[i].workload, t[i].service, t[i].key, w->type, w->url, w->container,
			         w->workload, w->service, key);
		assert_string_equal(t[i].namespace_, "shop");
		assert_string_equal(t[i].pod, c->name ? c->name : "app-1");
		assert_int_equal(t[i].timeout_ns, want_timeout(w->type));
		assert_int_equal(t[i].window_ns, w->window * 1000000000LL);
		assert_int_equal(t[i].https, strncmp(w->url, "https:", 6) == 0);
	}
	for (size_t i = 0; i < nsk; i++) {
		if (strcmp(scrape_type_name(sk[i].type), c->sk[i].type) ||
		    strcmp(annot_skip_reason_name(sk[i].reason), c->sk[i].reason))
			fail_msg("%s: skip %zu is %s %s (%s), want %s %s", c->what, i,
			         scrape_type_name(sk[i].type), annot_skip_reason_name(sk[i].reason),
			         sk[i].detail, c->sk[i].type, c->sk[i].reason);
		assert_string_equal(sk[i].namespace_, "shop");
		assert_string_equal(sk[i].pod, c->name ? c->name : "app-1");
		assert_true(sk[i].detail[0] != '\0');
	}
	json_decref(pod);
}

static void test_pod_table(void **state)
{
	assert_true(sizeof cases / sizeof *cases >= 40);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		run_case(&cases[i]);
}

/* Targets and skips of a Running pod n/p with TYPE.scrape and one more
 * annotation of TYPE under the built-in prefix; defaultPort 6060. */
typedef struct {
	scrape_target_t t[SCRAPE_TYPES];
	annot_skip_t sk[SCRAPE_TYPES];
	size_t n, nsk;
} one_pod;

static void run_one(const char *type, const char *setting, const char *value, one_pod *r)
{
	char scrape[64], key[64];
	snprintf(scrape, sizeof scrape, "profiles.kiln.dev/%s.scrape", type);
	snprintf(key, sizeof key, "profiles.kiln.dev/%s.%s", type, setting);
	json_t *pod = json_pack("{s:{s:s,s:s,s:{s:s,s:s}},s:{s:s,s:s}}", "metadata", "name", "p", "namespace",
	                        "n", "annotations", scrape, "true", key, value, "status", "phase", "Running",
	                        "podIP", "10.1.1.1");
	annot_settings_t s = {.default_port = 6060};
	assert_int_equal(annot_pod_targets(pod, &s, r->t, &r->n, r->sk, &r->nsk, NULL), 0);
	json_decref(pod);
}

/* The sample types are normalized, not just copied. */
static void test_sample_types_value(void **state)
{
	one_pod r;
	run_one("memory", "sample_types", " inuse_space , inuse_objects,,", &r);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.t[0].sample_types, "inuse_space,inuse_objects");
	assert_string_equal(r.t[0].key, "n/p/memory");
}

/* A URL that would not fit in scrape_target_t.url is a skip, not a truncation. */
static void test_long_path(void **state)
{
	char path[1100];
	path[0] = '/';
	memset(path + 1, 'a', sizeof path - 2);
	path[sizeof path - 1] = '\0';
	one_pod r;
	run_one("goroutine", "path", path, &r);
	assert_int_equal(r.n, 0);
	assert_int_equal(r.nsk, 1);
	assert_int_equal(r.sk[0].reason, ANNOT_INVALID_TARGET);
	path[LIMIT_SCRAPE_URL_BYTES - 40] = '\0'; /* fits with "http://10.1.1.1:6060" */
	run_one("goroutine", "path", path, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(strlen(r.t[0].url), LIMIT_SCRAPE_URL_BYTES - 40 + strlen("http://10.1.1.1:6060"));
}

/* Objects that are not pods, and pods whose every field has the wrong type. */
static void test_odd_json(void **state)
{
	static const char *const not_pods[] = {
	    "[]",
	    "null",
	    "\"pod\"",
	    "{}",
	    "{\"metadata\":[]}",
	    "{\"metadata\":{\"name\":\"a\"}}",
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":7}}",
	    "{\"metadata\":{\"name\":\"A\",\"namespace\":\"n\"}}",
	    "{\"metadata\":{\"name\":\"a/b\",\"namespace\":\"n\"}}",
	    "{\"metadata\":{\"name\":\"a\\u0000b\",\"namespace\":\"n\"}}",
	};
	static const char *const odd[] = {
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"annotations\":[]},\"status\":{\"phase\":"
	    "\"Running\",\"podIP\":\"1.2.3.4\"}}",
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"annotations\":{\"profiles.kiln.dev/"
	    "cpu.scrape\":true}},\"status\":{\"phase\":\"Running\",\"podIP\":\"1.2.3.4\"}}",
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"annotations\":{\"profiles.kiln.dev/"
	    "cpu.scrape\":\"true\",\"profiles.kiln.dev/cpu.port\":6060}},"
	    "\"spec\":{\"containers\":{},\"initContainers\":[1,null,{\"name\":7}]},\"status\":{\"phase\":"
	    "\"Running\",\"podIP\":\"1.2.3.4\"}}",
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"ownerReferences\":{},\"labels\":[],"
	    "\"annotations\":{\"profiles.kiln.dev/cpu.scrape\":\"true\"}},"
	    "\"spec\":{\"containers\":[null,{\"name\":\"c\",\"ports\":[{\"name\":\"x-profiles\","
	    "\"containerPort\":\"6060\"},{\"name\":5,\"containerPort\":6061},"
	    "{\"name\":\"y-profiles\",\"containerPort\":70000},{\"name\":\"z-profiles\",\"containerPort\":-1}"
	    ",{\"name\":\"w-profiles\",\"containerPort\":1.5}]}]},"
	    "\"status\":{\"phase\":\"Running\",\"podIP\":\"1.2.3.4\",\"containerStatuses\":7}}",
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"ownerReferences\":[{\"kind\":\"ReplicaSet\","
	    "\"name\":\"-\"},{\"kind\":\"Job\",\"name\":\"12345678\"}]},"
	    "\"status\":{\"phase\":[\"Running\"],\"podIP\":\"1.2.3.4\"}}",
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"status\":{\"phase\":\"Running\",\"podIP\":"
	    "\"1.2.3.4:80\"}}",
	    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"status\":{\"phase\":\"Running\",\"podIP\":"
	    "\"fe80::1%eth0\"}}",
	};
	annot_settings_t s = {.default_port = 6060};
	scrape_target_t t[SCRAPE_TYPES];
	annot_skip_t sk[SCRAPE_TYPES];
	size_t n, nsk;
	for (size_t i = 0; i < sizeof not_pods / sizeof *not_pods; i++) {
		json_t *j = json_loads(not_pods[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		assert_non_null(j);
		err_t err = {0};
		assert_int_equal(annot_pod_targets(j, &s, t, &n, sk, &nsk, &err), -1);
		assert_int_equal(err.status, 400);
		assert_int_equal(n + nsk, 0);
		json_decref(j);
	}
	for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
		json_t *j = json_loads(odd[i], 0, NULL);
		assert_non_null(j);
		assert_int_equal(annot_pod_targets(j, &s, t, &n, sk, &nsk, NULL), 0);
		/* 2: a non-string .port is absent, so defaultPort; 3: defaultPort and only "c" is valid */
		assert_int_equal(n, i == 2 || i == 3);
		assert_int_equal(nsk, 0);
		if (n)
			assert_string_equal(t[0].container, i == 3 ? "c" : "");
		json_decref(j);
	}
	assert_int_equal(annot_pod_targets(NULL, &s, t, &n, sk, &nsk, NULL), -1);
}

/* Workloads whose owners have odd names fall back, and kinds are reported. */
static void test_workload_kind(void **state)
{
	static const struct {
		const char *owners, *labels, *workload, *kind;
	} w[] = {
	    {"[{\"kind\":\"ReplicaSet\",\"name\":\"web-7d9f8c6b5\",\"controller\":true}]",
	     "{\"pod-template-hash\":\"7d9f8c6b5\"}", "web", "Deployment"},
	    {"[{\"kind\":\"ReplicaSet\",\"name\":\"web-7d9f8c6b5\",\"controller\":true}]",
	     "{\"pod-template-hash\":\"other\"}", "web", "Deployment"},
	    {"[{\"kind\":\"ReplicaSet\",\"name\":\"web-abcde\",\"controller\":true}]", "{}", "web-abcde",
	     "ReplicaSet"},
	    {"[{\"kind\":\"ReplicaSet\",\"name\":\"x-bcdfghjklmn\",\"controller\":true}]", "{}",
	     "x-bcdfghjklmn", "ReplicaSet"},
	    {"[{\"kind\":\"ReplicaSet\",\"name\":\"7d9f8c6b5\",\"controller\":true}]",
	     "{\"pod-template-hash\":\"7d9f8c6b5\"}", "7d9f8c6b5", "ReplicaSet"},
	    {"[{\"kind\":\"Job\",\"name\":\"a-1234567\",\"controller\":true}]", "{}", "a-1234567", "Job"},
	    {"[{\"kind\":\"Job\",\"name\":\"a-12345678\",\"controller\":true}]", "{}", "a", "CronJob"},
	    {"[{\"kind\":\"StatefulSet\",\"name\":\"s\",\"controller\":true}]", "{}", "s", "StatefulSet"},
	    {"[{\"kind\":\"DaemonSet\",\"name\":\"d\",\"controller\":true}]", "{}", "d", "DaemonSet"},
	    {"[{\"kind\":\"Rollout\",\"name\":\"r\",\"controller\":true}]", "{}", "pod-1", "Pod"},
	    {"[]", "{}", "pod-1", "Pod"},
	};
	for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
		char text[1024];
		snprintf(text, sizeof text,
		         "{\"metadata\":{\"name\":\"pod-1\",\"ownerReferences\":%s,\"labels\":%s}}",
		         w[i].owners, w[i].labels);
		json_t *pod = json_loads(text, 0, NULL);
		assert_non_null(pod);
		char out[LIMIT_SCRAPE_NAME_BYTES];
		const char *kind = NULL;
		annot_pod_workload(pod, out, &kind);
		assert_string_equal(out, w[i].workload);
		assert_string_equal(kind, w[i].kind);
		json_decref(pod);
	}
	char out[LIMIT_SCRAPE_NAME_BYTES];
	annot_pod_workload(NULL, out, NULL);
	assert_string_equal(out, "");
}

static void test_prefix_valid(void **state)
{
	static const char *const good[] = {"profiles.kiln.dev", "a", "0", "a-b.c", "a--b", "x.y.z9"};
	static const char *const bad[] = {"",     "-a",   "a-",  ".a",  "a.",  "a..b",
	                                  "a.-b", "a-.b", "A.b", "a_b", "a/b", "a b"};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		assert_true(annot_prefix_valid(good[i]));
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_false(annot_prefix_valid(bad[i]));
	assert_false(annot_prefix_valid(NULL));
	char p[256];
	memset(p, 'a', sizeof p);
	p[253] = '\0';
	assert_true(annot_prefix_valid(p));
	p[253] = 'a';
	p[254] = '\0';
	assert_false(annot_prefix_valid(p));
}

static void test_types(void **state)
{
	static const char *const names[] = {"cpu", "memory", "goroutine", "block", "mutex"};
	for (int i = 0; i < SCRAPE_TYPES; i++) {
		assert_string_equal(scrape_type_name(i), names[i]);
		assert_int_equal(scrape_type_parse(names[i]), i);
		const scrape_type_info_t *t = scrape_type_get(i);
		assert_non_null(t);
		assert_int_equal(t->default_seconds ? t->max_seconds : 0,
		                 t->default_seconds ? t->timeout_ns / 1000000000LL - 5 : 0);
	}
	assert_null(scrape_type_name(-1));
	assert_null(scrape_type_name(SCRAPE_TYPES));
	assert_null(scrape_type_get(SCRAPE_TYPES));
	assert_int_equal(scrape_type_parse("heap"), -1);
	assert_int_equal(scrape_type_parse("CPU"), -1);
	assert_int_equal(scrape_type_parse(NULL), -1);
	assert_string_equal(scrape_type_get(SCRAPE_BLOCK)->default_path, "/debug/pprof/block?seconds=30");
	assert_string_equal(annot_skip_reason_name(ANNOT_NO_PORT), "no_port");
	assert_string_equal(annot_skip_reason_name(ANNOT_INVALID_PORT), "invalid_port");
	assert_string_equal(annot_skip_reason_name(ANNOT_INVALID_TARGET), "invalid_target");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pod_table),     cmocka_unit_test(test_sample_types_value),
	    cmocka_unit_test(test_long_path),     cmocka_unit_test(test_odd_json),
	    cmocka_unit_test(test_workload_kind), cmocka_unit_test(test_prefix_valid),
	    cmocka_unit_test(test_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
