/* The log's next segment is made off the ack path (docs/STORE.md, The log):
 * once an append leaves the current segment half used, the checkpointer
 * zero-fills the next one at once, between its rounds, so the append that
 * fills the segment only renames it. Before, the spare was made only during
 * a checkpoint round, and a new data directory's first segments (1, 2, 4 …
 * MiB) were each zero-filled by the append that needed them: 0.2–0.4 s
 * without an answer at 8 connections. */
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "helpers.h"
#include "store/local.h"
#include "store/local_wal.h"

/* A batch of one profile whose 16 frames have long names: an encoded
 * record of ~60 KB, so a few fill half of the first segment. */
static model_batch_t *wide_batch(int64_t t_ns, int k)
{
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", t_ns, "pod-1");
	char name[3900];
	for (int i = 0; i < 16; i++) {
		memset(name, 'a' + i, sizeof name - 1);
		name[sizeof name - 1] = '\0';
		snprintf(name, 32, "fn%d.%d", k, i);
		name[strlen(name)] = '_';
		uint32_t node = model_node_intern(b, MODEL_NONE, test_frame(b, name));
		model_sample_add(b, p, node, 0, 1 + i, 0);
	}
	model_profile_finish(b, p);
	return b;
}

static void sleep_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&t, &t) != 0)
		;
}

static void test_spare_made_at_half(void **state)
{
	store_fix *f = *state;
	store_t *s = f->s;
	s->ckpt_ms = 3600 * 1000; /* no round by the clock: only the wake-up can make it */
	char spare[512];
	snprintf(spare, sizeof spare, "%s/%s/spare", f->dir, LOCAL_WAL_DIR);

	write_ok(s, wide_batch(DAY0, 0));
	uint64_t end = local_wal_end(s->wal);
	uint32_t seg = (uint32_t)(end >> 32);
	/* The spare made at open became the first segment: none until it is half used. */
	assert_int_equal(access(spare, F_OK), -1);
	int k = 1;
	while ((end & 0xffffffffu) < LOCAL_WAL_SEGMENT_FIRST / 2) {
		write_ok(s, wide_batch(DAY0 + k * NS_PER_SEC, k));
		k++;
		end = local_wal_end(s->wal);
		assert_int_equal((uint32_t)(end >> 32), seg); /* still the first segment */
	}
	struct stat st = {0};
	for (int i = 0; i < 1000 && stat(spare, &st) != 0; i++)
		sleep_ms(10);
	assert_int_equal(stat(spare, &st), 0);
	assert_int_equal(st.st_size, 2 * LOCAL_WAL_SEGMENT_FIRST); /* each segment twice the last */

	/* The append that fills the segment starts the next from that file. */
	ino_t ino = st.st_ino;
	while ((uint32_t)(local_wal_end(s->wal) >> 32) == seg) {
		write_ok(s, wide_batch(DAY0 + k * NS_PER_SEC, k));
		k++;
	}
	char next[512];
	snprintf(next, sizeof next, "%s/%s/%016llx.log", f->dir, LOCAL_WAL_DIR, (unsigned long long)seg + 1);
	assert_int_equal(stat(next, &st), 0);
	assert_int_equal(st.st_ino, ino);
	uint32_t chunks;
	assert_int_equal(sum_totals(s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks),
	                 (int64_t)k * (16 * 17 / 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_spare_made_at_half, store_fix_setup_nosync,
	                                    store_fix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
