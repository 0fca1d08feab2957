/* Ingestion keys: the store keeps SHA-256 hashes only (store_keys_*); the
 * server looks keys up in an immutable snapshot swapped under a
 * writer-preferring rwlock. The plaintext key exists only in keys_create's output. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/alloc.h"
#include "base/timeutil.h"
#include "ingest/keys.h"
#include "store/store.h"

#define KEY_HASH_LEN 32

typedef struct {
	uint8_t hash[KEY_HASH_LEN];
	keys_info_t info;
	int used;
} snap_slot_t;

/* Immutable once published: an open-addressing table indexed by hash bits. */
typedef struct {
	snap_slot_t *slots;
	size_t mask; /* slots - 1 (a power of two, at least twice the key count) */
	size_t count;
} keys_snap_t;

struct keys {
	pthread_rwlock_t _snap_lock; /* readers: lookups; writer: the pointer swap only */
	keys_snap_t *_snap;
	pthread_mutex_t _refresh_mu; /* guards _stamp */
	store_t *_store;
	int64_t _stamp;     /* store_keys_poll's: what the snapshot was read from */
	EVP_MD *_sha256;    /* fetched once: implicit fetches take a global lock per call */
	_Atomic int _ready; /* 0 until a snapshot was read */
};

int keys_name_valid(slice_t s)
{
	if (s.n < 1 || s.n > LIMIT_NAME_BYTES)
		return 0;
	for (size_t i = 0; i < s.n; i++) {
		uint8_t c = s.p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
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
	if (authorization.n < 7 || strncasecmp((const char *)p, "bearer", 6) != 0 ||
	    (p[6] != ' ' && p[6] != '\t'))
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

static void snap_free(keys_snap_t *s)
{
	if (s) {
		free(s->slots);
		free(s);
	}
}

static void snap_insert(keys_snap_t *s, const uint8_t hash[KEY_HASH_LEN], const keys_info_t *info)
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

typedef struct {
	size_t n, cap;
	keys_info_t *info;
	uint8_t (*hash)[KEY_HASH_LEN];
} snap_rows_t;

static void collect_key(const store_key_row_t *r, void *ctx)
{
	snap_rows_t *l = ctx;
	keys_info_t info;
	info.scope = 0;
	for (int sc = KEY_SCOPE_INGEST; sc <= KEY_SCOPE_BOTH; sc++)
		if (slice_eq_cstr(r->scope, keys_scope_name(sc)))
			info.scope = sc;
	/* Stored rows are treated as hostile: wrong hash length or scope, long names are skipped. */
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

/* A snapshot of the active keys in l (none when l is NULL). */
static keys_snap_t *snap_build(const snap_rows_t *l)
{
	size_t n = l ? l->n : 0, cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	keys_snap_t *s = xcalloc(1, sizeof *s);
	s->slots = xcalloc(cap, sizeof *s->slots);
	s->mask = cap - 1;
	for (size_t i = 0; i < n; i++)
		snap_insert(s, l->hash[i], &l->info[i]);
	return s;
}

static void snap_swap(keys_t *k, keys_snap_t *fresh)
{
	pthread_rwlock_wrlock(&k->_snap_lock);
	keys_snap_t *old = k->_snap;
	k->_snap = fresh;
	pthread_rwlock_unlock(&k->_snap_lock);
	snap_free(old); /* no reader can hold it: they all left before the swap */
}

int keys_refresh(keys_t *k)
{
	pthread_mutex_lock(&k->_refresh_mu);
	snap_rows_t l = {0};
	err_t err;
	int rc = store_keys_poll(k->_store, &k->_stamp, collect_key, &l, &err);
	if (rc == 1) {
		snap_swap(k, snap_build(&l));
		atomic_store(&k->_ready, 1);
	}
	free(l.info);
	free(l.hash);
	pthread_mutex_unlock(&k->_refresh_mu);
	return rc;
}

keys_t *keys_open(store_t *st, err_t *err)
{
	keys_t *k = xcalloc(1, sizeof *k);
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	/* A refresh must not starve behind a steady stream of lookups. */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&k->_snap_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&k->_refresh_mu, NULL);
	k->_store = st;
	k->_snap = snap_build(NULL);
	k->_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!k->_sha256) {
		err_set(err, 500, "keys: OpenSSL has no SHA-256");
		keys_close(k);
		return NULL;
	}
	keys_refresh(k); /* unreadable now: no keys (not ready) until a refresh reads them */
	return k;
}

void keys_close(keys_t *k)
{
	if (!k)
		return;
	snap_free(k->_snap);
	EVP_MD_free(k->_sha256);
	pthread_rwlock_destroy(&k->_snap_lock);
	pthread_mutex_destroy(&k->_refresh_mu);
	free(k);
}

int keys_ready(keys_t *k)
{
	return atomic_load(&k->_ready);
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
int keys_lookup(keys_t *k, slice_t presented, keys_info_t *out)
{
	uint8_t h[KEY_HASH_LEN];
	if (presented.n == 0 || presented.n > LIMIT_KEY_BYTES || sha256(k->_sha256, presented, h) < 0)
		return 0;
	int found = 0;
	pthread_rwlock_rdlock(&k->_snap_lock);
	const keys_snap_t *s = k->_snap;
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
                   uint8_t h[KEY_HASH_LEN], err_t *err)
{
	if (!keys_name_valid(slice_cstr(project)))
		return err_set(err, 400, "invalid project name '%s': use 1 to 64 of A-Z a-z 0-9 _ . -",
		               project ? project : "");
	if (!keys_name_valid(slice_cstr(name)))
		return err_set(err, 400, "invalid key name '%s': use 1 to 64 of A-Z a-z 0-9 _ . -",
		               name ? name : "");
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

int keys_create(store_t *st, const char *project, const char *name, int scope, char *key_out, size_t n,
                err_t *err)
{
	uint8_t h[KEY_HASH_LEN];
	char key[KEY_TEXT_MAX];
	if (new_key(project, name, scope, n, key, h, err) < 0)
		return -1;
	store_key_row_t r = {slice_cstr(name),
	                     slice_cstr(project),
	                     slice_cstr(keys_scope_name(scope)),
	                     slice_make(h, KEY_HASH_LEN),
	                     time_now_ns(),
	                     0};
	int rc = store_keys_create(st, &r, err);
	if (rc == 0)
		memcpy(key_out, key, strlen(key) + 1);
	OPENSSL_cleanse(key, sizeof key);
	return rc;
}

int keys_revoke(store_t *st, const char *name, err_t *err)
{
	return store_keys_revoke(st, slice_cstr(name), time_now_ns(), err);
}

typedef struct {
	void (*cb)(const keys_row_t *row, void *ctx);
	void *ctx;
} list_ctx_t;

static void list_key(const store_key_row_t *r, void *ctx)
{
	list_ctx_t *l = ctx;
	char name[LIMIT_NAME_BYTES + 1], project[LIMIT_NAME_BYTES + 1], scope[LIMIT_NAME_BYTES + 1];
	if (r->name.n > LIMIT_NAME_BYTES || r->project.n > LIMIT_NAME_BYTES || r->scope.n > LIMIT_NAME_BYTES)
		return;
	copy_text(name, r->name.p, (int)r->name.n);
	copy_text(project, r->project.p, (int)r->project.n);
	copy_text(scope, r->scope.p, (int)r->scope.n);
	keys_row_t row = {name, project, keys_scope_parse(scope), r->created_ns, r->revoked_ns};
	l->cb(&row, l->ctx);
}

int keys_list(store_t *st, void (*cb)(const keys_row_t *row, void *ctx), void *ctx, err_t *err)
{
	list_ctx_t l = {cb, ctx};
	return store_keys_read(st, list_key, &l, err);
}
