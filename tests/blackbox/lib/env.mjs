// Paths and environment shared by the black-box tests.
//   KILN_BIN       absolute path of the kiln binary (default <repo>/build/kiln)
//   KILN_TESTDATA  folder with pprof/ and otlp/ (default <repo>/tests/data)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, '../../..');
export const KILN_BIN = process.env.KILN_BIN || path.join(REPO, 'build/kiln');
export const TESTDATA = process.env.KILN_TESTDATA || path.join(REPO, 'tests/data');
export const GO_SRC = path.join(REPO, 'tests/go');

export function mkTemp(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kiln-bb-${prefix}-`));
}

// The Go toolchain must work offline with the standard library only, and
// with a cache it can write even when $HOME is read-only.
let goEnvCache = null;
export function goEnv() {
  if (goEnvCache) return goEnvCache;
  const env = { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off', GO111MODULE: 'on', CGO_ENABLED: '0' };
  if (!env.GOCACHE || !env.GOPATH) {
    const base = path.join(os.tmpdir(), 'kiln-bb-go');
    fs.mkdirSync(base, { recursive: true });
    if (!env.GOCACHE) env.GOCACHE = path.join(base, 'cache');
    if (!env.GOPATH) env.GOPATH = path.join(base, 'gopath');
  }
  // go tool pprof: never try to fetch symbols or binaries.
  env.PPROF_BINARY_PATH = '/nonexistent';
  env.PPROF_TMPDIR = os.tmpdir();
  goEnvCache = env;
  return env;
}

// A service name nobody else uses (tests share nothing, but be explicit).
let seq = 0;
export function uniqueName(prefix) {
  seq++;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${seq}`;
}

export function nowS() {
  return Math.floor(Date.now() / 1000);
}
