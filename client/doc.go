// Package client calls rlstore's decision commands through go-redis and returns typed decisions.
package client
