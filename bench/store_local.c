/* Figures for store/local (docs/STORE.md): bytes on disk per upload after
 * 1,000 uploads of a real pprof (identical, and with jittered values and
 * dropped stacks), read+decode time of a 24 h flame-graph scan (8,640 chunks
 * of ~120 entries), node-table load time, and RSS after ingesting many
 * profiles. Usage: store_local [PPROF.gz] [N_PROFILES_FOR_RSS]. */
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "model/model.h"
#include "store/store.h"
#include "wire/compress.h"
#include "wire/pprof.h"

#define DAY0 (19501LL * NS_PER_DAY)

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

static int64_t dir_bytes_total;
static int add_size(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)p, (void)ftw;
	if (flag == FTW_F)
		dir_bytes_total += sb->st_size;
	return 0;
}

static int64_t dir_bytes(const char *d)
{
	dir_bytes_total = 0;
	nftw(d, add_size, 16, FTW_PHYS);
	return dir_bytes_total;
}

static store_t *open_store(const char *dir, int sync)
{
	store_config_t cfg = {.dir = dir, .sync = sync};
	err_t err = {0};
	store_t *s = store_open(&cfg, &err);
	if (!s) {
		fprintf(stderr, "store_open: %s\n", err.msg);
		exit(1);
	}
	return s;
}

static void done_cb(void *ctx, const err_t *err)
{
	if (err) {
		fprintf(stderr, "write failed: %s\n", err->msg);
		exit(1);
	}
	(void)ctx;
}

/* Decodes the pprof into a batch at time t; jitter != 0 perturbs values and drops ~10% of samples. */
static model_batch_t *decode(slice_t raw, int64_t t, unsigned *seed, int jitter)
{
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	pprof_decode_opts_t o = {.service = slice_cstr("fib"), .time_ns = t, .now_ns = t, .max_rows = 10000};
	err_t err = {0};
	if (pprof_decode(raw, &o, b, &err) < 0) {
		fprintf(stderr, "pprof_decode: %s\n", err.msg);
		exit(1);
	}
	if (jitter)
		for (uint32_t i = 0; i < b->n_samples; i++) {
			int r = rand_r(seed) % 100;
			int64_t v = b->samples[i].value;
			b->samples[i].value = r < 10 ? 0 : v + v * (r - 55) / 100;
		}
	return b;
}

static void bench_size(const char *path, int jitter)
{
	size_t n = 0;
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	static uint8_t gz[1 << 20];
	n = fread(gz, 1, sizeof gz, f);
	fclose(f);
	buf_t raw;
	buf_init(&raw, 32u << 20);
	err_t err = {0};
	if (gz_inflate(slice_make(gz, n), &raw, &err) < 0) {
		fprintf(stderr, "inflate: %s\n", err.msg);
		exit(1);
	}
	char dir[] = "/tmp/kiln-bench-XXXXXX";
	mkdtemp(dir);
	store_t *s = open_store(dir, -1);
	unsigned seed = 42;
	uint32_t profiles = 0;
	for (int i = 0; i < 1000; i++) {
		model_batch_t *b =
		    decode(buf_slice(&raw), DAY0 + (int64_t)i * 10 * NS_PER_SEC, &seed, jitter);
		profiles += b->n_profiles;
		store_submit(s, b, done_cb, NULL);
	}
	store_close(s);
	int64_t bytes = dir_bytes(dir);
	printf("size: %s, 1000 uploads (%u stored profiles), %s: %lld bytes on disk = %.0f bytes/upload, "
	       "%.0f bytes/stored profile (gzipped pprof %zu bytes: %.1f%%)\n",
	       path, profiles, jitter ? "values jittered +-45%, 10% of stacks dropped" : "identical", (long long)bytes,
	       bytes / 1000.0, bytes / (double)profiles, n, 100.0 * bytes / 1000.0 / (double)n);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	buf_free(&raw);
}

/* A profile of n_entries random leaves of an implicit call tree of n_nodes
 * (node i's parent is (i-1)/8; frames named after i % names); only the
 * sampled paths are interned. */
static uint32_t intern_path(model_batch_t *b, uint32_t i, uint32_t names)
{
	uint32_t parent = i == 0 ? MODEL_NONE : intern_path(b, (i - 1) / 8, names);
	char name[32];
	snprintf(name, sizeof name, "pkg.function_%u", i % names);
	model_frame_t fr = {0};
	fr.name = slice_cstr(name);
	fr.binary = slice_cstr("app");
	fr.kind = slice_cstr("go");
	return model_node_intern(b, parent, model_frame_intern(b, &fr));
}

static model_batch_t *synthetic(int64_t t, uint32_t n_nodes, uint32_t n_entries, unsigned *seed,
                                uint32_t names)
{
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	model_profile_t *p = model_profile_add(b);
	model_profile_set_service(b, p, slice_cstr("svc"));
	model_profile_set_type(b, p, slice_cstr("cpu"), slice_cstr("nanoseconds"), slice_cstr("cpu"),
	                       slice_cstr("nanoseconds"), 10000000);
	p->time_ns = t;
	p->duration_ns = 10 * NS_PER_SEC;
	for (uint32_t i = 0; i < n_entries; i++) {
		uint32_t leaf = intern_path(b, n_nodes / 8 + (uint32_t)rand_r(seed) % (n_nodes - n_nodes / 8), names);
		model_sample_add(b, p, leaf, 0, 10000000LL * (1 + rand_r(seed) % 50), 0);
	}
	model_profile_finish(b, p);
	return b;
}

static double now_ms(void)
{
	return (double)time_mono_ns() / 1e6;
}

static void bench_read(void)
{
	char dir[] = "/tmp/kiln-bench-XXXXXX";
	mkdtemp(dir);
	store_t *s = open_store(dir, -1);
	unsigned seed = 7;
	double t0 = now_ms();
	for (int i = 0; i < 8640; i++)
		store_submit(s, synthetic(DAY0 + (int64_t)i * 10 * NS_PER_SEC, 50000, 125, &seed, 100000), done_cb,
		             NULL);
	store_close(s);
	double t1 = now_ms();
	s = open_store(dir, -1);
	printf("read: wrote 8640 profiles over 24 h (50,000-node tree) in %.0f ms; file %lld bytes\n", t1 - t0,
	       (long long)dir_bytes(dir));
	for (int round = 0; round < 3; round++) {
		err_t err = {0};
		double a = now_ms();
		store_view_t *v;
		if (store_view_open(s, slice_cstr("default"), DAY0, DAY0 + NS_PER_DAY, &v, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			exit(1);
		}
		const store_series_t *se;
		uint32_t n_se, n_h;
		store_view_series(v, 0, &se, &n_se, &err);
		store_nodes_t nodes;
		double b0 = now_ms();
		store_view_nodes(v, 0, &nodes, &err);
		double b1 = now_ms();
		const store_chunk_head_t *h;
		store_view_heads(v, 0, &se[0].local, 1, &h, &n_h, &err);
		double c = now_ms();
		uint64_t entries = 0;
		int64_t sum = 0;
		for (uint32_t i = 0; i < n_h; i++) {
			const store_entry_t *e;
			uint32_t n_e;
			if (store_view_entries(v, 0, &h[i], &e, &n_e, &err) < 0) {
				fprintf(stderr, "%s\n", err.msg);
				exit(1);
			}
			for (uint32_t k = 0; k < n_e; k++)
				sum += e[k].value;
			entries += n_e;
		}
		double d = now_ms();
		store_view_close(v);
		printf("read: %u nodes loaded in %.1f ms; %u heads in %.1f ms; %llu entries decoded in %.1f ms; "
		       "total %.1f ms (sum %lld)\n",
		       nodes.n, b1 - b0, n_h, c - b1, (unsigned long long)entries, d - c, d - a, (long long)sum);
	}
	store_close(s);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void bench_rss(int n)
{
	char dir[] = "/tmp/kiln-bench-XXXXXX";
	mkdtemp(dir);
	store_t *s = open_store(dir, -1);
	unsigned seed = 9;
	double t0 = now_ms();
	for (int i = 0; i < n; i++) {
		/* Frame names cycle through 10 variants, so the tree holds ~10 x 20,000 distinct stacks. */
		while (store_queue_depth(s) > 512)
			usleep(1000);
		store_submit(s, synthetic(DAY0 + (int64_t)i * NS_PER_SEC / 2, 20000, 120, &seed, 1000 + i % 10), done_cb,
		             NULL);
	}
	store_close(s);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("rss: %d profiles ingested in %.0f ms, max RSS %ld MiB, disk %lld bytes\n", n, now_ms() - t0,
	       ru.ru_maxrss / 1024, (long long)dir_bytes(dir));
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(int argc, char **argv)
{
	const char *pprof = argc > 1 ? argv[1] : "tests/data/pprof/go-cpu-fib.pb.gz";
	int n = argc > 2 ? atoi(argv[2]) : 100000;
	bench_size(pprof, 0);
	bench_size(pprof, 1);
	bench_read();
	bench_rss(n);
	return 0;
}
