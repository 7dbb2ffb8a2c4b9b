package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// healthTimeout bounds one health check: the dial, the request and the reply.
const healthTimeout = 3 * time.Second

// health is `rlstore health [config.yaml] [--flag value ...]`: it reads the
// same flags, file and RLSTORE_* variables as the server, so that a probe
// run beside the server (Docker's HEALTHCHECK, a systemd timer, a person)
// checks the server that configuration starts, and needs no shell. It asks
// --metrics-addr's /readyz when that is set, or else sends PING (after
// AUTH with --requirepass) to --port, or over TLS to --tls-port when --port
// is 0. It prints one line and returns 0 when the server is ready, 1 when
// it is not (or cannot be reached), and 2 for bad flags.
func health(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, lookupEnv, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, "\nrlstore health [config.yaml] [--flag value ...] takes the server's flags and checks the server they start:\n"+
			"GET /readyz on --metrics-addr, or PING on --port (on --tls-port when --port is 0); exit 0 when ready, 1 when not.")
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "rlstore health: %v\n", err)
		return 2
	}
	msg, err := checkHealth(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "rlstore health: not ready: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "rlstore health: ok: %s\n", msg)
	return 0
}

// checkHealth checks the server cfg starts, by the first way cfg allows.
func checkHealth(cfg config) (string, error) {
	switch {
	case cfg.MetricsAddr != "":
		return checkReadyz(dialable(cfg.MetricsAddr))
	case cfg.Port != 0:
		return checkPing(dialable(cfg.addr()), cfg.RequirePass, nil)
	case cfg.TLSPort != 0:
		tc, err := healthTLS(cfg)
		if err != nil {
			return "", err
		}
		return checkPing(dialable(net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.TLSPort))), cfg.RequirePass, tc)
	}
	return "", errors.New("nothing to check: --port 0 picks a port only the server knows; give --metrics-addr, a --port or a --tls-port")
}

// dialable turns a listen address on every interface (0.0.0.0:9121,
// [::]:6379, :9121) into the loopback address of the same family.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() == nil:
		host = "::1"
	case ip != nil && ip.IsUnspecified():
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func checkReadyz(addr string) (string, error) {
	c := http.Client{Timeout: healthTimeout}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	line := strings.TrimSpace(strings.SplitN(string(body), "\n", 2)[0])
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("http://%s/readyz answered %d: %s", addr, resp.StatusCode, line)
	}
	return fmt.Sprintf("http://%s/readyz answered %d %s", addr, resp.StatusCode, line), nil
}

// checkPing sends PING, after AUTH when pass is set, over TLS when tc is
// set. A -NOAUTH reply when no password is known (an --aclfile's users)
// still shows a server that answers commands.
func checkPing(addr, pass string, tc *tls.Config) (string, error) {
	d := net.Dialer{Timeout: healthTimeout}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if tc != nil {
		conn = tls.Client(conn, tc)
	}
	_ = conn.SetDeadline(time.Now().Add(healthTimeout))
	var req []byte
	if pass != "" {
		req = respCommand(req, "AUTH", pass)
	}
	if _, err := conn.Write(respCommand(req, "PING")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	if pass != "" {
		if line, err := readLine(r); err != nil || line != "+OK" {
			return "", fmt.Errorf("AUTH on %s: %s", addr, orErr(line, err))
		}
	}
	line, err := readLine(r)
	switch {
	case err != nil:
		return "", fmt.Errorf("PING on %s: %w", addr, err)
	case line == "+PONG":
		return "PING on " + addr + " answered PONG", nil
	case pass == "" && strings.HasPrefix(line, "-NOAUTH"):
		return "PING on " + addr + " answered -NOAUTH (no --requirepass to send)", nil
	}
	return "", fmt.Errorf("PING on %s answered %s", addr, line)
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func orErr(line string, err error) string {
	if err != nil {
		return err.Error()
	}
	return line
}

// respCommand appends a RESP array of bulk strings.
func respCommand(dst []byte, args ...string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, "\r\n"...)
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, "\r\n"...)
		dst = append(dst, a...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// healthTLS is the client side of a PING over --tls-port. It presents the
// server's own certificate (which then needs the clientAuth usage under
// --tls-auth-clients yes, as --tls-cluster's does) and checks the server's
// chain against --tls-ca-cert-file, but not its name: the check dials this
// host's own address, which the certificate need not name. Without a CA
// file it checks nothing.
func healthTLS(cfg config) (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // the chain is checked below
	if cfg.TLSCertFile != "" && cfg.TLSKeyFile != "" {
		pair, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	if cfg.TLSCACertFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(cfg.TLSCACertFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca-cert-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca-cert-file %s: no PEM certificate in it", cfg.TLSCACertFile)
	}
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
	return tc, nil
}
