package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Errors that come from the caller's configuration rather than from an
// outage: retrying cannot help and failing open would hide them. A call's
// error wraps one of these and the server's reply, so errors.Is finds the
// class and the message keeps Redis's wording.
var (
	// ErrWrongType: the key holds another algorithm's state (WRONGTYPE),
	// usually two limiters sharing a key.
	ErrWrongType = errors.New("client: key holds another algorithm's state")
	// ErrBadArgs: rlstore refused the command's arguments (a limit out of
	// range, Cost(0), an unknown command).
	ErrBadArgs = errors.New("client: arguments refused")
	// ErrAuth: rlstore refused the client's credentials or their rights
	// (NOAUTH, WRONGPASS, NOPERM): a wrong or missing password or user.
	ErrAuth = errors.New("client: credentials refused")
)

// IsConfigError reports whether err is ErrWrongType, ErrBadArgs,
// ErrNoPolicy or ErrAuth: a mistake in the caller's configuration, not an
// outage.
func IsConfigError(err error) bool {
	return errors.Is(err, ErrWrongType) || errors.Is(err, ErrBadArgs) ||
		errors.Is(err, ErrNoPolicy) || errors.Is(err, ErrAuth)
}

// typed wraps an error reply to a decision command in its class. Every ERR
// reply a decision command can get names a bad argument or, for RL.CHECK, an
// unknown policy; NOAUTH, WRONGPASS and NOPERM (also from the connection's
// AUTH) are credentials; other prefixes (OOM, LOADING, TRYAGAIN, ...) and
// network errors are left as they are.
func typed(err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	switch {
	case isAuth(msg):
		return fmt.Errorf("%w: %w", ErrAuth, err)
	case strings.HasPrefix(msg, "WRONGTYPE"):
		return fmt.Errorf("%w: %w", ErrWrongType, err)
	case strings.HasPrefix(msg, "ERR no such policy"):
		return fmt.Errorf("%w: %w", ErrNoPolicy, err)
	case strings.HasPrefix(msg, "ERR "):
		return fmt.Errorf("%w: %w", ErrBadArgs, err)
	}
	return err
}

func isAuth(msg string) bool {
	for _, p := range []string{"NOAUTH", "WRONGPASS", "NOPERM"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
