package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rlstore/rlstore/server"
)

// tlsPollInterval is how often the certificate files are checked for changes.
const tlsPollInterval = time.Second

// certs holds the TLS configuration built from the certificate files, and
// builds it again when they change or on SIGHUP. Each handshake takes the
// configuration current at the time (tls.Config.GetConfigForClient), so a
// reload reaches new connections only and drops none.
type certs struct {
	cert, key, ca string
	auth          tls.ClientAuthType
	log           *slog.Logger
	cur           atomic.Pointer[tls.Config]

	mu    sync.Mutex // guards mtime
	mtime [3]time.Time
}

func newCerts(c config, log *slog.Logger) (*certs, error) {
	auth := map[string]tls.ClientAuthType{"yes": tls.RequireAndVerifyClientCert, "optional": tls.VerifyClientCertIfGiven, "no": tls.NoClientCert}[c.TLSAuthClients]
	cs := &certs{cert: c.TLSCertFile, key: c.TLSKeyFile, ca: c.TLSCACertFile, auth: auth, log: log}
	if err := cs.load(); err != nil {
		return nil, err
	}
	return cs, nil
}

// load reads the files and swaps the configuration in.
func (cs *certs) load() error {
	pair, err := tls.LoadX509KeyPair(cs.cert, cs.key)
	if err != nil {
		return fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: cs.auth, MinVersion: tls.VersionTLS12}
	if cs.ca != "" {
		pem, err := os.ReadFile(cs.ca)
		if err != nil {
			return fmt.Errorf("--tls-ca-cert-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca-cert-file %s: no PEM certificate in it", cs.ca)
		}
		cfg.ClientCAs = pool
	} else if cs.auth != tls.NoClientCert {
		return errors.New("--tls-auth-clients yes or optional needs --tls-ca-cert-file to verify clients with")
	}
	cs.cur.Store(cfg)
	cs.mu.Lock()
	cs.mtime = cs.mtimes()
	cs.mu.Unlock()
	return nil
}

func (cs *certs) mtimes() [3]time.Time {
	var out [3]time.Time
	for i, p := range []string{cs.cert, cs.key, cs.ca} {
		if st, err := os.Stat(p); p != "" && err == nil {
			out[i] = st.ModTime()
		}
	}
	return out
}

// changed reports whether a file's modification time moved since the last load.
func (cs *certs) changed() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.mtimes() != cs.mtime
}

// reload loads the files again; a failure keeps the configuration in force.
func (cs *certs) reload(why string) {
	if err := cs.load(); err != nil {
		cs.log.Error("TLS certificates not reloaded; keeping the ones in use", "reason", why, "err", err)
		return
	}
	cs.log.Info("TLS certificates reloaded", "reason", why)
}

// watch reloads on SIGHUP and when the files change, until stop is closed.
func (cs *certs) watch(stop <-chan struct{}) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	t := time.NewTicker(tlsPollInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-hup:
			cs.reload("SIGHUP")
		case <-t.C:
			if cs.changed() {
				cs.reload("files changed")
			}
		}
	}
}

func (cs *certs) config() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return cs.cur.Load(), nil }}
}

// peerConfig is the client side of --tls-cluster: this node's certificate
// (peers' TLS ports check it, as --tls-auth-clients says) and the CA to
// check the peer's with, from the certificates current at the dial.
func (cs *certs) peerConfig() *tls.Config {
	cur := cs.cur.Load()
	return &tls.Config{Certificates: cur.Certificates, RootCAs: cur.ClientCAs, MinVersion: tls.VersionTLS12}
}

// listenTLS listens on --tls-port and serves TLS there; the returned
// function stops the certificate watcher.
func listenTLS(c config, log *slog.Logger) (net.Listener, *certs, func(), error) {
	cs, err := newCerts(c, log)
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(c.Bind, strconv.Itoa(c.TLSPort)))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--tls-port %d: %w", c.TLSPort, err)
	}
	stop := make(chan struct{})
	go cs.watch(stop)
	log.Info("TLS listening", "addr", ln.Addr().String(), "auth_clients", c.TLSAuthClients)
	return tls.NewListener(ln, cs.config()), cs, func() { close(stop) }, nil
}

// withTLS makes scfg's listener serve tlsLn beside the plain port.
func withTLS(c config, scfg *server.Config, tlsLn net.Listener) error {
	plain := scfg.Listener
	if plain == nil {
		var err error
		if plain, err = net.Listen("tcp", c.addr()); err != nil {
			return err
		}
	}
	scfg.Listener = mergeListeners(plain, tlsLn)
	return nil
}
