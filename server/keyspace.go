package server

import (
	"github.com/rlstore/rlstore/server/internal/keyspace"
	"github.com/rlstore/rlstore/window"
)

// lookup returns the algorithm of key's state and when it expires, or false
// if the key does not exist or its state has expired by now (keyspace.Lookup).
func (s *Server) lookup(key []byte, now int64) (window.Kind, int64, bool) {
	return keyspace.Lookup(s.cfg.Store, key, now)
}

// registerKeyspace registers the key commands (package keyspace), once
// the regions are attached: DEL and FLUSHALL drop their state of a key.
func (s *Server) registerKeyspace() {
	cfg := keyspace.Config{Store: s.cfg.Store, Now: s.unixNano, Flush: s.flushAll, Clustered: s.cl != nil,
		Hits: &s.info.hits, Misses: &s.info.misses}
	if s.reg != nil {
		cfg.Forget, cfg.ForgetAll = s.reg.Forget, s.reg.ForgetAll // server/internal/global
	}
	for _, cm := range keyspace.New(cfg).Commands() {
		s.table.Register(cm, nil)
	}
}

// flushAll deletes every key, through the log when there is one.
func (s *Server) flushAll() error {
	switch {
	case s.cfg.Durability != nil:
		return s.cfg.Durability.Flush()
	case s.cl != nil && s.cl.repl != nil:
		s.cl.repl.Feed().Flush(s.cfg.Store.Flush) // the backups hear of it in order
		return nil
	}
	s.cfg.Store.Flush()
	return nil
}
