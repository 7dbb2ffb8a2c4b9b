// Package multi holds the transaction commands: MULTI, EXEC and DISCARD, and WATCH and UNWATCH, which rlstore answers without watching.
package multi
