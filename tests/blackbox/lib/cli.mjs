// Runs the kiln CLI (client subcommands) and captures its output.
import { spawn } from 'node:child_process';
import { KILN_BIN } from './env.mjs';

// Resolves {code, signal, stdout: Buffer, stderr: string}; never rejects on
// a non-zero exit (tests assert on it).
export function runKiln(args, opts = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(KILN_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...(opts.env ?? {}) } });
    const out = [];
    let err = '';
    const timer = setTimeout(() => { p.kill('SIGKILL'); }, opts.timeoutMs ?? 60000);
    p.stdout.on('data', (d) => out.push(d));
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', (e) => { clearTimeout(timer); reject(e); });
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: err });
    });
  });
}
