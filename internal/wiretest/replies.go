// Package wiretest holds the RESP samples that the tests of the codec
// (internal/wire) and of its users (cluster's reply reader) share.
package wiretest

// Replies returns RESP2 and RESP3 replies of every kind, nested and null,
// each whole, in a slice of the caller's own.
func Replies() []string {
	return []string{
		"+OK\r\n", "-ERR no\r\n", ":42\r\n", "_\r\n", ",1.5\r\n", "#t\r\n", "(12345678901234567890\r\n",
		"$5\r\nhello\r\n", "$-1\r\n", "$0\r\n\r\n", "=8\r\ntxt:abcd\r\n", "!3\r\nerr\r\n",
		"*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:0\r\n", "*-1\r\n", "*0\r\n",
		"*2\r\n*1\r\n$1\r\nx\r\n%1\r\n+k\r\n:1\r\n", "~1\r\n$2\r\nab\r\n", ">2\r\n+a\r\n+b\r\n", "|1\r\n+a\r\n:1\r\n",
	}
}
