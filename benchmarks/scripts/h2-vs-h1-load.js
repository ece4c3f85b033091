// Load client for h2-vs-h1-interception.sh: requests/s through Sluice's CONNECT + interception to an
// HTTP/1.1 origin, over HTTP/1.1 keep-alive (C tunnels, one request at a time on each) or over HTTP/2
// (one tunnel, C streams in flight), with Node's built-in https / http2 modules.
// Usage: node h2-vs-h1-load.js h1|h2 PROXY_PORT HOST PORT CA_PEM SECONDS CONCURRENCY
// Prints one JSON line: {"mode", "requests", "errors", "seconds", "rps"}.
const http = require('http');
const https = require('https');
const http2 = require('http2');
const tls = require('tls');
const fs = require('fs');

const [mode, proxyPort, host, port, caFile, secondsArg, concurrencyArg] = process.argv.slice(2);
const seconds = Number(secondsArg);
const concurrency = Number(concurrencyArg);
const ca = fs.readFileSync(caFile);
const authority = `${host}:${port}`;

function tunnel(alpn) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: Number(proxyPort), method: 'CONNECT', path: authority,
      headers: { host: authority } });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        reject(new Error(`CONNECT ${res.statusCode}`));
        return;
      }
      resolve(tls.connect({ socket, servername: host, ALPNProtocols: alpn, ca }));
    });
    req.on('error', reject);
    req.end();
  });
}

let requests = 0;
let errors = 0;
let stop = false;

async function h1() {
  const agent = new https.Agent({ keepAlive: true, maxSockets: concurrency });
  agent.createConnection = (options, callback) => {
    tunnel(['http/1.1']).then((s) => callback(null, s), (e) => callback(e));
  };
  const one = () => new Promise((resolve) => {
    const req = https.request({ host, port: Number(port), path: '/bench', agent, servername: host, ca }, (res) => {
      res.resume();
      res.on('end', () => { if (res.statusCode === 200) { requests++; } else { errors++; } resolve(); });
    });
    req.on('error', () => { errors++; resolve(); });
    req.end();
  });
  const worker = async () => { while (!stop) { await one(); } };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
}

async function h2() {
  const socket = await tunnel(['h2']);
  const session = http2.connect(`https://${authority}`, { createConnection: () => socket });
  session.on('error', () => {});
  const one = () => new Promise((resolve) => {
    const stream = session.request({ ':path': '/bench' });
    let status = 0;
    stream.on('response', (h) => { status = h[':status']; });
    stream.resume();
    stream.on('end', () => { if (status === 200) { requests++; } else { errors++; } resolve(); });
    stream.on('error', () => { errors++; resolve(); });
    stream.end();
  });
  const worker = async () => { while (!stop) { await one(); } };
  await Promise.all(Array.from({ length: concurrency }, worker));
  session.close();
}

const started = process.hrtime.bigint();
setTimeout(() => { stop = true; }, seconds * 1000);
(mode === 'h2' ? h2() : h1()).then(() => {
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(JSON.stringify({ mode, requests, errors, seconds: elapsed, rps: requests / elapsed }));
  process.exit(0);
}, (e) => {
  console.log(JSON.stringify({ mode, error: e.message }));
  process.exit(1);
});
