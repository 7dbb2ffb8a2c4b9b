// Command leasepairs measures concurrency-limit pairs (take, then give back)
// per second against rlstore's native commands or Redis running the
// equivalent Lua, a sorted set of lease ids scored by expiry as Redisson's
// semaphore keeps them. It speaks RESP over TCP like any client.
//
//	leasepairs -addr 127.0.0.1:6379 -mode lua|native|reserve|fixed|ping -conns 50 -P 16 -duration 10s
//	leasepairs -addr … -mode lua|native|reserve -fill 100000 -held 4     (memory: bytes per live lease or outstanding reservation)
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const acquireLua = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, ttl, id = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], id) then
  redis.call('ZADD', KEYS[1], now + ttl, id)
  return {1, redis.call('ZCARD', KEYS[1]), 0}
end
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, n, tonumber(first[2]) - now}
end
redis.call('ZADD', KEYS[1], now + ttl, id)
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return {1, n + 1, 0}`

const releaseLua = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZREM', KEYS[1], ARGV[1])`

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	mode := flag.String("mode", "native", "native (RL.ACQUIRE/RL.RELEASE), reserve (RL.RESERVE/RL.COMMIT), lua (EVALSHA of a sorted-set semaphore), or a floor: fixed (two RL.FIXED) or ping (two PING)")
	conns := flag.Int("conns", 50, "connections")
	depth := flag.Int("P", 16, "commands in flight per connection (a pair is two)")
	dur := flag.Duration("duration", 10*time.Second, "how long to run")
	keys := flag.Int("keys", 10000, "keys the pairs spread over")
	fill := flag.Int("fill", 0, "instead of a run: leave -held leases (-mode reserve: reservations) on each of this many keys and print the server's used_memory before and after")
	held := flag.Int("held", 4, "leases a key holds in -fill")
	flag.Parse()
	if err := run(*addr, *mode, *conns, *depth, *dur, *keys, *fill, *held); err != nil {
		fmt.Fprintln(os.Stderr, "leasepairs:", err)
		os.Exit(1)
	}
}

type conn struct {
	c     net.Conn
	r     *bufio.Reader
	w     *bufio.Writer
	enc   []byte // the request being encoded
	first []byte // replyFirst's last line
	held  []byte // an array reply's first element's line
}

func dial(addr string) (*conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}, nil
}

// send appends one request of args to the connection's buffer, without
// fmt: the client shares the host's cores with the server it measures, and
// the pairs per second should be the server's, not the client's.
func (c *conn) send(args ...string) {
	b := c.enc[:0]
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	c.enc = b
	c.w.Write(b) //nolint:errcheck // bufio keeps the error for Flush
}

// reply reads one reply, returning its first line (an array's first
// element's line), and an error for an error reply.
func (c *conn) reply() (string, error) {
	first, err := c.replyFirst()
	return string(first), err
}

// replyFirst is reply with its first line as bytes of the read buffer,
// valid until the next read; the run's hot loop reads replies with it.
func (c *conn) replyFirst() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, fmt.Errorf("leasepairs: a short reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '-':
		return nil, fmt.Errorf("%s", body)
	case '$':
		n, _ := strconv.Atoi(string(body))
		if n < 0 {
			return nil, nil
		}
		buf, err := c.r.Peek(n + 2)
		if err != nil {
			return nil, err
		}
		c.first = append(c.first[:0], buf[:n]...)
		_, err = c.r.Discard(n + 2)
		return c.first, err
	case '*':
		n, _ := strconv.Atoi(string(body))
		var first []byte
		for i := range n {
			s, err := c.replyFirst()
			if err != nil {
				return nil, err
			}
			if i == 0 {
				first = append(c.held[:0], s...)
				c.held = first
			}
		}
		return first, nil
	}
	return append(c.first[:0], body...), nil
}

func (c *conn) call(args ...string) (string, error) {
	c.send(args...)
	if err := c.w.Flush(); err != nil {
		return "", err
	}
	return c.reply()
}

// pair puts the two commands of one pair for key and id in a and r, and
// returns how many arguments each has: arrays, so that a pair allocates
// nothing but its id.
func pair(mode, accSHA, relSHA, key, id string, a, r *[12]string) (int, int) {
	switch mode {
	case "lua":
		*a = [12]string{"EVALSHA", accSHA, "1", key, "100", "30000", id}
		*r = [12]string{"EVALSHA", relSHA, "1", key, id}
		return 7, 5
	case "reserve":
		*a = [12]string{"RL.RESERVE", key, "TOKEN", "100000", "100000", "60", "COST", "10", "TTL", "30s", "ID", id}
		*r = [12]string{"RL.COMMIT", key, id, "ACTUAL", "7"}
		return 12, 5
	case "fixed": // the floor: two of rlstore's cheapest keyed decisions
		*a = [12]string{"RL.FIXED", key, "100000000", "60"}
		*r = *a
		return 4, 4
	case "ping": // the transport alone
		a[0], r[0] = "PING", "PING"
		return 1, 1
	}
	*a = [12]string{"RL.ACQUIRE", key, "100", "30s", "ID", id}
	*r = [12]string{"RL.RELEASE", key, id}
	return 6, 3
}

func run(addr, mode string, conns, depth int, dur time.Duration, keys, fill, held int) error {
	c0, err := dial(addr)
	if err != nil {
		return err
	}
	var accSHA, relSHA string
	if mode == "lua" {
		if accSHA, err = c0.call("SCRIPT", "LOAD", acquireLua); err != nil {
			return err
		}
		if relSHA, err = c0.call("SCRIPT", "LOAD", releaseLua); err != nil {
			return err
		}
	}
	if fill > 0 {
		return fillLeases(c0, mode, accSHA, fill, held)
	}
	keyNames := make([]string, keys)
	for i := range keyNames {
		keyNames[i] = "lp:" + mode + ":" + strconv.Itoa(i) // a mode of its own: modes must not meet each other's kinds
	}
	var pairs atomic.Int64
	var failed atomic.Value
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range conns {
		c, err := dial(addr)
		if err != nil {
			return err
		}
		wg.Go(func() {
			defer c.c.Close()
			n := 0
			var a, r [12]string
			prefix := strconv.Itoa(w) + "-"
			for time.Now().Before(stop) {
				for range depth / 2 {
					key := keyNames[(w*7919+n)%keys]
					id := prefix + strconv.Itoa(n)
					na, nr := pair(mode, accSHA, relSHA, key, id, &a, &r)
					c.send(a[:na]...)
					c.send(r[:nr]...)
					n++
				}
				if err := c.w.Flush(); err != nil {
					failed.Store(err)
					return
				}
				for i := range depth / 2 * 2 {
					first, err := c.replyFirst()
					if err != nil {
						failed.Store(err)
						return
					}
					if i%2 == 0 && mode != "ping" && string(first) != "1" {
						failed.Store(fmt.Errorf("a %s pair was denied: %q", mode, first))
						return
					}
				}
				pairs.Add(int64(depth / 2))
			}
		})
	}
	start := time.Now()
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	el := time.Since(start)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // the client's own CPU: on a shared host it competes with the server for the cores
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("mode=%s conns=%d P=%d keys=%d: %d pairs in %.2fs = %.0f pairs/s (client CPU %.2f us/pair)\n", mode, conns, depth, keys, pairs.Load(), el.Seconds(), float64(pairs.Load())/el.Seconds(), float64(cpu.Microseconds())/float64(pairs.Load()))
	return nil
}

// fillLeases leaves held live leases (of mode reserve: outstanding
// reservations) on each of keys keys and prints the server's used_memory
// before and after.
func fillLeases(c *conn, mode, accSHA string, keys, held int) error {
	before, beforeSet, err := usedMemory(c)
	if err != nil {
		return err
	}
	for k := range keys {
		for h := range held {
			key, id := "fill:"+strconv.Itoa(k), "lease-"+strconv.Itoa(h)
			switch mode {
			case "lua":
				c.send("EVALSHA", accSHA, "1", key, "1000", "3600000", id)
			case "reserve": // outstanding reservations on a TOKEN key: the key's state and its ledger
				c.send("RL.RESERVE", key, "TOKEN", "1000000", "1000000", "3600", "COST", "1", "TTL", "1h", "ID", id)
			default:
				c.send("RL.ACQUIRE", key, "1000", "1h", "ID", id)
			}
		}
		if k%64 == 63 || k == keys-1 {
			if err := c.w.Flush(); err != nil {
				return err
			}
			for range held * (k%64 + 1) {
				if _, err := c.reply(); err != nil {
					return err
				}
			}
		}
	}
	after, afterSet, err := usedMemory(c)
	if err != nil {
		return err
	}
	n := keys * held
	what := "live lease"
	if mode == "reserve" {
		what = "outstanding reservation"
	}
	fmt.Printf("mode=%s keys=%d held=%d: used_memory %d -> %d: %.1f B per %s (key included); used_memory_dataset %.1f B\n",
		mode, keys, held, before, after, float64(after-before)/float64(n), what, float64(afterSet-beforeSet)/float64(n))
	return nil
}

// usedMemory returns the server's used_memory and used_memory_dataset
// (INFO memory).
func usedMemory(c *conn) (used, dataset int64, err error) {
	s, err := c.call("INFO", "memory")
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for _, line := range splitLines(s) {
		if v, ok := cutPrefix(line, "used_memory:"); ok {
			used, err = strconv.ParseInt(v, 10, 64)
			found++
		} else if v, ok := cutPrefix(line, "used_memory_dataset:"); ok {
			dataset, err = strconv.ParseInt(v, 10, 64)
			found++
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if found < 2 {
		return 0, 0, fmt.Errorf("no used_memory or used_memory_dataset in INFO memory")
	}
	return used, dataset, nil
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, trimCR(s[start:i]))
			start = i + 1
		}
	}
	return append(out, trimCR(s[start:]))
}

func trimCR(s string) string {
	if len(s) > 0 && s[len(s)-1] == '\r' {
		return s[:len(s)-1]
	}
	return s
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}
