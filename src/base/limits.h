/* Every bound on what outside input can make Kiln spend, in one place: what
 * a request, a config value, a scraped body, a Kubernetes or ClickHouse answer
 * or a file on disk can make Kiln allocate, hold, keep or wait for. Each line:
 * name, value, what it bounds, and the setting that overrides it (if any).
 * Where a setting overrides a bound, LIMIT_X is its default and LIMIT_X_MIN /
 * LIMIT_X_MAX the range the config accepts. docs/RELIABILITY.md,
 * docs/OPERATIONS.md (Limits, Scrape limits) and docs/API.md (Push errors) quote these numbers.
 *
 * Left with their modules, because they tune Kiln's own pace and buffering
 * rather than bound what input can make it spend: timer periods and batch
 * windows (cli/serve.c, store writers, discovery debounce, k8s backoff), HTTP/2
 * flow-control windows and output high-water marks (net/h2.c; bodies are
 * bounded here), and ClickHouse client timeouts (store/clickhouse_http.c). */
#ifndef KILN_BASE_LIMITS_H
#define KILN_BASE_LIMITS_H

/* clang-format off: a table */

/* Requests (net/, api/, ingest/) */
#define LIMIT_BODY_BYTES (32u << 20)    /* request body as received */
#define LIMIT_DECODED_BYTES (32u << 20) /* after decompression (and one gRPC message) */
#define LIMIT_HEADER_BYTES (64u << 10)  /* HTTP request line + headers */
#define LIMIT_HEADER_FIELDS 256u        /* header fields in one request, HTTP/1.1 (431) and HTTP/2 */
#define LIMIT_CHUNK_LINE_BYTES 1024     /* HTTP/1.1 chunk-size line with its extensions (400 beyond) */
#define LIMIT_CONNECTIONS 4096u         /* connections per listener (the oldest idle one is evicted) */
#define LIMIT_H2_STREAMS 256u           /* SETTINGS_MAX_CONCURRENT_STREAMS of one HTTP/2 connection */
#define LIMIT_HEADER_MS 10000           /* first byte of a request (or accept) to end of its headers */
#define LIMIT_BODY_PAUSE_MS 60000       /* longest pause between body bytes (HTTP/2: any byte of a request) */
#define LIMIT_IDLE_MS 60000             /* keep-alive wait for the next request */
#define LIMIT_WRITE_PAUSE_MS 30000      /* longest pause in sending while the client does not read */
#define LIMIT_LINGER_MS 2000            /* a closing connection drains what the client still sends */
#define LIMIT_BODIES_MIB 512    /* request bodies held at once, all listeners (limits.requestBodiesMiB) */
#define LIMIT_BODIES_MIB_MIN 64 /*   its range in the config */
#define LIMIT_BODIES_MIB_MAX (1 << 20)
#define LIMIT_KEY_BYTES 256         /* a presented ingestion key; longer ones are refused before hashing */
#define LIMIT_NAME_BYTES 64u        /* a project or key name ([A-Za-z0-9_.-]{1,64}) */
#define LIMIT_QUERY_PARAMS 128      /* query-string parameters of one request */
#define LIMIT_QUERY_ROWS 1000000    /* limit= of a top-functions query */
#define LIMIT_SPAN_ID_BYTES 64      /* a span_id / trace_id label as indexed */
#define LIMIT_PYRO_NAME_BYTES 4096  /* Pyroscope /ingest name=APP{k=v,...}, decoded */
#define LIMIT_PROFILE_NAME_BYTES 64 /* a profile name (__name__, profile=): [a-z0-9_.-]{1,64} */
#define LIMIT_MULTIPART_PARTS 16u   /* parts of one multipart/form-data /ingest body */
#define LIMIT_MULTIPART_HEADER_BYTES 4096u       /* the header block of one part (CRLFs included) */
#define LIMIT_PYRO_STC_BYTES (64u << 10)         /* a sample_type_config part (JSON) */
#define LIMIT_PYRO_STC_STRING_BYTES 256u         /* a sample type, display-name or units in it */
#define LIMIT_PYRO_DELTA_SERIES 4096u            /* /ingest series with a cumulative baseline (LRU beyond) */
#define LIMIT_PYRO_DELTA_ENTRIES (4u * 1000000u) /* values of all those baselines (LRU evicted beyond) */
#define LIMIT_PUSH_PROFILES 1024                 /* raw profiles (and series) in one push.v1 Push request */

/* Decoded profiles (wire/, ingest/) */
#define LIMIT_SAMPLE_TYPES 64u /* pprof sample types per profile */
#define LIMIT_SAMPLE_ROWS                                                                                    \
	10000u /* decoded sample rows per profile (receivers.profiles.maxDecodedSampleRows) */
#define LIMIT_SAMPLE_ROWS_MAX 10000000 /*   the most that setting accepts */
#define LIMIT_REQUEST_FRAMES 1000000u  /* frames written out by all stacks of one request */
#define LIMIT_STACK_DEPTH 4096u  /* frames in one stack (deeper stacks are truncated at the root side) */
#define LIMIT_LABELS 64u         /* labels on one sample or one upload */
#define LIMIT_STRING_BYTES 4096u /* one label key/value or frame name as stored */
#define LIMIT_OTLP_NESTING 32u   /* nesting of OTLP AnyValue (arrays, key-value lists) */
#define LIMIT_JFR_CHUNKS 4096u          /* chunks in one JFR recording */
#define LIMIT_JFR_TYPES 8192u           /* types in one chunk's JFR metadata */
#define LIMIT_JFR_FIELDS 65536u         /* fields of all those types */
#define LIMIT_JFR_META_STRINGS 65536u   /* strings of one JFR metadata event */
#define LIMIT_JFR_META_DEPTH 16u        /* nesting of JFR metadata elements (root, metadata, class, field, ...) */
#define LIMIT_JFR_NESTING 16u           /* nesting of JFR values (a type's fields of other types) */
#define LIMIT_JFR_CHECKPOINTS 65536u    /* checkpoint (constant pool) events of one JFR chunk */
#define LIMIT_JFR_POOL_ENTRIES (4u << 20) /* constant pool entries of one JFR chunk */

/* Per-key state (ingest/) */
#define LIMIT_SAMPLES_PER_SECOND 20000.0 /* samples per second per key (limits.samplesPerSecond) */
#define LIMIT_SAMPLES_PER_SECOND_MAX 1e9 /*   the most that setting accepts (from 1) */
/* limits.defaultSamplesPerSecond (listeners without auth) takes 0 (unlimited, the default) to the same max */
#define LIMIT_RATE_BUCKETS 100000u /* keys with a token bucket at once */
#define LIMIT_USAGE_TOTALS 100000u /* (project, key) pairs in the /metrics usage totals */
#define LIMIT_USAGE_NAME_BYTES 128 /* project or key name as counted in usage (longer: truncated) */

/* Queries (query/) */
#define LIMIT_QUERY_NODES 2000000u      /* call-tree nodes one query may build */
#define LIMIT_TIMELINE_POINTS 10000     /* points of one timeline */
#define LIMIT_LABEL_VALUES 1000         /* values per label name in /api/labels (more: "truncated":true) */
#define LIMIT_SELECTOR_BYTES 16384      /* a label selector (query/selector.h), as given */
#define LIMIT_SELECTOR_MATCHERS 64      /* matchers in one selector */
#define LIMIT_SELECTOR_REGEX_BYTES 4096 /* a =~ / !~ pattern, unquoted */
#define LIMIT_SELECTOR_REGEX_INSTS                                                                           \
	10000 /* its compiled program ({m,n} expanded); a match costs <= 2 per rune each */
#define LIMIT_SELECTOR_REGEX_DEPTH 64 /* nesting of groups and repetitions in a pattern */
#define LIMIT_FLAME_NODES 16384       /* max_nodes of a Pyroscope flame graph: default (absent, 0) and most */
#define LIMIT_SPAN_SELECTOR 1024      /* span ids in one SelectMergeSpanProfile */

/* Config (cli/config.c, cli/store_open.c) */
#define LIMIT_CONFIG_BYTES (1u << 20) /* a config file; kiln.yaml is a few KiB */
#define LIMIT_SECRET_BYTES 1023       /* a password file, trailing newline excluded */
#define LIMIT_RETENTION_DAYS 3650     /* retention.days, maxDays, projects, and store_set_retention */
#define LIMIT_RETENTION_PROJECTS 64   /* entries of retention.projects */
#define LIMIT_STATIC_TARGETS 256      /* receivers.profiles.scrape.static */
#define LIMIT_ANNOTATION_PREFIXES 16  /* receivers.profiles.scrape.extraAnnotationPrefixes */

/* Scraping (scrape/) */
#define LIMIT_SCRAPE_INFLIGHT 64 /* OPS: Scrape requests: transfers at once; more → skipped_concurrency */
#define LIMIT_SCRAPE_BODY_BYTES (8u << 20)     /* OPS: Scrape limits: response body as received */
#define LIMIT_SCRAPE_DECODED_BYTES (32u << 20) /* OPS: Scrape limits: after gunzip */
#define LIMIT_SCRAPE_DECODE_ROWS                                                                             \
	1000000u /* rows decoded before .sample_types (then maxDecodedSampleRows)                            \
	          */
#define LIMIT_SCRAPE_DELTA_ENTRIES (4u * 1000000u) /* entries of the heap-delta baselines of all targets */
#define LIMIT_SCRAPE_INTERVAL_MIN_NS                                                                         \
	(10LL * 1000000000LL)               /* OPS: Scrape settings: the shortest interval (scrape.interval) \
	                                     */
#define LIMIT_SCRAPE_NAME_BYTES 254         /* a target's names (Kubernetes names are ≤ 253 bytes) */
#define LIMIT_SCRAPE_URL_BYTES 1024         /* a target's URL */
#define LIMIT_SCRAPE_SAMPLE_TYPES_BYTES 512 /* a .sample_types setting */
#define LIMIT_ANNOTATION_PREFIX_BYTES 253   /* an annotation prefix (a DNS subdomain) */

/* Kubernetes API answers (scrape/k8s*) */
#define LIMIT_K8S_EVENT_BYTES (4u << 20)  /* one watch event line; longer → error + reconnect */
#define LIMIT_K8S_LIST_BYTES (64u << 20)  /* one list page (LIMIT_K8S_LIST_PAGE pods) */
#define LIMIT_K8S_LIST_PAGE 100           /* pods per list page (`limit=`) */
#define LIMIT_K8S_PODS 4096               /* pods kept for k8s_pod_by_ip; more are not looked up */
#define LIMIT_K8S_TOKEN_BYTES (64u << 10) /* the service-account token file */
#define LIMIT_K8S_ERROR_BYTES 4096        /* kept of a non-200 answer, for the log */
#define LIMIT_K8S_RV_BYTES 128            /* a resourceVersion */

/* Store files and ClickHouse answers (store/) */
#define LIMIT_STORE_OPEN_PARTS 4096    /* partitions the embedded writer keeps open (LRU), 3 fds each */
#define LIMIT_STORE_OPEN_PARTS_MIN 8   /*   kept open whatever RLIMIT_NOFILE allows */
#define LIMIT_STORE_FD_RESERVE 1024    /*   fds left to sockets and views: max(this, RLIMIT_NOFILE / 4) */
#define LIMIT_STORE_PAGE_CACHE (256u << 20) /* SQLite page cache of all writer connections (cache_size) */
#define LIMIT_STORE_CACHE 1000000u     /* id → local id cache entries over all open partitions */
#define LIMIT_CHUNK_ENTRIES (1u << 24) /* entries one stored chunk may claim (hostile-file bound) */
#define LIMIT_DICT_ROWS (1u << 30)     /* rows of one dictionary table a reader accepts */
#define LIMIT_DAMAGED_FILES 256        /* distinct damaged files logged per process; later ones are counted */
#define LIMIT_STORE_WAL_SEGMENT (64u << 20) /* one store log segment file (store/local_wal.c) */
#define LIMIT_STORE_WAL_BYTES (1ull << 30)  /* store log segments + spare on disk; past it: 503 "store log full" */
#define LIMIT_STORE_WAL_CHECKPOINT_BYTES (64u << 20) /* log written since the last checkpoint that starts one, */
#define LIMIT_STORE_WAL_CHECKPOINT_BYTES_MAX (256u << 20) /* growing by the former per 128 dirty partitions up to this */
#define LIMIT_STORE_WAL_CHECKPOINT_MS 10000          /* and at least this often while partitions are dirty */
#define LIMIT_STORE_BLOCK_BYTES (16u << 20) /* raw (decompressed) head or data of one block (store/local_block.c) */
#define LIMIT_STORE_VIEW_BLOCK_BYTES (8u << 20) /* decoded blocks a read view keeps (store/local_view.c) */
#define LIMIT_CH_ROWS (1u << 26)       /* rows one ClickHouse read accepts (a bound on a hostile answer) */
#define LIMIT_CH_SEEN 2000000u         /* dictionary rows the ClickHouse writer remembers as written */
#define LIMIT_CH_ANSWER_BYTES (256u << 20) /* one answer read from ClickHouse (store.maxAnswerMiB) */
#define LIMIT_CH_ANSWER_MIB_MIN 1          /*   its range in the config, in MiB */
#define LIMIT_CH_ANSWER_MIB_MAX 65536
#define LIMIT_STORE_QUEUE_BATCHES 10000u /* batches queued for the writer (store.queueBatches) */
#define LIMIT_STORE_QUEUE_BATCHES_MIN 1  /*   its range in the config */
#define LIMIT_STORE_QUEUE_BATCHES_MAX 100000
#define LIMIT_STORE_QUEUE_BYTES (256u << 20) /* their memory (store.queueMiB); past either: 503 busy */
#define LIMIT_STORE_QUEUE_MIB_MIN 1          /*   its range in the config, in MiB */
#define LIMIT_STORE_QUEUE_MIB_MAX 65536
#define LIMIT_STORE_GROUP_BATCHES 256       /* batches in one commit group */
#define LIMIT_STORE_GROUP_BYTES (16u << 20) /* their memory (a larger batch goes alone) */
#define LIMIT_STORE_APPLY_BYTES (64u << 20) /* embedded: answered batches not yet in their partitions */
#define LIMIT_STORE_READ_BARRIER_MS 30000   /* embedded: a read waits at most this for them */
#define LIMIT_PUSH_JOBS 10000u              /* push jobs waiting for a worker; past it: 503 busy */
#define LIMIT_STORE_HOURS_MARGIN_S 300      /* an hour is merged (store/local_hours.c) once it ended this long ago */
#define LIMIT_STORE_HOURS_PASS_MS 5000      /*   and the compactor looks for such hours this often */
/* malloc of `kiln serve` (cli/serve.c): blocks up to this size come from the
 * heap, and up to the second stays free in it rather than going back to the
 * kernel, so a long query's buffers (MiBs of heads and sums) are reused
 * rather than mapped and faulted in anew each time (docs/PERFORMANCE.md,
 * Summed hours on ClickHouse). */
#define LIMIT_MALLOC_MMAP_BYTES (32u << 20)
#define LIMIT_MALLOC_TRIM_BYTES (64u << 20)
#define LIMIT_STORE_SUMS_BYTES (64u << 20)  /*   raw bytes of one merged row's sums a reader accepts */

/* clang-format on */

#endif
