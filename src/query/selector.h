/* Label selectors as Pyroscope's query API takes them (the render query=,
 * the Connect querier's label_selector and matchers; API: Label selectors):
 * Prometheus's metric-selector syntax `NAME{k="v", k!="v", k=~"re", k!~"re"}`
 * parsed by the lexing rules of promql/parser (which Pyroscope calls), and a
 * bounded regex matcher for the RE2 subset people write in them. The matcher
 * is a Pike VM (a Thompson NFA run over the input once): its work is at most
 * proportional to input runes × program size whatever the pattern, so a
 * selector from a request cannot make a match backtrack exponentially.
 * Pure: no I/O, no globals; compiled selectors are read-only and may be
 * shared between threads. */
#ifndef KILN_QUERY_SELECTOR_H
#define KILN_QUERY_SELECTOR_H

#include <stdint.h>

#include "base/err.h"
#include "base/slice.h"

enum { SEL_EQ, SEL_NE, SEL_RE, SEL_NRE };

/* One instruction of a compiled regex (the fields belong to sel_regex.c). */
typedef struct {
	uint8_t op;
	uint32_t x, y;
} sel_inst_t;

/* A compiled regex: the program and the sorted rune ranges of its classes. */
typedef struct {
	sel_inst_t *insts;
	uint32_t n_insts;
	uint32_t *ranges; /* lo, hi pairs */
	uint32_t n_ranges;
} sel_regex_t;

typedef struct {
	slice_t name, value; /* unquoted, escapes applied */
	int op;              /* SEL_EQ, SEL_NE, SEL_RE, SEL_NRE */
	sel_regex_t re;      /* compiled for SEL_RE and SEL_NRE */
} sel_matcher_t;

/* A parsed selector. Every slice points into memory the selector owns, so it
 * outlives the text it was parsed from; sel_free releases it. */
typedef struct {
	slice_t metric; /* the name before '{' (a Pyroscope profile type id), may be empty;
	                 * PromQL reads it as __name__="metric" */
	sel_matcher_t *m;
	uint32_t n;
	uint8_t *_text;
} sel_t;

/* Parses `NAME`, `{...}` or `NAME{...}` with NAME `[a-zA-Z_:][a-zA-Z0-9_:]*`
 * and, inside the braces, matchers separated by ',' (one trailing ',' allowed):
 * a label `[a-zA-Z_][a-zA-Z0-9_]*` or a quoted one (`"service.name"`), one of
 * = != =~ !~, and a value in "..." or '...' (Go's escapes: \a \b \f \n \r \t
 * \v \\ \<its quote> \xHH \ooo \uHHHH \UHHHHHHHH) or `...` (raw); a lone
 * quoted string is `__name__="..."` as in PromQL. Spaces, tabs, CR and LF
 * between tokens. Regex values are compiled (sel_regex_compile). 0 with *out
 * filled, or -1 with out empty and err 400 "selector: at N: <what>", N the
 * byte offset (from 0) where it went wrong: a token not expected there, an
 * unterminated string, a bad escape, invalid UTF-8, an empty label name, a
 * bad regex ("selector: at N: regex: at M: <what>", M its offset in the
 * unquoted pattern), or a bound of base/limits.h passed
 * (LIMIT_SELECTOR_BYTES, LIMIT_SELECTOR_MATCHERS, LIMIT_SELECTOR_REGEX_BYTES,
 * LIMIT_SELECTOR_REGEX_INSTS). */
int sel_parse(slice_t text, sel_t *out, err_t *err);
void sel_free(sel_t *sel);

/* 1 when value satisfies the matcher, else 0. An absent label is to be
 * matched as the empty value (Prometheus: `k=""` selects series without k). */
int sel_match(const sel_matcher_t *m, slice_t value);

/* 1 when a label set satisfies every matcher of sel, else 0 (names/values:
 * n labels). The metric is not matched here: Pyroscope reads NAME (and a
 * `__name__` matcher) as the profile type id, which the routes resolve to a
 * type before matching the rest. */
int sel_match_labels(const sel_t *sel, const slice_t *names, const slice_t *values, uint32_t n);

/* Compiles an RE2 pattern, fully anchored (`^(?s:re)$`, as Prometheus
 * compiles label matchers): literals, `.` (any rune, newline included),
 * classes `[a-z0-9_-]`, `[^...]` with \d \w \s \D \W \S and escapes inside,
 * escapes \. (any punctuation) \d \w \s \D \W \S \a \f \n \r \t \v \xHH
 * \x{H...} \ooo, groups `(...)` `(?:...)` `(?P<name>...)` `(?<name>...)`,
 * `|`, `*` `+` `?` `{m}` `{m,}` `{m,n}` (m, n <= 1000; lazy forms accepted,
 * they match the same strings), `^` and `$` (start and end of the value),
 * and the flags `(?i)` `(?s)` `(?i:...)` (i folds ASCII letters only). 0, or
 * -1 + err 400 "regex: at M: <what>" naming what is wrong or unsupported
 * (`\b`, `\p`, `[[:alpha:]]`, flag m, …), or 400 past LIMIT_SELECTOR_REGEX_INSTS. */
int sel_regex_compile(slice_t pattern, sel_regex_t *out, err_t *err);
void sel_regex_free(sel_regex_t *re);

/* 1 when the whole of s matches, else 0. s is read as UTF-8, a byte that
 * starts no valid sequence being one rune U+FFFD (as Go reads it). If steps is
 * not NULL it receives the VM's work: thread visits, at most
 * 2 × n_insts per rune plus n_insts. */
int sel_regex_match(const sel_regex_t *re, slice_t s, uint64_t *steps);

#endif
