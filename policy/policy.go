package policy

import (
	"strings"
	"time"

	"github.com/rlstore/rlstore/window"
)

// MaxRules is the most rules one policy may hold.
const MaxRules = 32

// MaxNameBytes bounds a policy's name: RL.POLICY LIST returns every name,
// and each rule key of every key a policy limits holds it.
const MaxNameBytes = 256

// The errors of a policy definition.
const (
	errName    Error = "ERR policy name must not be empty"
	errLong    Error = "ERR policy name must be at most 256 bytes"
	errRules   Error = "ERR a policy has at most 32 rules"
	errPenalty Error = "ERR penalty must be a duration between 1ms and 3650d"
)

// Policy is a named set of rules that RL.CHECK evaluates on a key all or
// nothing (docs/commands.md, Policies). Each rule keeps its state for a key under an internal
// key of its own (see AppendRuleKey). A Policy is immutable once parsed, so
// it is safe for concurrent use.
type Policy struct {
	Name    string
	Rules   []window.Params
	Penalty time.Duration // how long a denial blocks the key outright; 0: no penalty
	Shadow  bool          // evaluate and count, but always admit
	def     []string      // the definition as given, keywords upper-cased
}

// Parse parses a policy definition: "rule [rule …] [PENALTY d] [SHADOW]",
// where rule is an algorithm's name (SLIDE, TOKEN, FIXED, LOG, LEAKY, any
// case) and its parameters as its command takes them.
func Parse(name string, words []string) (*Policy, error) {
	switch {
	case name == "":
		return nil, errName
	case len(name) > MaxNameBytes:
		return nil, errLong
	}
	p := &Policy{Name: name}
	for i := 0; i < len(words); {
		word := strings.ToUpper(words[i])
		n, err := p.parseWord(word, words[i+1:])
		if err != nil {
			return nil, err
		}
		p.def = append(append(p.def, word), words[i+1:i+n]...)
		i += n
	}
	switch {
	case len(p.Rules) == 0:
		return nil, errNoRules()
	case len(p.Rules) > MaxRules:
		return nil, errRules
	}
	return p, nil
}

// parseWord parses the keyword word and the arguments it takes from args,
// and returns how many words it took, word included.
func (p *Policy) parseWord(word string, args []string) (int, error) {
	switch word {
	case "SHADOW":
		p.Shadow = true
		return 1, nil
	case "PENALTY":
		if len(args) < 1 {
			return 0, ErrSyntax
		}
		d, ok := ParseDuration([]byte(args[0]))
		if !ok || d < time.Millisecond || d > window.MaxWindow {
			return 0, errPenalty
		}
		p.Penalty = d
		return 2, nil
	}
	kind, ok := kindNamed(word)
	if !ok {
		return 0, ErrSyntax
	}
	n := Arity(kind)
	if len(args) < n {
		return 0, errRuleArgs
	}
	b := make([][]byte, n)
	for i := range b {
		b[i] = []byte(args[i])
	}
	rule, err := ParseParams(kind, b)
	p.Rules = append(p.Rules, rule)
	return n + 1, err
}

// errNoRules lists every rule a policy may hold, as window names the algorithms.
func errNoRules() Error {
	var rules []string
	for k := window.Kind(1); k.Native(); k++ {
		params := " limit window"
		if k.Rated() {
			params = " capacity rate period"
		}
		rules = append(rules, strings.ToUpper(k.String())+params)
	}
	return Error("ERR a policy needs at least one rule: " + strings.Join(rules, " | "))
}

// kindNamed returns the algorithm whose name, upper-cased, is word.
func kindNamed(word string) (window.Kind, bool) {
	for k := window.Kind(1); k.Native(); k++ {
		if strings.ToUpper(k.String()) == word {
			return k, true
		}
	}
	return window.KindNone, false
}

// Definition returns the definition as RL.POLICY GET shows it: the words it
// was parsed from, keywords upper-cased. Parse reads it back.
func (p *Policy) Definition() []string { return p.def }

// Encode returns the definition as one string, as a store keeps it.
func (p *Policy) Encode() string { return strings.Join(p.def, " ") }

// Decode parses a definition that Encode wrote.
func Decode(name, def string) (*Policy, error) { return Parse(name, strings.Fields(def)) }
