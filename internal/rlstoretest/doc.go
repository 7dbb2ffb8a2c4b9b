// Package rlstoretest builds the rlstore binary and runs it as a child process, for tests.
package rlstoretest
