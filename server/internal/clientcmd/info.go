package clientcmd

import (
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// Info is what CLIENT INFO and CLIENT LIST show of one connection.
type Info struct {
	ID          int64
	Addr, LAddr string
	FD          int64 // the socket's file descriptor, or -1 (see FD)
	Meta        core.Meta
	Created     time.Time
	LastRead    time.Time // when it last read a request
	Cmd         string    // the command run last, or "" for none yet
	Multi       int       // commands queued in MULTI, or -1 outside one
	OMem        int64     // the bytes of frames waiting for it (invalidations, MONITOR lines)
	Sub         int64     // channels subscribed
	Redir       int64     // where its invalidations go (CLIENT TRACKING REDIRECT), or 0
	Flags       string    // Redis's letters beyond MULTI's x, from client-side caching and MONITOR
}

// Line is the connection's line of CLIENT INFO and CLIENT LIST, with every
// field Redis 7 emits, in its order, since clients parse them (redis-py
// before 6.4 converts the integer ones and fails on a missing one). args
// and queued are the command the connection is running and the bytes of
// the commands its MULTI queued, when it describes itself (only its own
// goroutine may read those), else nil and 0. Values rlstore does not have are 0: the read buffer is the
// transport's (qbuf, rbs), and replies are written out after each
// pipeline, so none are listed (obl, oll); omem counts the invalidations
// and MONITOR lines waiting.
func (i Info) Line(now time.Time, args [][]byte, queued int64) string {
	m := i.Meta
	cmd := "NULL"
	if i.Cmd != "" {
		cmd = i.Cmd
	}
	argv, multiMem := argvMem(args), queued
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	return "id=" + i64(i.ID) + " addr=" + i.Addr + " laddr=" + i.LAddr + " fd=" + i64(i.FD) +
		" name=" + m.Name + " age=" + seconds(now.Sub(i.Created)) +
		" idle=" + seconds(now.Sub(i.LastRead)) +
		" flags=" + i.flags() + " db=0 sub=" + i64(i.Sub) + " psub=0 ssub=0 multi=" + strconv.Itoa(i.Multi) +
		" qbuf=0 qbuf-free=0 argv-mem=" + i64(argv) + " multi-mem=" + i64(multiMem) +
		" rbs=0 rbp=0 obl=0 oll=0 omem=" + i64(i.OMem) + " tot-mem=" + i64(argv+multiMem+i.OMem) +
		" events=r cmd=" + cmd + " user=default redir=" + i64(i.Redir) + " resp=" + strconv.Itoa(m.Resp) +
		" lib-name=" + m.LibName + " lib-ver=" + m.LibVer + "\n"
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
func (i Info) flags() string {
	f := ""
	if i.Multi >= 0 {
		f += "x"
	}
	f += i.Flags
	if f == "" {
		return "N"
	}
	return f
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(max(d, 0)/time.Second), 10) }

// FD is conn's file descriptor, or -1 if it has none (TLS, an in-memory
// connection, or closed).
func FD(conn net.Conn) int64 {
	sc, ok := conn.(syscall.Conn)
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
