package server

// TEMPORARY per-slot debug logging (RL_DEBUG_SLOTS=1); removed before landing.

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/rlstore/rlstore/cluster"
)

var slotDebugOn = os.Getenv("RL_DEBUG_SLOTS") != ""

func (s *Server) sdbg(event string, args ...any) {
	if !slotDebugOn {
		return
	}
	s.log.Warn("SLOTDBG "+event, args...)
}

func stDesc(st *slotState) string {
	if st == nil {
		return "-"
	}
	return fmt.Sprintf("%s/%s/k%v/g%v", st.mode, st.peer.Name, st.keep, st.guess)
}

// snapStates returns each slot's state description.
func (s *Server) snapStates() []string {
	if !slotDebugOn {
		return nil
	}
	out := make([]string, cluster.Slots)
	for slot := range cluster.Slots {
		out[slot] = stDesc(s.cl.ho.state(slot))
	}
	return out
}

// diffStates logs the slots whose state changed, grouped by transition.
func (s *Server) diffStates(event string, before []string, old, nv *cluster.View) {
	if !slotDebugOn {
		return
	}
	groups := map[string][]int{}
	for slot := range cluster.Slots {
		a := before[slot]
		b := stDesc(s.cl.ho.state(slot))
		oo := "?"
		if old != nil {
			oo = old.Table.Owner(slot).Name
		}
		no := nv.Table.Owner(slot).Name
		if a != b || oo != no {
			k := fmt.Sprintf("%s->%s own %s->%s kept=%v", a, b, oo, no, s.cl.ho.kept.has(slot))
			groups[k] = append(groups[k], slot)
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var members []string
	for _, m := range nv.Table.Nodes() {
		members = append(members, m.Name)
	}
	s.sdbg(event, "members", strings.Join(members, ","))
	for _, k := range keys {
		s.sdbg(event+" slots", "change", k, "n", len(groups[k]), "slots", formatSlots(groups[k]))
	}
}
