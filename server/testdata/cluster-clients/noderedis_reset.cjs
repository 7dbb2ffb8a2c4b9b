// node-redis 5 through a reset in a reconnect's handshake, for
// client/scripts_failover_test.go: node noderedis_reset.cjs '<client options as JSON>'
// After a kill -9, a client that reconnects at once may reach the dying
// process's listening socket: the connection is made (the kernel's
// backlog), the handshake is written, and the reset comes when the
// listener goes. A stand-in server here answers every command +OK until a
// PING, then drops the connection and listens on the same port with a
// server that resets each connection once data arrives. It prints
// "ready <isReady>" a second after: node-redis 5.9 with no handshake
// command whose error it does not swallow (RESP 2 without a name) takes
// the reset connection as ready, and every command written to it after
// waits for good.
'use strict';
const net = require('net');
const { createClient } = require('redis5');

function listen(srv, port) {
  return new Promise((resolve) => srv.listen(port, '127.0.0.1', resolve));
}

async function main() {
  const opts = JSON.parse(process.argv[2] || '{}');
  let reset;
  let port;
  const real = net.createServer((s) => {
    s.on('data', (d) => {
      const text = d.toString();
      if (text.includes('PING')) {
        s.destroy();
        real.close();
        reset = net.createServer((r) => r.on('data', () => r.resetAndDestroy()));
        reset.listen(port, '127.0.0.1');
        return;
      }
      for (const _ of text.matchAll(/\*\d+\r\n/g)) s.write(text.includes('HELLO') ? '%0\r\n' : '+OK\r\n');
    });
  });
  await listen(real, 0);
  port = real.address().port;
  const client = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: () => 50 }, ...opts });
  client.on('error', () => {});
  await client.connect();
  await client.sendCommand(['PING']).catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 1000));
  console.log(`ready ${client.isReady}`);
  client.destroy();
  reset.close();
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
