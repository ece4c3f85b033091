// A WebSocket client (the `ws` package) through Sluice's explicit listener: wss:// goes through an
// HTTP CONNECT tunnel (trust from NODE_EXTRA_CA_CERTS, as `sluice env` prints). Sends one text message
// in the given fragments, prints {"open":..., "extensions":...}, each message received as {"text":...}
// and {"close": code} as JSON lines, then exits.
// Usage: node ws-client.js PROXY_HOST PROXY_PORT URL FRAGMENT...
const http = require('http');
const https = require('https');
const tls = require('tls');
const WebSocket = require('ws');

const [proxyHost, proxyPort, url, ...fragments] = process.argv.slice(2);

class ConnectAgent extends https.Agent {
  createConnection(options, callback) {
    const req = http.request({ host: proxyHost, port: Number(proxyPort), method: 'CONNECT',
      path: `${options.host}:${options.port}`, headers: { host: `${options.host}:${options.port}` } });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        callback(new Error(`CONNECT ${res.statusCode}`));
        return;
      }
      callback(null, tls.connect({ socket, servername: options.servername || options.host }));
    });
    req.on('error', callback);
    req.end();
  }
}

const ws = new WebSocket(url, { agent: new ConnectAgent(), perMessageDeflate: { threshold: 0 } });
ws.on('open', () => {
  console.log(JSON.stringify({ open: url, extensions: ws.extensions }));
  fragments.forEach((part, i) => ws.send(part, { fin: i === fragments.length - 1 }));
});
ws.on('message', (data) => {
  console.log(JSON.stringify({ text: data.toString('utf8') }));
  ws.close(1000, 'done');
});
ws.on('unexpected-response', (req, res) => {
  console.log(JSON.stringify({ status: res.statusCode }));
  process.exit(0);
});
ws.on('close', (code) => {
  console.log(JSON.stringify({ close: code }));
  process.exit(0);
});
ws.on('error', (e) => {
  console.log(JSON.stringify({ error: e.message }));
  process.exit(3);
});
