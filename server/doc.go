// Package server serves rlstore's commands to Redis clients over RESP, on redcon.
package server
