// A Node client that reaches an HTTPS origin through an explicit proxy with an explicit CONNECT,
// then speaks TLS through the tunnel with Node's own TLS stack. Trust comes from the environment
// (NODE_EXTRA_CA_CERTS, as `sluice env` prints it); the proxy from HTTPS_PROXY.
// Usage: node node-connect-post.js HOST PORT PATH
const http = require('http');
const https = require('https');
const tls = require('tls');
const [host, port, path] = process.argv.slice(2);
const proxy = new URL(process.env.HTTPS_PROXY);
const headers = {};
if (proxy.username) {
  headers['Proxy-Authorization'] = 'Basic ' + Buffer.from(
    decodeURIComponent(proxy.username) + ':' + decodeURIComponent(proxy.password)).toString('base64');
}
const connect = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: `${host}:${port}`, headers });
connect.on('connect', (res, socket) => {
  if (res.statusCode !== 200) {
    console.log(`CONNECT ${res.statusCode}`);
    process.exit(2);
  }
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello from node' }] });
  const req = https.request({
    host, port, path, method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    createConnection: () => tls.connect({ socket, servername: host }),
  }, (resp) => {
    let text = '';
    resp.on('data', (d) => { text += d; });
    resp.on('end', () => { console.log(`${resp.statusCode} ${text}`); process.exit(0); });
  });
  req.on('error', (e) => { console.log(`ERR ${e.code || e.message}`); process.exit(3); });
  req.end(body);
});
connect.on('error', (e) => { console.log(`ERR ${e.message}`); process.exit(4); });
connect.end();
