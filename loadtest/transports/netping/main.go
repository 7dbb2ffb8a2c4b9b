// Command netping is a bare PING server with a goroutine per connection
// reading and writing through net.Conn, the way most Go servers do: it
// answers +PONG to every whole RESP command it has read, and does nothing
// else. side.py compares its CPU per request with rlstore's and Redis's.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"

	"github.com/rlstore/rlstore/loadtest/transports/resp"
)

func main() {
	port := flag.Int("port", 6379, "port on 127.0.0.1")
	flag.Parse()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(c)
	}
}

// serve answers c's commands until it closes.
func serve(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	out := make([]byte, 0, 64<<10)
	w := 0
	for {
		n, err := c.Read(buf[w:])
		if err != nil {
			return
		}
		w += n
		k, used := resp.Commands(buf[:w])
		w = copy(buf, buf[used:w])
		out = out[:0]
		for range k {
			out = append(out, "+PONG\r\n"...)
		}
		if k > 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}
