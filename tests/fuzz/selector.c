/* libFuzzer target for query/selector.c and sel_regex.c: the input is a
 * label selector as Pyroscope's query API takes it, parsed as the routes
 * will, then compiled on its own as a regex and matched against itself. It
 * checks for crashes, UB and leaks; that an error is a 400 "selector: at N:"
 * (or "regex: at N:") with N inside the input; that a parse stays within
 * its bounds (at most LIMIT_SELECTOR_MATCHERS matchers, non-empty names, a
 * known operator, a compiled program for each regex within
 * LIMIT_SELECTOR_REGEX_INSTS); that an = matcher matches its own value and
 * != does not; and that every match stays within the VM's step bound
 * (2 × program size per rune, plus one closure). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "query/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_match(const sel_regex_t *re, slice_t s)
{
	uint64_t steps = 0;
	int m = sel_regex_match(re, s, &steps);
	if ((m != 0 && m != 1) || steps > 2 * (uint64_t)re->n_insts * s.n + re->n_insts)
		abort();
}

static void check_error(const err_t *err, const char *prefix, size_t size)
{
	size_t n = strlen(prefix);
	if (err->status != 400 || strncmp(err->msg, prefix, n) != 0 ||
	    strtoull(err->msg + n, NULL, 10) > size)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > LIMIT_SELECTOR_BYTES + 1)
		return 0;
	slice_t text = slice_make(data, size);
	sel_t sel;
	err_t err = {0};
	if (sel_parse(text, &sel, &err) < 0) {
		check_error(&err, "selector: at ", size);
		if (sel.n || sel.m || sel._text)
			abort();
	} else {
		if (sel.n > LIMIT_SELECTOR_MATCHERS || sel.metric.n > size)
			abort();
		for (uint32_t i = 0; i < sel.n; i++) {
			const sel_matcher_t *m = &sel.m[i];
			if (!m->name.n || m->value.n > size || m->op < SEL_EQ || m->op > SEL_NRE)
				abort();
			if (m->op == SEL_EQ || m->op == SEL_NE) {
				if (sel_match(m, m->value) != (m->op == SEL_EQ) || m->re.n_insts)
					abort();
				continue;
			}
			if (!m->re.n_insts || m->re.n_insts > LIMIT_SELECTOR_REGEX_INSTS)
				abort();
			check_match(&m->re, m->value);
			check_match(&m->re, text);
			check_match(&m->re, slice_make(NULL, 0));
		}
		sel_free(&sel);
	}
	sel_regex_t re;
	if (size <= LIMIT_SELECTOR_REGEX_BYTES) {
		if (sel_regex_compile(text, &re, &err) < 0) {
			check_error(&err, "regex: at ", size);
		} else {
			if (!re.n_insts || re.n_insts > LIMIT_SELECTOR_REGEX_INSTS)
				abort();
			check_match(&re, text);
			check_match(&re, slice_make(data, size / 2));
			sel_regex_free(&re);
		}
	}
	return 0;
}
