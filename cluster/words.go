package cluster

// The words of the node-to-node protocol, in one place for the node that
// sends them (the handshake here, the server's forwarding, replication,
// handoff and region links) and the server that answers them. A peer
// matches a command or subcommand name as Redis does, in any case; these
// are the forms this node sends.
const (
	// PeerCommand carries everything between nodes but forwarded
	// requests: the handshake, replication, handoff and region sync.
	PeerCommand = "RL.PEER"
	// HopCommand wraps a request forwarded to another node: RL.HOP level
	// resp command args….
	HopCommand = "RL.HOP"
)

// RL.PEER's subcommands.
const (
	PeerHello    = "HELLO"    // the handshake's first step: version, name, nonce
	PeerAuth     = "AUTH"     // the handshake's proof
	PeerRegion   = "REGION"   // a region link's sync batch
	PeerCopy     = "COPY"     // a replica's shipment of whole keys
	PeerDelta    = "DELTA"    // a replica's shipment of changes
	PeerSync     = "SYNC"     // a backup's copies to drop, after a takeover
	PeerSynced   = "SYNCED"   // a full sync's end (bytes sent): the backup holds what its SYNC named
	PeerImport   = "IMPORT"   // a handoff's keys
	PeerDone     = "DONE"     // a handoff's end
	PeerPull     = "PULL"     // a restarted node asks for its slots back
	PeerReleased = "RELEASED" // a node let go of slots
	PeerSeed     = "SEED"     // an old owner's handed-over keys, to the new owner's backup
	PeerServes   = "SERVES"   // which of some slots a node serves, or would by its table
)

// ReleasedAsk, in RL.PEER RELEASED's answer, names the node that holds
// slots the asker imports: "ASK node slots" (see docs/cluster.md, Safety).
const ReleasedAsk = "ASK"

// ReleasedKeep, as RL.PEER RELEASED's last argument (from slots KEEP),
// says the asker waits for the slots keeping its own keys: a rejoin's
// imports, whose keys are the slots' state unless a handback replaces
// them. A node that predates it answers PeerRefused, and the asker asks
// again without it.
const ReleasedKeep = "KEEP"

// ReleasedHanded, after RL.PEER RELEASED's slots and KEEP if any (from
// slots [KEEP] [HANDED slots] [RESTORED inc,...] [PAST node ...]), names
// the slots of the question that the answering node handed to the asking
// process (its DONE ended their import there), and ReleasedRestored the
// earlier processes of the asker whose store its data dir restored
// (Lease.Restored): a node that handed a slot to a process of the asker
// releases it to a later one only on either word (docs/cluster.md, "A
// quick restart"). A node that predates them answers PeerRefused, and the
// asker asks again without them.
const (
	ReleasedHanded   = "HANDED"
	ReleasedRestored = "RESTORED"
)

// ReleasedPast, after RL.PEER RELEASED's slots and KEEP if any (from
// slots [KEEP] PAST node ...), names the nodes whose "ASK" sent the
// asker's import on, in order, none for an import not sent on: the
// answering node names none of them back (an ASK circle ends), and names
// an old owner it holds no copies of only to an asker that sends it (and
// not KEEP). A node that predates it answers PeerRefused, and the asker
// asks again without it.
const ReleasedPast = "PAST"

// PeerSyncEnds, as RL.PEER SYNC's last argument (drop backed ENDS), says
// the full sync ends with RL.PEER SYNCED: the backup counts the backed
// slots' copies as held only then, not at the SYNC, so that a sync cut
// short (the owner's crash, a cut link) leaves them lost there rather
// than served from part of their keys.
const PeerSyncEnds = "ENDS"

// PeerSyncLost, after PeerSyncEnds (drop backed ENDS LOST holder bitmap
// ...), names the slots of the sender's that it has lost, none of them
// in backed, each pair a holder (the node the slot was lost from, "" for
// none known) and the bitmap of its slots: the backup answers the
// sender's PULL for them with no DONE, and its RELEASED with "ASK" the
// holder. A node that predates it answers PeerRefused, and the sender
// syncs without it, shipping those slots' keys as backed, as before.
const PeerSyncLost = "LOST"

// PeerRefused is the error a node answers a peer whose credentials fail
// with, and, on a peer's connection, an RL.PEER subcommand or form it does
// not know: a sender recognises by it a node that predates what it sent
// (a replica's DELTA or SYNC's backed bitmap, the handoff's RELEASED).
const PeerRefused = "NOPERM bad cluster credentials"

// PeerNoReplicas is what a node that keeps no replicas (--replicas 0)
// answers a replica's COPY, DELTA or SYNC with, on a peer's connection: a
// refusal of its own, which a sender does not take for PeerRefused, and
// so does not retry in an older form. Nodes from before it answer
// PeerRefused there.
const PeerNoReplicas = "ERR this node keeps no replicas (--replicas 0)"

// Encoded heads of the commands a replica sends most, which it writes
// ahead of a payload encoded in place: each is the command's array and
// bulk strings up to the payload's length ("…$"), as wire.AppendCommand
// would write them (TestPeerHeadsMatchTheCodec). HopHead is RL.HOP's bulk
// string, which a forward writes after the array's length.
const (
	PeerCopyHead  = "*3\r\n$7\r\n" + PeerCommand + "\r\n$4\r\n" + PeerCopy + "\r\n$"
	PeerDeltaHead = "*3\r\n$7\r\n" + PeerCommand + "\r\n$5\r\n" + PeerDelta + "\r\n$"
	HopHead       = "$6\r\n" + HopCommand + "\r\n"
)

// IsWord reports whether arg, a command or subcommand name as a peer sent
// it, is word in any case.
func IsWord(arg []byte, word string) bool {
	if len(arg) != len(word) {
		return false
	}
	for i := range arg {
		if upperASCII(arg[i]) != upperASCII(word[i]) {
			return false
		}
	}
	return true
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
