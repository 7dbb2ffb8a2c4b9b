package loadtest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// Limit is the rate every decision workload enforces on each key: Limit
// units per Window. Each command expresses it in its own arguments.
type Limit struct {
	Limit  int64
	Window time.Duration // whole seconds
}

// Validate reports whether every workload can express the limit.
func (l Limit) Validate() error {
	if l.Limit < 1 {
		return fmt.Errorf("loadtest: limit %d must be at least 1", l.Limit)
	}
	if l.Window < time.Second || l.Window%time.Second != 0 {
		return fmt.Errorf("loadtest: window %v must be whole seconds", l.Window)
	}
	return nil
}

// Workload is a command run against every chosen key, with what it takes to
// set up and to read its replies.
type Workload struct {
	Name  string
	Args  []string   // the command; the argument holding {key} takes the key
	Setup [][]string // sent once before the run, e.g. SCRIPT LOAD
	// Inverted means the first reply element is 1 for denied (CL.THROTTLE).
	Inverted bool
	// Rule is what the accuracy checker holds the replies to; nil when the
	// workload has no windowed limit to check.
	Rule *accuracy.Rule
}

// Template encodes the workload's command.
func (w Workload) Template() resp.Template { return resp.NewTemplate(w.Args) }

// builder makes a workload for a limit.
type builder func(name string, l Limit) (Workload, error)

// builders lists every named workload. It is a function, not a package
// variable, so that nothing is shared between runs.
func builders() map[string]builder {
	return map[string]builder{
		"ping":        plain("PING"),
		"incr":        plain("INCR", resp.KeyPlaceholder),
		"rl.slide":    native("RL.SLIDE", slideArgs, slideRule),
		"rl.fixed":    native("RL.FIXED", slideArgs, fixedRule),
		"rl.log":      native("RL.LOG", slideArgs, logRule),
		"rl.token":    native("RL.TOKEN", bucketArgs, bucketRule),
		"rl.leaky":    native("RL.LEAKY", bucketArgs, bucketRule),
		"cl.throttle": throttle,
		"rl.check":    check,
		"lua.slide":   lua("slide", luaSecondsArgs, slideRule),
		"lua.fixed":   lua("fixed", luaMillisArgs, fixedRule),
		"lua.log":     lua("log", luaMillisArgs, logRule),
		"lua.gcra":    lua("gcra", luaBucketArgs, bucketRule),
	}
}

// Workloads returns the names NewWorkload accepts, sorted.
func Workloads() []string {
	var names []string
	for n := range builders() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewWorkload returns the named workload enforcing l.
func NewWorkload(name string, l Limit) (Workload, error) {
	if err := l.Validate(); err != nil {
		return Workload{}, err
	}
	b, ok := builders()[strings.ToLower(name)]
	if !ok {
		return Workload{}, fmt.Errorf("loadtest: unknown workload %q (have %s)", name, strings.Join(Workloads(), ", "))
	}
	return b(strings.ToLower(name), l)
}

// CustomWorkload runs a command given as a template such as
// "RL.SLIDE {key} 100 60". Its replies are counted as decisions when they
// are integer arrays; rule, when not nil, enables the accuracy check.
func CustomWorkload(template string, rule *accuracy.Rule) (Workload, error) {
	args := strings.Fields(template)
	if len(args) == 0 {
		return Workload{}, fmt.Errorf("loadtest: empty command template")
	}
	return Workload{Name: strings.ToLower(args[0]), Args: args, Rule: rule}, nil
}

func plain(args ...string) builder {
	return func(name string, _ Limit) (Workload, error) {
		return Workload{Name: name, Args: args}, nil
	}
}

func native(cmd string, args func(Limit) []string, rule func(Limit) *accuracy.Rule) builder {
	return func(name string, l Limit) (Workload, error) {
		w := Workload{Name: name, Args: append([]string{cmd, resp.KeyPlaceholder}, args(l)...)}
		if rule != nil {
			w.Rule = rule(l)
		}
		return w, nil
	}
}

func lua(script string, args func(Limit) []string, rule func(Limit) *accuracy.Rule) builder {
	return func(name string, l Limit) (Workload, error) {
		s, err := loadScript(script)
		if err != nil {
			return Workload{}, err
		}
		w := Workload{
			Name:  name,
			Args:  append([]string{"EVALSHA", s.SHA, "1", resp.KeyPlaceholder}, args(l)...),
			Setup: [][]string{{"SCRIPT", "LOAD", s.Source}},
		}
		if rule != nil {
			w.Rule = rule(l)
		}
		return w, nil
	}
}

// throttle is redis-cell's GCRA: max_burst = limit-1 allows limit at once.
func throttle(name string, l Limit) (Workload, error) {
	return Workload{
		Name:     name,
		Args:     []string{"CL.THROTTLE", resp.KeyPlaceholder, itoa(l.Limit - 1), itoa(l.Limit), secs(l.Window), "1"},
		Inverted: true,
		Rule:     bucketRule(l),
	}, nil
}

// check names a one-rule SLIDE policy, so it pairs with lua.slide.
func check(name string, l Limit) (Workload, error) {
	policy := "loadtest-slide-" + itoa(l.Limit) + "-" + secs(l.Window)
	return Workload{
		Name:  name,
		Args:  []string{"RL.CHECK", policy, resp.KeyPlaceholder},
		Setup: [][]string{{"RL.POLICY", "SET", policy, "SLIDE", itoa(l.Limit), secs(l.Window)}},
		Rule:  slideRule(l),
	}, nil
}

func slideArgs(l Limit) []string      { return []string{itoa(l.Limit), secs(l.Window)} }
func bucketArgs(l Limit) []string     { return []string{itoa(l.Limit), itoa(l.Limit), secs(l.Window)} }
func luaSecondsArgs(l Limit) []string { return []string{itoa(l.Limit), secs(l.Window), "1"} }
func luaMillisArgs(l Limit) []string  { return []string{itoa(l.Limit), millis(l.Window), "1"} }
func luaBucketArgs(l Limit) []string {
	return []string{itoa(l.Limit), itoa(l.Limit), millis(l.Window), "1"}
}

// RuleFor returns the accuracy rule of a kind of limit enforcing l: "slide"
// (1 s buckets, as RL.SLIDE), "fixed" (aligned, as RL.FIXED), "log" (1 ms
// buckets, as RL.LOG) or "bucket" (a token bucket of l.Limit refilled
// l.Limit per l.Window, as RL.TOKEN).
func RuleFor(kind string, l Limit) (*accuracy.Rule, error) {
	rules := map[string]func(Limit) *accuracy.Rule{"slide": slideRule, "fixed": fixedRule, "log": logRule, "bucket": bucketRule}
	r, ok := rules[kind]
	if !ok {
		return nil, fmt.Errorf("loadtest: no accuracy rule %q (have slide, fixed, log, bucket)", kind)
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return r(l), nil
}

func slideRule(l Limit) *accuracy.Rule {
	return &accuracy.Rule{Limit: l.Limit, Unit: time.Second, Units: int64(l.Window / time.Second), Cost: 1}
}

func fixedRule(l Limit) *accuracy.Rule {
	r := slideRule(l)
	r.Aligned = true
	return r
}

func bucketRule(l Limit) *accuracy.Rule {
	return &accuracy.Rule{Limit: l.Limit, Period: l.Window, Cost: 1}
}

func logRule(l Limit) *accuracy.Rule {
	return &accuracy.Rule{Limit: l.Limit, Unit: time.Millisecond, Units: l.Window.Milliseconds(), Cost: 1}
}

func itoa(n int64) string           { return strconv.FormatInt(n, 10) }
func secs(d time.Duration) string   { return itoa(int64(d / time.Second)) }
func millis(d time.Duration) string { return itoa(d.Milliseconds()) }
