package server

import "bytes"

// protocolError is a malformed or oversized request. The client gets
// "-ERR Protocol error: …" and is disconnected, as Redis does.
type protocolError string

func (e protocolError) Error() string { return "Protocol error: " + string(e) }

// The protocol errors, in Redis's words where Redis has them.
const (
	errProtoMultibulk protocolError = "invalid multibulk length"
	errProtoBulk      protocolError = "invalid bulk length"
	errProtoInline    protocolError = "too big inline request"
	errProtoTooBig    protocolError = "request is larger than max-request-bytes"
)

// maxInline caps an inline (telnet-style) request line. redcon splits such a
// line with one allocation per word, each as long as the rest of the line, so
// its cost grows with the square of the line: the cap keeps that close to the
// cost of a RESP request of the same size. RESP clients never send inline.
const maxInline = 4 << 10

// minBulk is the size of the smallest bulk string, "$0\r\n\r\n".
const minBulk = 6

// The framer's states, one per position in the RESP grammar.
const (
	atStart   uint8 = iota // before the first byte of a request
	inInline               // inside an inline request line
	inCount                // after '*': digits of the array length
	atCountLF              // after the array length's '\r'
	atDollar               // expecting the '$' of the next bulk string
	inSize                 // after '$': digits of the bulk length
	atSizeLF               // after the bulk length's '\r'
	inData                 // inside a bulk string's bytes
	atDataCR               // expecting the '\r' after a bulk string
	atDataLF               // expecting the '\n' after a bulk string
)

// framer follows the RESP framing of one client's byte stream, chunk by
// chunk, as redcon will parse it. It sees every header before redcon does,
// so an oversized length is refused before anything is sized for it, and it
// counts the bytes of the request under way, so no request grows past max.
// It is stricter than redcon (digits only, no "*0"): whatever it passes,
// redcon frames the same way, so both agree where each request ends.
type framer struct {
	max   int64 // the largest request, in bytes
	state uint8
	num   int64 // the length being read: array count or bulk size
	ndig  int   // digits read of num
	args  int64 // bulk strings still due in this array
	skip  int64 // bulk bytes still due
	used  int64 // bytes of the request under way
}

// idle reports whether the framer stands between requests.
func (f *framer) idle() bool { return f.state == atStart }

// scan consumes b. It returns how many leading bytes are well framed, whether
// a request ended within them, and the error that stopped it, if any.
func (f *framer) scan(b []byte) (n int, ended bool, err error) {
	for n < len(b) {
		var k int
		switch f.state {
		case atStart:
			k, err = f.start(b[n])
		case inData:
			k = int(min(f.skip, int64(len(b)-n)))
			if f.skip -= int64(k); f.skip == 0 {
				f.state = atDataCR
			}
		case inInline:
			k, err = f.inline(b[n:])
		default:
			k, err = 1, f.step(b[n])
		}
		if err == nil && f.used+int64(k) > f.max {
			err = errProtoTooBig // a backstop: the header checks refuse such a request first
		}
		if err != nil {
			return n, ended, err
		}
		n += k
		f.used += int64(k)
		if f.state == atStart {
			ended, f.used = true, 0
		}
	}
	return n, ended, nil
}

// inline consumes the rest of an inline request line, or as much of it as b holds.
func (f *framer) inline(b []byte) (int, error) {
	k := bytes.IndexByte(b, '\n') + 1
	if k == 0 {
		k = len(b)
	} else {
		f.state = atStart
	}
	if f.used+int64(k) > min(maxInline, f.max) {
		return 0, errProtoInline
	}
	return k, nil
}

// step consumes one byte of RESP framing.
func (f *framer) step(c byte) error {
	switch f.state {
	case inCount:
		return f.count(c)
	case atCountLF:
		return f.expect(c, '\n', atDollar, errProtoMultibulk)
	case atDollar:
		return f.dollar(c)
	case inSize:
		return f.size(c)
	case atSizeLF:
		return f.sizeLF(c)
	case atDataCR:
		return f.expect(c, '\r', atDataLF, errProtoBulk)
	default: // atDataLF
		return f.dataLF(c)
	}
}

// start begins a request: RESP if it opens with '*', else an inline line,
// whose first byte is then left for inline to read.
func (f *framer) start(c byte) (int, error) {
	if c != '*' {
		f.state = inInline
		return 0, nil
	}
	f.state, f.num, f.ndig = inCount, 0, 0
	return 1, nil
}

// count reads the array length. It refuses one whose smallest possible
// body already exceeds max, before a byte of that body arrives.
func (f *framer) count(c byte) error {
	if c == '\r' && f.ndig > 0 && f.num > 0 {
		f.state, f.args = atCountLF, f.num
		return nil
	}
	if !f.digit(c) || f.num*minBulk > f.max {
		return errProtoMultibulk
	}
	return nil
}

func (f *framer) dollar(c byte) error {
	if c != '$' {
		if c < ' ' || c > '~' {
			c = ' ' // a raw byte could break the error line itself
		}
		return protocolError("expected '$', got '" + string(rune(c)) + "'")
	}
	f.state, f.num, f.ndig = inSize, 0, 0
	return nil
}

// size reads a bulk length. One longer than max is refused as Redis refuses
// one longer than proto-max-bulk-len; one that fits alone but not with the
// request so far and the bulk strings still due is refused at its '\r'.
// Either way redcon never sees the header's end.
func (f *framer) size(c byte) error {
	if c != '\r' {
		if !f.digit(c) || f.num > f.max {
			return errProtoBulk
		}
		return nil
	}
	if f.ndig == 0 {
		return errProtoBulk
	}
	// The bytes so far, "\r\n", the data, "\r\n", and the rest at their smallest.
	if f.used+2+f.num+2+(f.args-1)*minBulk > f.max {
		return errProtoTooBig
	}
	f.state = atSizeLF
	return nil
}

func (f *framer) sizeLF(c byte) error {
	if c != '\n' {
		return errProtoBulk
	}
	f.state, f.skip = inData, f.num
	if f.skip == 0 {
		f.state = atDataCR
	}
	return nil
}

func (f *framer) dataLF(c byte) error {
	if c != '\n' {
		return errProtoBulk
	}
	if f.args--; f.args == 0 {
		f.state = atStart
	} else {
		f.state = atDollar
	}
	return nil
}

// digit adds c to num. num never overflows: callers stop once it exceeds
// max. A leading zero is refused, as Redis's string2ll refuses it.
func (f *framer) digit(c byte) bool {
	if c < '0' || c > '9' || (f.ndig > 0 && f.num == 0) {
		return false
	}
	f.num = f.num*10 + int64(c-'0')
	f.ndig++
	return true
}

func (f *framer) expect(c, want byte, next uint8, err protocolError) error {
	if c != want {
		return err
	}
	f.state = next
	return nil
}
