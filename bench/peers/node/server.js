// peer_node — echo_server's protocol and liveness policy, written as a Node programmer would: net,
// one heartbeat timer and one reader-idle timer per socket, each refreshed with timer.refresh()
// (the heartbeat on every chunk received, reader idle on every data line).
// Policy (bench/peers/README.md): echo each data line; PING x -> PONG x; PONG consumed; after
// --heartbeat-interval of receiving nothing send PING; the --heartbeat-misses-th unanswered PING
// (one interval each) closes with "BYE heartbeat-timeout"; no data line for --reader-idle closes with
// "BYE reader-idle". First stdout line: "listening on 127.0.0.1:PORT". With --tls (and --cert, --key)
// it serves Node's tls (tls.createServer), the connection's code unchanged.
'use strict';
const fs = require('fs');
const net = require('net');
const tls = require('tls');

function arg(name, dflt) {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : dflt;
}
const [host, port] = arg('--listen', '127.0.0.1:0').split(':');
const readerIdle = Number(arg('--reader-idle', '10000'));
const interval = Number(arg('--heartbeat-interval', '5000'));
const misses = Number(arg('--heartbeat-misses', '3'));

function serve(socket) {
    socket.setNoDelay(true);
    let pending = '';
    let outstanding = 0, pings = 0, closed = false;
    const bye = (reason) => {
        if (closed) return;
        closed = true;
        clearTimeout(hb);
        clearTimeout(idle);
        socket.end(`BYE ${reason}\n`);
    };
    const hb = setTimeout(function beat() {
        if (outstanding >= misses) return bye('heartbeat-timeout');
        ++outstanding;
        socket.write(`PING ${++pings}\n`);
        hb.refresh();
    }, interval);
    const idle = readerIdle > 0 ? setTimeout(() => bye('reader-idle'), readerIdle) : null;
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
        if (closed) return;
        outstanding = 0;
        hb.refresh();
        pending += chunk;
        let nl;
        let out = '';
        while ((nl = pending.indexOf('\n')) >= 0) {
            const line = pending.slice(0, nl);
            pending = pending.slice(nl + 1);
            if (line.startsWith('PONG')) continue;
            if (line.startsWith('PING')) { out += 'PONG' + line.slice(4) + '\n'; continue; }
            if (idle) idle.refresh();
            out += line + '\n';
        }
        if (pending.length > 65536) return bye('line-too-long');
        if (out) socket.write(out);
    });
    const gone = () => { closed = true; clearTimeout(hb); if (idle) clearTimeout(idle); };
    socket.on('error', gone);
    socket.on('close', gone);
}
const server = process.argv.includes('--tls')
    ? tls.createServer({ cert: fs.readFileSync(arg('--cert')), key: fs.readFileSync(arg('--key')) }, serve)
    : net.createServer(serve);
server.listen(Number(port), host, () => {
    const a = server.address();
    process.stdout.write(`listening on ${a.address}:${a.port}\n`);
});
