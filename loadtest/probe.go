package loadtest

import (
	"bytes"
	"context"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// supported reports whether the server at addr knows wl's command: it sends
// the setup and one request on a probe key and looks for "unknown command".
// A server that answers anything else, even another error, supports it.
func supported(ctx context.Context, addr string, wl Workload) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl, err := resp.Dial(ctx, addr)
	if err != nil {
		return false
	}
	defer cl.Close()
	for _, cmd := range wl.Setup {
		if rep, err := cl.Do(ctx, cmd...); err != nil || unknown(rep) {
			return false
		}
	}
	cl.Buf = wl.Template().Append(cl.Buf[:0], []byte("loadtest:probe"))
	if err := cl.Write(cl.Buf); err != nil {
		return false
	}
	return cl.Read(&cl.Rep) == nil && !unknown(&cl.Rep)
}

func unknown(rep *resp.Reply) bool {
	return rep.IsError() && bytes.Contains(bytes.ToLower(rep.Str), []byte("unknown command"))
}
