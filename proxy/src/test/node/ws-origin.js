// A WebSocket origin (the `ws` package) for the proxy tests: echoes every message back as
// "echo:<text>" (binary messages come back as they are) and prints each one it received as a JSON
// line {"text": ...} or {"binary": <length>} on stdout, after a first line "LISTENING <port>".
// Usage: node ws-origin.js [PFX PASSPHRASE [deflate]]   (with a PKCS12 keystore: TLS, wss://;
// "deflate": permessage-deflate accepted, RFC 7692)
const fs = require('fs');
const http = require('http');
const https = require('https');
const { WebSocketServer } = require('ws');

const [pfx, passphrase, deflate] = process.argv.slice(2);
const server = pfx
  ? https.createServer({ pfx: fs.readFileSync(pfx), passphrase })
  : http.createServer((req, res) => { res.writeHead(200); res.end('plain http\n'); });
const wss = new WebSocketServer({ server, perMessageDeflate: deflate === 'deflate' ? { threshold: 0 } : false });
wss.on('connection', (socket, req) => {
  console.log(JSON.stringify({ open: req.url, offered: req.headers['sec-websocket-extensions'] || null,
    extensions: socket.extensions || null }));
  socket.on('message', (data, isBinary) => {
    if (isBinary) {
      console.log(JSON.stringify({ binary: data.length }));
      socket.send(data, { binary: true });
    } else {
      const text = data.toString('utf8');
      console.log(JSON.stringify({ text }));
      socket.send('echo:' + text);
    }
  });
  socket.on('close', (code) => console.log(JSON.stringify({ close: code })));
});
server.listen(0, '127.0.0.1', () => console.log(`LISTENING ${server.address().port}`));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
