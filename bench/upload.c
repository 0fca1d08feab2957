/* A fast bulk uploader for the benchmarks: several threads, one keep-alive
 * HTTP/1.1 connection each, POSTing pprof files to /profiling/upload.
 *
 *   upload --port P --service S [--host 127.0.0.1] [--conc 4] [--repeat N]
 *          [--t0 UNIX_S --step S] [--limit N] [--services N] FILE...
 *
 * Upload i (0 ≤ i < files × repeat) sends FILE[i % files]; with --t0 it
 * carries from=t0+step*i&until=t0+step*(i+1); with --services N > 1 it goes
 * to service S-(i % N). 503/429 answers are retried
 * after a short sleep (counted). Prints one line of JSON on stdout:
 * {"ok","failed","retried","seconds","per_s","p50_ms","p99_ms","max_ms","bytes"}.
 * Exit status 1 when any upload failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
	char *p;
	size_t n;
} blob;

static const char *host = "127.0.0.1", *service = "bench";
static int port, conc = 4;
static long repeat = 1, limit = -1, step = 10, n_services = 1;
static long long t0 = -1;
static blob *files;
static long n_files, n_total;
static atomic_long next_ix, n_ok, n_failed, n_retried, n_bytes;
static double *lat_ms;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, host, &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads one response; returns the status code, -1 on a broken connection. */
static int read_response(int fd, char *buf, size_t cap, char *body_out, size_t body_cap)
{
	size_t n = 0;
	char *end = NULL;
	while (!end) {
		if (n + 1 >= cap)
			return -1;
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		n += (size_t)r;
		buf[n] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	int status = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	size_t clen = 0;
	for (char *h = buf; h < end; h++)
		if ((*h == '\n') && !strncasecmp(h + 1, "content-length:", 15))
			clen = strtoul(h + 16, NULL, 10);
	size_t have = n - (size_t)(end + 4 - buf);
	size_t copied = 0;
	if (body_cap) {
		copied = have < body_cap - 1 ? have : body_cap - 1;
		memcpy(body_out, end + 4, copied);
		body_out[copied] = 0;
	}
	while (have < clen) {
		char tmp[4096];
		size_t want = clen - have < sizeof tmp ? clen - have : sizeof tmp;
		ssize_t r = recv(fd, tmp, want, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (body_cap && copied + 1 < body_cap) {
			size_t c = (size_t)r < body_cap - 1 - copied ? (size_t)r : body_cap - 1 - copied;
			memcpy(body_out + copied, tmp, c);
			copied += c;
			body_out[copied] = 0;
		}
		have += (size_t)r;
	}
	return status;
}

static void *worker(void *arg)
{
	(void)arg;
	int fd = -1;
	char head[1024], resp[8192], body[512];
	for (;;) {
		long i = atomic_fetch_add(&next_ix, 1);
		if (i >= n_total)
			break;
		const blob *f = &files[i % n_files];
		char svc[256];
		if (n_services > 1)
			snprintf(svc, sizeof svc, "%s-%ld", service, i % n_services);
		else
			snprintf(svc, sizeof svc, "%s", service);
		int hn;
		if (t0 >= 0)
			hn = snprintf(head, sizeof head,
			              "POST /profiling/upload?serviceName=%s&from=%lld&until=%lld HTTP/1.1\r\n"
			              "Host: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
			              svc, t0 + step * i, t0 + step * (i + 1), host, f->n);
		else
			hn = snprintf(head, sizeof head,
			              "POST /profiling/upload?serviceName=%s HTTP/1.1\r\n"
			              "Host: %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
			              svc, host, f->n);
		int status = -1;
		double t_start = now_s();
		for (int attempt = 0; attempt < 50; attempt++) {
			if (fd < 0 && (fd = dial()) < 0) {
				usleep(10000);
				continue;
			}
			if (send_all(fd, head, (size_t)hn) < 0 || send_all(fd, f->p, f->n) < 0 ||
			    (status = read_response(fd, resp, sizeof resp, body, sizeof body)) < 0) {
				close(fd);
				fd = -1;
				status = -1;
				continue;
			}
			if (status == 503 || status == 429) {
				atomic_fetch_add(&n_retried, 1);
				usleep(20000);
				continue;
			}
			break;
		}
		lat_ms[i] = (now_s() - t_start) * 1000.0;
		if (status == 200) {
			atomic_fetch_add(&n_ok, 1);
			atomic_fetch_add(&n_bytes, (long)f->n);
		} else {
			long nf = atomic_fetch_add(&n_failed, 1);
			if (nf < 5)
				fprintf(stderr, "upload %ld: status %d: %s\n", i, status, status > 0 ? body : "(no answer)");
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int load(const char *path, blob *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	out->p = malloc((size_t)n + 1);
	out->n = fread(out->p, 1, (size_t)n, f);
	fclose(f);
	return out->n == (size_t)n ? 0 : -1;
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			break;
		if (!strcmp(a, "--port"))
			port = atoi(v);
		else if (!strcmp(a, "--host"))
			host = v;
		else if (!strcmp(a, "--service"))
			service = v;
		else if (!strcmp(a, "--conc"))
			conc = atoi(v);
		else if (!strcmp(a, "--repeat"))
			repeat = atol(v);
		else if (!strcmp(a, "--limit"))
			limit = atol(v);
		else if (!strcmp(a, "--t0"))
			t0 = atoll(v);
		else if (!strcmp(a, "--step"))
			step = atol(v);
		else if (!strcmp(a, "--services"))
			n_services = atol(v);
		else
			break;
	}
	n_files = argc - i;
	if (port <= 0 || n_files <= 0 || conc <= 0 || repeat <= 0) {
		fprintf(stderr, "usage: upload --port P --service S [--host H] [--conc N] [--repeat N] [--limit N] "
		                "[--t0 UNIX_S --step S] [--services N] FILE...\n");
		return 2;
	}
	files = calloc((size_t)n_files, sizeof *files);
	for (long k = 0; k < n_files; k++)
		if (load(argv[i + k], &files[k]) < 0) {
			perror(argv[i + k]);
			return 1;
		}
	n_total = n_files * repeat;
	if (limit >= 0 && limit < n_total)
		n_total = limit;
	lat_ms = calloc((size_t)n_total + 1, sizeof *lat_ms);
	pthread_t *th = calloc((size_t)conc, sizeof *th);
	double t_start = now_s();
	for (int k = 0; k < conc; k++)
		pthread_create(&th[k], NULL, worker, NULL);
	for (int k = 0; k < conc; k++)
		pthread_join(th[k], NULL);
	double secs = now_s() - t_start;
	qsort(lat_ms, (size_t)n_total, sizeof *lat_ms, cmp_double);
	double p50 = n_total ? lat_ms[n_total / 2] : 0, p99 = n_total ? lat_ms[(n_total * 99) / 100] : 0;
	double mx = n_total ? lat_ms[n_total - 1] : 0;
	printf("{\"ok\":%ld,\"failed\":%ld,\"retried\":%ld,\"seconds\":%.3f,\"per_s\":%.1f,\"p50_ms\":%.2f,"
	       "\"p99_ms\":%.2f,\"max_ms\":%.2f,\"bytes\":%ld}\n",
	       atomic_load(&n_ok), atomic_load(&n_failed), atomic_load(&n_retried), secs,
	       (double)atomic_load(&n_ok) / secs, p50, p99, mx, atomic_load(&n_bytes));
	return atomic_load(&n_failed) ? 1 : 0;
}
