// Package policy holds rlstore's named multi-rule policies and the parser of algorithm parameters that commands and rules share.
package policy
