/* Ingestion keys (SPEC S6.1): a crash-safe store in DATA/keys.db holding only
 * SHA-256 hashes of keys, and an in-memory snapshot the server looks keys up in.
 * It does not decide which listener needs a key or scope answers (api/ does). */
#ifndef KILN_INGEST_KEYS_H
#define KILN_INGEST_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "base/err.h"
#include "base/limits.h"
#include "base/slice.h"

enum { KEY_SCOPE_INGEST = 1, KEY_SCOPE_QUERY = 2, KEY_SCOPE_BOTH = 3 };

#define KEY_TEXT_MAX 64 /* "kiln_" + 43 base64url characters (256 random bits), plus NUL */

typedef struct {
	char project[LIMIT_NAME_BYTES + 1];
	char name[LIMIT_NAME_BYTES + 1];
	int scope; /* KEY_SCOPE_* */
} key_info;

/* One row of keys.db as keys_list reports it; valid only during the callback. */
typedef struct {
	const char *name;
	const char *project;
	int scope;          /* KEY_SCOPE_* */
	int64_t created_ns; /* unix ns */
	int64_t revoked_ns; /* 0 = active */
} key_row;

typedef struct keys keys_t;

/* Opens (creating the directory and db if missing) DATA/keys.db and loads every
 * non-revoked key into an immutable in-memory snapshot. NULL + err on failure. */
keys_t *keys_open(const char *data_dir, kn_err *err);
void keys_close(keys_t *k);

/* The same over the keys table of a shared store (ClickHouse: every Kiln
 * process on it sees the same keys). A store unreachable at open starts with
 * no keys; keys_refresh re-reads the table at most once a second. */
struct store;
keys_t *keys_open_store(struct store *s, kn_err *err);
/* 0 while no snapshot has been read yet (a shared store unreachable since
 * the start): an unknown key then means "cannot tell", not "wrong key". */
int keys_ready(keys_t *k);
/* keys_create, keys_revoke and keys_list on a shared store. */
int keys_create_store(struct store *s, const char *project, const char *name, int scope, char *key_out, size_t n,
                      kn_err *err);
int keys_revoke_store(struct store *s, const char *name, kn_err *err);
int keys_list_store(struct store *s, void (*cb)(const key_row *row, void *ctx), void *ctx, kn_err *err);

/* Reloads the snapshot if keys.db changed since the last load (PRAGMA
 * data_version: one cheap query when nothing changed). The server calls it
 * every ~250 ms, so a key created or revoked by `kiln keys` in another process
 * takes effect within a second. Returns 1 reloaded, 0 unchanged, -1 on error
 * (the old snapshot stays in use). Thread-safe; concurrent calls serialize. */
int keys_refresh(keys_t *k);

/* Is presented a valid (not revoked) key? 1 and *out filled, or 0. Hashes the
 * presented bytes and finds the hash in the snapshot; never touches the db.
 * Thread-safe: lookups share a read lock that only a snapshot swap (a pointer
 * store) takes exclusively, so concurrent lookups never wait for each other. */
int keys_lookup(keys_t *k, slice_t presented, key_info *out);

/* Creates a key for project under the global name (names are unique across
 * projects and stay taken after revocation) and writes it NUL-terminated to
 * key_out (n >= KEY_TEXT_MAX). The key is never stored, only its hash; it is
 * durable (synchronous=FULL commit) before this returns 0. -1 + err: 400 if
 * project or name is invalid or the name exists, 500 on I/O errors. */
int keys_create(const char *data_dir, const char *project, const char *name, int scope, char *key_out,
                size_t n, kn_err *err);

/* Revokes the key called name. 0 revoked now, 1 already revoked, -1 + err
 * (404 unknown name, 500 I/O). */
int keys_revoke(const char *data_dir, const char *name, kn_err *err);

/* Calls cb for every key (revoked ones included), ordered by project then name.
 * A missing keys.db lists nothing. 0, or -1 + err. */
int keys_list(const char *data_dir, void (*cb)(const key_row *row, void *ctx), void *ctx, kn_err *err);

/* Parses an Authorization header value "Bearer KEY" (scheme case-insensitive,
 * spaces around KEY ignored). 1 and *key_out (pointing into authorization), or 0. */
int keys_parse_bearer(slice_t authorization, slice_t *key_out);

/* "ingest", "query", "both" ↔ KEY_SCOPE_*; keys_scope_parse returns 0 if unknown. */
const char *keys_scope_name(int scope);
int keys_scope_parse(const char *s);

/* Is s a valid project or key name ([A-Za-z0-9_.-]{1,64})? */
int keys_name_valid(slice_t s);

/* Shared with usage.c: opens DATA/file (creating data_dir and the db when
 * create is set) in WAL mode with synchronous=FULL and a busy timeout, and runs
 * schema (may be NULL). *db = NULL without error when !create and the file is
 * missing. 0, or -1 + err (500). */
int ingest_db_open(const char *data_dir, const char *file, const char *schema, int create, sqlite3 **db,
                   kn_err *err);

#endif
