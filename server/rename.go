package server

import (
	"fmt"
	"strings"
)

// renameCommands applies redis.conf's rename-command: each command named by
// a key of renames is served under its value instead, or not at all if the
// value is "" (FLUSHALL "" takes from clients the power to reset every
// quota at once). A command that follows another (FLUSHDB follows FLUSHALL)
// is disabled when that one is renamed, unless renames names it too. Names
// are without case. Replies, COMMAND and the logs keep the command's own
// name, as Redis's do.
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
	for _, cm := range s.commands {
		if cm.follows != "" && renamed(renames, cm.follows) && !renamed(renames, cm.name) {
			delete(s.commands, cm.name)
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

// renamed reports whether renames names the command called name.
func renamed(renames map[string]string, name string) bool {
	for old := range renames {
		if strings.EqualFold(old, name) {
			return true
		}
	}
	return false
}
