// Package core is the command table, the per-connection session and the one dispatch pipeline that every command goes through.
package core
