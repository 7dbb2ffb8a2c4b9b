package server

import (
	"github.com/tidwall/redcon"
)

// command is one entry of the command table.
type command struct {
	name  string // lower case, as dispatch looks it up
	arity int    // Redis style: n > 0 exactly n arguments with the name, n < 0 at least -n
	flags cmdFlags
	run   func(s *Server, c *client, args [][]byte)
}

type cmdFlags uint16

const (
	flagWrite   cmdFlags = 1 << iota // changes state
	flagNoAuth                       // allowed before AUTH
	flagNoMulti                      // runs at once even inside MULTI
	flagAdmin
)

// client is one connection's state. It is touched only by that connection's goroutine.
type client struct {
	conn   redcon.Conn
	id     int64
	resp   int // protocol version: 2 or 3
	authed bool
	name   string
}
