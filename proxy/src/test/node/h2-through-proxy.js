// Node's built-in http2 client, offering only h2 by ALPN, through a CONNECT tunnel of Sluice to an
// intercepted host: all paths are requested at once, as concurrent streams of one connection.
// Usage: node h2-through-proxy.js PROXY_HOST PROXY_PORT HOST PORT CA_PEM PATH...
// Prints one JSON line: {"alpn": "...", "results": [{"path", "status", "body"}...]} in PATH order.
const http = require('http');
const http2 = require('http2');
const tls = require('tls');
const fs = require('fs');

const [proxyHost, proxyPort, host, port, caFile, ...paths] = process.argv.slice(2);
const authority = `${host}:${port}`;
const connect = http.request({ host: proxyHost, port: Number(proxyPort), method: 'CONNECT', path: authority,
  headers: { host: authority } });
connect.on('connect', (res, socket) => {
  if (res.statusCode !== 200) {
    console.log(JSON.stringify({ error: `CONNECT answered ${res.statusCode}` }));
    process.exit(2);
  }
  const session = http2.connect(`https://${authority}`, {
    createConnection: () => tls.connect({ socket, servername: host, ALPNProtocols: ['h2'], ca: fs.readFileSync(caFile) }),
  });
  session.on('error', (e) => {
    console.log(JSON.stringify({ error: e.message }));
    process.exit(3);
  });
  const streams = paths.map((path) => new Promise((resolve) => {
    const stream = session.request({ ':method': 'GET', ':path': path });
    let status = 0;
    let body = '';
    stream.setEncoding('utf8');
    stream.on('response', (headers) => { status = headers[':status']; });
    stream.on('data', (chunk) => { body += chunk; });
    stream.on('end', () => resolve({ path, status, body }));
    stream.on('error', (e) => resolve({ path, status, error: e.message }));
    stream.end();
  }));
  Promise.all(streams).then((results) => {
    console.log(JSON.stringify({ alpn: session.alpnProtocol, results }));
    session.close();
    socket.destroy();
  });
});
connect.on('error', (e) => {
  console.log(JSON.stringify({ error: e.message }));
  process.exit(4);
});
connect.end();
