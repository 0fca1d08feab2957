/* Private to wire/jfr*.c: what the JFR decoder shares with its symbol
 * renaming (jfr_symbols.c) and its labels snapshot (jfr_labels.c). */
#ifndef KILN_WIRE_JFR_INT_H
#define KILN_WIRE_JFR_INT_H

#include "base/arena.h"
#include "base/num.h"
#include "base/slice.h"
#include "base/u64map.h"

/* A map from 64-bit ids (0 included) to 32-bit values: ids chosen by the
 * writer are mixed (a bijection, so they do not pile into one probe run;
 * only 0 mixes to 0, and the map keeps id 0 aside). */
typedef struct {
	u64map_t m; /* num_mix64(id) → value, for ids other than 0 */
	uint8_t has_zero;
	uint32_t zero; /* the value of id 0 */
} jf_idmap_t;

static inline int idmap_get(const jf_idmap_t *t, uint64_t id, uint32_t *v)
{
	if (id == 0) {
		*v = t->zero;
		return t->has_zero;
	}
	return u64map_get(&t->m, num_mix64(id), v);
}

static inline void idmap_put(jf_idmap_t *t, uint64_t id, uint32_t v)
{
	if (id == 0) {
		t->zero = v;
		t->has_zero = 1;
	} else {
		u64map_put(&t->m, num_mix64(id), v);
	}
}

static inline void idmap_clear(jf_idmap_t *t)
{
	u64map_clear(&t->m);
	t->has_zero = 0;
}

/* A class or method symbol as grafana/jfr-parser's ProcessSymbols renames
 * it, so that the names of generated classes and of native libraries with
 * a random part merge across runs and JVMs (the reference's oracles show
 * them so): GeneratedMethodAccessor123 → GeneratedMethodAccessor_,
 * X$$Lambda$12/0x0123 (and X$$Lambda.0x.., X$$Lambda123) → X$$Lambda_,
 * X$$EnhancerBySpringCGLIB$$abc → X$$EnhancerBySpringCGLIB$$_, and the
 * extracted zstd-jni, Amazon Corretto Crypto Provider and async-profiler
 * libraries (optionally under /tmp/, optionally "(deleted)") → one name
 * each. The renaming rules are applied in that order, each to the result of
 * the one before. Returns s itself when no rule applies, else a string
 * allocated in a. */
slice_t jfr_symbol_merge(arena_t *a, slice_t s);

#endif
