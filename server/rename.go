package server

// renameCommands applies redis.conf's rename-command (core.Table.Rename).
func (s *Server) renameCommands(renames map[string]string) error {
	return s.table.Rename(renames)
}
