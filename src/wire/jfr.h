/* Java Flight Recorder (JFR) decoding into the normalized batch: the files
 * async-profiler (`-o jfr`), the Pyroscope Java agent and the JDK's own
 * recorder write (format 2.x; issue 18). A file is one or more chunks; each
 * chunk has a 68-byte header (magic "FLR\0", version, size, the offsets of
 * its last constant-pool checkpoint and of its metadata, a features word
 * whose bit 0 says integers are LEB128-compressed), a metadata event that
 * describes every type and field, checkpoint events holding the constant
 * pools (classes, methods, symbols, stack traces, thread states, frame
 * types, strings, ...: 64-bit ids) and the events themselves. Events turn
 * into profiles as grafana/jfr-parser's pprof converter does (the oracle of
 * tests/data/jfr); the kinds are jfr_kinds[] below. Pure: no I/O, no
 * decompression (wire/compress.h), no ingest rules. */
#ifndef KILN_WIRE_JFR_H
#define KILN_WIRE_JFR_H

#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "model/model.h"

/* One kind of profile the converter makes: the event it comes from, the
 * profile name (the series label MODEL_PROFILE_NAME_KEY, API: Profile
 * names), one or two sample types and the period type. */
typedef struct {
	const char *event;   /* e.g. "jdk.ExecutionSample" (cpu and wall come from two events each) */
	const char *name;    /* profile name: "process_cpu", "wall", "memory", "mutex", "block" */
	const char *type[2]; /* sample types; type[1] NULL when there is one */
	const char *unit[2];
	const char *period_type, *period_unit; /* may be "" */
} jfr_kind_t;

enum {
	JFR_CPU,
	JFR_WALL,
	JFR_ALLOC_IN_TLAB,
	JFR_ALLOC_OUTSIDE_TLAB,
	JFR_LOCK,
	JFR_PARK,
	JFR_LIVE,
	JFR_ALLOC_SAMPLE,
	JFR_MALLOC,
	JFR_KINDS
};
extern const jfr_kind_t jfr_kinds[JFR_KINDS];

/* The Pyroscope Java agent's LabelsSnapshot, the `labels` part it sends
 * next to the recording (wire/jfr_labels.c):
 *   LabelsSnapshot { map<int64, Context> contexts = 1; map<int64, string> strings = 2; }
 *   Context { map<int64, int64> labels = 1; }   (label key and value: string ids)
 * An event's contextId selects a context; its labels become the sample's
 * attributes. */
typedef struct jfr_labels jfr_labels_t;

/* Labels one context may give a sample (LIMIT_LABELS less the two span ones). */
#define JFR_CONTEXT_LABELS (LIMIT_LABELS - 2)

/* Parses an uncompressed snapshot (data is borrowed: it must outlive *out).
 * Every label's key and value id must be in strings, and a context may hold
 * at most JFR_CONTEXT_LABELS labels. Errors: 400 naming the entry
 * ("labels.contexts[3].labels[0].key: string id 7 is not in the snapshot's
 * strings"), 413 past the label limit; *out is then NULL. */
int jfr_labels_parse(slice_t data, jfr_labels_t **out, err_t *err);
void jfr_labels_free(jfr_labels_t *l);
/* The labels of context id into out (room for JFR_CONTEXT_LABELS): their
 * count; 0 when l is NULL or has no such context. Labels with an empty key
 * or value are left out; a key given twice keeps its last value. */
uint32_t jfr_labels_context(const jfr_labels_t *l, uint64_t id, model_label_t *out);
/* 1 and *s: the string of id; 0 when l is NULL or has none. */
int jfr_labels_string(const jfr_labels_t *l, uint64_t id, slice_t *s);

typedef struct {
	slice_t service;             /* service.name of every profile */
	const model_label_t *labels; /* series labels of every profile (without __name__: the kind adds it) */
	uint32_t n_labels;
	int64_t from_ns, until_ns;    /* the profiles' time range (the request's from/until); until >= from */
	int64_t sample_rate;          /* Hz of cpu and wall samples; 0 = 100 (the agent's default) */
	uint32_t max_rows;            /* distinct stacks per profile; 0 = LIMIT_SAMPLE_ROWS */
	const jfr_labels_t *snapshot; /* the labels part; NULL when none was sent */
} jfr_decode_opts_t;

/* Decodes an uncompressed JFR file into b: per kind that has events, one
 * model_profile_t per sample type (so two for the two-type kinds), in the
 * order of jfr_kinds, each with the series labels of opts plus
 * __name__ = the kind's name, time from_ns and duration until - from,
 * finished (model_profile_finish). Samples carry time 0 (the profile's
 * time): as the reference converter, the event timestamps (which may be
 * long past) do not place samples, so nothing lands outside [from, until).
 * Values: cpu and wall count events × 1e9 / sample_rate ns (a
 * WallClockSample counts its `samples`); the others as jfr_kinds says
 * (count 1 + the event's bytes or duration). Which events count where:
 * an ExecutionSample is cpu unless its thread state is STATE_SLEEPING, and
 * also wall when the recording's `event` setting (jdk.ActiveSetting) is
 * "wall"; a WallClockSample is wall, and also cpu when its state is
 * STATE_RUNNABLE under that setting.
 * Frames: one per stack frame, named `Class.method` from the class's symbol
 * (package path with '/', e.g. java/lang/Thread.run) after the reference's
 * renaming of generated classes (Lambda$123 → Lambda_ ...); a frame whose
 * method or class is not in the pools is left out, as the reference does.
 * Line numbers are not kept: a frame is a method, as wire/pprof.h keeps
 * functions (per-function values equal the reference's, whose collapsed
 * form adds `:line`). Kind "jvm" for interpreted, JIT-compiled and inlined
 * frames, "native" for native and C++ ones, "kernel" for kernel ones.
 * Sample attributes (API: Span links; `label.K=V` filters): the events the
 * reference correlates (ExecutionSample, WallClockSample, the two TLAB
 * allocations and JavaMonitorEnter) carry the labels of their `contextId`'s
 * context in opts->snapshot, `profile_id` = their `spanId` as 16 lowercase
 * hex digits when it is not 0 (a span link: the store takes profile_id as
 * span_id), and `span_name` = the snapshot string of their `spanName` when
 * there is one. The other events carry none, as in the reference. A stack
 * merges into one row per distinct attribute set.
 * Stacks deeper than LIMIT_STACK_DEPTH keep the frames nearest the leaf;
 * b->frames_written grows by each distinct stack's depth and may not pass
 * LIMIT_REQUEST_FRAMES.
 * Errors: -1 with err 400 naming the chunk, the byte offset in data and the
 * problem ("chunk 0 at offset 1234: ..."), or 413 past a limit; b may hold
 * a partial decode (the caller frees it). data is only borrowed. */
int jfr_decode(slice_t data, const jfr_decode_opts_t *opts, model_batch_t *b, err_t *err);

/* 1 when data starts with a JFR chunk's magic "FLR\0". */
int jfr_is_jfr(slice_t data);

#endif
