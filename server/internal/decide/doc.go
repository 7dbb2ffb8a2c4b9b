// Package decide is the decision commands' own code: so far their reply, which every decision writes from the session's scratch buffer.
package decide
