// Loaded with `NODE_OPTIONS=--require bench/fetch_to_fake.cjs` by bench/tokens.py for the archived reference
// servers (GitHub, Slack): they call Node's global fetch on hard-coded API origins and read no base-URL setting,
// so this sends those requests to the test suites' fake APIs instead. The server's own code runs unchanged.
//
// BENCH_FETCH_TO_FAKE is a JSON object {"<real origin>": "<fake base URL>"}. A request to any other host that is
// not loopback is refused, so a benchmark run can never reach a real API with whatever token it was given.
"use strict";

const routes = Object.entries(JSON.parse(process.env.BENCH_FETCH_TO_FAKE || "{}"));
const realFetch = globalThis.fetch;

function rerouted(url) {
  for (const [origin, fake] of routes) {
    if (url === origin || url.startsWith(origin + "/")) {
      return fake.replace(/\/$/, "") + url.slice(origin.length);
    }
  }
  const host = new URL(url).hostname;
  if (host !== "127.0.0.1" && host !== "localhost" && host !== "[::1]") {
    throw new Error(`fetch_to_fake: refused ${url} (no fake for this origin)`);
  }
  return url;
}

// async, so a refusal is a rejected promise as fetch's own failures are, not a throw at the call.
globalThis.fetch = async function fetchToFake(input, init) {
  if (input instanceof Request) {
    return realFetch(new Request(rerouted(input.url), input), init);
  }
  return realFetch(rerouted(String(input)), init);
};
