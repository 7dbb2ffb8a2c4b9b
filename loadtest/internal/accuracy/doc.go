// Package accuracy checks a trace of rate-limit decisions against the limit they enforce, given only when each request was sent and answered.
package accuracy
