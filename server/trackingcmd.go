package server

import (
	"bytes"
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
)

// trackingSubcommands are CLIENT's subcommands for client-side caching.
func trackingSubcommands() []command {
	return []command{
		{name: "tracking", arity: -3, run: cmdClientTracking, summary: "Turns client-side caching invalidations on or off"},
		{name: "caching", arity: 3, flags: flagKeepsCaching, run: cmdClientCaching, summary: "Says whether the next command's keys are tracked (OPTIN/OPTOUT)"},
		{name: "getredir", arity: 2, run: cmdClientGetRedir, summary: "Returns the client id invalidations are redirected to"},
		{name: "trackinginfo", arity: 2, run: cmdClientTrackingInfo, summary: "Describes this connection's tracking"},
	}
}

// cmdClientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p …] [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
func cmdClientTracking(s *Server, c *client, args [][]byte) {
	on := equalFoldASCII(args[2], "on")
	if !on && !equalFoldASCII(args[2], "off") {
		c.conn.WriteError(errSyntax)
		return
	}
	conf, reply := parseTracking(args[3:])
	if reply == "" && on {
		reply = s.checkTracking(c, conf)
	}
	if reply != "" {
		c.conn.WriteError(reply)
		return
	}
	if on {
		s.startTracking(c, conf)
	} else {
		s.stopTracking(c)
		c.track.caching = 0
	}
	c.conn.WriteString("OK")
}

// parseTracking parses CLIENT TRACKING's options.
func parseTracking(opts [][]byte) (*trackConf, string) {
	conf := &trackConf{}
	for i := 0; i < len(opts); i++ {
		o := opts[i]
		switch {
		case equalFoldASCII(o, "bcast"):
			conf.bcast = true
		case equalFoldASCII(o, "optin"):
			conf.optin = true
		case equalFoldASCII(o, "optout"):
			conf.optout = true
		case equalFoldASCII(o, "noloop"):
			conf.noloop = true
		case equalFoldASCII(o, "redirect") && i+1 < len(opts):
			id, ok := parseInt(opts[i+1])
			if !ok {
				return nil, errNotInt
			}
			conf.redirect, i = id, i+1
		case equalFoldASCII(o, "prefix") && i+1 < len(opts):
			conf.prefixes, i = append(conf.prefixes, bytes.Clone(opts[i+1])), i+1
		default:
			return nil, errSyntax
		}
	}
	return conf, ""
}

// checkTracking returns the error refusing conf for c, in Redis's order, or "".
func (s *Server) checkTracking(c *client, conf *trackConf) string {
	old := c.trackConf.Load()
	switch {
	case len(conf.prefixes) > 0 && !conf.bcast:
		return errTrackPrefix
	case conf.redirect != 0 && conf.redirect != c.id && s.clientByID(conf.redirect) == nil:
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
				return "ERR Prefix '" + quoteArg(a, 128) + "' overlaps with another provided prefix '" +
					quoteArg(b, 128) + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// startTracking turns c's tracking on with conf, or changes its options.
// Prefixes given again add to those already set, as in Redis.
func (s *Server) startTracking(c *client, conf *trackConf) {
	o := &s.obs
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
func (s *Server) stopTracking(c *client) {
	o := &s.obs
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

func initMaps(o *observers) {
	if o.trackers == nil {
		o.keys, o.trackers = map[string]*trackedKey{}, map[int64]*client{}
		o.bcast, o.monitors = map[int64]*client{}, map[int64]*client{}
		o.watched = map[string]struct{}{}
	}
}

// forgetObserver drops a closed client's tracking and MONITOR.
func (s *Server) forgetObserver(c *client) {
	s.stopTracking(c)
	o := &s.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.monitors[c.id]; ok {
		delete(o.monitors, c.id)
		o.active.Add(-1)
	}
}

// cmdClientCaching is CLIENT CACHING YES|NO: whether the next command's keys
// are tracked, in OPTIN or OPTOUT mode.
func cmdClientCaching(s *Server, c *client, args [][]byte) {
	conf := c.trackConf.Load()
	yes, no := equalFoldASCII(args[2], "yes"), equalFoldASCII(args[2], "no")
	switch {
	case conf == nil || (!conf.optin && !conf.optout):
		c.conn.WriteError(errCachingNoTrack)
	case yes && !conf.optin:
		c.conn.WriteError(errCachingYesOptin)
	case no && !conf.optout:
		c.conn.WriteError(errCachingNoOptout)
	case yes:
		c.track.caching = 1
		c.conn.WriteString("OK")
	case no:
		c.track.caching = -1
		c.conn.WriteString("OK")
	default:
		c.conn.WriteError(errSyntax)
	}
}

// cmdClientGetRedir is -1 when tracking is off, else the redirect (0 for none).
func cmdClientGetRedir(s *Server, c *client, args [][]byte) {
	c.conn.WriteInt64(redirOf(c))
}

func redirOf(c *client) int64 {
	conf := c.trackConf.Load()
	if conf == nil {
		return -1
	}
	return conf.redirect
}

// cmdClientTrackingInfo is Redis's map of flags, redirect and prefixes.
func cmdClientTrackingInfo(s *Server, c *client, args [][]byte) {
	conf := c.trackConf.Load()
	prefixes := []any{}
	if conf != nil {
		for _, p := range conf.prefixes {
			prefixes = append(prefixes, p)
		}
	}
	writeMap(c, []pair{{"flags", trackingFlags(c, conf)}, {"redirect", redirOf(c)}, {"prefixes", prefixes}})
}

func trackingFlags(c *client, conf *trackConf) []string {
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

// pubsubCommands are SUBSCRIBE and UNSUBSCRIBE, enough for a RESP2 client to
// receive the invalidations another connection redirects to it on
// __redis__:invalidate. rlstore has no PUBLISH: other channels stay silent.
func pubsubCommands() []command {
	return []command{
		{name: "subscribe", arity: -2, run: cmdSubscribe, group: "pubsub", summary: "Subscribes to channels; only __redis__:invalidate carries messages"},
		{name: "unsubscribe", arity: -1, run: cmdUnsubscribe, group: "pubsub", summary: "Unsubscribes from channels, or all"},
	}
}

func cmdSubscribe(s *Server, c *client, args [][]byte) {
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

func cmdUnsubscribe(s *Server, c *client, args [][]byte) {
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
func writeSubReply(c *client, kind string, ch []byte, n int) {
	if c.Proto == 3 {
		writeHeader(c, '>', 3)
	} else {
		c.conn.WriteArray(3)
	}
	c.conn.WriteBulkString(kind)
	if ch == nil {
		writeNull(c)
	} else {
		c.conn.WriteBulk(ch)
	}
	c.conn.WriteInt(n)
}
