// Package wire is the RESP codec that the server and the cluster share: it parses requests, frames and reads replies, and encodes commands, and knows no command.
package wire
