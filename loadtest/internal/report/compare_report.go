package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rlstore/rlstore/loadtest/internal/proc"
)

// MemRow is one pair's memory per key.
type MemRow struct {
	Pair
	Keys    uint64       `json:"keys"`
	Rlstore *proc.Memory `json:"rlstore,omitempty"`
	Redis   *proc.Memory `json:"redis_lua,omitempty"`
}

// ratio formats a/b, or a dash when either is missing.
func ratio(a, b float64, okA, okB bool) string {
	if !okA || !okB || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func Tput(r *Result) (float64, string) {
	if r == nil {
		return 0, "—"
	}
	if r.RunError != "" {
		return r.Throughput, "failed: " + r.RunError
	}
	return r.Throughput, HumanCount(r.Throughput) + "/s"
}

func p99(r *Result) (float64, string) {
	if r == nil {
		return 0, "—"
	}
	return float64(r.Latency.P99), Dur(r.Latency.P99)
}

func perKey(m *proc.Memory) (float64, string) {
	if m == nil {
		return 0, "—"
	}
	note := ""
	if m.Basis != "RSS" {
		note = " (by " + m.Basis + ")"
	}
	if m.Expired() {
		note += fmt.Sprintf(" (only %d of %d keys left)", m.KeysAfter-m.KeysBefore, m.KeysSent)
	}
	return m.BytesPerKey, fmt.Sprintf("%.0f B%s", m.BytesPerKey, note)
}

// compareCells returns one row's cells: throughput, p99 and their ratios.
func compareCells(r Row) []string {
	a, as := Tput(r.Rlstore)
	b, bs := Tput(r.RedisRes)
	c, cs := p99(r.Rlstore)
	d, ds := p99(r.RedisRes)
	redis := r.Redis
	if redis == "" {
		redis = "—"
	}
	return []string{
		r.Native, redis, fmt.Sprint(r.Pipeline),
		as, bs, ratio(a, b, r.Rlstore != nil, r.RedisRes != nil),
		cs, ds, ratio(c, d, r.Rlstore != nil, r.RedisRes != nil),
		CPUCell(r.Rlstore), CPUCell(r.RedisRes),
		denyShare(r.Rlstore), denyShare(r.RedisRes),
	}
}

func CPUCell(r *Result) string {
	if c := r.CPUPerRequest(); c > 0 {
		return fmt.Sprintf("%.2f µs", float64(c)/1e3)
	}
	return "—"
}

func denyShare(r *Result) string {
	if r == nil || r.Requests == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(r.Denied)/float64(r.Requests))
}

func compareHeader() []string {
	return []string{"rlstore", "Redis+Lua", "P", "rlstore req/s", "Redis req/s", "ratio", "rlstore p99", "Redis p99", "ratio", "rlstore CPU/req", "Redis CPU/req", "rlstore denied", "Redis denied"}
}

func memCells(m MemRow) []string {
	a, as := perKey(m.Rlstore)
	b, bs := perKey(m.Redis)
	name := m.Pair.Redis
	if name == "" {
		name = "—"
	}
	return []string{m.Native, name, fmt.Sprint(m.Keys), as, bs, ratio(a, b, m.Rlstore != nil, m.Redis != nil)}
}

func memHeader() []string {
	return []string{"rlstore", "Redis+Lua", "keys", "rlstore bytes/key", "Redis bytes/key", "ratio"}
}

// WriteCompare prints the comparison as aligned text.
func WriteCompare(out io.Writer, rows []Row, mem []MemRow) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	writeTabRow(tw, compareHeader())
	for _, r := range rows {
		writeTabRow(tw, compareCells(r))
	}
	tw.Flush()
	if len(mem) == 0 {
		return
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	writeTabRow(tw, memHeader())
	for _, m := range mem {
		writeTabRow(tw, memCells(m))
	}
	tw.Flush()
}

func writeTabRow(w io.Writer, cells []string) {
	fmt.Fprintln(w, strings.Join(cells, "\t")+"\t")
}

// MarkdownCompare writes the comparison as Markdown tables.
func MarkdownCompare(out io.Writer, rows []Row) {
	writeMarkdownRow(out, compareHeader())
	writeMarkdownRow(out, alignRow(len(compareHeader())))
	for _, r := range rows {
		writeMarkdownRow(out, compareCells(r))
	}
}

// MarkdownMemory writes the memory table as Markdown.
func MarkdownMemory(out io.Writer, mem []MemRow) {
	writeMarkdownRow(out, memHeader())
	writeMarkdownRow(out, alignRow(len(memHeader())))
	for _, m := range mem {
		writeMarkdownRow(out, memCells(m))
	}
}

func alignRow(n int) []string {
	cells := make([]string, n)
	for i := range cells {
		cells[i] = "---:"
	}
	cells[0], cells[1] = "---", "---"
	return cells
}

func writeMarkdownRow(w io.Writer, cells []string) {
	fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
}
