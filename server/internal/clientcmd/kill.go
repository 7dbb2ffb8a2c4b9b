package clientcmd

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// killFilter is the filter of CLIENT KILL's new form. Zero fields match any client.
type killFilter struct {
	id          int64
	addr, laddr string
	user        string
	skipMe      bool
}

// kill is CLIENT KILL addr, which replies OK, or CLIENT KILL with
// filters ID, ADDR, LADDR, USER and SKIPME, which replies with how many it closed.
func (cl *Clients) kill(x *core.Session, args [][]byte) {
	if len(args) == 3 {
		cl.killAddr(x, string(args[2]))
		return
	}
	f, reply := parseKillFilter(args[2:])
	if reply != "" {
		x.Out.WriteError(reply)
		return
	}
	n, killSelf := 0, false
	for _, o := range cl.listed() {
		if f.match(o, x) {
			n++
			killSelf = killSelf || o.Session == x
			if o.Session != x {
				o.Kill() // its goroutine then finds the socket closed
			}
		}
	}
	x.Out.WriteInt(n)
	if killSelf {
		cl.d.CloseAfterReply(x)
	}
}

// killAddr is the old form, CLIENT KILL ip:port.
func (cl *Clients) killAddr(x *core.Session, addr string) {
	for _, o := range cl.listed() {
		if o.info.Addr != addr {
			continue
		}
		x.Out.WriteString("OK")
		if o.Session == x {
			cl.d.CloseAfterReply(x)
		} else {
			o.Kill()
		}
		return
	}
	x.Out.WriteError(errNoClient)
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
	case core.EqualFold(name, "id"):
		id, ok := policy.ParseInt(val)
		if !ok || id < 1 {
			return errClientID
		}
		f.id = id
	case core.EqualFold(name, "addr"):
		f.addr = string(val)
	case core.EqualFold(name, "laddr"):
		f.laddr = string(val)
	case core.EqualFold(name, "user"):
		f.user = string(val)
	case core.EqualFold(name, "skipme"):
		return f.setSkipMe(val)
	default:
		return errSyntax
	}
	return ""
}

func (f *killFilter) setSkipMe(val []byte) string {
	switch {
	case core.EqualFold(val, "yes"):
		f.skipMe = true
	case core.EqualFold(val, "no"):
		f.skipMe = false
	default:
		return errSyntax
	}
	return ""
}

func (f killFilter) match(o listed, self *core.Session) bool {
	return (f.id == 0 || o.info.ID == f.id) &&
		(f.addr == "" || o.info.Addr == f.addr) &&
		(f.laddr == "" || o.info.LAddr == f.laddr) &&
		(f.user == "" || f.user == "default") &&
		!(f.skipMe && o.Session == self)
}
