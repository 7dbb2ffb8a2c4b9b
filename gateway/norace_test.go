//go:build !race

package gateway_test

const underRace = false
