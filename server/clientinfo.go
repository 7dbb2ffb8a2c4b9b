package server

import (
	"strconv"
	"syscall"
	"time"
)

// describe is c's line of CLIENT INFO and CLIENT LIST, with every field
// Redis 7 emits, in its order, since clients parse them (redis-py before 6.4
// converts the integer ones and fails on a missing one). args is the command
// c is running when c describes itself, else nil. Values rlstore does not
// have are 0: the read buffer is the transport's (qbuf, rbs), and replies are
// written out after each pipeline, so none are listed (obl, oll); omem counts
// the invalidations and MONITOR lines waiting for c.
func (c *client) describe(now time.Time, args [][]byte) string {
	m := c.getMeta()
	cmd := "NULL"
	if cm := c.LastCmd.Load(); cm != nil {
		cmd = cm.Name
	}
	argv, multiMem := argvMem(args), int64(0)
	if args != nil {
		multiMem = c.QBytes
	}
	omem := c.pendingPushBytes()
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	return "id=" + i64(c.id) + " addr=" + c.addr + " laddr=" + c.laddr + " fd=" + i64(fdOf(c)) +
		" name=" + m.name + " age=" + seconds(now.Sub(c.created)) +
		" idle=" + seconds(now.Sub(time.Unix(0, c.g.Last.Load()))) +
		" flags=" + c.flags() + " db=0 sub=" + i64(c.ob.Subscribed()) + " psub=0 ssub=0 multi=" + strconv.Itoa(int(c.QLen.Load())) +
		" qbuf=0 qbuf-free=0 argv-mem=" + i64(argv) + " multi-mem=" + i64(multiMem) +
		" rbs=0 rbp=0 obl=0 oll=0 omem=" + i64(omem) + " tot-mem=" + i64(argv+multiMem+omem) +
		" events=r cmd=" + cmd + " user=default redir=" + i64(c.ob.Redir()) + " resp=" + strconv.Itoa(m.resp) +
		" lib-name=" + m.libName + " lib-ver=" + m.libVer + "\n"
}

// ifSelf returns args when o is the client c running them, else nil.
func ifSelf(o, c *client, args [][]byte) [][]byte {
	if o == c {
		return args
	}
	return nil
}

// argvMem is the bytes of the arguments of the command running, as Redis counts them.
func argvMem(args [][]byte) int64 {
	n := int64(0)
	for _, a := range args {
		n += int64(len(a))
	}
	return n
}

// flags are Redis's letters: N none, x in MULTI, t tracking, B broadcast
// tracking, R broken redirect, P subscribed, O monitor.
func (c *client) flags() string {
	f := ""
	if c.QLen.Load() >= 0 {
		f += "x"
	}
	f += c.ob.Flags()
	if f == "" {
		return "N"
	}
	return f
}

// fdOf is the connection's file descriptor, or -1 if it has none (TLS, or closed).
func fdOf(c *client) int64 {
	sc, ok := c.g.Conn.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := int64(-1)
	if raw.Control(func(f uintptr) { fd = int64(f) }) != nil {
		return -1
	}
	return fd
}

// pendingPushBytes is the bytes of frames waiting for c.
func (c *client) pendingPushBytes() int64 {
	return c.rc.PushesHeld()
}
