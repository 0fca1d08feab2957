/* Tests of src/query/levels.c: Pyroscope's flame graph levels, max_nodes cut
 * and flamebearer JSON from hand-built trees. Every expected array was
 * worked out by hand by running Pyroscope's algorithm (pkg/model
 * NewFlameGraph, minValue, NewFlamegraphDiff, combineMinValues) on paper;
 * the derivations are in the comments. Notation: a node is written
 * name(total/self); the walk is a stack onto which a node pushes its kept
 * children in name order, then `other`, each at the x where the previous
 * one ended (the node's own self first); a level lists its nodes in the
 * reverse of their visit order; x becomes "x - end of the previous node". */
#include "testutil.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/limits.h"
#include "query/levels.h"

/* A hand-built tree node: parent index (node 0 is the root) and name. */
typedef struct {
	uint32_t parent;
	const char *name;
	int64_t self;
} tnode_t;

/* model_tree_t of nodes[0..n) (nodes[0] the root, its name unused), one
 * frame per node (so equal names are distinct frames), totals summed up. */
static model_tree_t mk_tree(arena_t *a, const tnode_t *nodes, uint32_t n)
{
	model_tree_t t = {.n_nodes = n, .n_frames = n};
	t.parent = arena_calloc(a, n * sizeof *t.parent);
	t.frame = arena_calloc(a, n * sizeof *t.frame);
	t.self = arena_calloc(a, n * sizeof *t.self);
	t.total = arena_calloc(a, n * sizeof *t.total);
	t.frames = arena_calloc(a, n * sizeof *t.frames);
	for (uint32_t i = 0; i < n; i++) {
		t.parent[i] = nodes[i].parent;
		t.frame[i] = i;
		t.self[i] = t.total[i] = nodes[i].self;
		t.frames[i].name = slice_cstr(nodes[i].name ? nodes[i].name : "");
		t.frames[i].file = slice_cstr(i % 2 ? "a.go" : "b.go");
	}
	for (uint32_t i = n; i-- > 1;)
		t.total[t.parent[i]] += t.total[i];
	return t;
}

/* "names|level0|level1|…" with comma-separated values, and max_self. */
static const char *render(const query_levels_t *l, char *out, size_t cap)
{
	size_t o = 0;
	for (uint32_t i = 0; i < l->n_names; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%.*s", i ? "," : "", (int)l->names[i].n,
		                      l->names[i].p);
	for (uint32_t d = 0; d < l->n_levels; d++) {
		o += (size_t)snprintf(out + o, cap - o, "|");
		for (uint32_t i = 0; i < l->len[d]; i++)
			o += (size_t)snprintf(out + o, cap - o, "%s%lld", i ? "," : "",
			                      (long long)l->levels[d][i]);
	}
	snprintf(out + o, cap - o, " max=%lld total=%lld", (long long)l->max_self, (long long)l->total);
	return out;
}

static void expect_single(const tnode_t *nodes, uint32_t n, int64_t max_nodes, const char *want)
{
	arena_t *a = arena_new();
	model_tree_t t = mk_tree(a, nodes, n);
	query_levels_t l;
	query_levels_single(&t, max_nodes, a, &l);
	char got[4096];
	assert_string_equal(render(&l, got, sizeof got), want);
	assert_int_equal(l.width, 4);
	arena_free(a);
}

/* root
 *  main(35/0)
 *   f(15/5)
 *    g(10/10)
 *   h(20/20)
 * Walk: root [x0,35,0] names[0]=total; pushes main at 0.
 * main → 1 [0,35,0]; pushes f at 0 (next 15), h at 15.
 * h → 2 [15,20,20]; f → 3 [0,15,5], pushes g at 0+5.
 * g → 4 [5,10,10].
 * Level 2 left to right: f [0,…], h [15 - 15 = 0, …]. max_self 20. */
static const tnode_t small[] = {{0, NULL, 0}, {0, "main", 0}, {1, "f", 5}, {2, "g", 10}, {1, "h", 20}};
#define SMALL_LEVELS "total,main,h,f,g|0,35,0,0|0,35,0,1|0,15,5,3,0,20,20,2|5,10,10,4 max=20 total=35"

static void test_small_tree(void **state)
{
	expect_single(small, 5, 0, SMALL_LEVELS);
}

/* Equal names under one parent are one node (Pyroscope's tree is by name);
 * empty stacks are the root's self (3), so the root's children start at 3.
 * root(14/3)
 *  main(10/0)
 *   work@a.go(3/3), work@b.go(5/4) → work(8/7)
 *    x(1/1)
 *   aa(2/2)
 *  zz(1/1)
 * Walk: root [0,14,3]; x = 3: main at 3 (next 13), zz at 13.
 * zz → 1 [13,1,1]; main → 2 [3,10,0]: aa at 3 (next 5), work at 5.
 * work → 3 [5,8,7], x at 5+7 = 12; x → 4 [12,1,1]; aa → 5 [3,2,2].
 * Level 1: main 3, zz 13 - (3+10) = 0. Level 2: aa 3, work 5 - (3+2) = 0. */
static void test_equal_names_and_root_self(void **state)
{
	static const tnode_t t[] = {{0, NULL, 3}, {0, "main", 0}, {1, "work", 3}, {1, "work", 4},
	                            {3, "x", 1},  {1, "aa", 2},   {0, "zz", 1}};
	expect_single(
	    t, 7, 0,
	    "total,zz,main,work,x,aa|0,14,3,0|3,10,0,2,0,1,1,1|3,2,2,5,0,8,7,3|12,1,1,4 max=7 total=14");
}

/* A root alone: empty stacks only (5), or nothing; a tree of 0 nodes is an empty root. */
static void test_one_node(void **state)
{
	static const tnode_t empty[] = {{0, NULL, 5}};
	expect_single(empty, 1, 0, "total|0,5,5,0 max=5 total=5");
	expect_single(empty, 1, 16384, "total|0,5,5,0 max=5 total=5");
	static const tnode_t zero[] = {{0, NULL, 0}};
	expect_single(zero, 1, 0, "total|0,0,0,0 max=0 total=0");
	arena_t *a = arena_new();
	model_tree_t t = {0};
	query_levels_t l;
	query_levels_single(&t, 0, a, &l);
	char got[256];
	assert_string_equal(render(&l, got, sizeof got), "total|0,0,0,0 max=0 total=0");
	arena_free(a);
}

/* Pyroscope's single graph: a child named "other" always goes into the
 * parent's `other` (main: other(3) and x(1) → x at 0, other(3/3) at 1, its
 * child q gone); a function named "total" shares names[0] with the root. */
static void test_other_and_total_names(void **state)
{
	static const tnode_t t[] = {{0, NULL, 0}, {0, "main", 0}, {1, "other", 2}, {2, "q", 1}, {1, "x", 1}};
	expect_single(t, 5, 0, "total,main,other,x|0,4,0,0|0,4,0,1|0,1,1,3,0,3,3,2 max=3 total=4");
	static const tnode_t u[] = {{0, NULL, 0}, {0, "total", 2}};
	expect_single(u, 2, 0, "total|0,2,0,0|0,2,2,0 max=2 total=2");
}

/* root(88/0)
 *  a(45/0): a1(40/40) a2(3/3) a3(2/2)
 *  b(38/1): b1(33/30): b1x(2/2) b1y(1/1); b2(4/4)
 *  c(5/5)
 * 10 non-root nodes; totals sorted: 45 40 38 33 5 4 3 2 2 1. */
static const tnode_t cut[] = {{0, NULL, 0},  {0, "a", 0},  {1, "a1", 40}, {1, "a2", 3},
                              {1, "a3", 2},  {0, "b", 1},  {5, "b1", 30}, {6, "b1x", 2},
                              {6, "b1y", 1}, {5, "b2", 4}, {0, "c", 5}};

/* Uncut (max_nodes 0, 10 = the tree's size, or more): visit order
 * c b b2 b1 b1y b1x a a3 a2 a1, so names in that order.
 * root: a at 0, b at 45, c at 83. b: self 1, b1 at 46, b2 at 79.
 * b1: self 30, b1x at 76, b1y at 78. a: a1 at 0, a2 at 40, a3 at 43.
 * Level 2 left to right: a1 0, a2 40-40=0, a3 43-43=0, b1 46-45=1, b2 79-79=0.
 * Level 3: b1x 76, b1y 78-78=0. */
#define CUT_NONE                                                                                             \
	"total,c,b,b2,b1,b1y,b1x,a,a3,a2,a1|0,88,0,0|0,45,0,7,0,38,1,2,0,5,5,1|0,40,40,10,0,3,3,9,0,2,2,8,"  \
	"1,33,30,4,"                                                                                         \
	"0,4,4,3|76,2,2,6,0,1,1,5 max=40 total=88"

static void test_max_nodes_not_smaller_than_tree(void **state)
{
	expect_single(cut, 11, 0, CUT_NONE);
	expect_single(cut, 11, 10, CUT_NONE);
	expect_single(cut, 11, 16384, CUT_NONE);
}

/* max_nodes 5: Pyroscope's minValue walks c(5) b(38) b2(4) b1(33) b1y(1)
 * [heap full: 1 4 5 33 38] b1x(2) > 1 [2 4 5 33 38] a(45) > 2 [4 5 33 38 45]
 * a3(2) a2(3) skipped, a1(40) > 4 [5 33 38 40 45]: the threshold is 5.
 * Kept: a a1 b b1 c; cut: a2+a3 → other(5) under a, b2 → other(4) under b,
 * b1x+b1y → other(3) under b1, each after its parent's kept children.
 * Visit: c(1) b(2) other(3)@79 b1(4)@46 other@76 a(5) other@40 a1(6)@0.
 * Level 2: a1 0, other 40-40=0, b1 46-45=1, other 79-79=0.
 * Every total stays exact: a 0+40+5, b 1+33+4, b1 30+3. */
static void test_max_nodes_cuts_at_several_depths(void **state)
{
	expect_single(
	    cut, 11, 5,
	    "total,c,b,other,b1,a,a1|0,88,0,0|0,45,0,5,0,38,1,2,0,5,5,1|0,40,40,6,0,5,5,3,1,33,30,4,0,4,4,3|"
	    "76,3,3,3 max=40 total=88");
}

/* max_nodes 4: the heap ends [33 38 40 45] (c 5 b2 4 are pushed out by a and
 * a1; b1y b1x a3 a2 are never larger than its least): threshold 33. c goes
 * into an `other`(5) under the root, at 83, right of b. */
static void test_max_nodes_other_under_root(void **state)
{
	expect_single(
	    cut, 11, 4,
	    "total,other,b,b1,a,a1|0,88,0,0|0,45,0,4,0,38,1,2,0,5,5,1|0,40,40,5,0,5,5,1,1,33,30,3,0,4,4,1|"
	    "76,3,3,1 max=40 total=88");
}

/* max_nodes 8: the 8th largest total is 2 (a3 and b1x tie at 2): both are
 * kept, so 9 nodes stay (Pyroscope keeps ties); only b1y(1) goes, into an
 * `other`(1) where b1y was: the uncut arrays with "other" for "b1y". */
static void test_max_nodes_keeps_ties(void **state)
{
	expect_single(cut, 11, 8,
	              "total,c,b,b2,b1,other,b1x,a,a3,a2,a1|0,88,0,0|0,45,0,7,0,38,1,2,0,5,5,1|0,40,40,10,0,"
	              "3,3,9,0,2,2,"
	              "8,1,33,30,4,0,4,4,3|76,2,2,6,0,1,1,5 max=40 total=88");
}

static void test_max_nodes_default_and_bound(void **state)
{
	assert_int_equal(query_max_nodes(0), LIMIT_FLAME_NODES);
	assert_int_equal(query_max_nodes(-1), LIMIT_FLAME_NODES);
	assert_int_equal(query_max_nodes(1), 1);
	assert_int_equal(query_max_nodes(16384), 16384);
	assert_int_equal(query_max_nodes(1000000), LIMIT_FLAME_NODES);
	assert_int_equal(LIMIT_FLAME_NODES, 16384);
}

/* Decodes l (absolute x) and checks what every flame graph must hold: at
 * each node, its children are the next level's nodes in [x + self, x +
 * total), contiguous, and self + their totals = total. Returns the number of
 * nodes not named "other" (root included). */
static uint32_t check_levels(const query_levels_t *l)
{
	uint32_t real = 0;
	for (uint32_t d = 0; d < l->n_levels; d++) {
		int64_t *abs = malloc((l->len[d] / 4 + 1) * sizeof *abs), prev = 0;
		for (uint32_t i = 0; i < l->len[d]; i += 4) {
			abs[i / 4] = prev + l->levels[d][i];
			prev = abs[i / 4] + l->levels[d][i + 1];
			real += !slice_eq_cstr(l->names[l->levels[d][i + 3]], "other");
		}
		if (d + 1 < l->n_levels) {
			int64_t cprev = 0;
			uint32_t j = 0, nj = l->len[d + 1];
			for (uint32_t i = 0; i < l->len[d]; i += 4) {
				int64_t x = abs[i / 4], total = l->levels[d][i + 1],
				        sum = l->levels[d][i + 2];
				int64_t at = x + l->levels[d][i + 2];
				while (j < nj) {
					int64_t cx = cprev + l->levels[d + 1][j];
					if (cx >= x + total)
						break;
					assert_int_equal(cx, at);
					at += l->levels[d + 1][j + 1];
					sum += l->levels[d + 1][j + 1];
					cprev = cx + l->levels[d + 1][j + 1];
					j += 4;
				}
				assert_int_equal(sum, total);
			}
			assert_int_equal(j, nj);
		}
		free(abs);
	}
	return real;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* A random tree of 3,000 nodes (distinct names, positive values) cut at
 * several max_nodes: every total exact, and the nodes kept are exactly
 * those whose total is at least the max_nodes-th largest (found here by
 * sorting, independently of the heap walk). */
static void test_random_tree_invariants(void **state)
{
	enum { N = 3000 };
	static tnode_t t[N];
	static char names[N][12];
	uint64_t r = 42;
	t[0] = (tnode_t){0, NULL, 0};
	for (uint32_t i = 1; i < N; i++) {
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		snprintf(names[i], sizeof names[i], "n%u", i);
		uint32_t back = (uint32_t)(r >> 33) % 8 + 1;
		t[i] = (tnode_t){i > back ? i - back : 0, names[i], (int64_t)((r >> 20) % 100) + 1};
	}
	arena_t *a = arena_new();
	model_tree_t tree = mk_tree(a, t, N);
	int64_t *sorted = malloc(N * sizeof *sorted);
	memcpy(sorted, tree.total + 1, (N - 1) * sizeof *sorted);
	qsort(sorted, N - 1, sizeof *sorted, cmp_desc);
	static const int64_t cuts[] = {1, 2, 7, 100, 1024, 2998, 2999, 5000};
	for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
		query_levels_t l;
		query_levels_single(&tree, cuts[c], a, &l);
		assert_int_equal(l.total, tree.total[0]);
		assert_int_equal(l.levels[0][1], tree.total[0]);
		uint32_t want = N;
		if (cuts[c] < N - 1) {
			want = 1;
			for (uint32_t i = 1; i < N; i++)
				want += tree.total[i] >= sorted[cuts[c] - 1];
		}
		assert_int_equal(check_levels(&l), want);
	}
	free(sorted);
	arena_free(a);
}

/* left:  root(7/0) main(7/0): f(5/5) g(2/2)
 * right: root(10/1, an empty stack) main(9/0): g(3/3) h(6/4): k(2/2)
 * Aligned by name: root, main, f(5/5 | 0/0), g(2/2 | 3/3), h(0/0 | 6/4), k(0/0 | 2/2).
 * Walk (left x | right x): root [0,7,0 | 0,10,1]; main at 0 | 1.
 * main → 1 [0,7,0 | 1,9,0]: f at 0|1, g at 5|1, h at 7|4.
 * h → 2 [7,0,0 | 4,6,4], k at 7 | 4+4 = 8; k → 3 [7,0,0 | 8,2,2];
 * g → 4 [5,2,2 | 1,3,3]; f → 5 [0,5,5 | 1,0,0].
 * Level 2 f g h: left 0, 5-5=0, 7-7=0; right 1, 1-1=0, 4-4=0.
 * Total 7 + 10, max_self 5. */
static const tnode_t dleft[] = {{0, NULL, 0}, {0, "main", 0}, {1, "f", 5}, {1, "g", 2}};
static const tnode_t dright[] = {{0, NULL, 1}, {0, "main", 0}, {1, "g", 3}, {1, "h", 4}, {3, "k", 2}};

static void expect_diff(int64_t max_nodes, const char *want)
{
	arena_t *a = arena_new();
	model_tree_t l = mk_tree(a, dleft, 4), r = mk_tree(a, dright, 5);
	query_levels_t out;
	err_t err = {0};
	assert_int_equal(query_levels_diff(&l, &r, max_nodes, a, &out, &err), 0);
	char got[4096];
	assert_string_equal(render(&out, got, sizeof got), want);
	assert_int_equal(out.width, 7);
	assert_int_equal(out.left_ticks, 7);
	assert_int_equal(out.right_ticks, 10);
	arena_free(a);
}

static void test_diff_one_sided_nodes(void **state)
{
	expect_diff(
	    0, "total,main,h,k,g,f|0,7,0,0,10,1,0|0,7,0,1,9,0,1|0,5,5,1,0,0,5,0,2,2,0,3,3,4,0,0,0,0,6,4,2|"
	       "7,0,0,8,2,2,3 max=5 total=17");
	expect_diff(
	    6, "total,main,h,k,g,f|0,7,0,0,10,1,0|0,7,0,1,9,0,1|0,5,5,1,0,0,5,0,2,2,0,3,3,4,0,0,0,0,6,4,2|"
	       "7,0,0,8,2,2,3 max=5 total=17");
}

/* max_nodes 3 of the 6 aligned nodes: max(left, right) totals are root 10,
 * main 9, h 6, f 5, g 3, k 2 → threshold 6. Under main f(5|0) and g(2|3)
 * go into other(7|3); h(0|6) stays, at 0 | 1; its k(0|2) goes into an
 * other(0|2) at 0 | 1+4 = 5. Visit: main(1) other(2) h(3) other.
 * Level 2 h, other: left 0, 0-0=0; right 1, 7-7=0. max_self 7. */
static void test_diff_max_nodes(void **state)
{
	expect_diff(
	    3, "total,main,other,h|0,7,0,0,10,1,0|0,7,0,1,9,0,1|0,0,0,1,6,4,3,0,7,7,0,3,3,2|0,0,0,5,2,2,2 "
	       "max=7 total=17");
}

/* The flamebearer JSON of l for the sample type st:su with mid (what the
 * route writes) between head and tail; malloc'd. */
static char *fb_json(const query_levels_t *l, const char *st, const char *su, const char *mid)
{
	buf_t b;
	buf_init(&b, SIZE_MAX);
	assert_int_equal(query_flamebearer_head(&b, l, slice_cstr(st), slice_cstr(su)), 0);
	assert_int_equal(buf_puts(&b, mid), 0);
	assert_int_equal(query_flamebearer_tail(&b, l), 0);
	assert_int_equal(buf_putc(&b, 0), 0);
	size_t n;
	return (char *)buf_steal(&b, &n);
}

/* An empty left tree (a range with no data): every node is right-only.
 * Walk: root [0,0,0 | 0,10,1]; main at 0 | 1: [0,0,0 | 1,9,0], g at 0 | 1,
 * h at 0 | 4; h → 2 [0,0,0 | 4,6,4], k at 0 | 8; k → 3; g → 4.
 * Level 2 g, h: left 0, 0; right 1, 4-4=0. No leftTicks in the JSON (Go's
 * omitempty drops a 0). */
static void test_diff_empty_left(void **state)
{
	arena_t *a = arena_new();
	model_tree_t l = {0}, r = mk_tree(a, dright, 5);
	query_levels_t out;
	err_t err = {0};
	assert_int_equal(query_levels_diff(&l, &r, 0, a, &out, &err), 0);
	char got[1024];
	assert_string_equal(render(&out, got, sizeof got),
	                    "total,main,h,k,g|0,0,0,0,10,1,0|0,0,0,1,9,0,1|0,0,0,1,3,3,4,0,0,0,0,6,4,2|"
	                    "0,0,0,8,2,2,3 max=4 total=10");
	assert_int_equal(out.left_ticks, 0);
	char *j = fb_json(&out, "cpu", "nanoseconds", "");
	assert_non_null(strstr(j, "\"name\":\"cpu\"},\"rightTicks\":10}"));
	free(j);
	arena_free(a);
}

static void test_diff_refuses_negative(void **state)
{
	arena_t *a = arena_new();
	static const tnode_t neg[] = {{0, NULL, 0}, {0, "main", 3}, {1, "f", -1}};
	model_tree_t l = mk_tree(a, neg, 3), r = mk_tree(a, dright, 5);
	query_levels_t out;
	err_t err = {0};
	assert_int_equal(query_levels_diff(&l, &r, 0, a, &out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.msg,
	                    "the left profile has a negative value; a diff needs values of 0 or more");
	assert_int_equal(query_levels_diff(&r, &l, 0, a, &out, &err), -1);
	assert_string_equal(err.msg,
	                    "the right profile has a negative value; a diff needs values of 0 or more");
	arena_free(a);
}

static void test_flamebearer_single(void **state)
{
	arena_t *a = arena_new();
	model_tree_t t = mk_tree(a, small, 5);
	query_levels_t l;
	query_levels_single(&t, 0, a, &l);
	char *j = fb_json(&l, "cpu", "nanoseconds", ",\"timeline\":null");
	assert_string_equal(
	    j, "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"h\",\"f\",\"g\"],"
	       "\"levels\":[[0,35,0,0],[0,35,0,1],[0,15,5,3,0,20,20,2],[5,10,10,4]],\"numTicks\":35,"
	       "\"maxSelf\":20},\"metadata\":{\"format\":\"single\",\"spyName\":\"\",\"sampleRate\":"
	       "1000000000,\"units\":\"samples\",\"name\":\"cpu\"},\"timeline\":null}");
	free(j);
	j = fb_json(&l, "inuse_objects", "count", "");
	assert_non_null(strstr(j, "\"sampleRate\":100,\"units\":\"objects\",\"name\":\"inuse_objects\"}}"));
	free(j);
	j = fb_json(&l, "contentions", "count", "");
	assert_non_null(strstr(j, "\"sampleRate\":100,\"units\":\"count\",\"name\":\"contentions\"}}"));
	free(j);
	/* A full buffer is -1. */
	buf_t b;
	buf_init(&b, 20);
	assert_int_equal(query_flamebearer_head(&b, &l, slice_cstr("cpu"), slice_cstr("nanoseconds")), -1);
	buf_free(&b);
	arena_free(a);
}

static void test_flamebearer_diff(void **state)
{
	arena_t *a = arena_new();
	model_tree_t l = mk_tree(a, dleft, 4), r = mk_tree(a, dright, 5);
	query_levels_t out;
	err_t err = {0};
	assert_int_equal(query_levels_diff(&l, &r, 3, a, &out, &err), 0);
	char *j = fb_json(&out, "alloc_space", "bytes", "");
	assert_string_equal(
	    j, "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"other\",\"h\"],\"levels\":"
	       "[[0,7,0,0,10,1,0],[0,7,0,1,9,0,1],[0,0,0,1,6,4,3,0,7,7,0,3,3,2],[0,0,0,5,2,2,2]],"
	       "\"numTicks\":17,\"maxSelf\":7},\"metadata\":{\"format\":\"double\",\"spyName\":\"\","
	       "\"sampleRate\":100,\"units\":\"bytes\",\"name\":\"alloc_space\"},\"leftTicks\":7,"
	       "\"rightTicks\":10}");
	free(j);
	arena_free(a);
}

/* ---- tree bytes (query_tree_bytes): Pyroscope's MarshalTruncate layout ---- */

static void expect_tree(const tnode_t *nodes, uint32_t n, int64_t max_nodes, const uint8_t *want,
                        size_t want_n)
{
	arena_t *a = arena_new();
	model_tree_t t = mk_tree(a, nodes, n);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	assert_int_equal(query_tree_bytes(&t, max_nodes, &b), 0);
	if (b.n != want_n || (want_n && memcmp(b.p, want, want_n) != 0)) {
		char got[512];
		size_t o = 0;
		for (size_t i = 0; i < b.n && o + 4 < sizeof got; i++)
			o += (size_t)snprintf(got + o, sizeof got - o, "%02x ", b.p[i]);
		fail_msg("tree bytes: %s(%zu bytes, want %zu)", got, b.n, want_n);
	}
	buf_free(&b);
	arena_free(a);
}

/* root → main(35/0) → f(15/5) → g(10/10); main → h(20/20). Depth first from
 * the virtual root ("", self 0, 1 child); main has 2 children pushed f, h,
 * so h is written first, then f and its g. */
static void test_tree_bytes(void **state)
{
	(void)state;
	static const tnode_t t[] = {{0, NULL, 0}, {0, "main", 0}, {1, "f", 5}, {2, "g", 10}, {1, "h", 20}};
	static const uint8_t want[] = {0,   0,  1, 4, 'm', 'a', 'i', 'n', 0,   2,  1,
	                               'h', 20, 0, 1, 'f', 5,   1,   1,   'g', 10, 0};
	expect_tree(t, 5, 0, want, sizeof want);
	/* max_nodes 2: totals 35, 20, 15, 10 → threshold 20; f (15) goes into
	 * `other` (self = total = 15), placed after h by name, so written first. */
	static const uint8_t cut2[] = {0,   0,   1,   4,   'm', 'a', 'i', 'n', 0,   2,  5,
	                               'o', 't', 'h', 'e', 'r', 15,  0,   1,   'h', 20, 0};
	expect_tree(t, 5, 2, cut2, sizeof cut2);
	/* The value of empty stacks (the root's self) is the virtual root's self. */
	static const tnode_t r[] = {{0, NULL, 7}, {0, "a", 300}};
	static const uint8_t rw[] = {0, 7, 1, 1, 'a', 0xac, 0x02, 0};
	expect_tree(r, 2, 0, rw, sizeof rw);
	/* An empty tree: no bytes. */
	static const tnode_t e[] = {{0, NULL, 0}};
	expect_tree(e, 1, 0, NULL, 0);
}

/* A kept child named "other" takes the cut sum: main → other(3), x(1), y(2),
 * z(50); max_nodes 2 → threshold 50: x and y (3) cut, other kept by name,
 * self 3 + 3; children [other, z] written z first. */
static void test_tree_bytes_other_child(void **state)
{
	(void)state;
	static const tnode_t t[] = {{0, NULL, 0}, {0, "main", 0}, {1, "other", 3},
	                            {1, "x", 1},  {1, "z", 50},   {1, "y", 2}};
	static const uint8_t want[] = {0,   0,  1, 4, 'm', 'a', 'i', 'n', 0,   2, 1,
	                               'z', 50, 0, 5, 'o', 't', 'h', 'e', 'r', 6, 0};
	expect_tree(t, 6, 2, want, sizeof want);
}

/* query_tree_cut: the flame graph's cut as a tree. root → main(35/0) →
 * f(15/5) → g(10/10); main → h(20/20). max_nodes 2: threshold 20, f and
 * its g become `other` (15) under main; max_nodes 0 or ≥ 4: t itself. */
static void test_tree_cut(void **state)
{
	(void)state;
	static const tnode_t nodes[] = {
	    {0, NULL, 0}, {0, "main", 0}, {1, "f", 5}, {2, "g", 10}, {1, "h", 20}};
	arena_t *a = arena_new();
	model_tree_t t = mk_tree(a, nodes, 5), c;
	assert_int_equal(query_tree_cut(&t, 0, a, &c), 0);
	assert_ptr_equal(c.parent, t.parent);
	assert_int_equal(query_tree_cut(&t, 4, a, &c), 0);
	assert_ptr_equal(c.parent, t.parent);
	assert_int_equal(query_tree_cut(&t, 2, a, &c), 0);
	char got[256];
	size_t o = 0;
	for (uint32_t i = 0; i < c.n_nodes; i++) {
		slice_t name = i ? c.frames[c.frame[i]].name : slice_cstr("root");
		o += (size_t)snprintf(got + o, sizeof got - o, "%s%u:%.*s(%lld/%lld)", i ? " " : "",
		                      i ? c.parent[i] : 0, (int)name.n, (const char *)name.p,
		                      (long long)c.total[i], (long long)c.self[i]);
	}
	assert_string_equal(got, "0:root(35/0) 0:main(35/0) 1:h(20/20) 1:other(15/15)");
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small_tree),
	    cmocka_unit_test(test_equal_names_and_root_self),
	    cmocka_unit_test(test_one_node),
	    cmocka_unit_test(test_other_and_total_names),
	    cmocka_unit_test(test_max_nodes_not_smaller_than_tree),
	    cmocka_unit_test(test_max_nodes_cuts_at_several_depths),
	    cmocka_unit_test(test_max_nodes_other_under_root),
	    cmocka_unit_test(test_max_nodes_keeps_ties),
	    cmocka_unit_test(test_max_nodes_default_and_bound),
	    cmocka_unit_test(test_random_tree_invariants),
	    cmocka_unit_test(test_diff_one_sided_nodes),
	    cmocka_unit_test(test_diff_max_nodes),
	    cmocka_unit_test(test_diff_empty_left),
	    cmocka_unit_test(test_diff_refuses_negative),
	    cmocka_unit_test(test_flamebearer_single),
	    cmocka_unit_test(test_flamebearer_diff),
	    cmocka_unit_test(test_tree_bytes),
	    cmocka_unit_test(test_tree_bytes_other_child),
	    cmocka_unit_test(test_tree_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
