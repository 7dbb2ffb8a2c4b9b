package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The flag.Value types below each point into a Config field. Their constructors
// store the default first, so newFlagSet is the one place defaults are written.
// String must work on the zero value: flag.PrintDefaults calls it on one.

// size is a byte count written the redis.conf way: a plain number of bytes, or
// a number with k (1000), kb (1024), m, mb, g or gb, in any case.
type size int64

func newSize(p *int64, def int64) *size { *p = def; return (*size)(p) }

func (s *size) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = size(n)
	return nil
}

func (s *size) String() string {
	if s == nil {
		return "0"
	}
	return formatSize(int64(*s))
}

func parseSize(v string) (int64, error) {
	// Two-letter units come first, so "kb" is not read as "k".
	units := []struct {
		suffix string
		mult   int64
	}{
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1e3}, {"m", 1e6}, {"g", 1e9},
	}
	num, mult := strings.ToLower(strings.TrimSpace(v)), int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || strings.HasPrefix(num, "+") {
		return 0, fmt.Errorf("bad size %q: want bytes, or a number with k, kb, m, mb, g or gb", v)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", v)
	}
	return n * mult, nil
}

// formatSize writes n in the largest binary unit that divides it, as redis.conf would.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// yesNo is a redis-style boolean: yes or no. It is not a flag.Value bool flag
// on purpose, so "--protected-mode no" reads the next argument as its value.
type yesNo bool

func newYesNo(p *bool, def bool) *yesNo { *p = def; return (*yesNo)(p) }

func (b *yesNo) Set(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "true": // true and false too, as YAML writers expect
		*b = true
	case "no", "false":
		*b = false
	default:
		return fmt.Errorf("%q is not yes or no", v)
	}
	return nil
}

func (b *yesNo) String() string {
	if b != nil && *b {
		return "yes"
	}
	return "no"
}

// oneOf is a string that must be one of a fixed set of lower-case words.
type oneOf struct {
	p     *string
	words []string
}

func newOneOf(p *string, def string, words ...string) *oneOf {
	*p = def
	return &oneOf{p: p, words: words}
}

func (o *oneOf) Set(v string) error {
	w := strings.ToLower(strings.TrimSpace(v))
	if !slices.Contains(o.words, w) {
		return fmt.Errorf("%q is not one of %s", v, strings.Join(o.words, ", "))
	}
	*o.p = w
	return nil
}

func (o *oneOf) String() string {
	if o == nil || o.p == nil {
		return ""
	}
	return *o.p
}

// seconds is a duration written as whole seconds (redis.conf's way: "10") or
// with a Go unit ("500ms", "1m30s").
type seconds time.Duration

func newSeconds(p *time.Duration, def time.Duration) *seconds { *p = def; return (*seconds)(p) }

func (d *seconds) Set(v string) error {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n <= math.MaxInt64/int64(time.Second) {
		*d = seconds(time.Duration(n) * time.Second)
		return nil
	}
	t, err := time.ParseDuration(v)
	if err != nil || t < 0 {
		return fmt.Errorf("bad duration %q: want seconds (10) or a number with a unit (500ms, 1m)", v)
	}
	*d = seconds(t)
	return nil
}

func (d *seconds) String() string {
	if d == nil {
		return "0s"
	}
	return time.Duration(*d).String()
}
