// Package resp finds whole RESP commands (arrays of bulk strings) in a
// buffer, for the bare servers of this module.
package resp

// Commands returns how many whole commands buf starts with, and how many
// bytes they take.
func Commands(buf []byte) (n, used int) {
	for {
		end, ok := command(buf, used)
		if !ok {
			return n, used
		}
		n, used = n+1, end
	}
}

// command returns the end of the command that starts at buf[i], if whole.
func command(buf []byte, i int) (int, bool) {
	if i >= len(buf) || buf[i] != '*' {
		return 0, false
	}
	args, i, ok := number(buf, i+1)
	if !ok {
		return 0, false
	}
	for range args {
		if i >= len(buf) || buf[i] != '$' {
			return 0, false
		}
		size, j, ok := number(buf, i+1)
		if !ok || j+size+2 > len(buf) {
			return 0, false
		}
		i = j + size + 2
	}
	return i, true
}

// number reads the decimal number at buf[i] up to its CRLF, and returns it
// and where the next line starts.
func number(buf []byte, i int) (int, int, bool) {
	v := 0
	for ; i < len(buf) && buf[i] != '\r'; i++ {
		if buf[i] < '0' || buf[i] > '9' {
			return 0, 0, false
		}
		v = v*10 + int(buf[i]-'0')
	}
	if i+1 >= len(buf) {
		return 0, 0, false
	}
	return v, i + 2, true
}
