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
type Script struct {
	Name   string // file name without .lua
	Source string
	SHA    string // what SCRIPT LOAD returns and EVALSHA takes
}

// LoadScript returns the shipped script name: slide, log, gcra or fixed.
func LoadScript(name string) (Script, error) {
	b, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		return Script{}, fmt.Errorf("loadtest: no Lua script %q: %w", name, err)
	}
	sum := sha1.Sum(b)
	return Script{Name: name, Source: string(b), SHA: hex.EncodeToString(sum[:])}, nil
}
