package loadtest

import (
	"fmt"

	"github.com/rlstore/rlstore/loadtest/internal/report"
)

// Target is one goal from the benchmark issue, measured and not asserted.
type target struct {
	Goal     string
	Measured string
	ByCPU    string // the same ratio in server CPU per request, steadier on a shared host
	Met      bool
	Known    bool // false when a side was not measured
}

// Targets checks the goals for the first pair (RL.SLIDE).
func (rep *BenchReport) Targets() []target {
	first := rep.Config.Pairs[0]
	p1, p16 := rep.row(rep.Rows, first.Native, 1), rep.row(rep.Rows, first.Native, 16)
	incr16 := rep.row(rep.Ceiling, "", 16)
	var ts []target
	ts = append(ts, tputTarget(fmt.Sprintf("%s at -P 16 ≥ 10× Redis+Lua", first.Native), p16.Rlstore, p16.RedisRes, 10))
	ts = append(ts, tputTarget(fmt.Sprintf("%s at -P 16 ≥ 0.7× Redis INCR", first.Native), p16.Rlstore, incr16.RedisRes, 0.7))
	ts = append(ts, tputTarget(fmt.Sprintf("%s at -P 1 ≥ 1.2× Redis+Lua", first.Native), p1.Rlstore, p1.RedisRes, 1.2))
	ts = append(ts, rep.memTarget(first))
	ts = append(ts, rep.overTarget())
	return ts
}

func (rep *BenchReport) row(rows []report.Row, native string, depth int) report.Row {
	for _, r := range rows {
		if r.Native == native && r.Pipeline == depth {
			return r
		}
	}
	return report.Row{}
}

func tputTarget(goal string, a, b *report.Result, want float64) target {
	t := target{Goal: goal, Known: a != nil && b != nil}
	if t.Known {
		got := a.Throughput / b.Throughput
		t.Met = got >= want
		t.Measured = fmt.Sprintf("%.2f× (%s/s vs %s/s)", got, report.HumanCount(a.Throughput), report.HumanCount(b.Throughput))
		if ca, cb := a.CPUPerRequest(), b.CPUPerRequest(); ca > 0 && cb > 0 {
			t.ByCPU = fmt.Sprintf("%.2f× (%s vs %s)", float64(cb)/float64(ca), report.CPUCell(b), report.CPUCell(a))
		}
	}
	return t
}

func (rep *BenchReport) memTarget(first report.Pair) target {
	t := target{Goal: "memory per key ≤ 0.4× Redis+Lua (" + first.Native + ")"}
	for _, m := range rep.Memory {
		if m.Native == first.Native && m.Rlstore != nil && m.Redis != nil && m.Redis.BytesPerKey > 0 {
			got := m.Rlstore.BytesPerKey / m.Redis.BytesPerKey
			t.Known, t.Met = true, got <= 0.4
			t.Measured = fmt.Sprintf("%.2f× (%.0f B vs %.0f B)", got, m.Rlstore.BytesPerKey, m.Redis.BytesPerKey)
		}
	}
	return t
}

func (rep *BenchReport) overTarget() target {
	t := target{Goal: "0 over-admissions (rlstore)"}
	var over, runs int64
	for _, r := range rep.Accuracy {
		if r.System == "rlstore" {
			over += r.Result.Accuracy.OverAdmitted
			runs++
		}
	}
	if runs > 0 {
		t.Known, t.Met = true, over == 0
		t.Measured = fmt.Sprintf("%d over-admitted units in %d runs", over, runs)
	}
	return t
}

func (rep *BenchReport) writeTargets(p func(string, ...any)) {
	p("\n## Targets\n")
	p("Throughput decides \"met\". The CPU column divides the other side's server CPU per request by rlstore's: the same ratio in work per request, which other load on the host hardly moves.\n")
	p("| goal | measured | by CPU per request | met |")
	p("|---|---|---|---|")
	for _, t := range rep.Targets() {
		met := "not measured"
		if t.Known {
			met = map[bool]string{true: "yes", false: "**no**"}[t.Met]
		}
		byCPU := t.ByCPU
		if byCPU == "" {
			byCPU = "—"
		}
		p("| %s | %s | %s | %s |", t.Goal, t.Measured, byCPU, met)
	}
}
