package rlsconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Config is a loaded configuration: every domain of its files. It is
// immutable once built, so one may be shared by any number of goroutines
// and swapped whole on a reload.
type Config struct {
	domains map[string]*node
	Files   []string // the files it was read from, in load order
}

// node is one level of a domain's descriptor tree.
type node struct {
	children map[string]*node // by "key" or "key_value"
	wild     []wildEntry      // the children whose name holds a '*', in file order
	limit    *RateLimit

	valueToMetric   bool
	shareThreshold  bool
	wildcardPattern string // the child's name, when shareThreshold is set
}

// wildEntry is a wildcard child: its name, split on '*' once at load.
type wildEntry struct {
	key   string
	parts []string
}

// Entry is one key/value pair of a request's descriptor.
type Entry struct {
	Key, Value string
}

// Match is what a descriptor matched.
type Match struct {
	Limit     *RateLimit
	MetricKey string   // the stats key the hit counts under
	Share     []string // per entry: the wildcard pattern its value is replaced by in the cache key, or ""
}

// Domains is the sorted list of the configuration's domains.
func (c *Config) Domains() []string {
	out := make([]string, 0, len(c.domains))
	for d := range c.domains {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// HasDomain reports whether domain is configured.
func (c *Config) HasDomain(domain string) bool { return c.domains[domain] != nil }

// Empty reports whether no domain is configured.
func (c *Config) Empty() bool { return len(c.domains) == 0 }

// LoadDir reads every *.yaml and *.yml file of dir (not its subfolders), in
// name order. A domain defined twice is an error, as in envoyproxy/ratelimit.
func LoadDir(dir string) (*Config, error) {
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	srcs := make([]Source, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		srcs = append(srcs, Source{Name: f, Data: data})
	}
	return Load(srcs)
}

// Source is one file's name and contents.
type Source struct {
	Name string
	Data []byte
}

// Load builds a configuration from files' contents.
func Load(srcs []Source) (*Config, error) {
	c := &Config{domains: map[string]*node{}}
	for _, s := range srcs {
		p := &parser{file: s.Name}
		domain, descs, err := p.parseFile(s.Data)
		if err != nil {
			return nil, err
		}
		if c.domains[domain] != nil {
			return nil, fmt.Errorf("%w: %s: duplicate domain '%s' in config file", ErrConfig, s.Name, domain)
		}
		root := &node{children: map[string]*node{}}
		if err := root.add(p, domain+".", descs); err != nil {
			return nil, err
		}
		c.domains[domain] = root
		c.Files = append(c.Files, s.Name)
	}
	return c, nil
}

// add loads descriptors under n, as envoyproxy/ratelimit's loadDescriptors does.
func (n *node) add(p *parser, parentKey string, descs []yamlDescriptor) error {
	for _, d := range descs {
		name := d.key
		if d.value != "" {
			name += "_" + d.value
		}
		full := parentKey + name
		if n.children[name] != nil {
			return fmt.Errorf("%w: %s:%d: duplicate descriptor composite key '%s'", ErrConfig, p.file, d.line, full)
		}
		hasWild := strings.Contains(name, "*")
		if d.shareThreshold && !hasWild {
			return fmt.Errorf("%w: %s:%d: share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", ErrConfig, p.file, d.line, name)
		}
		child := &node{children: map[string]*node{}, limit: d.limit, valueToMetric: d.valueToMetric, shareThreshold: d.shareThreshold}
		if d.limit != nil {
			d.limit.FullKey = full
		}
		if d.shareThreshold {
			child.wildcardPattern = name
		}
		if hasWild {
			n.wild = append(n.wild, wildEntry{key: name, parts: strings.Split(name, "*")})
		}
		if err := child.add(p, full+".", d.children); err != nil {
			return err
		}
		n.children[name] = child
	}
	return nil
}

// wildcardMatch reports whether value matches a pattern split on '*'; each
// '*' matches any run of bytes, the empty one too.
func wildcardMatch(parts []string, value string) bool {
	if len(parts) == 1 {
		return parts[0] == value
	}
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(value, first) || !strings.HasSuffix(value, last) {
		return false
	}
	fixed := 0
	for _, p := range parts {
		fixed += len(p)
	}
	if len(value) < fixed {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}
