// Package resp is the RESP transport beneath the server: it frames and
// parses requests, and reads and writes sockets; it knows no command.
package resp
