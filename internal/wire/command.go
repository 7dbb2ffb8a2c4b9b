package wire

import "github.com/tidwall/redcon"

// CommandsSize is at least the bytes AppendCommand takes for every
// command of cmds: a buffer of it is allocated once, where growing one by
// appends copies a large payload (a handoff's chunk, a full sync) many
// times over.
func CommandsSize(cmds [][][]byte) int {
	n := 0
	for _, args := range cmds {
		n += 16 // *<count>\r\n
		for _, a := range args {
			n += len(a) + 16 // $<len>\r\n<a>\r\n
		}
	}
	return n
}

// AppendCommand appends args as a RESP array of bulk strings.
func AppendCommand(b []byte, args [][]byte) []byte {
	b = redcon.AppendArray(b, len(args))
	for _, a := range args {
		b = redcon.AppendBulk(b, a)
	}
	return b
}
