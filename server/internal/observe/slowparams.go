package observe

import (
	"strconv"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// Params are the CONFIG parameters of the slow log and the latency monitor.
func (sl *Slowlog) Params() []core.Param {
	return []core.Param{
		{Name: "slowlog-log-slower-than", Get: sl.getSlowerThan, Check: core.CheckIntAtLeast(-1), Set: sl.setSlowerThan},
		{Name: "slowlog-max-len", Get: func() string { return strconv.FormatInt(sl.MaxLen.Load(), 10) },
			Check: core.CheckIntAtLeast(0), Set: func(v []byte) { n, _ := policy.ParseInt(v); sl.MaxLen.Store(n) }},
		{Name: "latency-monitor-threshold", Get: func() string { return strconv.FormatInt(sl.LatencyMs.Load(), 10) },
			Check: core.CheckIntAtLeast(0), Set: func(v []byte) { n, _ := policy.ParseInt(v); sl.LatencyMs.Store(n) }},
	}
}

// getSlowerThan shows the threshold in microseconds, as Redis does.
func (sl *Slowlog) getSlowerThan() string {
	t := sl.SlowerThan.Load()
	if t < 0 {
		return "-1"
	}
	return strconv.FormatInt(t/int64(time.Microsecond), 10)
}

func (sl *Slowlog) setSlowerThan(v []byte) {
	n, _ := policy.ParseInt(v)
	sl.SlowerThan.Store(max(n*int64(time.Microsecond), -1))
}
