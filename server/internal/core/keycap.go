package core

import "strconv"

// KeyTooLong returns the reply refusing args if one of the keys they name
// is longer than limit bytes (0: no limit), or "" if none is. It goes by
// cm's key positions, as COMMAND INFO reports them, so every keyed command
// is covered, reads included: a key that long can name nothing stored.
func (cm *Command) KeyTooLong(args [][]byte, limit int64) string {
	if limit <= 0 || cm.FirstKey <= 0 {
		return ""
	}
	last := cm.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := cm.FirstKey; i <= last && i < len(args); i += max(cm.KeyStep, 1) {
		if int64(len(args[i])) > limit {
			return "ERR key is longer than max-key-bytes (" + strconv.FormatInt(limit, 10) + " bytes)"
		}
	}
	return ""
}
