/* The web UI's files, embedded in the binary at build time (see
 * scripts/embed-ui.sh, which writes build/ui_assets.c from src/ui/). */
#ifndef KILN_API_UI_ASSETS_H
#define KILN_API_UI_ASSETS_H

#include <stddef.h>

#include "base/slice.h"

typedef struct {
	const char *path; /* URL path, e.g. "/" or "/app.js" */
	const char *content_type;
	const unsigned char *data;
	size_t size;
} ui_asset_t;

/* The asset served at path ("/" maps to index.html), or NULL. */
const ui_asset_t *ui_asset_find(slice_t path);

#endif
