/* Ingestion keys: keys.db (SQLite, WAL, synchronous=FULL) holds SHA-256 hashes
 * only; the server looks keys up in an immutable snapshot swapped under a
 * writer-preferring rwlock. The plaintext key exists only in keys_create's output. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/alloc.h"
#include "base/timeutil.h"
#include "ingest/keys.h"
#include "store/store.h"

#define KEY_HASH_LEN 32

static const char KEYS_SCHEMA[] = "CREATE TABLE IF NOT EXISTS keys("
                                  " name TEXT PRIMARY KEY,"
                                  " project TEXT NOT NULL,"
                                  " scope TEXT NOT NULL,"
                                  " hash BLOB NOT NULL UNIQUE,"
                                  " created_ns INTEGER NOT NULL,"
                                  " revoked_ns INTEGER)";

typedef struct {
	uint8_t hash[KEY_HASH_LEN];
	key_info info;
	int used;
} snap_slot;

/* Immutable once published: an open-addressing table indexed by hash bits. */
typedef struct {
	snap_slot *slots;
	size_t mask; /* slots - 1 (a power of two, at least twice the key count) */
	size_t count;
} keys_snap;

struct keys {
	pthread_rwlock_t _snap_lock; /* readers: lookups; writer: the pointer swap only */
	keys_snap *_snap;
	pthread_mutex_t _refresh_mu; /* guards _db and _data_version */
	sqlite3 *_db;
	int64_t _data_version;
	EVP_MD *_sha256; /* fetched once: implicit fetches take a global lock per call */
	store_t *_store;   /* instead of _db: the keys table every process shares (ClickHouse) */
	int64_t _loaded_mono; /* when the store's keys were last read */
	_Atomic int _ready;   /* 0 until a snapshot was read (a shared store unreachable so far) */
};

#define KEYS_STORE_REFRESH_NS (1000 * 1000000LL) /* re-read a shared store's keys every second */

/* mkdir -p: creates the missing parents first, then dir. */
static int make_dirs(const char *dir, kn_err *err)
{
	if (mkdir(dir, 0755) == 0 || errno == EEXIST)
		return 0;
	const char *slash = strrchr(dir, '/');
	if (errno == ENOENT && slash && slash != dir) {
		char *parent = xstrndup(dir, (size_t)(slash - dir));
		int rc = make_dirs(parent, err);
		free(parent);
		if (rc < 0)
			return -1;
		if (mkdir(dir, 0755) == 0 || errno == EEXIST)
			return 0;
	}
	return err_set(err, 500, "cannot create %s: %s", dir, strerror(errno));
}

int ingest_db_open(const char *data_dir, const char *file, const char *schema, int create, sqlite3 **db,
                   kn_err *err)
{
	*db = NULL;
	size_t n = strlen(data_dir) + strlen(file) + 2;
	char *path = xmalloc(n);
	snprintf(path, n, "%s/%s", data_dir, file);
	int rc = -1;
	if (!create && access(path, F_OK) != 0) {
		rc = 0;
		goto out;
	}
	if (create && make_dirs(data_dir, err) < 0)
		goto out;
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
	if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
		err_set(err, 500, "cannot open %s: %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(*db, 5000);
	if (sqlite3_exec(*db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL, NULL) != SQLITE_OK ||
	    (schema && sqlite3_exec(*db, schema, NULL, NULL, NULL) != SQLITE_OK)) {
		err_set(err, 500, "cannot set up %s: %s", path, sqlite3_errmsg(*db));
		goto fail;
	}
	rc = 0;
	goto out;
fail:
	sqlite3_close(*db);
	*db = NULL;
out:
	free(path);
	return rc;
}

int keys_name_valid(slice_t s)
{
	if (s.n < 1 || s.n > LIMIT_NAME_BYTES)
		return 0;
	for (size_t i = 0; i < s.n; i++) {
		uint8_t c = s.p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

const char *keys_scope_name(int scope)
{
	switch (scope) {
	case KEY_SCOPE_INGEST:
		return "ingest";
	case KEY_SCOPE_QUERY:
		return "query";
	case KEY_SCOPE_BOTH:
		return "both";
	}
	return "?";
}

int keys_scope_parse(const char *s)
{
	for (int scope = KEY_SCOPE_INGEST; scope <= KEY_SCOPE_BOTH; scope++)
		if (s && !strcmp(s, keys_scope_name(scope)))
			return scope;
	return 0;
}

int keys_parse_bearer(slice_t authorization, slice_t *key_out)
{
	const uint8_t *p = authorization.p, *end = p + authorization.n;
	if (authorization.n < 7 || strncasecmp((const char *)p, "bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
		return 0;
	p += 6;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (p == end)
		return 0;
	*key_out = slice_make(p, (size_t)(end - p));
	return 1;
}

/* ---- the snapshot ---- */

static size_t slot_index(const uint8_t hash[KEY_HASH_LEN], size_t mask)
{
	uint64_t h;
	memcpy(&h, hash, sizeof h);
	return (size_t)h & mask;
}

static void snap_free(keys_snap *s)
{
	if (s) {
		free(s->slots);
		free(s);
	}
}

static void snap_insert(keys_snap *s, const uint8_t hash[KEY_HASH_LEN], const key_info *info)
{
	size_t i = slot_index(hash, s->mask);
	while (s->slots[i].used)
		i = (i + 1) & s->mask;
	memcpy(s->slots[i].hash, hash, KEY_HASH_LEN);
	s->slots[i].info = *info;
	s->slots[i].used = 1;
	s->count++;
}

static void copy_text(char *dst, const unsigned char *src, int n)
{
	size_t len = src && n > 0 ? (size_t)n : 0;
	if (len > LIMIT_NAME_BYTES)
		len = LIMIT_NAME_BYTES;
	if (len)
		memcpy(dst, src, len);
	dst[len] = 0;
}

/* Reads every active key. keys.db is treated as hostile: rows with a hash of
 * the wrong length or an unknown scope are skipped. NULL + err on failure. */
static keys_snap *snap_load(sqlite3 *db, kn_err *err)
{
	sqlite3_stmt *count_st = NULL, *st = NULL;
	keys_snap *s = NULL;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM keys WHERE revoked_ns IS NULL", -1, &count_st, NULL) ||
	    sqlite3_prepare_v2(db, "SELECT name, project, scope, hash FROM keys WHERE revoked_ns IS NULL", -1, &st,
	                       NULL)) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		goto out;
	}
	/* One read transaction so the count and the rows agree. */
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	if (sqlite3_step(count_st) != SQLITE_ROW) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		goto out;
	}
	size_t n = (size_t)sqlite3_column_int64(count_st, 0), cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	s = xcalloc(1, sizeof *s);
	s->slots = xcalloc(cap, sizeof *s->slots);
	s->mask = cap - 1;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && s->count < n) {
		key_info info;
		info.scope = keys_scope_parse((const char *)sqlite3_column_text(st, 2));
		if (sqlite3_column_bytes(st, 3) != KEY_HASH_LEN || !info.scope)
			continue;
		copy_text(info.name, sqlite3_column_text(st, 0), sqlite3_column_bytes(st, 0));
		copy_text(info.project, sqlite3_column_text(st, 1), sqlite3_column_bytes(st, 1));
		snap_insert(s, sqlite3_column_blob(st, 3), &info);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		snap_free(s);
		s = NULL;
	}
out:
	sqlite3_finalize(count_st);
	sqlite3_finalize(st);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	return s;
}

typedef struct {
	keys_snap *s;
	size_t n, cap;
	key_info *info;
	uint8_t (*hash)[KEY_HASH_LEN];
} store_load;

static void collect_key(const store_key_row *r, void *ctx)
{
	store_load *l = ctx;
	key_info info;
	info.scope = 0;
	for (int sc = KEY_SCOPE_INGEST; sc <= KEY_SCOPE_BOTH; sc++)
		if (slice_eq_cstr(r->scope, keys_scope_name(sc)))
			info.scope = sc;
	/* Shared rows are treated as hostile too: wrong hash length or scope, long names are skipped. */
	if (r->revoked_ns || r->hash.n != KEY_HASH_LEN || !info.scope || r->name.n > LIMIT_NAME_BYTES ||
	    r->project.n > LIMIT_NAME_BYTES)
		return;
	copy_text(info.name, r->name.p, (int)r->name.n);
	copy_text(info.project, r->project.p, (int)r->project.n);
	size_t cap = l->cap;
	l->info = xgrow(l->info, &cap, l->n + 1, sizeof *l->info);
	cap = l->cap;
	l->hash = xgrow(l->hash, &cap, l->n + 1, sizeof *l->hash);
	l->cap = cap;
	l->info[l->n] = info;
	memcpy(l->hash[l->n], r->hash.p, KEY_HASH_LEN);
	l->n++;
}

/* Every active key of the shared store. NULL + err on failure. */
static keys_snap *snap_load_store(store_t *st, kn_err *err)
{
	store_load l = {0};
	if (store_keys_read(st, collect_key, &l, err) < 0) {
		free(l.info);
		free(l.hash);
		return NULL;
	}
	size_t cap = 16;
	while (cap < 2 * l.n)
		cap *= 2;
	keys_snap *s = xcalloc(1, sizeof *s);
	s->slots = xcalloc(cap, sizeof *s->slots);
	s->mask = cap - 1;
	for (size_t i = 0; i < l.n; i++)
		snap_insert(s, l.hash[i], &l.info[i]);
	free(l.info);
	free(l.hash);
	return s;
}

static int64_t data_version(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	if (sqlite3_prepare_v2(db, "PRAGMA data_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static keys_t *keys_new(kn_err *err)
{
	keys_t *k = xcalloc(1, sizeof *k);
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	/* A refresh must not starve behind a steady stream of lookups. */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&k->_snap_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&k->_refresh_mu, NULL);
	k->_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!k->_sha256) {
		err_set(err, 500, "keys: OpenSSL has no SHA-256");
		keys_close(k);
		return NULL;
	}
	return k;
}

keys_t *keys_open_store(store_t *st, kn_err *err)
{
	keys_t *k = keys_new(err);
	if (!k)
		return NULL;
	k->_store = st;
	k->_loaded_mono = time_mono_ns();
	/* Unreachable now: start with no keys (every keyed request is refused)
	 * and read them at the next refresh. */
	kn_err e = {0};
	k->_snap = snap_load_store(st, &e);
	atomic_store(&k->_ready, k->_snap != NULL);
	if (!k->_snap) {
		k->_snap = xcalloc(1, sizeof *k->_snap);
		k->_snap->slots = xcalloc(16, sizeof *k->_snap->slots);
		k->_snap->mask = 15;
	}
	(void)err;
	return k;
}

keys_t *keys_open(const char *data_dir, kn_err *err)
{
	keys_t *k = keys_new(err);
	if (!k)
		return NULL;
	if (ingest_db_open(data_dir, "keys.db", KEYS_SCHEMA, 1, &k->_db, err) < 0)
		goto fail;
	k->_data_version = data_version(k->_db);
	k->_snap = snap_load(k->_db, err);
	if (!k->_snap)
		goto fail;
	atomic_store(&k->_ready, 1);
	return k;
fail:
	keys_close(k);
	return NULL;
}

void keys_close(keys_t *k)
{
	if (!k)
		return;
	snap_free(k->_snap);
	sqlite3_close(k->_db);
	EVP_MD_free(k->_sha256);
	pthread_rwlock_destroy(&k->_snap_lock);
	pthread_mutex_destroy(&k->_refresh_mu);
	free(k);
}

static void snap_swap(keys_t *k, keys_snap *fresh)
{
	pthread_rwlock_wrlock(&k->_snap_lock);
	keys_snap *old = k->_snap;
	k->_snap = fresh;
	pthread_rwlock_unlock(&k->_snap_lock);
	snap_free(old); /* no reader can hold it: they all left before the swap */
}

int keys_ready(keys_t *k) { return atomic_load(&k->_ready); }

int keys_refresh(keys_t *k)
{
	pthread_mutex_lock(&k->_refresh_mu);
	int rc = 0;
	if (k->_store) {
		int64_t now = time_mono_ns();
		if (now - k->_loaded_mono >= KEYS_STORE_REFRESH_NS) {
			kn_err err;
			keys_snap *fresh = snap_load_store(k->_store, &err);
			k->_loaded_mono = now;
			if (fresh) {
				snap_swap(k, fresh);
				atomic_store(&k->_ready, 1);
			}
			rc = fresh ? 1 : -1;
		}
		pthread_mutex_unlock(&k->_refresh_mu);
		return rc;
	}
	int64_t v = data_version(k->_db);
	if (v >= 0 && v != k->_data_version) {
		kn_err err;
		keys_snap *fresh = snap_load(k->_db, &err);
		if (!fresh) {
			rc = -1;
		} else {
			snap_swap(k, fresh);
			k->_data_version = v;
			rc = 1;
		}
	} else if (v < 0) {
		rc = -1;
	}
	pthread_mutex_unlock(&k->_refresh_mu);
	return rc;
}

static int sha256(const EVP_MD *md, slice_t s, uint8_t out[KEY_HASH_LEN])
{
	unsigned int len = 0;
	return EVP_Digest(s.p, s.n, out, &len, md, NULL) == 1 && len == KEY_HASH_LEN ? 0 : -1;
}

/* Why this is constant-time where it matters: a timing leak is dangerous when
 * an attacker can learn a secret piece by piece, as with memcmp of the presented
 * key against a stored key (each right leading byte takes longer). Here the
 * presented key is first hashed with SHA-256, and everything after depends only
 * on that hash: which slot is probed and how far its first bytes match a stored
 * hash. Learning that hash(guess) shares bits with a stored hash says nothing
 * about the key behind it (no preimages), so those timings are worthless; and
 * the final comparison of the full 32 bytes uses CRYPTO_memcmp anyway. The
 * hash itself takes time depending only on the presented key's length. */
int keys_lookup(keys_t *k, slice_t presented, key_info *out)
{
	uint8_t h[KEY_HASH_LEN];
	if (presented.n == 0 || presented.n > LIMIT_KEY_BYTES || sha256(k->_sha256, presented, h) < 0)
		return 0;
	int found = 0;
	pthread_rwlock_rdlock(&k->_snap_lock);
	const keys_snap *s = k->_snap;
	for (size_t i = slot_index(h, s->mask); s->slots[i].used; i = (i + 1) & s->mask) {
		if (CRYPTO_memcmp(s->slots[i].hash, h, KEY_HASH_LEN) == 0) {
			if (out)
				*out = s->slots[i].info;
			found = 1;
			break;
		}
	}
	pthread_rwlock_unlock(&k->_snap_lock);
	return found;
}

/* ---- keys.db changes (the CLI) ---- */

static int random_bytes(uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

static void base64url(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8) | p[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			*out++ = digits[(acc >> bits) & 63];
		}
	}
	if (bits > 0)
		*out++ = digits[(acc << (6 - bits)) & 63];
	*out = 0;
}

/* Checks the arguments of a new key and makes it: key (text) and h (its hash). */
static int new_key(const char *project, const char *name, int scope, size_t n, char key[KEY_TEXT_MAX],
                   uint8_t h[KEY_HASH_LEN], kn_err *err)
{
	if (!keys_name_valid(slice_cstr(project)))
		return err_set(err, 400, "invalid project name '%s': use 1 to 64 of A-Z a-z 0-9 _ . -",
		               project ? project : "");
	if (!keys_name_valid(slice_cstr(name)))
		return err_set(err, 400, "invalid key name '%s': use 1 to 64 of A-Z a-z 0-9 _ . -", name ? name : "");
	if (scope < KEY_SCOPE_INGEST || scope > KEY_SCOPE_BOTH)
		return err_set(err, 400, "invalid scope %d: ingest, query or both", scope);
	if (n < KEY_TEXT_MAX)
		return err_set(err, 500, "keys_create: output buffer too small");
	uint8_t secret[32];
	if (random_bytes(secret, sizeof secret) < 0)
		return err_set(err, 500, "cannot read random bytes from the OS: %s", strerror(errno));
	memcpy(key, "kiln_", 5);
	base64url(secret, sizeof secret, key + 5);
	OPENSSL_cleanse(secret, sizeof secret);
	if (sha256(EVP_sha256(), slice_cstr(key), h) < 0)
		return err_set(err, 500, "SHA-256 failed");
	return 0;
}

int keys_create(const char *data_dir, const char *project, const char *name, int scope, char *key_out,
                size_t n, kn_err *err)
{
	uint8_t h[KEY_HASH_LEN];
	char key[KEY_TEXT_MAX];
	if (new_key(project, name, scope, n, key, h, err) < 0)
		return -1;
	sqlite3 *db;
	if (ingest_db_open(data_dir, "keys.db", KEYS_SCHEMA, 1, &db, err) < 0)
		return -1;
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "INSERT INTO keys(name, project, scope, hash, created_ns) VALUES(?,?,?,?,?)", -1,
	                       &st, NULL) != SQLITE_OK) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, project, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, keys_scope_name(scope), -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 4, h, KEY_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, time_now_ns());
	int step = sqlite3_step(st);
	if (step == SQLITE_CONSTRAINT) {
		err_set(err, 400, "a key named '%s' already exists (names are unique across projects)", name);
		goto out;
	}
	if (step != SQLITE_DONE) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		goto out;
	}
	memcpy(key_out, key, strlen(key) + 1);
	rc = 0;
out:
	OPENSSL_cleanse(key, sizeof key);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

int keys_revoke(const char *data_dir, const char *name, kn_err *err)
{
	sqlite3 *db;
	if (ingest_db_open(data_dir, "keys.db", KEYS_SCHEMA, 0, &db, err) < 0)
		return -1;
	if (!db)
		return err_set(err, 404, "no key named '%s' (no keys.db in %s)", name, data_dir);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "UPDATE keys SET revoked_ns = coalesce(revoked_ns, ?) WHERE name = ? "
	                           "RETURNING revoked_ns = ?",
	                       -1, &st, NULL) != SQLITE_OK) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		goto out;
	}
	int64_t now = time_now_ns();
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		rc = sqlite3_column_int(st, 0) ? 0 : 1;
		step = sqlite3_step(st);
	} else if (step == SQLITE_DONE) {
		err_set(err, 404, "no key named '%s'", name);
		goto out;
	}
	if (step != SQLITE_DONE) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		rc = -1;
	}
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

int keys_list(const char *data_dir, void (*cb)(const key_row *row, void *ctx), void *ctx, kn_err *err)
{
	sqlite3 *db;
	if (ingest_db_open(data_dir, "keys.db", KEYS_SCHEMA, 0, &db, err) < 0)
		return -1;
	if (!db)
		return 0;
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db, "SELECT name, project, scope, created_ns, revoked_ns FROM keys ORDER BY project, name",
	                       -1, &st, NULL) != SQLITE_OK) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		goto out;
	}
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		key_row row = {
		        .name = (const char *)sqlite3_column_text(st, 0),
		        .project = (const char *)sqlite3_column_text(st, 1),
		        .scope = keys_scope_parse((const char *)sqlite3_column_text(st, 2)),
		        .created_ns = sqlite3_column_int64(st, 3),
		        .revoked_ns = sqlite3_column_int64(st, 4),
		};
		if (!row.name || !row.project)
			continue;
		cb(&row, ctx);
	}
	if (step != SQLITE_DONE) {
		err_set(err, 500, "keys.db: %s", sqlite3_errmsg(db));
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

/* ---- keys in the shared store (ClickHouse) ---- */

typedef struct {
	const char *name;
	int found;
	store_key_row row; /* of name; strings copied into buf */
	char buf[3 * (LIMIT_NAME_BYTES + 1) + KEY_HASH_LEN];
	void (*cb)(const key_row *row, void *ctx);
	void *ctx;
} store_find;

static void find_key(const store_key_row *r, void *ctx)
{
	store_find *f = ctx;
	if (f->found || !slice_eq_cstr(r->name, f->name) || r->project.n > LIMIT_NAME_BYTES ||
	    r->scope.n > LIMIT_NAME_BYTES || r->hash.n > KEY_HASH_LEN)
		return;
	f->found = 1;
	f->row = *r;
	char *p = f->buf;
	memcpy(p, r->project.p, r->project.n);
	f->row.project = slice_make(p, r->project.n);
	p += r->project.n;
	memcpy(p, r->scope.p, r->scope.n);
	f->row.scope = slice_make(p, r->scope.n);
	p += r->scope.n;
	memcpy(p, r->hash.p, r->hash.n);
	f->row.hash = slice_make(p, r->hash.n);
	f->row.name = slice_cstr(f->name);
}

int keys_create_store(store_t *st, const char *project, const char *name, int scope, char *key_out, size_t n,
                      kn_err *err)
{
	uint8_t h[KEY_HASH_LEN];
	char key[KEY_TEXT_MAX];
	if (new_key(project, name, scope, n, key, h, err) < 0)
		return -1;
	/* Names stay taken after revocation, as in keys.db. Two operators creating
	 * one name at the same instant could both succeed: the newer row wins. */
	store_find f = {.name = name};
	int rc = store_keys_read(st, find_key, &f, err);
	if (rc == 0 && f.found)
		rc = err_set(err, 400, "a key named '%s' already exists (names are unique across projects)", name);
	if (rc == 0) {
		store_key_row r = {slice_cstr(name), slice_cstr(project), slice_cstr(keys_scope_name(scope)),
		                   slice_make(h, KEY_HASH_LEN), time_now_ns(), 0};
		rc = store_keys_write(st, &r, err);
	}
	if (rc == 0)
		memcpy(key_out, key, strlen(key) + 1);
	OPENSSL_cleanse(key, sizeof key);
	return rc;
}

int keys_revoke_store(store_t *st, const char *name, kn_err *err)
{
	store_find f = {.name = name};
	if (store_keys_read(st, find_key, &f, err) < 0)
		return -1;
	if (!f.found)
		return err_set(err, 404, "no key named '%s'", name);
	if (f.row.revoked_ns)
		return 1;
	f.row.revoked_ns = time_now_ns();
	return store_keys_write(st, &f.row, err);
}

static void list_key(const store_key_row *r, void *ctx)
{
	store_find *f = ctx;
	char name[LIMIT_NAME_BYTES + 1], project[LIMIT_NAME_BYTES + 1], scope[LIMIT_NAME_BYTES + 1];
	if (r->name.n > LIMIT_NAME_BYTES || r->project.n > LIMIT_NAME_BYTES || r->scope.n > LIMIT_NAME_BYTES)
		return;
	copy_text(name, r->name.p, (int)r->name.n);
	copy_text(project, r->project.p, (int)r->project.n);
	copy_text(scope, r->scope.p, (int)r->scope.n);
	key_row row = {name, project, keys_scope_parse(scope), r->created_ns, r->revoked_ns};
	f->cb(&row, f->ctx);
}

int keys_list_store(store_t *st, void (*cb)(const key_row *row, void *ctx), void *ctx, kn_err *err)
{
	store_find f = {.cb = cb, .ctx = ctx};
	return store_keys_read(st, list_key, &f, err);
}
