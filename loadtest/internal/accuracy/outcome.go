package accuracy

// Outcome is what one request came to, as the client saw it.
type Outcome uint8

// Outcomes.
const (
	OutcomeOK      Outcome = iota // a reply that is not a decision (PING, INCR)
	OutcomeAllowed                // a decision reply admitting the request
	OutcomeDenied                 // a decision reply denying it
	OutcomeError                  // an error reply: the command did nothing
	OutcomeUnknown                // no reply: the server may or may not have admitted it
)
