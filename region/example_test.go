package region_test

import (
	"fmt"
	"time"

	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/window"
)

func Example() {
	lim := region.Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	// Two regions, α = 0.1 and β = 0.5: an escrow e = 5 and a reserve φ = 25.
	eu, _ := region.New(region.Defaults(0, 2))
	us, _ := region.New(region.Defaults(1, 2))
	now := int64(1_800_000_000) * int64(time.Second)
	fmt.Println(eu.Decide([]byte("api:42"), lim, now, 5, false).Mode == region.Escrowed)
	fmt.Println(eu.Decide([]byte("api:42"), lim, now, 1, false).Mode == region.Reserved) // no acknowledgement yet
	fmt.Println(eu.Decide([]byte("api:42"), lim, now, 20, false).Mode == region.DeniedEscrow)
	for _, b := range eu.Sync(now) { // the exchange, every --region-sync
		if b != nil {
			eu.Acked(us.Receive(b, now), now)
		}
	}
	d := us.Decide([]byte("api:42"), lim, now, 1, false)
	fmt.Println(d.Allowed, d.Own, d.Others)
	// Output:
	// true
	// true
	// true
	// true 1 6
}
