package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/tidwall/redcon"
)

// ProtocolError is a malformed or oversized request. The client gets
// "-ERR Protocol error: …" and is disconnected, as Redis does.
type ProtocolError string

func (e ProtocolError) Error() string { return "Protocol error: " + string(e) }

// The protocol errors, in Redis's words where Redis has them.
const (
	ErrProtoMultibulk   ProtocolError = "invalid multibulk length"
	ErrProtoBulk        ProtocolError = "invalid bulk length"
	ErrProtoInline      ProtocolError = "too big inline request"
	ErrProtoTooBig      ProtocolError = "request is larger than max-request-bytes"
	ErrProtoUnauthCount ProtocolError = "unauthenticated multibulk length"
	ErrProtoUnauthBulk  ProtocolError = "unauthenticated bulk length"
)

// MaxInline caps an inline (telnet-style) request line. redcon, which splits
// such lines, makes one allocation per word as long as the rest of the line;
// the cap keeps that cheap. RESP clients never send inline.
const MaxInline = 4 << 10

// MinBulk is the size of the smallest bulk string, "$0\r\n\r\n".
const MinBulk = 6

// What a client that has not authenticated may send, as in Redis: an array
// of at most 10 bulk strings, none longer than 16 KiB.
const (
	preAuthMaxArgs = 10
	preAuthMaxBulk = 16 << 10
)

// Parser reads one client's requests out of its read buffer: the one parse
// each request gets. It checks the framing as it goes, so an oversized length
// is refused before anything is sized for it and no request grows past Max: // each header is checked against what is left of max before a byte of what
// it announces is awaited. It is stricter than Redis (digits only, no "*0").
//
// A request may arrive in many reads. The parser keeps its place between
// them, as offsets from the request's first byte, so the buffer may move,
// and a request trickled in is not parsed again from its start each time.
type Parser struct {
	Max     int64 // the largest request, in bytes
	PreAuth bool  // the client has not authenticated: Redis's tighter caps apply

	n      int      // bulk strings the array announced; 0 until its header is read
	pos    int      // bytes of the request parsed: through the last whole header or bulk string
	need   int      // the request is not whole before this many bytes have arrived
	offs   []int    // start and end of each bulk string's data, relative to the request
	inline [][]byte // the arguments of an inline request, which redcon splits
}

// restart forgets the request under way, to parse it again from its start.
func (p *Parser) Restart() {
	p.n, p.pos, p.need, p.offs, p.inline = 0, 0, 0, p.offs[:0], nil
}

// idle reports whether the parser stands between requests.
func (p *Parser) Idle() bool { return p.n == 0 && p.need == 0 }

// next parses the request at the start of b. It returns the request's
// length once it is whole, after which args returns its arguments; 0 if b
// does not hold all of it yet; or the protocol error that ends the stream.
func (p *Parser) Next(b []byte) (int, error) {
	if len(b) < p.need || len(b) == 0 {
		return 0, nil
	}
	if p.n == 0 {
		if b[0] != '*' {
			return p.inlineLine(b)
		}
		if err := p.header(b); err != nil || p.n == 0 {
			return 0, err
		}
	}
	p.bulks(b)
	for k := len(p.offs) / 2; k < p.n; k++ {
		end, stop, err := p.bulk(b, k)
		if err != nil || p.need > 0 {
			return 0, err
		}
		p.offs = append(p.offs, end, stop)
	}
	n := p.pos
	p.n, p.pos, p.need = 0, 0, 0
	return n, nil
}

// NextArgs is Next and then Args into dst, for a request of at most
// maxArgs arguments: it returns the request's length, and dst with its
// arguments appended; n is 0 if b does not hold all of it yet, or if it
// has more arguments than maxArgs, which it leaves unread (Next then
// reads it from its start). A request that has all arrived and that the
// parser had not begun, as most of a pipeline's are, is read straight
// into dst (wholeArgs), rather than into offsets that are sliced after:
// that cost about 30 instructions an argument.
func (p *Parser) NextArgs(b []byte, dst [][]byte, maxArgs int) (n int, out [][]byte, err error) {
	if p.Idle() && len(b) > 0 && b[0] == '*' {
		if n, out = p.wholeArgs(b, dst, maxArgs); n > 0 {
			return n, out, nil
		}
		p.Restart() // Next reads it again, and finds what stopped wholeArgs
	}
	if n, err = p.Next(b); n == 0 || err != nil {
		return 0, dst, err
	}
	if p.NumArgs() > maxArgs {
		p.Skip()
		return 0, dst, nil
	}
	return n, p.Args(b[:n], dst), nil
}

// wholeArgs reads the request at the start of b into dst, as Next's
// header, bulks and bulk read it into the parser, if it has all arrived, is
// well formed and has at most maxArgs arguments, fewer than 100; else it
// returns 0, and the parser is to be restarted. A request of more than
// maxArgs is refused before anything is appended, so that dst never grows
// for it. Its place is kept in locals: the parser is written only for a
// bulk string left to bulk, which a request mostly has none of.
func (p *Parser) wholeArgs(b []byte, dst [][]byte, maxArgs int) (int, [][]byte) {
	if len(b) < 5 {
		return 0, dst
	}
	n64, pos := shortLenOf(binary.LittleEndian.Uint32(b[1:5]), 1) // the count, as header reads it
	n := int(n64)
	if pos == 0 || n > maxArgs || n64*MinBulk > p.Max || p.PreAuth && n > preAuthMaxArgs {
		return 0, dst
	}
	from, k := len(dst), 0
	if cap(dst)-from < n {
		dst = slices.Grow(dst, n)
	}
	args := dst[from : from+n]
	short := b // cut as bulks cuts it
	if lim := p.Max - int64(n-1)*MinBulk; lim < int64(len(b)) {
		short = b[:max(lim, 0)]
	}
	for ; k < len(args) && pos+8 <= len(short); k++ {
		w := binary.LittleEndian.Uint64(short[pos : pos+8])
		size, end := shortLenOf(uint32(w>>8), pos+1)
		stop := end + int(size)
		if byte(w) != '$' || end == 0 || stop+2 > len(short) || binary.LittleEndian.Uint16(short[stop:stop+2]) != 0x0a0d {
			break
		}
		args[k] = short[end:stop:stop]
		pos = stop + 2
	}
	if k == len(args) {
		return pos, dst[:from+n]
	}
	p.n, p.pos = n, pos
	for ; k < len(args); k++ {
		end, stop, err := p.bulk(b, k)
		if err != nil || p.need > 0 {
			return 0, dst
		}
		args[k] = b[end:stop:stop]
	}
	pos = p.pos
	p.n, p.pos, p.need = 0, 0, 0
	return pos, dst[:from+n]
}

// args appends the arguments of the request req, which next has just
// delimited, to dst. They point into req.
func (p *Parser) Args(req []byte, dst [][]byte) [][]byte {
	if p.inline != nil {
		dst = append(dst, p.inline...)
		p.inline = nil
		return dst
	}
	for i := 0; i < len(p.offs); i += 2 {
		dst = append(dst, req[p.offs[i]:p.offs[i+1]:p.offs[i+1]])
	}
	p.offs = p.offs[:0]
	return dst
}

// header reads the array header "*<count>\r\n". It leaves p.n at 0 while
// the header is incomplete. A count of one or two digits is read as
// shortLenOf reads a bulk string's length, without number's call and its
// division: about 110 instructions a request before, 55 now.
func (p *Parser) header(b []byte) error {
	if len(b) >= 5 { // one or two digits, as most counts are, read as one word
		n, end := shortLenOf(binary.LittleEndian.Uint32(b[1:5]), 1)
		if end != 0 && n*MinBulk <= p.Max && (!p.PreAuth || n <= preAuthMaxArgs) {
			p.n, p.pos, p.need, p.offs = int(n), end, 0, p.offs[:0]
			return nil
		}
	}
	limit, errLimit := p.Max/MinBulk, ErrProtoMultibulk
	if p.PreAuth {
		limit, errLimit = min(limit, preAuthMaxArgs), ErrProtoUnauthCount
	}
	n, end, err := number(b, 1, limit, ErrProtoMultibulk, errLimit)
	switch {
	case err != nil:
		return err
	case end == 0:
		p.need = len(b) + 1
		return nil
	case n == 0:
		return ErrProtoMultibulk
	}
	p.n, p.pos, p.need, p.offs = int(n), end, 0, p.offs[:0]
	return nil
}

// bulk reads bulk string k (those before it read), or as much of it as b
// holds, and returns where its data starts and ends; p.need is set to the
// bytes it waits for if b does not hold it all.
func (p *Parser) bulk(b []byte, k int) (end, stop int, err error) {
	i := p.pos
	if i >= len(b) {
		p.need = i + 1
		return 0, 0, nil
	}
	if b[i] != '$' {
		return 0, 0, errExpectedDollar(b[i])
	}
	size, end := shortLen(b, i+1)
	if end == 0 || size > p.Max {
		limit, errLimit := p.Max, ErrProtoBulk
		if p.PreAuth {
			limit, errLimit = min(limit, preAuthMaxBulk), ErrProtoUnauthBulk
		}
		if size, end, err = number(b, i+1, limit, ErrProtoBulk, errLimit); err != nil {
			return 0, 0, err
		}
		if end == 0 {
			p.need = len(b) + 1
			return 0, 0, nil
		}
	}
	// The bytes through the digits, "\r\n", the data, "\r\n", and the bulk
	// strings still due at their smallest.
	rest := int64(p.n - k - 1)
	if int64(end)+size+2+rest*MinBulk > p.Max {
		return 0, 0, ErrProtoTooBig
	}
	stop = end + int(size)
	if len(b) < stop+2 {
		p.need = stop + 2
		return 0, 0, nil
	}
	if b[stop] != '\r' || b[stop+1] != '\n' {
		return 0, 0, ErrProtoBulk
	}
	p.pos, p.need = stop+2, 0
	return end, stop, nil
}

// bulks reads, with its place in locals, the bulk strings b holds whole
// whose lengths are one or two digits (shortLenOf), as most arguments are,
// and leaves anything else (a longer length, a string not all arrived, an
// error, a request near Max) to bulk, which then finds it where bulks
// stopped. A lease pair's nine arguments took about 90 instructions each
// through bulk, and about 80 here while each string was checked against
// Max and its bytes read one at a time; about 57 now:
//   - b is cut short of where a string could pass Max with the strings
//     still due at their smallest (MinBulk each), so that one bound
//     stands for both checks; a string past the cut is left to bulk's
//     exact check;
//   - a string's head ("$n\r\n" and more) is read as one word, and its
//     "\r\n" as another. A head is read 8 bytes at a time, which the
//     smallest bulk string and the next one's "$" always have unless it is
//     the last in b: bulk reads that one.
func (p *Parser) bulks(b []byte) {
	offs, pos, n := p.offs, p.pos, p.n
	if lim := p.Max - int64(n-1)*MinBulk; lim < int64(len(b)) {
		b = b[:max(lim, 0)]
	}
	for k := len(offs) / 2; k < n && pos+8 <= len(b); k++ {
		w := binary.LittleEndian.Uint64(b[pos : pos+8])
		size, end := shortLenOf(uint32(w>>8), pos+1)
		stop := end + int(size)
		if byte(w) != '$' || end == 0 || stop+2 > len(b) || binary.LittleEndian.Uint16(b[stop:stop+2]) != 0x0a0d {
			break
		}
		offs = append(offs, end, stop)
		pos = stop + 2
	}
	p.offs, p.pos = offs, pos
}

// shortLen reads, without a call, the length most bulk strings have: one
// or two digits, the first not 0, then "\r\n", at b[i:]. end is the index
// after "\r\n", or 0 for any other length (number reads those). A lease
// pair's nine arguments spent about 60 instructions each in number's call.
func shortLen(b []byte, i int) (size int64, end int) {
	if i+4 > len(b) {
		return 0, 0
	}
	return shortLenOf(binary.LittleEndian.Uint32(b[i:]), i)
}

// shortLenOf is shortLen of the 4 bytes at b[i:], as a little-endian word:
// small enough to inline.
func shortLenOf(w uint32, i int) (size int64, end int) {
	if d := uint64(byte(w)) - '1'; d <= 8 {
		if w&0xffff00 == 0x0a0d00 {
			return int64(d) + 1, i + 3
		}
		if c := uint64(byte(w>>8)) - '0'; c <= 9 && w>>16 == 0x0a0d {
			return int64(10*d + 10 + c), i + 4
		}
	}
	return 0, 0
}

// number reads the decimal digits of a header from b[i:] up to its "\r\n",
// refusing a number above limit with errLimit and any other malformation
// with errBad. end is the index after "\r\n", or 0 if the header has not all
// arrived. A leading zero is refused, as Redis's string2ll refuses it.
func number(b []byte, i int, limit int64, errBad, errLimit ProtocolError) (n int64, end int, err error) {
	if i+3 < len(b) && '1' <= b[i] && b[i] <= '9' { // one or two digits, as most lengths are
		d := int64(b[i] - '0')
		switch {
		case b[i+1] == '\r' && b[i+2] == '\n' && d <= limit:
			return d, i + 3, nil
		case '0' <= b[i+1] && b[i+1] <= '9' && b[i+2] == '\r' && b[i+3] == '\n':
			if d = 10*d + int64(b[i+1]-'0'); d <= limit {
				return d, i + 4, nil
			}
		}
	}
	start := i
	for ; i < len(b); i++ {
		c := b[i]
		if c == '\r' {
			break
		}
		if c < '0' || c > '9' || (i > start && n == 0) {
			return 0, 0, errBad
		}
		if n = n*10 + int64(c-'0'); n > limit {
			return 0, 0, errLimit
		}
	}
	switch {
	case i == len(b):
		return 0, 0, nil
	case i == start:
		return 0, 0, errBad
	case i+1 == len(b):
		return 0, 0, nil
	case b[i+1] != '\n':
		return 0, 0, errBad
	}
	return n, i + 2, nil
}

// inlineLine reads an inline (telnet-style) request line, which redcon
// splits into arguments with its quoting rules. An empty line is a request
// with no arguments, which the caller skips.
func (p *Parser) inlineLine(b []byte) (int, error) {
	limit := int(min(MaxInline, p.Max))
	k := bytes.IndexByte(b, '\n')
	if k < 0 {
		if len(b) > limit {
			return 0, ErrProtoInline
		}
		p.need = len(b) + 1
		return 0, nil
	}
	p.need = 0
	if k+1 > limit {
		return 0, ErrProtoInline
	}
	line := b[:k+1]
	if len(bytes.TrimSpace(line)) == 0 {
		p.inline = [][]byte{}
		return k + 1, nil
	}
	cmd, err := redcon.Parse(line)
	if err != nil {
		return 0, ProtocolErrorOf(err)
	}
	p.inline = cmd.Args
	if p.inline == nil {
		p.inline = [][]byte{}
	}
	return k + 1, nil
}

// ProtocolErrorOf words redcon's error about an inline line as ours.
func ProtocolErrorOf(err error) ProtocolError {
	const prefix = "Protocol error: "
	msg := err.Error()
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return ProtocolError(msg[len(prefix):])
	}
	var perr ProtocolError
	if errors.As(err, &perr) {
		return perr
	}
	return ProtocolError(msg)
}

func errExpectedDollar(c byte) ProtocolError {
	if c < ' ' || c > '~' {
		c = ' ' // a raw byte could break the error line itself
	}
	return ProtocolError("expected '$', got '" + string(rune(c)) + "'")
}

// InArray reports whether the parser has read an array's header and awaits
// its bulk strings: a byte that starts a request is not what follows.
func (p *Parser) InArray() bool { return p.n != 0 }

// NumArgs is the number of arguments of the request Next has just
// delimited, before Args takes them.
func (p *Parser) NumArgs() int { return len(p.offs) / 2 }

// Skip forgets the arguments of the request Next has just delimited, for a
// caller that wants only where it ends.
func (p *Parser) Skip() { p.offs, p.inline = p.offs[:0], nil }
