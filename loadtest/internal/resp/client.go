package resp

import (
	"context"
	"fmt"
	"net"
	"time"
)

// Client is one pipelined RESP2 connection to a loopback server: write N
// commands in one go, then read N replies. It is not safe for concurrent use;
// the load generator gives every worker its own.
type Client struct {
	nc  net.Conn
	rd  *Reader
	Buf []byte
	Rep Reply
}

// Dial connects to addr after checking that it is loopback.
func Dial(ctx context.Context, addr string) (*Client, error) {
	ip, err := ResolveLoopback(ctx, addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", ip)
	if err != nil {
		return nil, fmt.Errorf("loadtest: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &Client{nc: nc, rd: NewReader(nc)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.nc.Close() }

// Write sends b, one or more encoded commands, in a single write.
func (c *Client) Write(b []byte) error {
	_, err := c.nc.Write(b)
	return err
}

// Read reads the next reply into rep.
func (c *Client) Read(rep *Reply) error { return c.rd.Read(rep) }

// SetDeadline bounds every later read and write.
func (c *Client) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// Do sends one command and returns its reply, which stays valid until the
// next call on c. An error reply is returned as a reply, not an error.
func (c *Client) Do(ctx context.Context, args ...string) (*Reply, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(dl)
		defer c.nc.SetDeadline(time.Time{})
	}
	c.Buf = AppendCommand(c.Buf[:0], args...)
	if err := c.Write(c.Buf); err != nil {
		return nil, err
	}
	if err := c.Read(&c.Rep); err != nil {
		return nil, err
	}
	return &c.Rep, nil
}

// DoOK sends one command and turns an error reply into an error.
func (c *Client) DoOK(ctx context.Context, args ...string) (*Reply, error) {
	rep, err := c.Do(ctx, args...)
	if err != nil {
		return nil, err
	}
	if rep.IsError() {
		return nil, fmt.Errorf("loadtest: %s: %s", args[0], rep.Str)
	}
	return rep, nil
}
