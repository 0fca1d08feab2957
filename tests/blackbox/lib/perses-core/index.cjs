// Stands in for @perses-dev/core when perses.test.mjs loads the Perses
// Pyroscope plugin's HTTP client (lib/cjs/model/pyroscope-client.js): the
// client imports only `fetch` from it, and the real package pulls in React.
// This one is Node's global fetch that throws on a non-2xx answer, so a
// refusal cannot pass for data.
'use strict';

exports.fetch = async (...args) => {
  const res = await globalThis.fetch(...args);
  if (!res.ok) throw new Error(`${res.status}: ${await res.text()}`);
  return res;
};
