package server

import (
	"github.com/rlstore/rlstore/server/internal/auth"
)

// ACLFileHasPassword loads the ACL file at path and reports whether no one
// can use the server without a password: every user it turns on needs one,
// and so does the default user (the file's, or else requirepass). Protected
// mode counts that as a password. It returns the file's error, if any.
func ACLFileHasPassword(path, requirePass string) (bool, error) {
	a, err := auth.Load(path)
	if err != nil {
		return false, err
	}
	return a.NeedsPasswords(requirePass), nil
}
