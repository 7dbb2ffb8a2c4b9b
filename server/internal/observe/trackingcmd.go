package observe

import (
	"bytes"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// invalidateChannel is the pub/sub channel a RESP2 redirect target
// subscribes to for invalidations, as in Redis.
const invalidateChannel = "__redis__:invalidate"

// Replies of CLIENT TRACKING and CLIENT CACHING, in Redis's words.
const (
	errTrackPrefix     = "ERR PREFIX option requires BCAST mode to be enabled"
	errTrackRedir      = "ERR The client ID you want redirect to does not exist"
	errTrackBothOpt    = "ERR You can't use both OPTIN and OPTOUT"
	errTrackBcastOpt   = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	errTrackSwitchB    = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	errTrackSwitchO    = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	errCachingNoTrack  = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	errCachingYesOptin = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	errCachingNoOptout = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
	errSyntax          = "ERR syntax error"
	errNotInt          = "ERR value is not an integer or out of range"
)

// TrackingCommands are CLIENT's subcommands for client-side caching.
func (o *Observers) TrackingCommands() []core.Command {
	return []core.Command{
		{Name: "tracking", Arity: -3, Run: o.with(o.clientTracking), Summary: "Turns client-side caching invalidations on or off"},
		{Name: "caching", Arity: 3, Flags: core.FlagKeepsCaching, Run: o.with(clientCaching), Summary: "Says whether the next command's keys are tracked (OPTIN/OPTOUT)"},
		{Name: "getredir", Arity: 2, Run: o.with(clientGetRedir), Summary: "Returns the client id invalidations are redirected to"},
		{Name: "trackinginfo", Arity: 2, Run: o.with(clientTrackingInfo), Summary: "Describes this connection's tracking"},
	}
}

// with makes a command of a Client a core.RunFunc: it finds the session's
// Client in observe's slot.
func (o *Observers) with(run func(c *Client, args [][]byte)) core.RunFunc {
	return func(x *core.Session, args [][]byte) { run(o.slot.Get(x), args) }
}

// cmdClientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p …] [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
func (o *Observers) clientTracking(c *Client, args [][]byte) {
	on := core.EqualFold(args[2], "on")
	if !on && !core.EqualFold(args[2], "off") {
		c.x.Out.WriteError(errSyntax)
		return
	}
	conf, reply := parseTracking(args[3:])
	if reply == "" && on {
		reply = o.checkTracking(c, conf)
	}
	if reply != "" {
		c.x.Out.WriteError(reply)
		return
	}
	if on {
		o.startTracking(c, conf)
	} else {
		o.stopTracking(c)
		c.track.caching = 0
	}
	c.x.Out.WriteString("OK")
}

// parseTracking parses CLIENT TRACKING's options.
func parseTracking(opts [][]byte) (*trackConf, string) {
	conf := &trackConf{}
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		switch {
		case core.EqualFold(o, "bcast"):
			conf.bcast = true
		case core.EqualFold(o, "optin"):
			conf.optin = true
		case core.EqualFold(o, "optout"):
			conf.optout = true
		case core.EqualFold(o, "noloop"):
			conf.noloop = true
		case core.EqualFold(o, "redirect") && i+1 < len(opts):
			id, ok := policy.ParseInt(opts[i+1])
			if !ok {
				return nil, errNotInt
			}
			conf.redirect, i = id, i+1
		case core.EqualFold(o, "prefix") && i+1 < len(opts):
			conf.prefixes, i = append(conf.prefixes, bytes.Clone(opts[i+1])), i+1
		default:
			return nil, errSyntax
		}
	}
	return conf, ""
}

// checkTracking returns the error refusing conf for c, in Redis's order, or "".
func (o *Observers) checkTracking(c *Client, conf *trackConf) string {
	old := c.trackConf.Load()
	switch {
	case len(conf.prefixes) > 0 && !conf.bcast:
		return errTrackPrefix
	case conf.redirect != 0 && conf.redirect != c.id && o.byID(conf.redirect) == nil:
		return errTrackRedir
	case old != nil && old.bcast != conf.bcast:
		return errTrackSwitchB
	case conf.bcast && (conf.optin || conf.optout):
		return errTrackBcastOpt
	case conf.optin && conf.optout:
		return errTrackBothOpt
	case old != nil && (conf.optin && old.optout || conf.optout && old.optin):
		return errTrackSwitchO
	}
	return prefixOverlap(conf.prefixes)
}

// prefixOverlap refuses two prefixes of which one starts the other, as Redis does.
func prefixOverlap(ps [][]byte) string {
	for i, a := range ps {
		for _, b := range ps[i+1:] {
			if bytes.HasPrefix(a, b) || bytes.HasPrefix(b, a) {
				return "ERR Prefix '" + core.QuoteArg(a, 128) + "' overlaps with another provided prefix '" +
					core.QuoteArg(b, 128) + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// startTracking turns c's tracking on with conf, or changes its options.
// Prefixes given again add to those already set, as in Redis.
func (o *Observers) startTracking(c *Client, conf *trackConf) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if old := c.trackConf.Load(); old != nil {
		conf.prefixes = append(append([][]byte(nil), old.prefixes...), conf.prefixes...)
	} else {
		o.active.Add(1)
	}
	c.brokenRedir.Store(false)
	c.trackConf.Store(conf)
	initMaps(o)
	o.trackers[c.id] = c
	if conf.bcast {
		o.bcast[c.id] = c
	}
}

// stopTracking turns c's tracking off. The keys it read stay in the table
// until they change, when the server finds it no longer tracks.
func (o *Observers) stopTracking(c *Client) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c.trackConf.Load() == nil {
		return
	}
	c.trackConf.Store(nil)
	delete(o.trackers, c.id)
	delete(o.bcast, c.id)
	o.active.Add(-1)
}

func initMaps(o *Observers) {
	if o.trackers == nil {
		o.keys, o.trackers = map[string]*trackedKey{}, map[int64]*Client{}
		o.bcast, o.monitors = map[int64]*Client{}, map[int64]*Client{}
		o.watched = map[string]struct{}{}
	}
}

// Forget drops a closed client's tracking and MONITOR.
func (o *Observers) Forget(c *Client) {
	o.stopTracking(c)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.monitors[c.id]; ok {
		delete(o.monitors, c.id)
		o.active.Add(-1)
	}
}

// cmdClientCaching is CLIENT CACHING YES|NO: whether the next command's keys
// are tracked, in OPTIN or OPTOUT mode.
func clientCaching(c *Client, args [][]byte) {
	conf := c.trackConf.Load()
	yes, no := core.EqualFold(args[2], "yes"), core.EqualFold(args[2], "no")
	switch {
	case conf == nil || (!conf.optin && !conf.optout):
		c.x.Out.WriteError(errCachingNoTrack)
	case yes && !conf.optin:
		c.x.Out.WriteError(errCachingYesOptin)
	case no && !conf.optout:
		c.x.Out.WriteError(errCachingNoOptout)
	case yes:
		c.track.caching = 1
		c.x.Out.WriteString("OK")
	case no:
		c.track.caching = -1
		c.x.Out.WriteString("OK")
	default:
		c.x.Out.WriteError(errSyntax)
	}
}

// cmdClientGetRedir is -1 when tracking is off, else the redirect (0 for none).
func clientGetRedir(c *Client, args [][]byte) {
	c.x.Out.WriteInt64(c.Redir())
}

// Redir is the client id c's invalidations are redirected to: -1 when
// tracking is off, 0 for none.
func (c *Client) Redir() int64 {
	conf := c.trackConf.Load()
	if conf == nil {
		return -1
	}
	return conf.redirect
}

// cmdClientTrackingInfo is Redis's map of flags, redirect and prefixes.
func clientTrackingInfo(c *Client, args [][]byte) {
	conf := c.trackConf.Load()
	var prefixes [][]byte
	if conf != nil {
		prefixes = conf.prefixes
	}
	c.x.WriteMapLen(3)
	c.x.Out.WriteBulkString("flags")
	writeStrings(c.x, trackingFlags(c, conf))
	c.x.Out.WriteBulkString("redirect")
	c.x.Out.WriteInt64(c.Redir())
	c.x.Out.WriteBulkString("prefixes")
	c.x.Out.WriteArray(len(prefixes))
	for _, p := range prefixes {
		c.x.Out.WriteBulk(p)
	}
}

func trackingFlags(c *Client, conf *trackConf) []string {
	if conf == nil {
		return []string{"off"}
	}
	f := []string{"on"}
	for _, x := range []struct {
		on   bool
		name string
	}{
		{conf.bcast, "bcast"}, {conf.optin, "optin"}, {conf.optout, "optout"},
		{c.track.caching == 1, "caching-yes"}, {c.track.caching == -1, "caching-no"},
		{conf.noloop, "noloop"}, {c.brokenRedir.Load(), "broken_redirect"},
	} {
		if x.on {
			f = append(f, x.name)
		}
	}
	return f
}

// PubsubCommands are SUBSCRIBE and UNSUBSCRIBE, enough for a RESP2 client to
// receive the invalidations another connection redirects to it on
// __redis__:invalidate. rlstore has no PUBLISH: other channels stay silent.
func (o *Observers) PubsubCommands() []core.Command {
	return []core.Command{
		{Name: "subscribe", Arity: -2, Run: o.with(subscribe), Group: "pubsub", Summary: "Subscribes to channels; only __redis__:invalidate carries messages"},
		{Name: "unsubscribe", Arity: -1, Run: o.with(unsubscribe), Group: "pubsub", Summary: "Unsubscribes from channels, or all"},
	}
}

// writeStrings writes an array of bulk strings.
func writeStrings(x *core.Session, v []string) {
	x.Out.WriteArray(len(v))
	for _, s := range v {
		x.Out.WriteBulkString(s)
	}
}

func subscribe(c *Client, args [][]byte) {
	for _, ch := range args[1:] {
		if c.channels == nil {
			c.channels = map[string]bool{}
		}
		c.channels[string(ch)] = true
		writeSubReply(c, "subscribe", ch, len(c.channels))
	}
	c.subscribedInvalidate.Store(c.channels[invalidateChannel])
	c.subCount.Store(int64(len(c.channels)))
}

func unsubscribe(c *Client, args [][]byte) {
	chans := args[1:]
	if len(chans) == 0 {
		for ch := range c.channels {
			chans = append(chans, []byte(ch))
		}
	}
	if len(chans) == 0 {
		writeSubReply(c, "unsubscribe", nil, 0)
	}
	for _, ch := range chans {
		delete(c.channels, string(ch))
		writeSubReply(c, "unsubscribe", ch, len(c.channels))
	}
	c.subscribedInvalidate.Store(c.channels[invalidateChannel])
	c.subCount.Store(int64(len(c.channels)))
}

// writeSubReply is the [kind, channel, count] confirmation, a push in RESP3.
func writeSubReply(c *Client, kind string, ch []byte, n int) {
	if c.x.Proto == 3 {
		c.x.WriteHeader('>', 3)
	} else {
		c.x.Out.WriteArray(3)
	}
	c.x.Out.WriteBulkString(kind)
	if ch == nil {
		c.x.Null()
	} else {
		c.x.Out.WriteBulk(ch)
	}
	c.x.Out.WriteInt(n)
}
