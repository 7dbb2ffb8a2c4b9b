package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/rlstore/rlstore/cluster"
)

// What each secret protects, and what a cluster node refuses to start
// without (docs/cluster.md, "Security model"):
//
//   - --cluster-key or --cluster-keyring encrypts and authenticates gossip.
//     A node whose gossip address (--cluster-addr, --cluster-advertise) is
//     not loopback refuses to start without one, unless --cluster-insecure
//     yes says that every host that can reach it is trusted.
//   - The node-to-node handshake proves a key derived (HKDF) from the
//     cluster's secret: --cluster-secret or --cluster-secret-file if given,
//     else the first cluster key, else --requirepass stretched with PBKDF2.
//     A node without any of them refuses to start, unless every address
//     it uses is loopback and clients need no password either: then peers
//     may do nothing a client could not, and the node warns instead.

// errNoClusterSecret is the refusal to start a cluster without a secret.
var errNoClusterSecret = errors.New("a cluster node needs a secret that peers prove to each other: " +
	"set --cluster-key (or --cluster-keyring), --cluster-secret, --cluster-secret-file or --requirepass on every node")

// loopbackSecret stands in for a secret on a loopback-only cluster whose
// clients need no password: anyone who can reach it can use it anyway.
const loopbackSecret = "rlstore loopback cluster without a secret"

// readSecretFile sets Secret from --cluster-secret-file.
func (f *clusterFlags) readSecretFile() error {
	if f.SecretFile == "" {
		return nil
	}
	if f.Secret != "" {
		return errors.New("--cluster-secret and --cluster-secret-file are both set: give one")
	}
	b, err := os.ReadFile(f.SecretFile)
	if err != nil {
		return fmt.Errorf("--cluster-secret-file: %w", err)
	}
	if f.Secret = strings.TrimRight(string(b), "\r\n"); f.Secret == "" {
		return fmt.Errorf("--cluster-secret-file %s is empty", f.SecretFile)
	}
	return nil
}

// checkClusterTrust refuses a cluster that anyone who can reach it could
// join or act in as a node (see the top of this file).
func (c config) checkClusterTrust() error {
	f := c.Cluster
	if !f.on() {
		return nil
	}
	gossip := []string{f.bind(), f.Advertise}
	if f.Key == "" && f.Keyring == "" && !f.Insecure && !allLoopback(gossip...) {
		return fmt.Errorf("refusing to gossip on %s without --cluster-key or --cluster-keyring: any host that can "+
			"reach it could join the cluster and take slots. Set a key on every node (openssl rand -base64 32), "+
			"or pass --cluster-insecure yes if every host that can reach it is trusted", nonLoopback(gossip...))
	}
	if c.hasClusterSecret() {
		return nil
	}
	if c.ACLFile != "" || !allLoopback(append(gossip, c.Bind)...) {
		return errNoClusterSecret
	}
	return nil
}

// hasClusterSecret reports whether a secret for the handshake is configured.
func (c config) hasClusterSecret() bool {
	f := c.Cluster
	return f.Secret != "" || f.SecretFile != "" || f.Key != "" || f.Keyring != "" || c.RequirePass != ""
}

// clusterSecrets returns the secret this node proves and the older ones
// it still accepts (the rest of a keyring), and warns of a loopback
// cluster without one. keys are the gossip keys.
func (c config) clusterSecrets(keys [][]byte, log *slog.Logger) ([]byte, [][]byte) {
	switch {
	case c.Cluster.Secret != "":
		return []byte(c.Cluster.Secret), nil
	case len(keys) > 0:
		return keys[0], keys[1:]
	case c.RequirePass != "":
		return cluster.PasswordSecret(c.RequirePass), nil
	}
	log.Warn("cluster: no secret set; any local process can act as a node of this loopback-only cluster. " +
		"Set --cluster-secret or --cluster-key before using other addresses")
	return []byte(loopbackSecret), nil
}

// bind is the gossip bind address.
func (f clusterFlags) bind() string {
	if f.Addr == "" {
		return cluster.DefaultBindAddr
	}
	return f.Addr
}

// allLoopback reports whether every address given (host:port or host;
// empty ones are skipped) is a loopback IP address or localhost.
func allLoopback(addrs ...string) bool {
	return nonLoopback(addrs...) == ""
}

// nonLoopback returns the first address that is not loopback, or "".
func nonLoopback(addrs ...string) string {
	for _, a := range addrs {
		if a == "" {
			continue
		}
		host := a
		if h, _, err := net.SplitHostPort(a); err == nil {
			host = h
		}
		if strings.EqualFold(host, "localhost") {
			continue
		}
		if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
			return a
		}
	}
	return ""
}
