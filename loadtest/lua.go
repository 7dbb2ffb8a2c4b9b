package loadtest

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
)

//go:embed lua/*.lua
var luaFS embed.FS

// Script is a Lua script shipped with the load generator.
type script struct {
	Name   string // file name without .lua
	Source string
	SHA    string // what SCRIPT LOAD returns and EVALSHA takes
}

// loadScript returns the shipped script name: slide, log, gcra or fixed.
func loadScript(name string) (script, error) {
	b, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		return script{}, fmt.Errorf("loadtest: no Lua script %q: %w", name, err)
	}
	sum := sha1.Sum(b)
	return script{Name: name, Source: string(b), SHA: hex.EncodeToString(sum[:])}, nil
}
