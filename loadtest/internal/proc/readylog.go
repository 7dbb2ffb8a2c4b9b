package proc

import (
	"bytes"
	"io"
	"regexp"
	"sync"
)

// readyLine matches rlstore's log line announcing the address it listens on,
// in its text and JSON log formats.
const readyLine = `(?:msg="ready to accept connections" addr=(\S+))|(?:"msg":"ready to accept connections".*"addr":"([^"]+)")`

// readyWriter passes a server's log through to out and sends the address of
// its ready line on addr, once.
type readyWriter struct {
	out   io.Writer
	ready *regexp.Regexp
	addr  chan string // buffered: Write never blocks on it

	mu    sync.Mutex // guards line and found
	line  []byte     // the unfinished last line, until the ready line is found
	found bool
}

func newReadyWriter(out io.Writer) *readyWriter {
	return &readyWriter{out: out, ready: regexp.MustCompile(readyLine), addr: make(chan string, 1)}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if !w.found {
		w.scan(p)
	}
	w.mu.Unlock()
	w.out.Write(p) // the log is informative: a failing writer must not stop the server
	return len(p), nil
}

// scan looks for the ready line in the complete lines seen so far.
func (w *readyWriter) scan(p []byte) {
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			return
		}
		if m := w.ready.FindSubmatch(w.line[:i]); m != nil {
			w.addr <- string(append(m[1], m[2]...))
			w.found, w.line = true, nil
			return
		}
		w.line = w.line[i+1:]
	}
}
