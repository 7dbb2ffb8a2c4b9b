package gateway

// LeanCounts are the connections the lean loop served and those it handed to grpc-go.
func LeanCounts(s *Server) (served, handed int64) {
	if s.lean == nil {
		return 0, 0
	}
	return s.lean.served.Load(), s.lean.handed.Load()
}
