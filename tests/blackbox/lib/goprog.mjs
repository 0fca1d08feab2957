// Builds and runs the Go programs of tests/go (standard library only).
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { goEnv, GO_SRC, mkTemp } from './env.mjs';

const execFileP = promisify(execFile);

// go build tests/go/NAME into a temp dir; returns the binary path.
export async function goBuild(name) {
  const out = path.join(mkTemp(`go-${name}`), name);
  try {
    await execFileP('go', ['build', '-o', out, '.'], { cwd: path.join(GO_SRC, name), env: goEnv(), timeout: 180000 });
  } catch (e) {
    throw new Error(`go build ${name} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
  return out;
}

// Starts a program that prints "port=N" on stdout; resolves {proc, port, url, stop()}.
export function startGoServer(bin, args = [], timeoutMs = 10000, env = {}) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`${bin} printed no port: ${out} ${err}`)); }, timeoutMs);
    proc.stderr.on('data', (d) => { err += d; });
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /port=(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        const port = Number(m[1]);
        const exited = new Promise((r) => proc.on('exit', r));
        resolve({
          proc, port, url: `http://127.0.0.1:${port}`,
          stop: async () => { if (proc.exitCode === null && proc.signalCode === null) { proc.kill('SIGKILL'); await exited; } },
        });
      }
    });
    proc.on('exit', (c) => { clearTimeout(timer); reject(new Error(`${bin} exited ${c}: ${err}`)); });
  });
}
