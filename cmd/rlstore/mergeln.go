package main

import (
	"errors"
	"net"
	"sync"
)

// mergedListener accepts from several listeners as one, so that the server
// serves its plain and TLS ports alike. Addr is the first listener's.
type mergedListener struct {
	lns   []net.Listener
	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once
}

func mergeListeners(lns ...net.Listener) *mergedListener {
	m := &mergedListener{lns: lns, conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{})}
	for _, ln := range lns {
		go m.pump(ln)
	}
	return m
}

// pump hands ln's connections, and its errors, to Accept until ln is closed.
// A passing error (EMFILE) goes to the server's accept loop, which backs off.
func (m *mergedListener) pump(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case m.errs <- err:
			case <-m.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		select {
		case m.conns <- c:
		case <-m.done:
			_ = c.Close()
			return
		}
	}
}

func (m *mergedListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case err := <-m.errs:
		return nil, err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *mergedListener) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			if e := ln.Close(); e != nil && err == nil {
				err = e
			}
		}
	})
	return err
}

func (m *mergedListener) Addr() net.Addr { return m.lns[0].Addr() }
