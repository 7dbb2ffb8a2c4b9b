package server

// killFilter is the filter of CLIENT KILL's new form. Zero fields match any client.
type killFilter struct {
	id          int64
	addr, laddr string
	user        string
	skipMe      bool
}

// cmdClientKill is CLIENT KILL addr, which replies OK, or CLIENT KILL with
// filters ID, ADDR, LADDR, USER and SKIPME, which replies with how many it closed.
func cmdClientKill(s *Server, c *client, args [][]byte) {
	if len(args) == 3 {
		s.killAddr(c, string(args[2]))
		return
	}
	f, reply := parseKillFilter(args[2:])
	if reply != "" {
		c.conn.WriteError(reply)
		return
	}
	n, self := 0, false
	for _, o := range s.clientList() {
		if f.match(o, c) {
			n++
			self = self || o == c
			if o != c {
				_ = o.g.Close() // its goroutine then finds the socket closed
			}
		}
	}
	c.conn.WriteInt(n)
	if self {
		s.closeAfterReply(c)
	}
}

// killAddr is the old form, CLIENT KILL ip:port.
func (s *Server) killAddr(c *client, addr string) {
	for _, o := range s.clientList() {
		if o.addr != addr {
			continue
		}
		c.conn.WriteString("OK")
		if o == c {
			s.closeAfterReply(c)
		} else {
			_ = o.g.Close()
		}
		return
	}
	c.conn.WriteError(errNoClient)
}

func parseKillFilter(opts [][]byte) (killFilter, string) {
	f := killFilter{skipMe: true}
	if len(opts)%2 != 0 {
		return f, errSyntax
	}
	for ; len(opts) > 0; opts = opts[2:] {
		if reply := f.set(opts[0], opts[1]); reply != "" {
			return f, reply
		}
	}
	return f, ""
}

// set sets the filter's field called name.
func (f *killFilter) set(name, val []byte) string {
	switch {
	case equalFoldASCII(name, "id"):
		id, ok := parseInt(val)
		if !ok || id < 1 {
			return errClientID
		}
		f.id = id
	case equalFoldASCII(name, "addr"):
		f.addr = string(val)
	case equalFoldASCII(name, "laddr"):
		f.laddr = string(val)
	case equalFoldASCII(name, "user"):
		f.user = string(val)
	case equalFoldASCII(name, "skipme"):
		return f.setSkipMe(val)
	default:
		return errSyntax
	}
	return ""
}

func (f *killFilter) setSkipMe(val []byte) string {
	switch {
	case equalFoldASCII(val, "yes"):
		f.skipMe = true
	case equalFoldASCII(val, "no"):
		f.skipMe = false
	default:
		return errSyntax
	}
	return ""
}

func (f killFilter) match(o, self *client) bool {
	return (f.id == 0 || o.id == f.id) &&
		(f.addr == "" || o.addr == f.addr) &&
		(f.laddr == "" || o.laddr == f.laddr) &&
		(f.user == "" || f.user == "default") &&
		!(f.skipMe && o == self)
}
