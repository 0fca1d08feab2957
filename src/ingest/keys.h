/* Ingestion keys (OPS: Projects and keys): create, revoke and list keys in the store, which
 * keeps only their SHA-256 hashes (store.h: DATA/keys.db on the embedded
 * engine, the keys table on ClickHouse), and an in-memory snapshot the server
 * looks keys up in. It does not decide which listener needs a key or scope
 * answers (api/ does), nor where keys are kept (the store does). */
#ifndef KILN_INGEST_KEYS_H
#define KILN_INGEST_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "base/slice.h"

enum { KEY_SCOPE_INGEST = 1, KEY_SCOPE_QUERY = 2, KEY_SCOPE_BOTH = 3 };

#define KEY_TEXT_MAX 64 /* "kiln_" + 43 base64url characters (256 random bits), plus NUL */

typedef struct {
	char project[LIMIT_NAME_BYTES + 1];
	char name[LIMIT_NAME_BYTES + 1];
	int scope; /* KEY_SCOPE_* */
} keys_info_t;

/* One key as keys_list reports it; valid only during the callback. */
typedef struct {
	const char *name;
	const char *project;
	int scope;          /* KEY_SCOPE_* */
	int64_t created_ns; /* unix ns */
	int64_t revoked_ns; /* 0 = active */
} keys_row_t;

typedef struct keys keys_t;
struct store;

/* Reads every active key of the store into an immutable in-memory snapshot.
 * A store that cannot answer now (ClickHouse unreachable, keys.db unreadable)
 * starts with no keys: keys_ready is 0 until a refresh reads them. NULL + err
 * only when OpenSSL has no SHA-256. */
keys_t *keys_open(struct store *s, err_t *err);
void keys_close(keys_t *k);
/* 0 while no snapshot has been read yet: an unknown key then means "cannot
 * tell", not "wrong key". */
int keys_ready(keys_t *k);

/* Reloads the snapshot if the keys changed since the last load
 * (store_keys_poll: the embedded engine looks at keys.db's change counter,
 * one cheap query when nothing changed; ClickHouse re-reads at most once a
 * second). The server calls it every 250 ms, so a key created or revoked by
 * `kiln keys` in another process takes effect within a second. Returns 1
 * reloaded, 0 unchanged, -1 on error (the old snapshot stays in use).
 * Thread-safe; concurrent calls serialize. */
int keys_refresh(keys_t *k);

/* Is presented a valid (not revoked) key? 1 and *out filled, or 0. Hashes the
 * presented bytes and finds the hash in the snapshot; never touches the db.
 * Thread-safe: lookups share a read lock that only a snapshot swap (a pointer
 * store) takes exclusively, so concurrent lookups never wait for each other. */
int keys_lookup(keys_t *k, slice_t presented, keys_info_t *out);

/* Creates a key for project under the global name (names are unique across
 * projects and stay taken after revocation) and writes it NUL-terminated to
 * key_out (n >= KEY_TEXT_MAX). The key is never stored, only its hash; it is
 * durable before this returns 0. -1 + err: 400 if project or name is invalid
 * or the name exists, 500/503 on I/O errors. */
int keys_create(struct store *s, const char *project, const char *name, int scope, char *key_out, size_t n,
                err_t *err);

/* Revokes the key called name. 0 revoked now, 1 already revoked, -1 + err
 * (404 unknown name, 500 I/O). */
int keys_revoke(struct store *s, const char *name, err_t *err);

/* Calls cb for every key (revoked ones included), ordered by project then name.
 * No keys yet lists nothing. 0, or -1 + err. */
int keys_list(struct store *s, void (*cb)(const keys_row_t *row, void *ctx), void *ctx, err_t *err);

/* Parses an Authorization header value "Bearer KEY" (scheme case-insensitive,
 * spaces around KEY ignored). 1 and *key_out (pointing into authorization), or 0. */
int keys_parse_bearer(slice_t authorization, slice_t *key_out);

/* "ingest", "query", "both" ↔ KEY_SCOPE_*; keys_scope_parse returns 0 if unknown. */
const char *keys_scope_name(int scope);
int keys_scope_parse(const char *s);

/* Is s a valid project or key name ([A-Za-z0-9_.-]{1,64})? */
int keys_name_valid(slice_t s);

#endif
