// Package proc reads what the operating system says of this process: the CPU time it and its children have used, and its limit on open files.
package proc
