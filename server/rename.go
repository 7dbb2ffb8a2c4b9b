package server

import (
	"fmt"
	"strings"
)

// renameCommands applies redis.conf's rename-command: each command named by
// a key of renames is served under its value instead, or not at all if the
// value is "" (FLUSHALL "" takes from clients the power to reset every
// quota at once). Names are without case. Replies, COMMAND and the logs keep
// the command's own name, as Redis's do.
func (s *Server) renameCommands(renames map[string]string) error {
	s.renamed = len(renames) > 0
	moved := map[string]*command{}
	for old, name := range renames {
		old, name = strings.ToLower(old), strings.ToLower(name)
		cm := s.commands[old]
		switch {
		case cm == nil:
			return fmt.Errorf("server: rename-command: no command %q", old)
		case len(name) > maxCommandName:
			return fmt.Errorf("server: rename-command: %q is longer than %d bytes", name, maxCommandName)
		}
		delete(s.commands, old)
		if name != "" {
			moved[name] = cm
		}
	}
	for name, cm := range moved {
		if _, taken := s.commands[name]; taken {
			return fmt.Errorf("server: rename-command: %q names a command already", name)
		}
		s.commands[name] = cm
	}
	return nil
}
