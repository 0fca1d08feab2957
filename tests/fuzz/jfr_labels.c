/* libFuzzer target for wire/jfr_labels.c: jfr_labels_parse of the input as
 * the Java agent's LabelsSnapshot, then lookups of the contexts and strings
 * whose ids the input's first bytes name. It checks for crashes, leaks and
 * undefined behaviour, and the contract: a refusal is a 400 or 413 whose
 * message starts with the path "labels"; a parsed snapshot answers every
 * lookup with at most JFR_CONTEXT_LABELS labels, none with an empty key or
 * value, no key twice. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "wire/jfr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1u << 20))
		return 0;
	jfr_labels_t *l = NULL;
	err_t err = {0};
	if (jfr_labels_parse(slice_make(data, size), &l, &err) < 0) {
		if ((err.status != 400 && err.status != 413) || strncmp(err.msg, "labels", 6) != 0 || l)
			abort();
		return 0;
	}
	model_label_t out[JFR_CONTEXT_LABELS];
	for (size_t i = 0; i < 16; i++) {
		uint64_t id = i < size ? data[i] : i; /* small ids: the ones seeds and mutations use */
		uint32_t n = jfr_labels_context(l, id, out);
		if (n > JFR_CONTEXT_LABELS)
			abort();
		for (uint32_t k = 0; k < n; k++) {
			if (!out[k].key.n || !out[k].value.n)
				abort();
			for (uint32_t j = 0; j < k; j++)
				if (slice_eq(out[j].key, out[k].key))
					abort();
		}
		slice_t s;
		if (jfr_labels_string(l, id, &s) &&
		    (s.n > size || (s.n && (s.p < data || s.p + s.n > data + size))))
			abort();
	}
	jfr_labels_free(l);
	return 0;
}
