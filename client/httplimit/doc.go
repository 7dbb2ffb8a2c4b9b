// Package httplimit is net/http middleware that rate-limits requests with rlstore and answers 429 with standard headers.
package httplimit
