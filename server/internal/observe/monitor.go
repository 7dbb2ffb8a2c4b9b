package observe

import (
	"strconv"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// MonitorLine formats one MONITOR line as Redis words it, with the
// arguments in hide redacted:
// +1700000000.123456 [0 127.0.0.1:5000] "rl.slide" "k" "10" "60"
func MonitorLine(now time.Time, addr string, args [][]byte, hide core.Hidden) []byte {
	b := []byte{'+'}
	b = strconv.AppendInt(b, now.Unix(), 10)
	us := strconv.Itoa(now.Nanosecond()/1000 + 1000000)
	b = append(append(b, '.'), us[1:]...)
	b = append(append(append(b, " [0 "...), addr...), "] "...)
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if i >= hide.From && i < hide.To {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// appendRepr quotes a as Redis's sdscatrepr does.
func appendRepr(b, a []byte) []byte {
	b = append(b, '"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\a':
			b = append(b, `\a`...)
		case '\b':
			b = append(b, `\b`...)
		default:
			if ch >= ' ' && ch <= '~' {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', "0123456789abcdef"[ch>>4], "0123456789abcdef"[ch&15])
			}
		}
	}
	return append(b, '"')
}
