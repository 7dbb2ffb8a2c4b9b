// Package durable runs write commands under the durability's rules: -MISCONF while the log cannot be written (a decision answered as a peek), replies held until an appendfsync always commit, and a failed commit's changes taken back.
package durable
