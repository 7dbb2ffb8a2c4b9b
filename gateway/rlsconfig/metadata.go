package rlsconfig

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// metadata reads a descriptor's `metadata`: any mapping, kept as JSON's
// types so that it converts to a protobuf Struct (envoyproxy/ratelimit's
// parseMetadata, which turns every key into a string the same way).
func (p *parser) metadata(n *yaml.Node) (map[string]any, error) {
	if n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "metadata must be a mapping")
	}
	budget := maxMetaValues
	m := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		v, err := p.metaValue(n.Content[i+1], 1, &budget)
		if err != nil {
			return nil, err
		}
		m[n.Content[i].Value] = v // the reference reads these into a map of strings: as written
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// metaKey is a nested mapping's key as the reference has it: read as
// YAML 1.1 reads a value, then printed with %v (its convertMap), so that
// `on:` is "true" and `1.50:` is "1.5".
func metaKey(n *yaml.Node) string {
	if b, ok := yaml11Bool(n); ok {
		return strconv.FormatBool(b)
	}
	switch n.Tag {
	case "!!null":
		return "<nil>"
	case "!!int", "!!float":
		var f float64
		if n.Decode(&f) == nil {
			return fmt.Sprint(f)
		}
	}
	return n.Value
}

// Bounds of one descriptor's metadata: it is read recursively, and YAML
// aliases could otherwise expand a small file into an enormous value.
const (
	maxMetaDepth  = 32
	maxMetaValues = 1 << 14
)

func (p *parser) metaValue(n *yaml.Node, depth int, budget *int) (any, error) {
	*budget--
	if depth > maxMetaDepth || *budget < 0 {
		return nil, p.errf(n, "metadata is nested deeper than %d or holds more than %d values", maxMetaDepth, maxMetaValues)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return p.metaValue(n.Alias, depth+1, budget)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := p.metaValue(n.Content[i+1], depth+1, budget)
			if err != nil {
				return nil, err
			}
			m[metaKey(n.Content[i])] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := p.metaValue(e, depth+1, budget)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		return p.metaScalar(n)
	}
	return nil, p.errf(n, "metadata holds something that is not a value")
}

func (p *parser) metaScalar(n *yaml.Node) (any, error) {
	if b, ok := yaml11Bool(n); ok {
		return b, nil
	}
	switch n.Tag {
	case "!!null":
		return nil, nil
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, p.errf(n, "metadata value %s is not a number", strconv.Quote(n.Value))
		}
		return f, nil
	}
	return fmt.Sprint(n.Value), nil
}
