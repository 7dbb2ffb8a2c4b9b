package httplimit_test

import (
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/client"
	"github.com/rlstore/rlstore/client/httplimit"
)

// 100 requests per minute per client IP, in a sliding window; 429 with
// RateLimit headers and Retry-After beyond that.
func Example() {
	rl := client.New(redis.NewClient(&redis.Options{
		Addr:                  "127.0.0.1:6379",
		ContextTimeoutEnabled: true, // so httplimit.Config.Timeout (250 ms by default) bounds a decision
	}))
	limiter, err := httplimit.New(httplimit.Config{
		Client: rl,
		Rule:   client.Rule{Algorithm: "SLIDE", Limit: 100, Window: time.Minute},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("hello\n")) })
	_ = http.Handler(limiter.Handler(mux)) // http.ListenAndServe(":8080", limiter.Handler(mux))
}
