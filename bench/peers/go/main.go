// peer_go — echo_server's protocol and liveness policy, written as a Go programmer would: a goroutine
// per connection reading with a bufio.Reader, conn.SetReadDeadline before each read for reader idle
// (data lines only), and a time.AfterFunc per connection for heartbeats, Reset on every read.
// Policy (bench/peers/README.md): echo each data line; PING x -> PONG x; PONG consumed; after
// --heartbeat-interval of receiving nothing send PING; the --heartbeat-misses-th unanswered PING
// (one interval each) closes with "BYE heartbeat-timeout"; no data line for --reader-idle closes with
// "BYE reader-idle". First stdout line: "listening on 127.0.0.1:PORT". With --tls (and --cert, --key)
// it serves crypto/tls: the listener wrapped by tls.NewListener, the rest unchanged.
package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

var (
	listen     = flag.String("listen", "127.0.0.1:0", "address to listen on")
	readerIdle = flag.Int("reader-idle", 10000, "ms without a data line before BYE reader-idle (0 = off)")
	hbInterval = flag.Int("heartbeat-interval", 5000, "ms of silence before a PING, and per miss")
	hbMisses   = flag.Int("heartbeat-misses", 3, "unanswered PINGs that close")
	useTLS     = flag.Bool("tls", false, "serve TLS (needs --cert and --key)")
	certFile   = flag.String("cert", "", "PEM certificate chain for --tls")
	keyFile    = flag.String("key", "", "PEM private key for --tls")
)

type conn struct {
	c           net.Conn
	mu          sync.Mutex // writes and the heartbeat state
	outstanding int
	pings       int
	closed      bool
	hb          *time.Timer
}

func (k *conn) write(s string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.closed {
		k.c.Write([]byte(s))
	}
}

func (k *conn) bye(reason string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	k.closed = true
	k.c.Write([]byte("BYE " + reason + "\n"))
	k.c.Close()
}

func (k *conn) heartbeat() {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return
	}
	if k.outstanding >= *hbMisses {
		k.mu.Unlock()
		k.bye("heartbeat-timeout")
		return
	}
	k.outstanding++
	k.pings++
	k.c.Write([]byte(fmt.Sprintf("PING %d\n", k.pings)))
	k.hb.Reset(time.Duration(*hbInterval) * time.Millisecond)
	k.mu.Unlock()
}

func serve(c net.Conn) {
	interval := time.Duration(*hbInterval) * time.Millisecond
	idle := time.Duration(*readerIdle) * time.Millisecond
	k := &conn{c: c}
	k.hb = time.AfterFunc(interval, k.heartbeat)
	defer k.hb.Stop()
	r := bufio.NewReaderSize(c, 4096)
	lastData := time.Now()
	for {
		if idle > 0 {
			c.SetReadDeadline(lastData.Add(idle))
		}
		line, err := r.ReadString('\n')
		if len(line) > 0 {
			k.mu.Lock()
			k.outstanding = 0
			k.mu.Unlock()
			k.hb.Reset(interval)
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				k.bye("reader-idle")
			} else {
				k.mu.Lock()
				k.closed = true
				k.mu.Unlock()
				c.Close()
			}
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "PONG"):
		case strings.HasPrefix(line, "PING"):
			k.write("PONG" + strings.TrimPrefix(line, "PING") + "\n")
		default:
			lastData = time.Now()
			k.write(line + "\n")
		}
	}
}

func main() {
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *useTLS {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "--cert/--key:", err)
			os.Exit(2)
		}
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	fmt.Printf("listening on %s\n", l.Addr())
	os.Stdout.Sync()
	for {
		c, err := l.Accept()
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go serve(c)
	}
}
