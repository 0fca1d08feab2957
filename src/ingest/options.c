/* Defaults of the push path's settings (ingest/options.h). */
#include "ingest/options.h"

#include "base/limits.h"

void ingest_options_defaults(ingest_options_t *o)
{
	*o = (ingest_options_t){
	    .max_rows = LIMIT_SAMPLE_ROWS,
	    .samples_per_second = LIMIT_SAMPLES_PER_SECOND,
	    .bodies_mib = LIMIT_BODIES_MIB,
	};
}
