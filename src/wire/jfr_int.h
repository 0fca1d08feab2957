/* Private to wire/jfr*.c: what the JFR decoder shares with its symbol
 * renaming (jfr_symbols.c). */
#ifndef KILN_WIRE_JFR_INT_H
#define KILN_WIRE_JFR_INT_H

#include "base/arena.h"
#include "base/slice.h"

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
