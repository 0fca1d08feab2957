/* A main() for fuzz targets built without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file given, or on every file of every
 * directory given (not recursive), so `make test` replays the corpus. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return -1;
	}
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *p = realloc(buf, cap);
			if (!p) {
				fprintf(stderr, "replay: out of memory reading %s\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = p;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		if (got == 0)
			break;
		n += got;
	}
	fclose(f);
	/* An exact-size copy, so reads past the end are caught by ASan. */
	uint8_t *exact = malloc(n ? n : 1);
	if (n)
		memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	long inputs = 0;
	int failed = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
			failed = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed |= run_file(argv[i]) < 0;
			inputs++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "replay: cannot read directory %s\n", argv[i]);
			failed = 1;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
			if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
				continue;
			failed |= run_file(path) < 0;
			inputs++;
		}
		closedir(d);
	}
	printf("replay: %ld inputs\n", inputs);
	return failed;
}
