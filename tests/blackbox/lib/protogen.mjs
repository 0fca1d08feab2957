// Message code for a test's .proto files (tests/blackbox/proto/), generated at
// test time by buf + protoc-gen-es into tests/blackbox/gen/NAME/ (gitignored:
// nothing generated to keep in step with the .proto; it must sit under
// tests/blackbox so that its imports resolve to node_modules). Each caller
// has its own NAME, so suites running side by side do not clear each
// other's output. Used by pyroscope-connect and pyroscope-querier.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Generates protos (paths under tests/blackbox, e.g. 'proto/push.proto') into
// gen/NAME and imports the module of each: [module of protos[0], …].
export async function generateProtos(name, protos) {
  const out = path.join(here, 'gen', name);
  fs.rmSync(out, { recursive: true, force: true });
  const bin = path.join(here, 'node_modules/.bin');
  const template = JSON.stringify({
    version: 'v2',
    plugins: [{ local: path.join(bin, 'protoc-gen-es'), out, opt: ['target=js', 'import_extension=js'] }],
  });
  const paths = protos.flatMap((p) => ['--path', p]);
  execFileSync(path.join(bin, 'buf'), ['generate', 'proto', ...paths, '--template', template], { cwd: here });
  return Promise.all(protos.map((p) => import(pathToFileURL(path.join(out, `${path.basename(p, '.proto')}_pb.js`)).href)));
}
