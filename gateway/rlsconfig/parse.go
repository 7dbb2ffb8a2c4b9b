// Package rlsconfig reads envoyproxy/ratelimit's YAML configuration, with rlstore's extensions, and matches descriptors against it.
package rlsconfig

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrConfig is wrapped by every error of a configuration that cannot be loaded.
var ErrConfig = errors.New("rlsconfig: bad configuration")

// Unit is a rate limit's window, as envoy's RateLimitResponse.RateLimit.Unit
// numbers it (so the value converts to the proto enum as is).
type Unit int32

// The units, with envoy's wire numbers.
const (
	UnitUnknown Unit = 0
	Second      Unit = 1
	Minute      Unit = 2
	Hour        Unit = 3
	Day         Unit = 4
	Month       Unit = 5
	Year        Unit = 6
	Week        Unit = 7
)

var unitNames = map[string]Unit{"SECOND": Second, "MINUTE": Minute, "HOUR": Hour, "DAY": Day, "WEEK": Week, "MONTH": Month, "YEAR": Year}

// Seconds is the unit's window in seconds, envoyproxy/ratelimit's divider:
// a MONTH is 30 days and a YEAR 365. Windows are aligned to multiples of it
// since the Unix epoch.
func (u Unit) Seconds() int64 {
	switch u {
	case Second:
		return 1
	case Minute:
		return 60
	case Hour:
		return 3600
	case Day:
		return 86400
	case Week:
		return 7 * 86400
	case Month:
		return 30 * 86400
	case Year:
		return 365 * 86400
	}
	return 0
}

// Algorithm is rlstore's extension: which algorithm decides a rate limit.
type Algorithm uint8

// The algorithms. Counter is envoyproxy/ratelimit's fixed window, which
// counts every hit, denied or not; it is what a rate limit without
// `algorithm:` gets. The others are rlstore's, which never count a denied hit.
const (
	Counter Algorithm = iota
	Fixed
	Slide
	Token
	Log
	Leaky
)

var algorithmNames = map[string]Algorithm{"fixed": Fixed, "slide": Slide, "token": Token, "log": Log, "leaky": Leaky}

// String is the algorithm's name in the YAML ("" for Counter).
func (a Algorithm) String() string {
	for n, v := range algorithmNames {
		if v == a {
			return n
		}
	}
	return ""
}

// RateLimit is one `rate_limit` of the configuration.
type RateLimit struct {
	FullKey         string // the stats key: domain.key_value.key…, as envoyproxy/ratelimit names it
	RequestsPerUnit uint32
	Unit            Unit
	Unlimited       bool
	Name            string
	Replaces        []string
	ShadowMode      bool
	QuotaMode       bool
	DetailedMetric  bool
	Algorithm       Algorithm
	// Metadata is the descriptor's `metadata` mapping, for the response's
	// dynamic metadata: strings, float64s, bools, nils, lists and maps
	// of them, as JSON has (protobuf's Struct takes it as is).
	Metadata map[string]any
	File     string // where it was defined, for logs
	Line     int
}

// parser turns one file's YAML into a domain, with the file and line of
// every error.
type parser struct {
	file string
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrConfig, p.file, n.Line, fmt.Sprintf(format, args...))
}

// fields walks a mapping node, calling set for each key, and rejects keys
// that allowed does not name.
func (p *parser) fields(n *yaml.Node, what string, allowed []string, set func(key string, k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "%s must be a mapping", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errf(k, "config error, key is not of type string in %s", what)
		}
		if !contains(allowed, k.Value) {
			return p.errf(k, "config error, unknown key '%s' in %s (known: %s)", k.Value, what, strings.Join(allowed, ", "))
		}
		if seen[k.Value] {
			return p.errf(k, "duplicate key '%s' in %s", k.Value, what)
		}
		seen[k.Value] = true
		if err := set(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) str(v *yaml.Node, name string) (string, error) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!str" && v.Tag != "!!int" && v.Tag != "!!float" && v.Tag != "!!bool") {
		if v.Tag == "!!null" {
			return "", nil
		}
		return "", p.errf(v, "%s must be a string", name)
	}
	return v.Value, nil
}

func (p *parser) boolean(v *yaml.Node, name string) (bool, error) {
	b, ok := yaml11Bool(v)
	if !ok {
		return false, p.errf(v, "%s must be true or false", name)
	}
	return b, nil
}

// yaml11Bool reads a boolean as envoyproxy/ratelimit's YAML library
// (yaml.v2, YAML 1.1) does, so that its files load unchanged: besides true
// and false, a plain (unquoted) yes, no, on, off, y or n in any of YAML
// 1.1's spellings, which YAML 1.2 reads as strings.
func yaml11Bool(v *yaml.Node) (b, ok bool) {
	if v.Kind != yaml.ScalarNode {
		return false, false
	}
	if v.Tag == "!!bool" {
		return b, v.Decode(&b) == nil
	}
	if v.Tag != "!!str" || v.Style != 0 {
		return false, false
	}
	switch v.Value {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
		return true, true
	case "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return false, true
	}
	return false, false
}

func (p *parser) uint32(v *yaml.Node, name string) (uint32, error) {
	n, err := strconv.ParseUint(v.Value, 10, 32)
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || err != nil {
		return 0, p.errf(v, "%s must be an integer between 0 and 4294967295", name)
	}
	return uint32(n), nil
}

// yamlDescriptor is a `descriptors` entry as read.
type yamlDescriptor struct {
	key, value                    string
	limit                         *RateLimit
	children                      []yamlDescriptor
	valueToMetric, shareThreshold bool
	line                          int
}

var (
	rootFields       = []string{"domain", "descriptors"}
	descriptorFields = []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode", "detailed_metric", "value_to_metric", "share_threshold", "metadata"}
	rateLimitFields  = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm"}
)

// parseFile reads one file's YAML: its domain and descriptors.
func (p *parser) parseFile(data []byte) (string, []yamlDescriptor, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", nil, fmt.Errorf("%w: %s: error loading config file: %v", ErrConfig, p.file, err)
	}
	if len(doc.Content) == 0 {
		return "", nil, fmt.Errorf("%w: %s: config file cannot have empty domain", ErrConfig, p.file)
	}
	root := doc.Content[0]
	var domain string
	var descs []yamlDescriptor
	err := p.fields(root, "the file", rootFields, func(key string, _, v *yaml.Node) (err error) {
		switch key {
		case "domain":
			domain, err = p.str(v, "domain")
		case "descriptors":
			descs, err = p.descriptors(v)
		}
		return err
	})
	if err == nil && domain == "" {
		err = p.errf(root, "config file cannot have empty domain")
	}
	return domain, descs, err
}

func (p *parser) descriptors(n *yaml.Node) ([]yamlDescriptor, error) {
	if n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "descriptors must be a list")
	}
	out := make([]yamlDescriptor, 0, len(n.Content))
	for _, e := range n.Content {
		d, err := p.descriptor(e)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (p *parser) descriptor(n *yaml.Node) (yamlDescriptor, error) {
	d := yamlDescriptor{line: n.Line}
	var shadow, quota, detailed bool
	var meta map[string]any
	err := p.fields(n, "a descriptor", descriptorFields, func(key string, _, v *yaml.Node) (err error) {
		switch key {
		case "key":
			d.key, err = p.str(v, "key")
		case "value":
			d.value, err = p.str(v, "value")
		case "rate_limit":
			d.limit, err = p.rateLimit(v)
		case "descriptors":
			d.children, err = p.descriptors(v)
		case "shadow_mode":
			shadow, err = p.boolean(v, key)
		case "quota_mode":
			quota, err = p.boolean(v, key)
		case "detailed_metric":
			detailed, err = p.boolean(v, key)
		case "value_to_metric":
			d.valueToMetric, err = p.boolean(v, key)
		case "share_threshold":
			d.shareThreshold, err = p.boolean(v, key)
		case "metadata":
			meta, err = p.metadata(v)
		}
		return err
	})
	if err != nil {
		return d, err
	}
	if d.key == "" {
		return d, p.errf(n, "descriptor has empty key")
	}
	if d.limit != nil {
		d.limit.ShadowMode, d.limit.QuotaMode, d.limit.DetailedMetric = shadow, quota, detailed
		d.limit.Metadata = meta
	}
	return d, nil
}

func (p *parser) rateLimit(n *yaml.Node) (*RateLimit, error) {
	rl := &RateLimit{File: p.file, Line: n.Line}
	var unit string
	err := p.fields(n, "a rate_limit", rateLimitFields, func(key string, _, v *yaml.Node) (err error) {
		switch key {
		case "unit":
			unit, err = p.str(v, key)
		case "requests_per_unit":
			rl.RequestsPerUnit, err = p.uint32(v, key)
		case "unlimited":
			rl.Unlimited, err = p.boolean(v, key)
		case "name":
			rl.Name, err = p.str(v, key)
		case "replaces":
			rl.Replaces, err = p.replaces(v)
		case "algorithm":
			err = p.algorithm(v, rl)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	u, valid := unitNames[strings.ToUpper(unit)]
	switch {
	case rl.Unlimited && valid:
		return nil, p.errf(n, "should not specify rate limit unit when unlimited")
	case !rl.Unlimited && !valid:
		return nil, p.errf(n, "invalid rate limit unit '%s'", unit)
	}
	rl.Unit = u
	for _, r := range rl.Replaces {
		if r == rl.Name {
			return nil, p.errf(n, "replaces should not contain name of same descriptor")
		}
	}
	return rl, nil
}

func (p *parser) replaces(n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "replaces must be a list of {name: …}")
	}
	var out []string
	for _, e := range n.Content {
		var name string
		err := p.fields(e, "a replaces entry", []string{"name"}, func(_ string, _, v *yaml.Node) (err error) {
			name, err = p.str(v, "name")
			return err
		})
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, p.errf(e, "should not have an empty replaces entry")
		}
		out = append(out, name)
	}
	return out, nil
}

func (p *parser) algorithm(v *yaml.Node, rl *RateLimit) error {
	s, err := p.str(v, "algorithm")
	if err != nil {
		return err
	}
	a, ok := algorithmNames[strings.ToLower(s)]
	if !ok {
		return p.errf(v, "unknown algorithm '%s' (fixed, slide, token, log or leaky; none for envoyproxy/ratelimit's counting fixed window)", s)
	}
	rl.Algorithm = a
	return nil
}
