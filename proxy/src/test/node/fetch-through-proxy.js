// Node's fetch (undici) through Sluice, configured only from the environment `sluice env` prints:
// HTTPS_PROXY for the proxy (EnvHttpProxyAgent, as NODE_USE_ENV_PROXY=1 does in Node 22.21+/24) and
// NODE_EXTRA_CA_CERTS for trust. Usage: node fetch-through-proxy.js URL
const { fetch, EnvHttpProxyAgent } = require('undici');
const url = process.argv[2];
fetch(url, {
  method: 'POST',
  dispatcher: new EnvHttpProxyAgent(),
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello from fetch' }] }),
}).then(async (res) => {
  console.log(`${res.status} ${await res.text()}`);
}).catch((e) => {
  console.log(`ERR ${e.cause ? e.cause.code || e.cause.message : e.message}`);
  process.exit(3);
});
