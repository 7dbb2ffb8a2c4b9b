// Package decide is the decision commands: their reply, argument errors and counters, and the lease, reservation and refund commands, run on the store through a Front the server hands to New.
package decide
