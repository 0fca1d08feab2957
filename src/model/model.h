/* The normalized batch: what every producer (pprof upload, OTLP, scrape)
 * turns its wire format into, and all that ingest and the store ever see.
 * A batch owns its memory (one arena); strings are slices into it.
 * Identities are content hashes (base/hash.h), so two writers that never
 * talk agree on every id:
 *   frame id = hash(name, file, binary, build_id, kind, unsymbolized)
 *   node id  = hash_pair(parent node id (0 at the root), frame id)
 *   attrset id = hash of its sorted (key, value) pairs (0 = empty set)
 *   series id = hash(project, service, type, period, sorted series labels)
 * Not thread-safe: a batch has one owner at a time; ownership moves to the
 * store with store_submit(). */
#ifndef KILN_MODEL_MODEL_H
#define KILN_MODEL_MODEL_H

#include <stdint.h>

#include "base/arena.h"
#include "base/slice.h"
#include "base/u64map.h"

/* "no node": the root (a root frame's parent, an empty stack's leaf); "no attrset" is 0 */
#define MODEL_NONE UINT32_MAX

typedef struct {
	uint64_t id;
	slice_t name;     /* function name; empty when unsymbolized */
	slice_t file;     /* source file; may be empty */
	slice_t binary;   /* mapping file name; may be empty */
	slice_t build_id; /* may be empty */
	slice_t kind;     /* frame type: "go", "native", "kernel", "jvm", "cpython", ...; may be empty */
	uint8_t unsymbolized; /* 1: no symbol, shown as its binary name and marked */
} model_frame_t;

/* A stack node: one frame under a parent. A stack is its leaf node. */
typedef struct {
	uint64_t id;
	uint32_t parent; /* index into batch->nodes, MODEL_NONE for a root frame */
	uint32_t frame;  /* index into batch->frames */
} model_node_t;

typedef struct {
	slice_t key;
	slice_t value;
} model_label_t;

/* A set of sample attributes (pprof sample labels, OTLP sample attributes,
 * span links as trace_id/span_id). Stored per sample row, not as series. */
typedef struct {
	uint64_t id;     /* 0 for the empty set */
	uint32_t first;  /* range in batch->attr_labels, sorted by key then value */
	uint32_t count;
} model_attrset_t;

/* A sample whose stack is empty (a pprof Sample with no location_id, an
 * OTLP Sample whose Stack has no locations: Go's goroutine profile has one)
 * has node MODEL_NONE: its value belongs to the root, counted in every
 * total as `go tool pprof` counts it, under no frame. */
typedef struct {
	uint32_t node;    /* leaf node index into batch->nodes; MODEL_NONE: the empty stack */
	uint32_t attrset; /* index into batch->attrsets; 0 is always the empty set */
	int64_t value;
	int64_t time_ns;  /* 0 = the profile's time */
} model_sample_t;

enum { MODEL_WINDOW = 0, MODEL_SNAPSHOT = 1 };

/* One profile of one type (API: Profile types). */
typedef struct {
	slice_t service;       /* service.name (API: Services and naming) */
	slice_t sample_type;   /* e.g. "cpu" */
	slice_t sample_unit;   /* e.g. "nanoseconds" */
	slice_t period_type;   /* may be empty */
	slice_t period_unit;
	int64_t period;
	uint8_t aggregation;   /* MODEL_WINDOW (summed) or MODEL_SNAPSHOT (averaged) */
	uint8_t cpu_alias;     /* 1: samples:count with a cpu:nanoseconds period and no
	                          cpu:nanoseconds sibling: also offered as cpu:nanoseconds */
	int64_t time_ns;       /* start */
	int64_t duration_ns;
	uint32_t labels_first; /* series labels: range in batch->series_labels, sorted by key */
	uint32_t labels_count;
	uint32_t samples_first; /* range in batch->samples */
	uint32_t samples_count;
	uint64_t series_id;    /* set by model_profile_finish() */
} model_profile_t;

typedef struct model_batch {
	arena_t *arena;
	slice_t project;

	model_frame_t *frames;
	uint32_t n_frames;
	size_t cap_frames;

	model_node_t *nodes;
	uint32_t n_nodes;
	size_t cap_nodes;

	model_label_t *attr_labels;
	uint32_t n_attr_labels;
	size_t cap_attr_labels;

	model_attrset_t *attrsets; /* attrsets[0] = empty set */
	uint32_t n_attrsets;
	size_t cap_attrsets;

	model_label_t *series_labels;
	uint32_t n_series_labels;
	size_t cap_series_labels;

	model_sample_t *samples;
	uint32_t n_samples;
	size_t cap_samples;

	model_profile_t *profiles;
	uint32_t n_profiles;
	size_t cap_profiles;

	uint64_t frames_written; /* sum of stack depths of all samples (LIMIT_REQUEST_FRAMES) */

	u64map_t _frame_ix, _node_ix, _attrset_ix;
	/* Per frame index: the node last interned with that frame and its
	 * parent. Samples share their root-side frames, so most of a stack
	 * is interned again with the same parent: found here without hashing
	 * (model_node_intern). Node MODEL_NONE: nothing yet. */
	struct {
		uint32_t parent, node;
	} *_node_memo;
	size_t _cap_node_memo;
} model_batch_t;

model_batch_t *model_batch_new(slice_t project);
void model_batch_free(model_batch_t *b);
/* Done building: frees the interning maps and gives back the arrays' unused
 * capacity, so a batch that waits (the store's queue, its log's apply
 * thread) holds what it contains and little more. No interning after it. */
void model_batch_seal(model_batch_t *b);

/* Makes room in the interning maps for up to frames more frames and nodes
 * more nodes, for a decoder that knows (a bound of) its counts: no map is
 * rebuilt at every doubling. */
void model_batch_reserve(model_batch_t *b, size_t frames, size_t nodes);
/* Interns a frame: computes f->id from its fields, copies the strings into
 * the batch arena unless an equal frame exists. Returns its index. */
uint32_t model_frame_intern(model_batch_t *b, const model_frame_t *f);
/* Interns the node (parent, frame); parent = MODEL_NONE for a root frame. */
uint32_t model_node_intern(model_batch_t *b, uint32_t parent, uint32_t frame);
/* The global id of node index i of b: 0 for MODEL_NONE (the root: the empty
 * stack of a sample, the parent of a root frame); ids of nodes are never 0. */
static inline uint64_t model_node_id(const model_batch_t *b, uint32_t i)
{
	return i == MODEL_NONE ? 0 : b->nodes[i].id;
}
/* Interns an attribute set; labels are copied and sorted (the caller's array
 * is reordered). n = 0 returns 0. */
uint32_t model_attrset_intern(model_batch_t *b, model_label_t *labels, uint32_t n);

/* Starts a new profile; the returned pointer is valid until the next
 * model_profile_add(). Fields are zeroed; strings passed to the setters below
 * are copied into the arena. */
model_profile_t *model_profile_add(model_batch_t *b);
void model_profile_set_type(model_batch_t *b, model_profile_t *p, slice_t sample_type, slice_t sample_unit,
                            slice_t period_type, slice_t period_unit, int64_t period);
void model_profile_set_service(model_batch_t *b, model_profile_t *p, slice_t service);
/* Adds a series label (copied). Labels added to p must be added while p is
 * the last profile of the batch. */
void model_profile_add_label(model_batch_t *b, model_profile_t *p, slice_t key, slice_t value);
/* Appends a sample to p (which must be the batch's last profile). */
void model_sample_add(model_batch_t *b, model_profile_t *p, uint32_t node, uint32_t attrset, int64_t value,
                      int64_t time_ns);
/* Appends n samples to p (which must be the batch's last profile). */
void model_samples_add(model_batch_t *b, model_profile_t *p, const model_sample_t *s, uint32_t n);
/* Sorts p's series labels, merges samples with equal (node, attrset, time),
 * drops zero values, computes series_id. Call once, after the last sample.
 * Samples are sorted stably (equal keys merge in the order they were added);
 * samples added already in order are not sorted again. */
void model_profile_finish(model_batch_t *b, model_profile_t *p);
/* The stable order of s[0..n) by (node, attrset, time_ns), the order
 * model_profile_finish merges in: perm[k] = index of the k-th sample.
 * Decoders whose profiles share one list of samples (pprof: one value per
 * sample type) order it once and add the samples of each profile in that
 * order, so model_profile_finish does not sort each profile again. */
void model_samples_order(const model_sample_t *s, uint32_t n, uint32_t *perm);

/* The series label that holds a profile's name (Pyroscope's __name__: "process_cpu", "memory",
 * "block", "mutex", "goroutines", "wall", ...), which keeps kinds with the same sample types
 * apart (API: Profile names). A profile without a name has no such label. */
#define MODEL_PROFILE_NAME_KEY "__name__"
/* 1 when name is a valid profile name: 1 to LIMIT_PROFILE_NAME_BYTES bytes of [a-z0-9_.-]
 * (so it never holds the ':' of a type id). */
int model_profile_name_valid(slice_t name);

/* "sample_type:sample_unit" as used by the API, written into out (NUL-terminated, truncated). */
void model_type_name(const model_profile_t *p, char *out, size_t n);
/* MODEL_SNAPSHOT for inuse_* and goroutine-style types, else MODEL_WINDOW (API: Aggregation over time). */
uint8_t model_aggregation_of(slice_t sample_type);

/* A merged call tree (query result), the input of the pprof encoder and of
 * the flame graph / top writers. Node 0 is the synthetic root; for i > 0,
 * parent[i] < i. self[0] is the value of the samples with an empty stack
 * (total[0] includes it, as every total does). */
typedef struct {
	uint32_t n_nodes;
	uint32_t *parent;
	uint32_t *frame;   /* index into frames; unused for node 0 */
	int64_t *self;
	int64_t *total;
	model_frame_t *frames;
	uint32_t n_frames;
	slice_t sample_type, sample_unit, period_type, period_unit;
	int64_t period;
	int64_t time_ns, duration_ns;
} model_tree_t;

#endif
