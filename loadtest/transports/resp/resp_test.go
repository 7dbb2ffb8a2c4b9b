package resp

import "testing"

func TestCommands(t *testing.T) {
	ping := "*1\r\n$4\r\nPING\r\n"
	for _, tc := range []struct {
		in      string
		n, used int
	}{
		{"", 0, 0},
		{ping, 1, len(ping)},
		{ping + ping + "*1\r\n$4\r\nPI", 2, 2 * len(ping)},
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 1, 20},
		{"*x\r\n", 0, 0},
	} {
		n, used := Commands([]byte(tc.in))
		if n != tc.n || used != tc.used {
			t.Errorf("Commands(%q) = %d, %d; want %d, %d", tc.in, n, used, tc.n, tc.used)
		}
	}
}
