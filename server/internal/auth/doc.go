// Package auth decides who may use the server: the users of an ACL file,
// and the guard that slows down password guessing.
package auth
