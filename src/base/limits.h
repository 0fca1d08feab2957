/* Every limit on what outside input can make Kiln spend, in one place.
 * docs/RELIABILITY.md and SPEC S2.1/S2.4 quote these numbers. */
#ifndef KILN_BASE_LIMITS_H
#define KILN_BASE_LIMITS_H

#define LIMIT_BODY_BYTES        (32u << 20) /* request body as received */
#define LIMIT_DECODED_BYTES     (32u << 20) /* after decompression */
#define LIMIT_SAMPLE_TYPES      64u         /* pprof sample types per profile */
#define LIMIT_SAMPLE_ROWS       10000u      /* decoded sample rows per profile (maxDecodedSampleRows) */
#define LIMIT_REQUEST_FRAMES    1000000u    /* frames written out by all stacks of one request */
#define LIMIT_STACK_DEPTH       4096u       /* frames in one stack (deeper stacks are truncated at the root side) */
#define LIMIT_HEADER_BYTES      (64u << 10) /* HTTP request line + headers */
#define LIMIT_LABELS            64u         /* labels on one sample or one upload */
#define LIMIT_STRING_BYTES      4096u       /* one label key/value or frame name as stored */
#define LIMIT_QUERY_NODES       2000000u    /* call-tree nodes one query may build */
#define LIMIT_CH_ANSWER_BYTES   (256u << 20) /* one answer read from ClickHouse (store.maxAnswerMiB) */

#endif
