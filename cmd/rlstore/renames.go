package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// renames is --rename-command, which may be given many times: "OLD NEW"
// serves OLD as NEW, and "OLD" or `OLD ""` disables it, as redis.conf's
// rename-command FLUSHALL "" does. One value may hold several, separated
// by commas (RLSTORE_RENAME_COMMAND="FLUSHALL,CONFIG cfg-7f3a"); the config
// file also takes a list.
type renames map[string]string

func (r *renames) Set(v string) error {
	if *r == nil {
		*r = renames{}
	}
	for _, pair := range strings.Split(v, ",") {
		f := strings.Fields(pair)
		if len(f) == 2 && f[1] == `""` {
			f = f[:1]
		}
		switch len(f) {
		case 1:
			(*r)[strings.ToLower(f[0])] = ""
		case 2:
			(*r)[strings.ToLower(f[0])] = strings.ToLower(f[1])
		default:
			return fmt.Errorf("%q is not COMMAND NEWNAME, or COMMAND alone to disable it", pair)
		}
	}
	return nil
}

func (r *renames) String() string {
	if r == nil {
		return ""
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(*r)) {
		out = append(out, strings.TrimSpace(k+" "+(*r)[k]))
	}
	return strings.Join(out, ",")
}
