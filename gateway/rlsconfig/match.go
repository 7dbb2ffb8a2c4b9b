package rlsconfig

import "strings"

// Lookup finds the rate limit a descriptor matches in domain, as
// envoyproxy/ratelimit's GetLimit does: at each level an entry matches
// "key_value" first, then the first wildcard child its "key_value" fits,
// then "key" alone; the limit applies only if it sits at the level of the
// descriptor's last entry. known says whether the domain is configured.
func (c *Config) Lookup(domain string, entries []Entry) (m Match, known bool) {
	root := c.domains[domain]
	if root == nil {
		return Match{}, false
	}
	var share []string
	byValueDiffers := false // the stats key shows a request value (value_to_metric, share_threshold)
	children, prev := root.children, root
	var buf [128]byte
	for i, e := range entries {
		name := append(append(append(buf[:0], e.Key...), '_'), e.Value...)
		next := children[string(name)] // no copy: a map index by string(bytes)
		wild := ""
		if next == nil && len(prev.wild) > 0 {
			wild = prev.matchWild(string(name))
			next = children[wild]
		}
		byVal := next != nil
		if next == nil {
			next = children[e.Key]
		}
		if wild != "" && next != nil && next.shareThreshold && next.wildcardPattern != "" {
			if share == nil {
				share = make([]string, len(entries))
			}
			share[i] = strings.TrimPrefix(next.wildcardPattern, e.Key+"_")
		}
		if next != nil && next.valueToMetric && (wild != "" || !byVal) || share != nil && share[i] != "" {
			byValueDiffers = true
		}
		if next != nil && next.limit != nil && i == len(entries)-1 {
			m.Limit = next.limit
		}
		if next == nil || len(next.children) == 0 {
			break
		}
		children, prev = next.children, next
	}
	if m.Limit == nil {
		return Match{}, true
	}
	m.Share = share
	m.MetricKey = m.Limit.FullKey
	switch {
	case m.Limit.DetailedMetric && share != nil:
		m.MetricKey = shareMetricKey(domain, entries, share)
	case m.Limit.DetailedMetric:
		m.MetricKey = detailedKey(domain, entries)
	case byValueDiffers:
		m.MetricKey = c.byValueKey(domain, entries, share)
	}
	return m, true
}

// byValueKey is the stats key with value_to_metric's and share_threshold's
// values: the walk of Lookup again, building the key this time. Only a
// limit under such a descriptor pays for it.
// matchWild returns the first of n's wildcard children that name fits, or "".
func (n *node) matchWild(name string) string {
	for _, w := range n.wild {
		if wildcardMatch(w.parts, name) {
			return w.key
		}
	}
	return ""
}

// detailedKey is detailed_metric's stats key: every entry's key and value.
func detailedKey(domain string, entries []Entry) string {
	var b strings.Builder
	b.WriteString(domain)
	for _, e := range entries {
		b.WriteString(".")
		b.WriteString(e.Key)
		b.WriteString("_")
		b.WriteString(e.Value)
	}
	return b.String()
}

func (c *Config) byValueKey(domain string, entries []Entry, share []string) string {
	var b strings.Builder
	b.WriteString(domain)
	children, prev := c.domains[domain].children, c.domains[domain]
	for i, e := range entries {
		name := e.Key + "_" + e.Value
		next := children[name]
		wild := ""
		if next == nil {
			for _, w := range prev.wild {
				if wildcardMatch(w.parts, name) {
					next, wild = children[w.key], w.key
					break
				}
			}
		}
		byVal := next != nil
		if next == nil {
			next = children[e.Key]
		}
		b.WriteString(".")
		b.WriteString(e.Key)
		if v := metricValue(next, e, wild, byVal, share, i); v != "" {
			b.WriteString("_")
			b.WriteString(v)
		}
		if next == nil || len(next.children) == 0 {
			break
		}
		children, prev = next.children, next
	}
	return b.String()
}

// metricValue is the value an entry shows in its stats key (value_to_metric).
func metricValue(next *node, e Entry, wild string, byVal bool, share []string, i int) string {
	switch {
	case next == nil:
		return ""
	case wild != "" && share != nil && share[i] != "":
		return share[i]
	case wild != "" && next.valueToMetric:
		return e.Value
	case wild != "":
		return strings.TrimPrefix(wild, e.Key+"_")
	case byVal:
		return e.Value
	case next.valueToMetric:
		return e.Value
	}
	return ""
}

// shareMetricKey is a detailed stats key in which share_threshold entries
// show their wildcard pattern instead of their value.
func shareMetricKey(domain string, entries []Entry, share []string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i, e := range entries {
		b.WriteString(".")
		b.WriteString(e.Key)
		v := e.Value
		if i < len(share) && share[i] != "" {
			v = share[i]
		}
		if v != "" {
			b.WriteString("_")
			b.WriteString(v)
		}
	}
	return b.String()
}
