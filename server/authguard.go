package server

import "time"

// The defaults of the brute-force guard (auth.Guard).
const (
	DefaultAuthFailLimit  = 10
	DefaultAuthFailWindow = time.Minute
)
