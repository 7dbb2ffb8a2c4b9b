// Command gnetping is a bare PING server on gnet v2's event loops: it
// answers +PONG to every whole RESP command it has read, and does nothing
// else. side.py compares its CPU per request with rlstore's and Redis's.
package main

import (
	"flag"
	"fmt"
	"log"

	"github.com/panjf2000/gnet/v2"

	"github.com/rlstore/rlstore/loadtest/transports/resp"
)

type server struct{ gnet.BuiltinEventEngine }

var pong = []byte("+PONG\r\n")

// OnTraffic answers the whole commands c has sent, and leaves a partial
// one for the next read.
func (*server) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Peek(-1)
	k, used := resp.Commands(buf)
	_, _ = c.Discard(used)
	if k == 0 {
		return gnet.None
	}
	var small [64 * 7]byte // on the stack: up to 64 replies
	out := small[:0]
	for range k {
		out = append(out, pong...)
	}
	_, _ = c.Write(out)
	return gnet.None
}

func main() {
	port := flag.Int("port", 6379, "port on 127.0.0.1")
	loops := flag.Int("loops", 1, "event loops (threads)")
	flag.Parse()
	addr := fmt.Sprintf("tcp://127.0.0.1:%d", *port)
	log.Fatal(gnet.Run(&server{}, addr, gnet.WithNumEventLoop(*loops), gnet.WithMulticore(*loops > 1)))
}
