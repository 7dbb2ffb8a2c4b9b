package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The deterministic simulation of the safety rule: N nodes on a fake
// clock, each with its own clock rate, run the real Lease (requests,
// grants, renewals, the declared-dead report), the real Takeover, and
// tables made by NewTable, over a scripted network that delays, drops,
// partitions, pauses, crashes and restarts them, and heals. After every
// step it asserts that no slot is served by two nodes at once.
//
// What is modelled rather than run: memberlist's failure detector (a
// member is declared dead after simDetect without a message from it, the
// death is gossiped to every node the declarer reaches, and a member heard
// from again is alive again), and the live handoff (a node whose table
// gives a slot it serves to another hands it over with one message, and
// stops serving it when it sends it; the receiver, if it waits for the
// slot, serves it once the message arrives or importWait passes; a node
// gains a slot from a live owner as an import, from a dead one at once
// but for the takeover's wait).

const (
	simStep    = 20 * time.Millisecond
	simTerm    = time.Second
	simDetect  = 2500 * time.Millisecond
	simRelease = time.Second            // the server's releaseRetry
	simMigrate = 10 * time.Second       // the server's migrateWait
	simShip    = 100 * time.Millisecond // --replica-interval
	simSlots   = 64                     // slots checked: spread over the 16384, enough for every owner order of 5 nodes
	simDropPct = 2
)

// Switches of the model, to measure a rule against the model without it.
var (
	// simImportWait is the server's importWait (5 s): how long an import
	// waits for the old owner's DONE before it asks RL.PEER RELEASED. An
	// import ends only on an answer, never on the wait alone, so a
	// shorter wait must stay safe: RL_SIM_IMPORTWAIT=1s (a Go duration)
	// asks sooner, as a slow network or a long cut does at 5 s. At 1s,
	// 0-1999 (with the failing seeds) serve a key from less than the last
	// server left in 4 schedules (203, 254, 1628, 2363; 1985 too before
	// simAskGated, 26, 362, 1276 and 1472 before simVouch, 293, 953, 1697,
	// 1928 and 3648 before simBackKeeps and simTakeoverHolder, 527 before
	// simUncutPromotes); they are not in testdata (its runner sets no
	// wait), but in docs/cluster.md.
	simImportWait  = simDuration("RL_SIM_IMPORTWAIT", 5*time.Second)
	simKeptMoves   = os.Getenv("RL_SIM_KEPT") == "reset"                                  // a rejoin's kept slot that moves on goes as a handoff (reset)
	simKeptPush    = os.Getenv("RL_SIM_KEPT") == "" || os.Getenv("RL_SIM_KEPT") == "pull" // ... or is kept, and pushed as a PULL's answer (the server's)
	simKeptReplace = os.Getenv("RL_SIM_KEPT") == ""                                       // a disowned handoff's kept keys replace a rejoin's in mode replace
	simImportsLost = os.Getenv("RL_SIM_IMPORTS_LOST") != "0"
	simSeedCopies  = os.Getenv("RL_SIM_SEEDCOPIES") != "0"  // a handoff's old owner gives the slot's backup what it handed over, held from the new owner (the server's KeepHanded and RL.PEER SEED)
	simHolder      = os.Getenv("RL_SIM_HOLDER") != "0"      // RELEASED names the node that holds a slot (ASK), and a gained slot imports from it (the server's holder)                              // an import from a dead holder without its copies is lost (the server's fromDeadLocked)
	simUnconfirmed = os.Getenv("RL_SIM_UNCONFIRMED") != "0" // a rejoin proved to follow an unconfirmed death serves its own slots from its keys (Lease.OnUnconfirmed)
	simTCPDrop     = os.Getenv("RL_SIM_TCPDROP") == "1"     // the network drops RL.PEER messages as it drops packets (see send)
	simIncarnation = os.Getenv("RL_SIM_INCARNATION") != "0" // lease answers carry the process's incarnation, and a rejoin's proof counts no member restarted since it held its lease; 0: they do not
	simGrantAges   = os.Getenv("RL_SIM_GRANTAGES") != "0"   // lease answers carry their fences' grant ages, so a dead member's slots wait only until its lease ran out (the third form); 0: TakeoverWait from the confirmation
	// simPullCopies is the fix of cause A (testdata/sim-admission-seeds.txt;
	// the server's backedUpFor): a backup answers a PULL with DONE for a
	// slot it holds none of the asker's copies of (the replicas' HeldBy)
	// only if it knows of no other state of the slot: its table did not
	// give it to the asker at its owner's death (deadPrev), and it did not
	// lose it (forgone). So a restarted process's import of a slot whose
	// state died elsewhere is not ended by an answer that knows nothing of
	// it, while a cluster's first formation, where no node holds copies
	// yet, still is. RL_SIM_PULLCOPIES=0 answers for every slot the
	// backup's table says it backs up, as the server did before;
	// RL_SIM_PULLCOPIES=held only with the asker's copies (which the
	// process tests showed makes every new cluster wait for its imports).
	simPullCopies = os.Getenv("RL_SIM_PULLCOPIES") != "0"
	simPullHeld   = os.Getenv("RL_SIM_PULLCOPIES") == "held"
	// simPullKept (RL_SIM_PULLKEPT=1) answers a PULL for a slot whose keys
	// the backup keeps for the asker (a rejoin's, on their way: kept.go),
	// as before. Seed 500: n1, which served n4's slot after n4's death and
	// kept its keys when n4's new process came back, answered that
	// process's PULL with a DONE without copies before its kept keys went,
	// and n4 served the slot from nothing. Now it leaves them to the push
	// (the server's backedUpFor, as its RELEASED already did).
	simPullKept = os.Getenv("RL_SIM_PULLKEPT") == "1"
	// simLostOwnForgot (RL_SIM_LOSTOWNFORGOT=1): a rejoin's own lost slot
	// imported from its holder when the holder is back waits without its
	// keys' mark, as before (the server's lostComeBackLocked). Seed 500:
	// n1, which held the slot's newest keys, then sent them nowhere when
	// the table gave the slot to n4's new process.
	simLostOwnForgot = os.Getenv("RL_SIM_LOSTOWNFORGOT") == "1"
	// simKeptCut (RL_SIM_KEPTCUT=1) sends kept keys across a cut, where the
	// network drops them, and forgets them, as the model did before; the
	// server's sendKept keeps them again when the owner does not answer.
	// Seed 17 of sim-failing-seeds.txt (once a rejoin's own lost slot
	// kept its keys): n3's kept keys went into a cut, and n2 imported the
	// slot from n3, which then released it: served from nothing.
	simKeptCut = os.Getenv("RL_SIM_KEPTCUT") == "1"
	// simAbandonKeeps (RL_SIM_ABANDONKEEPS=0 leaves it out): a handoff
	// abandoned after migrateWait keeps its keys for the slot's owner, as a
	// disowned one does (the server's abandon). Seed 17 of
	// sim-failing-seeds.txt: n3, without its lease for the 10 s and then
	// cut off, dropped slot 8738's keys (68 used) and released the slot to
	// n2, which served it from 0.
	simAbandonKeeps = os.Getenv("RL_SIM_ABANDONKEEPS") != "0"
	simCutHandoff   = os.Getenv("RL_SIM_CUTHANDOFF") == "1" // a handoff across a cut counts as done (see unreachable)
	// simDeadPrev closes what simPullCopies leaves of cause A: a node asked
	// RL.PEER RELEASED for a slot its table gave the asker when the slot's
	// owner before died (confirmed), and that holds no copies of the
	// asker's for it, answers "ASK" that dead owner instead of releasing
	// it: the asker, which never saw that death (a restarted process whose
	// first table lacks the member), then has the slot lost, as a slot
	// gained from a dead owner without its copies is, until the owner is
	// back (the server's deadPrev). RL_SIM_DEADPREV=0 releases it, as before.
	simDeadPrev = os.Getenv("RL_SIM_DEADPREV") != "0"
	// simJoinDeadPrev (RL_SIM_JOINDEADPREV=0 leaves it out): a new
	// process seeds deadPrev from the members its join shows dead (the
	// server's seedDeadPrev), and a slot that moves on while this node
	// imports it keeps its deadPrev. Seed 1508: n4's new process, whose
	// first table lacked n2 (paused, its death confirmed, holding slot
	// 8738's state), imported the slot, which then moved to n3's new
	// process; n4 answered n3's PULL with a DONE without copies, and n3
	// served the slot from nothing.
	simJoinDeadPrev = os.Getenv("RL_SIM_JOINDEADPREV") != "0"
	// simKeptHeld (RL_SIM_KEPTHELD=1) keeps a rejoin's keys as the slot's
	// state when the slot moves on while the rejoin imports it, whatever
	// the node's holder record says, as the model did before. The
	// server's slotChange keeps them only with no holder: a slot lost here
	// (its holder is the dead old owner) that the rejoin imports has no
	// keys of its state. Seed 1508, with simJoinDeadPrev: n0 rejoined with
	// slot 257 lost (n2's, paused), sent its keys (none) to n3 when the slot
	// moved there, and n3 served it from nothing. A model artifact.
	simKeptHeld = os.Getenv("RL_SIM_KEPTHELD") == "1"
	// simKeptNoLease (RL_SIM_KEPTNOLEASE=1) lets a node without its lease
	// take kept keys and PULL answers for slots it serves as its own, as
	// before: it kept its own keys, and the sender dropped its newer ones
	// (the server's keepsOwnUnserved refuses them). Seed 1463: n0, resumed
	// from a pause and not yet aware that a majority declared it dead,
	// kept 13 of slot 14649 (and 15 of 12336) where n4, which served them
	// since, pushed 16 (24); n0 served 12336 from 15.
	simKeptNoLease = os.Getenv("RL_SIM_KEPTNOLEASE") == "1"
	// simAskForgone (RL_SIM_ASKFORGONE=1) answers RELEASED for a slot that
	// is both forgone and deadPrev with "ASK" the dead owner, as the model
	// did before; the server's peerReleased answers nothing for a forgone
	// slot before it looks at deadPrev (the session's review, N1). Both
	// release nothing.
	simAskForgone = os.Getenv("RL_SIM_ASKFORGONE") == "1"
	// simShipImports (RL_SIM_SHIPIMPORTS=1) ships the counters of the slots
	// a node imports as their copies, as the model did before: a rejoin's
	// keys from before its death, older than what the node that served the
	// slot meanwhile left, became the backup's copies (seed 195: n0 came
	// back, waited for its handback, shipped its old counters to n2, and
	// crashed; n2 promoted them over the newer keys it kept). The server's
	// full sync, the only shipment that makes copies held (HeldBy), waits
	// for the node's imports (replica shipOnce), and a delta ships only
	// keys that changed, which an importing slot's do not.
	simShipImports = os.Getenv("RL_SIM_SHIPIMPORTS") == "1"
	// simKeptDied (RL_SIM_KEPTDIED=0 leaves it out): a rejoin's kept keys
	// of a slot the table gives a member whose death the node saw
	// confirmed go in mode replace, as a handoff to it would (the server's
	// slotChange). Seed 885: n2 served n0's slots after n0's confirmed
	// death, waited for their handback after its own rejoin, and sent them
	// on in mode pull when n0 came back; n0 kept its older keys.
	simKeptDied = os.Getenv("RL_SIM_KEPTDIED") != "0"
	// simAskBackup (RL_SIM_ASKBACKUP=0 leaves it out): a node asked
	// RELEASED for a slot it neither handed to the asker nor backs up,
	// whose backup in its table is declared dead and not confirmed there,
	// answers "ASK" that backup (the server's askTheBackup). Seed 779: n0,
	// cut off alone, never saw n2 die and n3 serve its slot; n2's new
	// process joined through n0, whose view had n3 declared dead (paused),
	// guessed n0 as the backup, and n0 released the slot.
	simAskBackup = os.Getenv("RL_SIM_ASKBACKUP") != "0"
	// simShipNoLease (RL_SIM_SHIPNOLEASE=1) makes a node's counters held
	// copies while it does not hold its lease, as the model and the
	// server's full sync did before; now, without the lease, they update
	// only copies a held sync of the node's brought (deltas). Seed 195: n0, cut off alone and declared dead by the
	// majority, saw n2 again at the heal and, before it learned of its
	// death, shipped n2 its counters from before the cut; n2, which had
	// served n0's slots meanwhile and kept their newer keys, took them as
	// n0's copies (held: its rejoin had forgotten the older ones), and
	// promoted them over its own keys at n0's next death. A node without
	// its lease knows nothing newer than its table (as for PULL and
	// RELEASED): its keys are not known to be its slots' state.
	simShipNoLease = os.Getenv("RL_SIM_SHIPNOLEASE") == "1"
	// simLostBack (RL_SIM_LOSTBACK=0 leaves it out, as the model was): a
	// node asked RELEASED KEEP (a rejoin's import, which keeps its keys)
	// by the very member whose death lost it a slot (its holder), for that
	// slot, forgone here since the member came back, releases it (the
	// server's lostBack). A rejoin's import keeps its keep mark when it
	// asks again, as the server's expireImports does; the model dropped it
	// at the first ask. TestRedPausedAtHeal: n2's slots stayed down to the
	// end, every runner-up answering that it still held them.
	simLostBack = os.Getenv("RL_SIM_LOSTBACK") != "0"
	// simLostRefuses (RL_SIM_LOSTREFUSES=0 leaves it out): a node refuses
	// a PULL's answer or kept keys (IMPORT mode pull or handback, then
	// DONE) that cover a slot it has lost and does not import, whose
	// holder is another node (the server's takeSlots): it took the keys
	// but kept the slot lost, and once the table moved the slot on it
	// forwent it, pointing the new owner at the dead holder, which
	// released it; the sender had dropped its keys (TestRedMinorityPausedAtHeal:
	// n4 pushed its kept keys of chunk 789-809 to n2, which had the chunk
	// lost with holder n1; n1 released it to n4, which served it from
	// nothing: 21-23 of 20). Refused, the sender keeps its keys (simRefused).
	simLostRefuses = os.Getenv("RL_SIM_LOSTREFUSES") != "0"
	// simKeptDeadPeer (RL_SIM_KEPTDEADPEER=1): a rejoin's import whose old
	// owner's death is confirmed as the table moves the slot to a third
	// node ends keeping nothing, as the model did before; the server's
	// slotChange keeps its keys for the new owner (kept.go), as when the
	// old owner lives. Seed 353: n4 rejoined waiting for slot 14392 from
	// its runner-up, whose confirmed death gave the slot to n0; n4 kept
	// nothing, released the slot to n0's RELEASED, and n0 served it from 0
	// where n4 had left 19.
	simKeptDeadPeer = os.Getenv("RL_SIM_KEPTDEADPEER") == "1"
	// simImportDropsHolder (RL_SIM_IMPORTDROPSHOLDER=1): a table change
	// that leaves a slot with this node forgets its holder even while the
	// slot is imported, as the model did before; the server's slotChange
	// keeps an import's holder (its "mine && importing" case comes before
	// "mine && had"). Seed 971: n4 imported 14392 from n0, forgot that at
	// a heal, and, the slot moved to n1 at n0's confirmed death, released
	// it to n1 where the server answers "ASK n0".
	simImportDropsHolder = os.Getenv("RL_SIM_IMPORTDROPSHOLDER") == "1"
	// simDeadHolder (RL_SIM_DEADHOLDER=0 leaves it out, as the model was):
	// a node that gains a slot whose holder here died in the same change
	// imports it from that dead holder, as the server's importFrom does
	// (fromDeadLocked: the takeover's wait with its copies, lost
	// without), though the table's old owner is alive. The model imported
	// it from the old owner.
	simDeadHolder = os.Getenv("RL_SIM_DEADHOLDER") != "0"
	// simHandoffUnloses (RL_SIM_HANDOFFUNLOSES=0 leaves it out, as the
	// server did before): a live handoff's DONE (not a PULL's answer, nor
	// kept keys) ends the loss of a slot whatever its holder here, and its
	// keys replace this node's: the sender held its lease and served the
	// slot (the server's takeSlots and servedSlots). Before, only the
	// holder's DONE ended it: CI's TestRedPausedAtHeal at 98873dd, n2 kept
	// chunk 789-809 lost with a stale holder n1 after n4 handed it over,
	// and pointed n4 at n1, which released it: 22 of 20.
	simHandoffUnloses = os.Getenv("RL_SIM_HANDOFFUNLOSES") != "0"
	// simKeptOnce (RL_SIM_KEPTONCE=0 leaves it out, as the server did
	// before): kept keys whose answer a cut lost (the server's doneUnknown:
	// the owner stored them, and may serve the slot) go on in mode pull
	// (the server's sendKept). Seed 4181: n4's second push of 12336 in mode
	// handback replaced the 60 n0 had served since the first with 49.
	simKeptOnce = os.Getenv("RL_SIM_KEPTONCE") != "0"
	// simRelay (RL_SIM_RELAY=0 leaves it out): a node whose table moves
	// on a slot it imported from a guess, naming the guess (livePrev),
	// asks the guess on the new owner's behalf the RELEASED question the
	// owner would ask after its ASK, at once and every 100 ms while
	// unanswered (15 tries), and, told released, drops the mark and
	// answers for the slot as the owner's backup (the server's
	// relayGuess: a staggered cold start's 5 s wait), only while it has seen
	// no death, no rejoin of its own, and every known member.
	// The model starts no cluster cold: each restart comes amid deaths,
	// pauses or unseen members, so the rule never asks in it.
	// RL_SIM_RELAY=any asks without that condition: the 5 s gates hold
	// (0-4999), but at a 1 s import wait it breaks 4934 and 1682 too.
	simRelay    = os.Getenv("RL_SIM_RELAY") != "0"
	simRelayAny = os.Getenv("RL_SIM_RELAY") == "any"
)

// lostElsewhere reports whether node i has slot lost, not imported, with
// another holder than node from: it refuses from's PULL answer or kept
// keys for it (simLostRefuses).
func (s *sim) lostElsewhere(i, slot, from int) bool {
	n := s.nodes[i]
	_, importing := n.importing[slot]
	h, ok := n.holder[slot]
	return simLostRefuses && n.tk.Lost(slot) && !importing && ok && h != from
}

// simCounts counts, over a test's schedules, the rejoins and what the
// proof of an unconfirmed death did (logged at the end).
var simCounts struct {
	rejoins, proofs, waits, lost int
	// withheld counts the importer slots whose RELEASED a new process
	// answered with NONE by simVouch, and waiting those whose import still
	// waited when the schedule ended (the rule's cost in liveness).
	withheld, waiting int
	// handed and handedWaiting are simHandedInc's: importer slots a node
	// released not to a new process of the member it handed them to, and
	// those still waiting at the schedule's end.
	handed, handedWaiting int
	// relayed counts the slots a relayed question's answer cleared the
	// livePrev mark of (simRelay), and relayDone those the owner's import
	// then ended on the node's DONE.
	relayed, relayDone int
	// importing counts the slots every node up imported at its schedule's
	// end, for any reason: what the waiting ones compare with.
	importing int
	// undocumented are the schedules in which a node served a key from
	// less than the last server left, beyond the documented losses, whether
	// or not the key then admitted more than the bound: a loss the bound's
	// check misses when few admissions follow it.
	undocumented []uint64
}

// simNaive (RL_SIM_UNCONFIRMED=naive) replaces the proof with a naive
// rule, to show that the simulation finds what the proof guards against:
// a rejoin is taken as unconfirmed as soon as the members whose reports it
// acknowledged are fewer than a quorum (a silent member's fence, and a
// fence that still counts somewhere after the acknowledgement, ignored).
var simNaive = os.Getenv("RL_SIM_UNCONFIRMED") == "naive"

// naive is simNaive's rule on node i, checked at each tick.
func (s *sim) naive(i int) {
	l := s.nodes[i].lease
	l.mu.Lock()
	fire := l.rj.pending && len(l.rj.since) < Quorum(len(s.known))
	if fire {
		l.rj.pending = false
		clear(l.rj.since)
	}
	l.mu.Unlock()
	if fire {
		s.unconfirmed(i)
	}
}

type simMsgKind int

const (
	simReq simMsgKind = iota
	simAns
	simDone     // a handoff's done: the slots are the receiver's now
	simPull     // a restarted node asks for its slots
	simAsk      // an import that waited asks its old owner which slots it released (RL.PEER RELEASED)
	simReleased // the answer: the slots whose owner is the asker in the old owner's table
	simCopy     // a replica shipment: the sender's counters of slots the receiver backs up
	simCopied   // its acknowledgement: the receiver holds the sender's counters as of sent
	simSeed     // a handoff's old owner's counters of the slots it handed owner, to their backup (RL.PEER SEED)
	simRefused  // kept keys refused by an owner without its lease (errKeepsOwn): the sender keeps them again
	simKeptOK   // kept keys taken: the sender drops them
	simHandBack // a handoff's DONE refused, a slot being a third node's in the receiver's table: the sender hands it on by its own
	simDoneOK   // a handoff's DONE taken: the sender's cut unmarks the slots the table gives another (the server's unmark)
	simRelayed  // a relayed simAsk's answer: the slots released to its asker (simRelay)
	simJoin     // memberlist's join of a cold start (a push-pull): the receiver learns the sender and its members (simCold)
	simJoined   // the join's answer: the sender learns the receiver's members
)

type simMsg struct {
	kind     simMsgKind
	from, to int
	at       time.Duration // when it arrives (global)
	sent     int64         // the requester's lease clock, echoed
	granted  bool
	deaths   uint32
	ack      uint32   // simReq: the deaths of the sender that the receiver reported and it acknowledges
	fenced   []string // simAns: the members the sender fences
	ages     []int64  // simAns: how long ago the sender last granted each fenced member, in whole milliseconds (nil: the second form)
	inc      uint64   // simAns: the sender process's incarnation (0: not told)
	slots    []int
	vals     []int         // simDone, simCopy: each slot's counter
	replace  bool          // simDone: the sender served the slots (the server's replace mode), or they are a backup's copies
	pull     bool          // simDone: a PULL's answer (IMPORT mode pull), not a handoff (whose reset IMPORT switches the import to its sender)
	gen      int           // simCopy, simCopied: the sending process (a restarted node's connections are new)
	ask      map[int][]int // simReleased: the holder each other slot was handed to (ASK node slots)
	lost     map[int]int   // simCopy: slots the sender has lost, with their holders, -1 for none (RL.PEER SYNC's LOST)
	drop     []int         // simCopy, simCopied: slots the receiver no longer backs up for the sender, whose copies it drops (the "no longer backup" full sync's drop)
	held     bool          // simCopy: the sender holds its lease, so its counters may count as held (a full sync's); otherwise they are deltas on an earlier one
	owner    int           // simSeed: the node the slots were handed to
	keep     bool          // simAsk: the asker's rejoin waits for the slots keeping its keys (RL.PEER RELEASED's KEEP)
	past     []int         // simAsk: the nodes whose "ASK" sent the import on (RL.PEER RELEASED's PAST)
	handed   []int         // simAsk: the slots whose DONE from the asked node the asker took (RL.PEER RELEASED's HANDED)
	relay    bool          // simAsk: asked on asker's behalf by sender, which gets the answer as simRelayed (simRelay)
	asker    int           // simAsk with relay, simRelayed: the node the question is for
	sender   int           // simAsk with relay: the node that asks (from is the asker's, as it answers)
	kept     bool          // simDone: kept keys pushed (the server's pushKept), not a PULL's answer
	behind   map[int]int   // simDone (kept): slots whose keys go without a DONE, and the node that took them over after the sender's death (simKeptBehind)
	local    bool          // simHandBack, simRefused: the sender's own failed call (unsent), not a message from m.from
	members  []int         // simJoin, simJoined, and simReq in a cold schedule: the members the sender has alive (memberlist's push-pull and gossip; simCold)
	known    []int         // simJoin, simJoined, and simReq in a cold schedule: the sender's known set (the server's msgKnown; simColdVouch)
}

// simCount is a key's counter from a moment (global time) on.
type simCount struct {
	at  time.Duration
	cnt int
}

// simStale is how far behind its last decision a promoted copy may be: the
// documented loss is what the dead owner decided within the replicas'
// MaxLag (three lease terms, on a clock up to 10% slow) and one shipment
// (its interval and its delay) before it stopped.
const simStale = simMaxLag*11/10 + simShip + 3*simStep

// simMaxLag is the replicas' MaxLag: the server's backupLagTerms lease terms.
const simMaxLag = 3 * simTerm

type simNode struct {
	relayed    map[int]bool    // slots whose deadPrev a moved import from a guess set (simRelay)
	rejoined   bool            // this process learned it was declared dead (the server's rejoins)
	relays     []simRelayAsk   // the relayed questions still unanswered (simRelay)
	started    bool            // a process has run (a cold schedule starts each node at its startAt)
	lone       bool            // a cold start's process that has had no table with another member (the server's handoff.shared false, with Joins)
	unmet      map[string]bool // members a cold start's process has not met yet (nil in any other process)
	leased     bool            // a cold schedule's log: whether it held its lease at its last tick
	nextJoin   int64           // when it joins its unmet members again, on its clock (memberlist's rejoin of missing seeds, every second)
	name       string
	rate       float64       // clock rate
	off        time.Duration // clock offset
	lease      *Lease
	deaths     map[string]uint32 // the lease's death counts as saved in the data dir, which a crash keeps (see simForgetFences)
	up         bool
	paused     bool
	alive      map[string]bool
	pending    map[string]bool          // declared dead, not yet confirmed by a majority's fences: still in the table
	heard      map[string]time.Duration // global time of the last message from each
	view       *View
	tk         *Takeover
	importing  map[int]simImport // slot → the import waiting for it
	out        map[int]simOut    // slot → a handoff waiting for this node's lease (the server's waitLease)
	died       map[string]bool   // members whose death a majority confirmed, not since handed slots (the server's handoff.died)
	seenDied   map[string]bool   // those of died seen before this node's last rejoin (the server's absence.rejoined)
	nextReq    int64
	returned   map[int]string // slot → the member it was given back to while a third node held it (see the server's noteReturns)
	held       []simMsg       // arrived while paused
	epoch      uint64
	copyFrom   map[int]string        // slot → the owner whose shipment brought its copy (the server's syncs)
	lostAt     map[int][2]int        // slot → the owner whose full sync named it lost there, and its holder (the server's LostAt)
	forgone    map[int]bool          // slots lost here that another node owns now
	kept       map[int]bool          // slots whose state this node keeps for another owner (the server's handoff.kept), true: sent in mode replace
	moved      map[int]bool          // slots handed over since the last table change (the server's ModeMoved, see simNoMoved)
	gated      map[int]bool          // slots whose handoff's DONE awaits its answer (the server's ModeGated, see simAskGated)
	keptFlight map[int]time.Duration // kept slots whose push awaits its answer, since (global time)
	disownBy   map[int]int           // kept slots of a handoff its rejoin disowned, the slot's backup in the table it held them by (simDisownBehind)
	keptBehind map[int]int           // kept slots of a rejoin's import from the node that took them over at its death, that node (simKeptBehind)
	sentBehind map[int]int           // slots whose kept keys went without a DONE and stay here, the holder named (simBehindBack)
	behindDead map[int][2]int        // slots whose kept keys went without a DONE naming a node dead here: the owner they went to, and that node (simBehindDead)
	gotFrom    map[int]int           // imported slots whose keys kept keys without a DONE brought, from whom (simKeptBehind)
	adopted    map[int]int           // slot → the node that handed it here while this node's table still named that node its owner (the server's ModeAdopted, see simNoAdopt)
	lostFrom   map[int]int           // slot → the node it was imported from, lost here when that node died (the server's lostFrom)
	unseen     map[string]bool       // known members this process has not had in a table since its join (the server's handoff.seen; see simVouch)
	knows      map[string]bool       // a cold start's first process: the server's Known, the members it met and those the members it heard from know (nil in any other process, whose data dir remembers every member; see simColdVouch)
	had        map[string]bool       // members this process has had in a table shared with another (the server's handoff.had; see simColdVouch)
	seen       map[string]bool       // a cold start's process: the members it had in a shared table or recorded as never seen (the server's handoff.seen; see simColdSeed)
	lostOwn    map[int]bool          // slots lost while a rejoin waited for their handback, keeping their keys (the server's rejoinLost)
	keptLost   map[int]bool          // those of lostOwn kept here in mode replace before the table gave them back (simKeptLost)
	holder     map[int]int           // slot → the node this one last knew to hold it, when not itself (the server's handoff.holder)
	handedInc  map[int]simHanded     // slot → the node this one handed it to, and that node's process then (the server's handoff.handedTo; see simHandedInc)
	took       map[[2]int]bool       // (node, slot) pairs whose DONE from that node this process took (the server's handoff.handed; see simHandedClaim)
	deadPrev   map[int]int           // slot → the dead member whose confirmed death gave it to its owner now, another node (simDeadPrev)
	guessPrev  map[int]int           // slot → the old owner its deadPrev names, when this node holds none of its copies (simAskChain)
	// deadPrevInc is, per slot whose deadPrev names a live third node
	// (thirdPrev), that node's incarnation when this node's table gave it
	// the slot; ownerInc, per slot, its owner's then (the server's
	// restartedSince).
	deadPrevInc, ownerInc map[int]uint64
	deadOwnerInc          map[int]uint64 // slot → its dead deadPrev's incarnation when this node's table gave it the slot (simDeadRestart)
	cnt                   map[int]int    // slot → its key's counter in this node's store
	copies                map[int]int    // slot → the counter this node holds as the slot's backup
	nextShip              int64
	gen                   int           // counts the node's processes
	fresh                 map[int]int64 // backup → until when (this node's clock) its acknowledgements let it serve the slots it backs up (the replicas' Fresh)
	// former are, per node that backed them up in an earlier table and
	// still is a member, the slots it may hold copies of until it
	// acknowledges their drop; formerUntil is that node's deadline when
	// they moved (the replicas' noteFormerLocked).
	former      map[int]map[int]bool
	formerUntil map[int]int64
	// ended are the members whose death this node saw (gone from its
	// table, dead): their shipments on a connection from before it are
	// refused until a full sync (a held one) comes (the replicas'
	// endStreams, simOldStreams).
	ended map[int]bool
}

type sim struct {
	t      *testing.T
	r      *rand.Rand
	now    time.Duration
	nodes  []*simNode
	known  []string
	cut    [][]bool // cut[i][j]: i and j cannot reach each other
	msgs   []simMsg
	slots  []int
	limit  map[int]int // slot → its key's limit
	total  map[int]int // slot → admissions, over the whole schedule
	want   map[int]int // slot → the counter the last server left
	last   map[int]int // slot → the node that served it last, -1 for none
	allow  map[int]int // slot → admissions above the limit that documented losses allow
	lossOK map[int]bool
	// promoFrom is, per slot whose copy a node promoted and that no
	// other node served since, the dead owner the copy was of: it may
	// serve on until its lease runs out (the takeover waits for that),
	// and what it decides meanwhile is part of the promotion's loss.
	promoFrom map[int]int
	promoBy   map[int]int        // per slot of promoFrom, the node that promoted the copy
	hist      map[int][]simCount // slot → its key's counter after each admission, in order
	log       []string
	servedBy  map[int]string
	failed    bool
	open      bool   // the schedule is known to break the admissions bound (sim-admission-seeds.txt): logged, not asserted
	over      string // the first admission above the bound, when not asserted
	noFresh   bool   // RL_SIM_NOFRESH=1: owners serve whatever their backups hold
	noFormer  bool   // RL_SIM_NOFORMER=1: neither former backups' drop nor their deadline, nor ForgetHeld
	noForget  bool   // RL_SIM_NOFORGET=1: no ForgetHeld at a rejoin
	undoc     bool   // a node served a key from less than the documented losses allow (simCounts.undocumented)
	lossOpen  bool   // the schedule is known to (testdata/sim-loss-seeds.txt): logged, not asserted
	watched   string // simWatch's last line

	// withheld are the importer and slot pairs whose RELEASED simVouch
	// answered with NONE (simCounts.withheld).
	withheld map[[2]int]bool
	// handedNone are simHandedInc's importer and slot pairs.
	handedNone map[[2]int]bool

	// cold is a cold start's schedule (simCold): no node runs at first,
	// each starts at its startAt with no member met, and faults wait
	// until calm; formed is when every slot was first served after the
	// last start (-1: not yet).
	cold          bool
	startAt       []time.Duration
	calm, formed  time.Duration
	faultedBefore bool // a fault came before formed
}

func (n *simNode) local(now time.Duration) int64 { return int64(n.off) + int64(float64(now)*n.rate) }

func newSim(t *testing.T, seed uint64, nodes int, cold bool) *sim {
	s := &sim{t: t, r: rand.New(rand.NewPCG(seed, seed^0x5eed)), noFresh: os.Getenv("RL_SIM_NOFRESH") == "1",
		noFormer: os.Getenv("RL_SIM_NOFORMER") == "1", noForget: os.Getenv("RL_SIM_NOFORGET") == "1", cold: cold, formed: -1}
	if cold {
		s.r = rand.New(rand.NewPCG(seed, seed^0xc01d5eed)) // another schedule than the settled one of the same seed
	}
	for i := range nodes {
		s.known = append(s.known, fmt.Sprint("n", i))
	}
	for i := range nodes {
		n := &simNode{name: s.known[i], rate: 0.95 + 0.1*s.r.Float64(), off: time.Duration(s.r.IntN(1000)) * time.Millisecond}
		s.nodes = append(s.nodes, n)
		if !cold {
			s.start(i)
		}
		s.cut = append(s.cut, make([]bool, nodes))
	}
	s.limit, s.total, s.want, s.last, s.allow, s.lossOK = map[int]int{}, map[int]int{}, map[int]int{}, map[int]int{}, map[int]int{}, map[int]bool{}
	s.hist, s.promoFrom, s.promoBy = map[int][]simCount{}, map[int]int{}, map[int]int{}
	for i := range simSlots {
		slot := i*Slots/simSlots + i
		s.slots = append(s.slots, slot)
		s.limit[slot], s.last[slot] = 10+(i*37)%300, -1 // some used up early, some still admitting at the end
	}
	if cold {
		s.coldSchedule()
		return s
	}
	for _, n := range s.nodes { // a settled cluster: everyone granted everyone at time 0
		for _, m := range s.known {
			n.lease.AnsweredAt(n.local(0), m, n.local(0), true, 0, s.known)
		}
	}
	return s
}

// start starts node i's process: fresh memory, every member alive.
func (s *sim) start(i int) {
	n := s.nodes[i]
	n.lease = NewLease(n.name, simTerm)
	if !simForgetFences { // the server's DeathFile, in the data dir every node of the model has
		n.lease.KeepDeaths(n.deaths, func(c map[string]uint32) error { n.deaths = maps.Clone(c); return nil })
	}
	n.up, n.paused, n.held = true, false, nil
	n.cnt, n.copies, n.copyFrom, n.forgone, n.kept = map[int]int{}, map[int]int{}, map[int]string{}, map[int]bool{}, map[int]bool{}
	n.lostFrom, n.holder, n.lostOwn, n.deadPrev = map[int]int{}, map[int]int{}, map[int]bool{}, map[int]int{}
	n.keptLost = map[int]bool{}
	n.alive, n.heard, n.importing, n.returned = map[string]bool{}, map[string]time.Duration{}, map[int]simImport{}, map[int]string{}
	n.pending, n.out, n.died, n.moved, n.adopted = map[string]bool{}, map[int]simOut{}, map[string]bool{}, map[int]bool{}, map[int]int{}
	n.keptFlight, n.lostAt, n.keptBehind, n.gotFrom = map[int]time.Duration{}, map[int][2]int{}, map[int]int{}, map[int]int{}
	n.behindDead, n.disownBy = map[int][2]int{}, map[int]int{}
	n.sentBehind, n.handedInc, n.took = map[int]int{}, map[int]simHanded{}, map[[2]int]bool{}
	n.relayed, n.relays, n.rejoined = map[int]bool{}, nil, false
	n.deadPrevInc, n.ownerInc, n.guessPrev = map[int]uint64{}, map[int]uint64{}, map[int]int{}
	n.deadOwnerInc = map[int]uint64{}
	n.gated, n.unseen, n.seenDied = map[int]bool{}, nil, map[string]bool{}
	n.knows, n.had, n.seen = nil, map[string]bool{}, map[string]bool{}
	n.gen++
	n.fresh, n.former, n.formerUntil, n.ended = map[int]int64{}, map[int]map[int]bool{}, map[int]int64{}, map[int]bool{}
	cold := s.cold && !n.started // a cold start's first process: it has met no member (see simCold)
	n.started, n.lone, n.unmet = true, cold, nil
	if cold {
		n.unmet, n.knows = map[string]bool{}, map[string]bool{n.name: true}
	}
	for _, m := range s.known {
		if cold && m != n.name {
			n.unmet[m] = true
			continue
		}
		n.alive[m] = true
		n.heard[m] = s.now
	}
	n.tk, n.view = nil, nil
	n.lease.OnDeclaredDead(func() { s.rejoin(i) })
	n.lease.OnUnconfirmed(func() { s.unconfirmed(i) })
	s.rebuild(i)
	n.nextReq = n.local(s.now)
}

// rebuild makes node i's view from its alive set, and hands over the
// slots it served that the new table gives to another.
func (s *sim) rebuild(i int) {
	n := s.nodes[i]
	var nodes []Node
	for _, m := range s.known {
		if n.alive[m] || n.pending[m] {
			nodes = append(nodes, Node{Name: m})
		}
	}
	first := n.lone && len(nodes) > 1
	if first {
		n.lone = false
		n.view = nil // the server's handoffHook: a joiner counts nothing it held alone, and imports its slots from their guess (below)
	}
	n.epoch++
	tb, err := NewTable(n.epoch, nodes)
	require.NoError(s.t, err)
	if len(nodes) > 1 { // the server's seedDeadPrev, early in the table change: relayGuesses reads it
		for _, m := range nodes {
			n.had[m.Name] = true
		}
	}
	clear(n.moved) // the server's slotChange: a moved slot follows the table again
	nv := &View{Self: n.name, Table: tb}
	old := n.view
	for slot, bd := range n.behindDead { // the server's forgetBehindDead
		if tb.Owner(slot).Name != s.known[bd[0]] {
			if h, ok := n.holder[slot]; ok && h == bd[1] {
				n.holder[slot] = bd[0] // the owner the keys went to: it holds what it made of them
			}
			delete(n.behindDead, slot)
		}
	}
	diedBefore := maps.Clone(n.died)
	relost := map[int]int{} // forgone slots back here while their holder is away
	uncut := map[int]bool{} // slots whose handoff away never sent its DONE, back here (the server's ModeCopying)
	if old != nil {
		for _, m := range s.known {
			if old.Table.Has(m) && !tb.Has(m) {
				nv.Gone = append(nv.Gone, Member{Node: Node{Name: m}, State: StateDead})
				n.died[m] = true
				delete(n.seenDied, m)
				n.ended[s.index(m)] = !simOldStreams
			}
		}
		out := map[int]*simMsg{}
		for _, slot := range s.slots {
			im, importing := n.importing[slot]
			// The server migrates a slot it held, served or not, and a
			// rejoin's kept slot (its keys are the slot's state unless a
			// handback replaces them): see the server's slotChange.
			holds := old.Table.Owner(slot).Name == n.name && (!importing || im.keep && simKeptMoves) && !n.tk.Lost(slot)
			if a, ok := n.adopted[slot]; ok && !importing && !simNoAdopt {
				holds = s.known[a] != tb.Owner(slot).Name // the server's slotChange: an adopted slot moves on unless its table names the node that handed it here
			}
			if !holds || tb.Owner(slot).Name == n.name {
				continue
			}
			to := s.index(tb.Owner(slot).Name)
			served := n.died[s.known[to]] && !importing // the server's replace mode: it saw the member's death confirmed
			if !n.lease.ServesAt(n.local(s.now)) || s.unreachable(i, to) {
				by := ""
				if ru, ok := old.Table.RunnerUp(slot); ok && old.Table.Owner(slot).Name == n.name && !importing {
					by = ru.Name // the server's Migration.held
				}
				n.out[slot] = simOut{to: to, since: n.local(s.now), replace: served, by: by} // only a node that holds its lease hands over
				continue
			}
			if out[to] == nil {
				out[to] = &simMsg{kind: simDone, from: i, to: to, replace: true}
			}
			out[to].slots = append(out[to].slots, slot)
			out[to].vals = append(out[to].vals, n.cnt[slot])
			out[to].replace = out[to].replace && served
			delete(n.cnt, slot) // the cut drops this node's copy
			n.holder[slot] = to
			s.noteHandedInc(i, slot, to)
			n.moved[slot] = !simNoMoved
		}
		for _, name := range s.known { // the server deletes it as it starts a handoff to the member
			if n.died[name] && tb.Has(name) && name != n.name && simDiedGoes {
				for _, slot := range s.slots {
					if tb.Owner(slot).Name == name && old.Table.Owner(slot).Name == n.name {
						delete(n.died, name)
						break
					}
				}
			}
		}
		for _, to := range slices.Sorted(maps.Keys(out)) { // in order: a send draws from the schedule's randomness
			m := out[to]
			s.logf("%s hands %v %v to %s (replace %v)", n.name, m.slots, m.vals, s.nodes[m.to].name, m.replace)
			s.send(*m)
		}
		settled := map[int]bool{}    // slots handed over, back here: served on (the server's settle)
		for slot, o := range n.out { // the server's settle
			if owner := tb.Owner(slot).Name; owner == n.name {
				delete(n.out, slot)
				settled[slot] = !simSettleImports
				uncut[slot] = !simUncutPromotes
			} else {
				to := s.index(owner) // the server's settle: a third owner gets a migration of its own, in replace mode if its death was confirmed here
				n.out[slot] = simOut{to: to, since: o.since, replace: o.replace && to == o.to || to != o.to && n.died[owner] && !simSettleReset, by: o.by}
			}
		}
		relay := map[[2]int][]int{} // guess and new owner → slots (simRelay)
		for _, slot := range s.slots {
			owner, prev := tb.Owner(slot).Name, old.Table.Owner(slot).Name
			if !old.Table.Has(owner) && owner != n.name && prev != n.name && prev != owner {
				n.returned[slot] = owner
			}
			_, importing := n.importing[slot]
			dp, hasDP := n.deadPrev[slot]
			_, dpInc := n.deadPrevInc[slot]
			_, dpGuess := n.guessPrev[slot]
			served := hasDP && dpInc && !dpGuess // thirdPrev: a live third node whose copies this node held served it (see simImportServer)
			inc := n.ownerInc[slot]
			if owner != prev {
				n.ownerInc[slot] = n.lease.IncarnationOf(owner)
				delete(n.deadPrevInc, slot)
				delete(n.deadOwnerInc, slot)
				delete(n.guessPrev, slot)
				delete(n.relayed, slot)
			}
			switch {
			case owner == prev:
			case !tb.Has(prev) && owner != n.name:
				n.deadPrev[slot] = s.index(prev)
				if simDeadRestart {
					n.deadOwnerInc[slot] = n.lease.IncarnationOf(prev) // its last process: see simDeadRestart
				}
			case prev == n.name && importing && simJoinDeadPrev && (hasDP || simLivePrevForgot) && (!hasDP || dp != s.index(owner)):
				// Never got here: what this node knew of its state stands.
			case prev == n.name && importing && n.importing[slot].peer != s.index(owner) && !simLivePrevForgot:
				n.deadPrev[slot] = n.importing[slot].peer // never got here: its state is with the node it was imported from
				if simRelay && n.importing[slot].guess {
					n.relayed[slot] = true // a guess may never have held it: ask it (the server's relayGuess)
					relay[[2]int{n.importing[slot].peer, s.index(owner)}] = append(relay[[2]int{n.importing[slot].peer, s.index(owner)}], slot)
				}
			case prev != n.name && owner != n.name && !simThirdPrevForgot && !s.holds(i, slot) && n.copyFrom[slot] == prev:
				n.deadPrev[slot], n.deadPrevInc[slot] = s.index(prev), inc // a live third node held it, and may not have handed it over (the server's thirdPrev)
			case prev != n.name && owner != n.name && !simThirdPrevForgot && !s.holds(i, slot) && simAskChain:
				n.deadPrev[slot], n.deadPrevInc[slot] = s.index(prev), inc // it may have held it: named to an asker it did not send here (the server's askChain)
				n.guessPrev[slot] = s.index(prev)
			case owner == n.name && tb.Has(prev) && hasDP && !dpInc && !dpGuess && !tb.Has(s.known[dp]) && n.copyFrom[slot] != prev && simTakenPrev:
				// prev got it at the dead owner's death, and may never have held its state (see simTakenPrev)
			default:
				delete(n.deadPrev, slot)
			}
			if a, ok := n.adopted[slot]; ok && owner != n.name && owner != s.known[a] {
				delete(n.adopted, slot) // handed on to its owner now (see the handoffs above)
			}
			if _, adopted := n.adopted[slot]; owner == n.name && adopted && !simNoAdopt {
				delete(n.adopted, slot) // the server's slotChange: the table has caught up with the handoff, served here
			} else if h, ok := n.holder[slot]; owner == n.name && prev != n.name && n.forgone[slot] && ok && h != i && !tb.Has(s.known[h]) && n.copyFrom[slot] != s.known[h] && simForgoneLost {
				relost[slot] = h // still the holder's state, lost again below (not the server's: see simForgoneLost)
			} else if owner == n.name && prev != n.name && tb.Has(prev) && !settled[slot] {
				peer := s.index(prev)
				if h, ok := n.holder[slot]; simHolder && ok && h != i && (tb.Has(s.known[h]) || simDeadHolder && old.Table.Has(s.known[h])) {
					peer = h // the node it handed the slot to, or imported it from (the server's importFrom); one that died now: see the imports from the dead below
				} else if served && simImportServer && dp != i && dp != peer && tb.Has(s.known[dp]) {
					peer = dp // see simImportServer
				}
				s.logf("%s imports %d from %s", n.name, slot, s.known[peer])
				n.importing[slot] = simImport{peer: peer, until: n.local(s.now) + int64(simImportWait)} // a live owner hands it over (importFrom)
				n.holder[slot] = peer
				delete(n.handedInc, slot) // not a handoff's record (the server's holdBy)
			} else if owner == n.name && prev == n.name && !n.tk.Lost(slot) && (!importing || simImportDropsHolder) {
				delete(n.holder, slot)
			}
			if im, ok := n.importing[slot]; ok && im.guess && owner == n.name && tb.Has(s.known[im.peer]) && !simNoGuessAim {
				if ru, ok := tb.RunnerUp(slot); ok && ru.Name != s.known[im.peer] && ru.Name != n.name {
					im.peer = s.index(ru.Name) // the server's slotChange: a guess follows the slot's backup once the table has it
					n.importing[slot] = im
				}
			}
		}
		s.coldSeed(i, tb) // after the deadPrev bookkeeping, before relayGuesses, as the server's handoffHook
		for _, k := range slices.SortedFunc(maps.Keys(relay), func(a, b [2]int) int { return cmp.Compare(a[0]*len(s.nodes)+a[1], b[0]*len(s.nodes)+b[1]) }) {
			if !simRelayAny && (len(n.died) > 0 || n.rejoined || s.neverSaw(i)) {
				break // the server's relayGuesses: only a process that saw no death, no rejoin of its own, and every known member
			}
			n.relays = append(n.relays, simRelayAsk{guess: k[0], owner: k[1], slots: relay[k]})
		}
		s.relayAsks(i)
	}
	if old == nil {
		for _, slot := range s.slots {
			n.ownerInc[slot] = n.lease.IncarnationOf(tb.Owner(slot).Name)
		}
		s.coldSeed(i, tb) // a cold process's first shared table
	}
	now := n.local(s.now)
	for _, m := range tb.Nodes() { // the replicas' newShipPeer: a member new to the table starts with MaxLag
		if m.Name != n.name && (old == nil || !old.Table.Has(m.Name)) {
			n.fresh[s.index(m.Name)] = now + int64(simMaxLag)
		}
	}
	if old != nil && !s.noFormer {
		s.noteFormer(i, old.Table, tb)
	}
	n.tk = n.lease.NextTakeover(n.tk, old, nv, now)
	tk, unlost, _ := NextLost(n.tk, old, nv, func(slot int, owner string) bool { return n.copyFrom[slot] == owner || uncut[slot] && simUncutHeld })
	heldFrom := maps.Clone(n.copyFrom) // as the hook sees them, before the replicas drop stale copies
	if old != nil {
		for _, slot := range s.slots { // the server's noteLost: a lost slot's holder is its dead old owner
			if prev := old.Table.Owner(slot).Name; tk.Lost(slot) && !n.tk.Lost(slot) && prev != n.name {
				n.holder[slot] = s.index(prev)
				delete(n.handedInc, slot)
			}
		}
	}
	n.tk = tk
	for _, slot := range s.slots { // the server's forgone
		switch {
		case unlost[slot/64]&(1<<(slot%64)) != 0:
			n.forgone[slot] = true
		case tb.Owner(slot).Name == n.name && !tk.Lost(slot):
			delete(n.forgone, slot)
		}
	}
	for _, slot := range slices.Sorted(maps.Keys(relost)) {
		s.lose(i, slot, relost[slot])
	}
	if old != nil && !simTakeoverHolder {
		for _, slot := range s.slots {
			prev := old.Table.Owner(slot).Name
			_, importing := n.importing[slot]
			if tb.Owner(slot).Name == n.name && prev != n.name && !tb.Has(prev) && heldFrom[slot] == prev && !n.tk.Lost(slot) && !importing {
				delete(n.holder, slot) // the server's importFrom (takesOverFromCopies): served here from now on
			}
		}
	}
	if old != nil {
		s.promote(i, old, nv, uncut)
	}
	for slot := range n.copies { // the replicas' dropStale: copies of slots it no longer backs up go
		if ru, ok := tb.RunnerUp(slot); !ok || ru.Name != n.name || tb.Owner(slot).Name == n.name {
			delete(n.copies, slot)
			delete(n.copyFrom, slot)
			delete(n.lostAt, slot)
		}
	}
	if old != nil && simForgetMoved {
		for _, slot := range s.slots { // the replicas' forgetMoved: copies of an owner the table moved the slot off are not held
			if prev := old.Table.Owner(slot).Name; n.copyFrom[slot] == prev && tb.Owner(slot).Name != prev {
				delete(n.copyFrom, slot)
			}
		}
	}
	var fromDead []int
	var deadWait time.Duration // the longest of the dead holders' lease waits (the server's fromDeadLocked)
	var lost [Slots / 64]uint64
	nlost := 0
	for slot, im := range n.importing {
		switch {
		case !tb.Has(s.known[im.peer]) && (tb.Owner(slot).Name == n.name || simKeptDeadPeer): // the server's slotChange and waitImportsFromDead
			delete(n.importing, slot)
			switch {
			case tb.Owner(slot).Name != n.name:
			case simImportsLost && heldFrom[slot] != s.known[im.peer]: // no copies of the dead holder's: lost (fromDeadLocked)
				lost[slot/64] |= 1 << (slot % 64)
				nlost++
				n.lostFrom[slot] = im.peer
				if im.keep && !(n.tk.Lost(slot) && simRejoinLost) {
					n.lostOwn[slot] = true
				}
			default:
				fromDead = append(fromDead, slot)
				deadWait = max(deadWait, s.waitFor(n, s.known[im.peer]))
			}
		case tb.Owner(slot).Name != n.name:
			delete(n.importing, slot) // another node owns it now
			if h, ok := n.holder[slot]; im.keep && simKeptPush && (!ok || h == i || simKeptHeld) {
				n.kept[slot] = simKeptDied && diedBefore[tb.Owner(slot).Name] // its keys are the slot's state, unless a handback would have replaced them
				if simKeptBehind && im.peer != i && (tb.Has(s.known[im.peer]) || simBehindDead) && tb.Owner(slot).Name != s.known[im.peer] {
					n.keptBehind[slot] = im.peer
				}
			} else if p, ok := n.sentBehind[slot]; ok && simBehindBack && im.peer == p && s.known[p] == tb.Owner(slot).Name {
				n.kept[slot] = simKeptDied && diedBefore[tb.Owner(slot).Name] // its keys went behind, to a node that never served them (the server's backBehind)
			}
		}
	}
	for slot, p := range n.sentBehind { // the server's backBehind
		owner := tb.Owner(slot).Name
		im, importing := n.importing[slot]
		switch {
		case owner == n.name && (!importing || im.peer != p):
			delete(n.sentBehind, slot) // served here, or imported from another node
		case owner != n.name && old != nil && owner != old.Table.Owner(slot).Name:
			delete(n.sentBehind, slot) // moved on: kept above, or another owner's import holds the slot
		}
	}
	for slot, replace := range n.kept {
		if tb.Owner(slot).Name == n.name {
			if replace && n.tk.Lost(slot) && simKeptLost {
				n.lostOwn[slot] = true // its keys, newer than the dead owner's, may be the state (the server's keptLost)
				n.keptLost[slot] = true
			}
			delete(n.kept, slot) // its own again: an import, whose end serves what it keeps
			delete(n.disownBy, slot)
			if im, ok := n.importing[slot]; ok && !simKeptBackReset {
				im.keep = true // its keys are the slot's state: what comes only fills keys it lacks (the server's handoffHook)
				n.importing[slot] = im
				if !simKeptBackHolder {
					delete(n.holder, slot) // held here, not by the import's peer: kept again if the table moves it on
				}
			}
		}
	}
	if len(fromDead) > 0 {
		n.tk = n.tk.With(fromDead, n.local(s.now), deadWait)
	}
	if nlost > 0 {
		for slot := range Slots {
			if n.tk.Lost(slot) {
				lost[slot/64] |= 1 << (slot % 64)
			}
		}
		n.tk = n.tk.WithLost(&lost)
		s.logf("%s: imports from a dead holder without its copies are lost: %d", n.name, nlost)
	}
	if len(n.lostFrom) > 0 { // the server's lostComeBackLocked: the holder is back, import from it
		var keep [Slots / 64]uint64
		back := false
		for slot := range Slots {
			if !n.tk.Lost(slot) {
				continue
			}
			h, ok := n.lostFrom[slot]
			if !ok || !tb.Has(s.known[h]) || tb.Owner(slot).Name != n.name {
				keep[slot/64] |= 1 << (slot % 64)
				continue
			}
			n.importing[slot] = simImport{peer: h, until: n.local(s.now) + int64(simImportWait), keep: n.lostOwn[slot] && !simLostOwnForgot}
			delete(n.lostFrom, slot)
			delete(n.lostOwn, slot)
			delete(n.keptLost, slot)
			back = true
		}
		if back {
			n.tk = n.tk.WithLost(&keep)
		}
		for slot := range n.lostFrom {
			if !n.tk.Lost(slot) {
				delete(n.lostFrom, slot)
				if !n.forgone[slot] || !simBackKeeps { // the server's noteLost forgoes a slot and keeps its ownLost mark
					delete(n.lostOwn, slot)
					delete(n.keptLost, slot)
				}
			}
		}
	}
	n.view = nv
	for _, m := range nv.Table.Nodes() {
		delete(n.unseen, m.Name)
	}
	s.tablePull(i, first, old != nil)
}

func (s *sim) index(name string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "n"))
	return i
}

// rejoin is the server's: every slot the node owns waits for a handback.
func (s *sim) rejoin(i int) {
	n := s.nodes[i]
	s.logf("%s learns it was declared dead", n.name)
	simCounts.rejoins++
	n.rejoined = true
	for m := range n.died {
		n.seenDied[m] = true // the server's rejoin: what it served of m's slots is older than this death
	}
	if !s.noFormer && !s.noForget {
		clear(n.copyFrom) // the replicas' ForgetHeld: its copies are as old as its death
	}
	for slot := range n.out { // disowned: another node may have served it since
		n.forgone[slot] = true
		o := n.out[slot]
		delete(n.out, slot)
		if simKeptPush {
			n.kept[slot] = o.replace && simKeptReplace // the mode the handoff would have had
			if o.by != "" && o.by != n.name && simDisownBehind {
				n.disownBy[slot] = s.index(o.by)
			}
		} else {
			delete(n.cnt, slot)
		}
	}
	slots := s.importOwn(i)
	for _, slot := range slots {
		im := n.importing[slot]
		im.keep = true
		n.importing[slot] = im
	}
	s.pull(i, slots)
}

// simRejoinLost (RL_SIM_REJOINLOST=0 leaves it out): a slot lost here
// before a rejoin's import of it began (its holder died, and this node
// held none of its copies) is not marked as a rejoin's own lost slot
// (lostOwn) when that import is lost too, nor served from its keys at an
// unconfirmed death while it waits: this node never held the slot's
// state (the server's rejoinLost). Seed 3122 at a 1 s import wait: n2 had slot 11822 lost
// from n3 (dead, never served it; n1, paused, held 16), rejoined, was told
// to ASK n3, lost it again as its own, and when n1 resumed and n2's lease
// proved its death unconfirmed, served it from its keys: 0.
var simRejoinLost = os.Getenv("RL_SIM_REJOINLOST") != "0"

// simTakenPrev (RL_SIM_TAKENPREV=0 leaves it out): a slot the table moves
// to this node from a live node that got it at its owner's death
// (deadPrev: that owner, still out of the table), whose copies this node
// does not hold, keeps the dead owner as deadPrev while it is imported,
// so that a RELEASED from that node, should the next table give it the
// slot back, is answered "ASK" the dead owner (the server's takenPrev).
// Seed 2108 at a 1 s import wait: n0's table moved 15677 from n1 (paused
// with 45) to n4 and then to n0; n4's, which saw n1's and n3's deaths at
// once, moved it from n1 to n0 (n4 dropped n1's copies, 42); the next
// table gave it to n4, which imported it from n0, and n0 released it: n4
// served it from 0.
var simTakenPrev = os.Getenv("RL_SIM_TAKENPREV") != "0"

// simDeadRestart (RL_SIM_DEADRESTART=0 leaves it out): a dead owner that
// deadPrev names is not named once it answers the lease from another
// process than the one this node's lease last heard from before its
// death (the server's deadRestart, by restartedSince). Seed 2681 at a 1 s
// import wait: n3 took 11822 over at n1's death (a crash) and served it
// to 94; n0 answered n3's rejoin "ASK n1", n1's new process by then; the
// next table gave n1 the slot, n3 (its holder n1) kept nothing for it and
// released it, and n1 served it from 0.
var simDeadRestart = os.Getenv("RL_SIM_DEADRESTART") != "0"

// unconfirmed is the server's end of a rejoin whose death no majority
// confirmed (Lease.OnUnconfirmed): the slots it waits to have handed back
// keeping its keys, and those lost meanwhile because the node they waited
// for died, are served from its keys.
func (s *sim) unconfirmed(i int) {
	n := s.nodes[i]
	s.logf("%s: no majority confirmed its deaths", n.name)
	simCounts.proofs++
	if !simUnconfirmed {
		return
	}
	for _, slot := range slices.Sorted(maps.Keys(n.importing)) {
		if im := n.importing[slot]; im.keep && n.view.Table.Owner(slot).Name == n.name && !(n.tk.Lost(slot) && simRejoinLost) {
			delete(n.importing, slot)
			delete(n.holder, slot)
			simCounts.waits++
			s.logf("%s serves %d from its keys", n.name, slot)
		}
	}
	for _, slot := range slices.Sorted(maps.Keys(n.lostOwn)) {
		if n.tk.Lost(slot) && n.view.Table.Owner(slot).Name == n.name {
			s.unlose(i, slot)
			delete(n.holder, slot)
			simCounts.lost++
			s.logf("%s serves lost %d from its keys", n.name, slot)
		}
	}
	for slot := range n.lostOwn {
		if !n.forgone[slot] || !simBackKeeps { // the server's rejoinUnconfirmed keeps a forgone slot's ownLost mark (simBackKeeps)
			delete(n.lostOwn, slot)
			delete(n.keptLost, slot)
		}
	}
}

// backedUp is node i's answer to a PULL from node from: DONE with its copies of the slots that from
// owns and i backs up, unless a third node held them (see the server's
// backedUpFor). Its vals are nil when there are none.
func (s *sim) backedUp(i int, from string, slots []int) simMsg {
	n := s.nodes[i]
	done := simMsg{kind: simDone, from: i, to: s.index(from), pull: true} // mode pull: replaces only what the node still imports
	for _, slot := range slots {
		ru, ok := n.view.Table.RunnerUp(slot)
		_, moving := n.out[slot]
		moving = moving || n.moved[slot]
		_, importing := n.importing[slot]
		_, kept := n.kept[slot]
		_, adopted := n.adopted[slot]
		adopted = adopted && !simPullAdopted
		if ok && ru.Name == n.name && n.view.Table.Owner(slot).Name == from && n.returned[slot] != from && !moving && !importing && !adopted && (!kept || simPullKept) {
			if _, dp := n.deadPrev[slot]; simPullCopies && n.copyFrom[slot] != from && (dp || n.forgone[slot] || simPullHeld) {
				continue // cause A's fix: no DONE without the asker's copies (HeldBy) for a slot with other state
			}
			if la, ok := n.lostAt[slot]; ok && s.nodes[la[0]].name == from {
				continue // the asker's full sync named it lost there (the server's lostAtOwner)
			}
			c, ok := n.copies[slot]
			if !ok {
				c = -1 // no copy: the node keeps what it has
			}
			done.slots = append(done.slots, slot)
			done.vals = append(done.vals, c)
		}
	}
	return done
}

// promote is the replicas' promote: the slots node i gains from a member
// declared dead, and may serve (not lost), take its copies, replacing
// what it had. What the dead owner decided after its last shipment is
// lost, as documented: the slot's next serve may start lower.
func (s *sim) promote(i int, old, nv *View, uncut map[int]bool) {
	n := s.nodes[i]
	dead := map[string]bool{}
	for _, m := range nv.Gone {
		dead[m.Name] = true
	}
	for _, slot := range s.slots {
		prev := old.Table.Owner(slot).Name
		if !dead[prev] || nv.Table.Owner(slot).Name != n.name || n.tk.Lost(slot) || uncut[slot] {
			continue // uncut: this node never handed it over, and its keys are the state (see simUncutPromotes)
		}
		if c, ok := n.copies[slot]; ok {
			s.logf("%s promotes slot %d's copy %d from %s over its %d", n.name, slot, c, n.copyFrom[slot], n.cnt[slot])
			n.cnt[slot] = c
			if s.last[slot] == s.index(prev) {
				s.lossOK[slot] = true // what prev decided after its last shipment here
				s.promoFrom[slot], s.promoBy[slot] = s.index(prev), i
			}
			if floor := s.countBefore(slot); c < floor {
				s.lossOK[slot] = false // older than the documented loss, whoever served it last
				s.logf("%s promotes slot %d's copy %d, older than %d, the count %v before its last admission", n.name, slot, c, floor, simStale)
			}
		}
	}
}

// countBefore is slot's counter less the admissions of the simStale before
// its last admission: a promoted copy lower than that lacks more than the
// documented loss. Before, it was the counter simStale before the last
// admission, which a documented loss within that time makes higher than
// what the key had left (seed 1913: n2 handed slot 2313 to n1 at 23 from
// a copy, where n1 had left 39 before its cut, a documented loss; n1
// served it from 23 to 39 and crashed, and n2's copy of 37 counted as
// older than 39; RL_SIM_COUNTAT=1 as before).
func (s *sim) countBefore(slot int) int {
	h := s.hist[slot]
	if len(h) == 0 {
		return 0
	}
	at := h[len(h)-1].at - simStale
	for k := len(h) - 1; k >= 0; k-- {
		if h[k].at <= at {
			if simCountAt {
				return h[k].cnt
			}
			return h[len(h)-1].cnt - (len(h) - 1 - k)
		}
	}
	return 0
}

// simLossReset (RL_SIM_LOSSRESET=1): any admission ends a promotion's
// documented loss, as before; now the promoted copy's dead owner, which
// may serve on until its lease runs out while the takeover waits, does
// not end it (what it decides meanwhile is part of that loss). Seed 3648
// (a model artifact): n2 promoted n0's copy of slot 12850 (51) at 5.12 s,
// n0, cut off, served it on to 60 until its lease ran out at 5.26 s, and
// n2's first admission from 51 at 6.44 s counted as an undocumented loss.
var simLossReset = os.Getenv("RL_SIM_LOSSRESET") == "1"

// simCountAt (RL_SIM_COUNTAT=1): countBefore is the counter at that time,
// as before.
var simCountAt = os.Getenv("RL_SIM_COUNTAT") == "1"

// seedOut is the cut of handoff m, which its receiver took: the old owner
// keeps what it handed over as the new owner's copies if its table makes
// it their backup (the server's KeepHanded), and otherwise sends them to
// that backup (RL.PEER SEED). The seed goes after a fixed delay, drawing
// nothing from the schedule's randomness, so that a schedule differs from
// one without seeds only where a seed changes what a node holds.
func (s *sim) seedOut(m simMsg) {
	old := s.nodes[m.from]
	if old.view == nil {
		return
	}
	by := map[int]*simMsg{}
	for k, slot := range m.slots {
		b, ok := old.view.Table.RunnerUp(slot)
		if !ok || old.view.Table.Owner(slot).Name != s.known[m.to] || b.Name == s.known[m.to] {
			continue
		}
		to := s.index(b.Name)
		if by[to] == nil {
			by[to] = &simMsg{kind: simSeed, from: m.from, to: to, owner: m.to, at: s.now + simStep}
		}
		by[to].slots = append(by[to].slots, slot)
		by[to].vals = append(by[to].vals, m.vals[k])
	}
	for _, to := range slices.Sorted(maps.Keys(by)) {
		if to == m.from {
			s.seedIn(to, *by[to])
		} else {
			s.msgs = append(s.msgs, *by[to])
		}
	}
}

// seedIn keeps seed m's counters as the copies of the slots node i backs
// up for m.owner by its table, unless the owner's own shipment brought
// them already (the server's Seed).
func (s *sim) seedIn(i int, m simMsg) {
	n, owner := s.nodes[i], s.known[m.owner]
	if n.view == nil {
		return
	}
	for k, slot := range m.slots {
		ru, ok := n.view.Table.RunnerUp(slot)
		if !ok || ru.Name != n.name || n.view.Table.Owner(slot).Name != owner || n.copyFrom[slot] == owner || m.vals[k] < 0 {
			continue
		}
		n.copies[slot], n.copyFrom[slot] = m.vals[k], owner
		s.logf("%s keeps %d's %d from %s as %s's copy", n.name, slot, m.vals[k], s.known[m.from], owner)
	}
}

// ship sends node i's counters of the slots it owns to their backups, as
// the replicas do every --replica-interval. Shipments go over a stream
// that resyncs on failure, so the network drops none (a cut still does).
func (s *sim) ship(i int) {
	n := s.nodes[i]
	serving := n.lease.ServesAt(n.local(s.now))
	out := map[int]*simMsg{}
	for _, slot := range s.slots {
		c, has := n.cnt[slot]
		ru, ok := n.view.Table.RunnerUp(slot)
		if !ok || n.view.Table.Owner(slot).Name != n.name {
			continue
		}
		to := s.index(ru.Name)
		if out[to] == nil { // sent even with nothing in it: a heartbeat, acknowledged too
			out[to] = &simMsg{kind: simCopy, from: i, to: to, sent: n.local(s.now), gen: n.gen, held: serving || simShipNoLease}
		}
		if _, importing := n.importing[slot]; importing && !simShipImports {
			continue // not the slot's state yet: the server's full sync waits for the node's imports (shipOnce)
		}
		if n.tk.Lost(slot) && !simShipLost {
			if out[to].held {
				out[to].drop = append(out[to].drop, slot) // the server's fullSync: the backup drops its copies, and holds none
				if simSyncLost {
					if out[to].lost == nil {
						out[to].lost = map[int]int{}
					}
					h, ok := n.holder[slot]
					if !ok {
						h = -1
					}
					out[to].lost[slot] = h // SYNC's LOST, with its holder here
				}
			}
			continue
		}
		if has {
			out[to].slots = append(out[to].slots, slot)
			out[to].vals = append(out[to].vals, c)
		}
	}
	for to, slots := range n.former { // the "no longer backup" full sync, until acknowledged
		if len(slots) == 0 || !n.view.Table.Has(s.nodes[to].name) {
			continue
		}
		if out[to] == nil {
			out[to] = &simMsg{kind: simCopy, from: i, to: to, sent: n.local(s.now), gen: n.gen}
		}
		out[to].drop = append(out[to].drop, slices.Sorted(maps.Keys(slots))...)
	}
	for _, to := range slices.Sorted(maps.Keys(out)) {
		m := out[to]
		m.at = s.now + time.Duration(s.r.IntN(30))*time.Millisecond
		s.msgs = append(s.msgs, *m)
	}
}

// load sends each slot a request now and then, at the node serving it
// (check has made sure there is at most one), and checks the bound: the
// key's admissions never exceed its limit plus what documented losses
// allow.
func (s *sim) load(seed uint64) {
	for _, slot := range s.slots {
		if s.r.IntN(4) != 0 {
			continue
		}
		for i := range s.nodes {
			if s.serves(i, slot) {
				s.serve(seed, i, slot)
				break
			}
		}
	}
}

// serve decides one request for slot's key on node i.
func (s *sim) serve(seed uint64, i, slot int) {
	n := s.nodes[i]
	c := n.cnt[slot]
	if c < s.want[slot] {
		if by, ok := s.promoBy[slot]; ok && by == i && s.lossOK[slot] && c < s.countBefore(slot) {
			s.lossOK[slot] = false // the owner served on, and the copy is now older than the documented loss
			s.logf("%s serves slot %d's promoted copy %d, older than %d, the count %v before its last admission", n.name, slot, c, s.countBefore(slot), simStale)
		}
		if s.lossOK[slot] {
			s.allow[slot] += s.want[slot] - c
		} else {
			s.logf("%s serves slot %d from %d, where %s left %d: an undocumented loss", n.name, slot, c, s.known[s.last[slot]], s.want[slot])
			if !s.undoc && s.cold {
				s.undoc = true
				simColdCounts.undocumented = append(simColdCounts.undocumented, seed)
			} else if !s.undoc {
				s.undoc = true
				simCounts.undocumented = append(simCounts.undocumented, seed)
			}
			if !s.lossOpen { // "heal merges, never resets" (docs/cluster.md, Safety)
				s.fail(seed, fmt.Sprintf("%s serves slot %d from %d, where %s left %d: less than the documented losses allow",
					n.name, slot, c, s.known[s.last[slot]], s.want[slot]))
				return
			}
		}
	}
	if p, ok := s.promoFrom[slot]; !ok || p != i || simLossReset {
		s.lossOK[slot] = false
		delete(s.promoFrom, slot)
		delete(s.promoBy, slot)
	}
	if c < s.limit[slot] {
		c++
		s.total[slot]++
		s.hist[slot] = append(s.hist[slot], simCount{at: s.now, cnt: c})
	}
	n.cnt[slot], s.want[slot], s.last[slot] = c, c, i
	if s.total[slot] > s.limit[slot]+s.allow[slot] {
		what := fmt.Sprintf("slot %d's key admitted %d times, limit %d, documented losses %d", slot, s.total[slot], s.limit[slot], s.allow[slot])
		switch {
		case !s.open:
			s.fail(seed, what)
		case s.over == "":
			s.over = what // a known open case: see TestSimulationSafety
		}
	}
}

// simOut is a slot a node hands over once it holds its lease, to node to;
// since is when the handoff began, on the node's clock.
type simOut struct {
	to      int
	since   int64
	replace bool
	by      string // the slot's backup in the table this node held it by, "" when unknown (simDisownBehind)
}

// simImport is a slot a node waits for: from peer, asking it at until
// whether it released the slot.
type simImport struct {
	peer  int
	until int64
	keep  bool // a rejoin's: a handback that does not replace adds only what the node lacks
	guess bool // a new process's, from the runner-up of its first table, which may lack the slot's backup (the server's SlotState.guess)

	past []int // the nodes whose "ASK" sent this import on, in order (the server's SlotState.past: RELEASED's PAST)
}

// importOwn marks every slot node i owns as imported from its runner-up,
// as a restarted node and a rejoining one do, and returns them. A slot
// already imported keeps its import, as in the server's rejoin (before,
// the simulation's rejoin replaced an import from a live old owner with
// one from the runner-up, which the server never does).
func (s *sim) importOwn(i int) []int {
	n := s.nodes[i]
	until := n.local(s.now) + int64(simImportWait)
	var slots []int
	for _, slot := range s.slots {
		if _, ok := n.importing[slot]; n.view.Table.Owner(slot).Name != n.name || ok {
			continue // the server's rejoin leaves a slot with a handoff state as it is
		}
		if ru, ok := n.view.Table.RunnerUp(slot); ok {
			n.importing[slot] = simImport{peer: s.index(ru.Name), until: until}
			slots = append(slots, slot)
		}
	}
	return slots
}

// pull asks every other node for slots, as RL.PEER PULL: the slot's
// backup says done for it (backedUpFor), unless a third node held it.
func (s *sim) pull(i int, slots []int) {
	for j := range s.nodes {
		if j != i && len(slots) > 0 {
			s.send(simMsg{kind: simPull, from: i, to: j, slots: slots})
		}
	}
}

// serves is the rule under test: the server's mayServe, on the node's
// own table and handoff state.
func (s *sim) serves(i, slot int) bool {
	n := s.nodes[i]
	if !n.up || n.paused {
		return false
	}
	now := n.local(s.now)
	if _, ok := n.importing[slot]; ok {
		return false
	}
	return n.lease.ServesAt(now) && n.view.Table.Owner(slot).Name == n.name && !n.tk.Waits(slot, now) && s.fresh(i, slot, now)
}

// fresh is the replicas' Fresh: node i serves a slot only while the slot's
// backup has acknowledged a shipment sent less than MaxLag ago.
// RL_SIM_NOFRESH=1 leaves it out, as the server did before (cause D).
func (s *sim) fresh(i, slot int, now int64) bool {
	if s.noFresh {
		return true
	}
	n := s.nodes[i]
	for b, slots := range n.former {
		if slots[slot] && now >= n.formerUntil[b] {
			return false
		}
	}
	ru, ok := n.view.Table.RunnerUp(slot)
	if !ok {
		return true
	}
	return now < n.fresh[s.index(ru.Name)]
}

// noteFormer is the replicas' noteFormerLocked: node i's slots whose
// backup the change from old to nt moved off a node still in nt count
// toward fresh with that node's deadline then, until it acknowledges
// their drop; slots i no longer owns are forgotten.
func (s *sim) noteFormer(i int, old, nt *Table) {
	n := s.nodes[i]
	for b, slots := range n.former {
		for slot := range slots {
			if nt.Owner(slot).Name != n.name {
				delete(slots, slot)
			}
		}
		if !nt.Has(s.nodes[b].name) {
			delete(n.former, b)
		}
	}
	for _, slot := range s.slots {
		if old.Owner(slot).Name != n.name || nt.Owner(slot).Name != n.name {
			continue
		}
		ob, ok := old.RunnerUp(slot)
		if !ok || !nt.Has(ob.Name) {
			continue
		}
		if b, ok := nt.RunnerUp(slot); ok && b.Name == ob.Name {
			continue
		}
		b := s.index(ob.Name)
		if len(n.former[b]) == 0 {
			n.former[b] = map[int]bool{}
			n.formerUntil[b] = n.fresh[b]
		}
		n.former[b][slot] = true
	}
}

// unreachable reports whether node i's handoff to node to fails now: a
// cut between them. The server's last copy is an IMPORT whose answer must
// come before its cut; when the new owner cannot be reached it serves the
// slots on and retries, until migrateWait (abandon). Before, the model
// sent the handoff's DONE and counted the slots as handed over whatever
// the cut, and the old owner, its record naming the new owner, then
// released the slots to it (seed 1850: served from older keys).
// RL_SIM_CUTHANDOFF=1 models it as before.
func (s *sim) unreachable(i, to int) bool {
	return !simCutHandoff && (s.cut[i][to] || !s.nodes[to].up && !simLostInFlight)
}

// unsent is the sender's side of a handoff's DONE, or of kept keys, that a
// cut or the receiver's crash kept from arriving: the server's last copy
// and sendKept are acknowledged RL.PEER calls, so the sender learns that
// they failed, and serves the slots on and retries (simHandBack), or keeps
// them again (simRefused). The model dropped them, and the sender's keys
// with them: seed 1160, a cut 40 ms after n4 handed 14392 to n0 (n0 then
// served it from 0 where n4 left 53); seeds 122, 716, 1007 and 1352, a
// handoff or kept keys sent to a node that had crashed.
// RL_SIM_LOSTINFLIGHT=1 drops them, as before.
func (s *sim) unsent(m simMsg) {
	from := s.nodes[m.from]
	if m.kind == simKeptOK && simKeptOnce && s.nodes[m.to].up { // the pusher's doneUnknown
		for _, slot := range m.slots {
			_, flying := s.nodes[m.to].keptFlight[slot]
			if _, ok := s.nodes[m.to].kept[slot]; ok && flying {
				s.nodes[m.to].kept[slot] = false
			}
		}
	}
	if m.kind != simDone || m.pull && !m.kept || simLostInFlight || !from.up {
		return
	}
	back := simMsg{kind: simHandBack, from: m.to, to: m.from, slots: m.slots, vals: m.vals, replace: m.replace, local: true}
	if m.kept {
		back.kind = simRefused
	}
	if from.paused {
		from.held = append(from.held, back)
		return
	}
	s.receive(back)
}

var simLostInFlight = os.Getenv("RL_SIM_LOSTINFLIGHT") == "1"

// simHandBackServes (RL_SIM_HANDBACKSERVES=0 leaves it out): a node whose
// handoff's DONE was refused (or never arrived), and whose table gave the
// slot back meanwhile, serves it on from its keys (the server's settle:
// the migration, still gated at the table change, settles by the table at
// its cut). The model sends a table change's DONE at once, so the slot's
// return made it import the slot from the very node it had handed it to
// (its holder), which had refused it. Cold seed 1331 at a 1 s import wait:
// n1, which had served 11822 to 7, imported it so from n2, was sent on by
// n2's askChain to n3 (which never held it), kept n3 as the slot's holder,
// and released the slot to n3's next process, which served it from 0.
var simHandBackServes = os.Getenv("RL_SIM_HANDBACKSERVES") != "0"

// simImportServer (RL_SIM_IMPORTSERVER=0 leaves it out): a node whose
// table gives it a slot it had named a live third node for (thirdPrev: it
// held that node's copies, so that node served the slot) imports the slot
// from that node, not from its table's old owner. Cold seed 2426: n1, n2's
// backup with its copies (7), named n2 when a heal's table moved the slot
// to n3; the next table gave it to n1, which imported it from n3 (a table
// of a moment's owner that never held it) and served it from 0 while n2,
// paused, held 7.
var simImportServer = os.Getenv("RL_SIM_IMPORTSERVER") != "0"

// simSettleReset (RL_SIM_SETTLERESET=1): a handoff re-aimed at another
// owner goes in mode reset, as the model did before; the server's settle
// starts a migration to it, in mode replace when this node saw its death
// confirmed (startMigration). Seed 3983 (once a failed handoff served on,
// see unsent): n0's handoff of 15163 to n4, refused, was re-aimed at n3,
// back from a pause and a confirmed death, with n0's other slots of n3 in
// one DONE of mode reset: n3 kept its older keys (43 of 514, where n0
// left 71).
var simSettleReset = os.Getenv("RL_SIM_SETTLERESET") == "1"

// send sends m. Lease requests and answers go over gossip's packets, and
// the network drops simDropPct of them; the other messages are the
// server's RL.PEER commands on TCP connections, answered and retried, and
// only a cut drops them (deliver). Before, they were dropped as packets
// too: a handoff's DONE carried its last copy, and a lost one left the
// new owner its older keys while the old owner released the slot to it
// (seed 692), where the server's last copy is an acknowledged IMPORT
// before the DONE, and a DONE whose answer is lost keeps the copy there
// (doneUnknown). RL_SIM_TCPDROP=1 drops them as before. The draw is made
// for every message, so that the schedules' randomness is unchanged.
func (s *sim) send(m simMsg) {
	if s.r.IntN(100) < simDropPct && (simTCPDrop || m.kind == simReq || m.kind == simAns) {
		return
	}
	m.at = s.now + time.Duration(s.r.IntN(30))*time.Millisecond
	s.msgs = append(s.msgs, m)
}

func (s *sim) logf(f string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%8v ", s.now)+fmt.Sprintf(f, args...))
}

// deliver hands m to its receiver, unless the network or the receiver
// drops it.
func (s *sim) deliver(m simMsg) {
	to := s.nodes[m.to]
	switch {
	case s.cut[m.from][m.to] || !to.up:
		s.unsent(m)
		return
	case to.paused:
		to.held = append(to.held, m)
		return
	}
	s.receive(m)
}

// waitFor is how long n waits before it serves slots whose state member
// held when it died (the server's fromDeadLocked): until member's lease
// has run out (Lease.WaitFor), or TakeoverWait with RL_SIM_GRANTAGES=0.
func (s *sim) waitFor(n *simNode, member string) time.Duration {
	if !simGrantAges {
		return n.lease.TakeoverWait()
	}
	return n.lease.WaitFor(member, n.local(s.now))
}

func (s *sim) receive(m simMsg) {
	if m.kind == simSeed { // on a handoff's connection, which memberlist does not hear
		s.seedIn(m.to, m)
		return
	}
	n, from := s.nodes[m.to], s.nodes[m.from].name
	if !m.local {
		n.heard[from] = s.now
	}
	met := s.meet(m.to, m.members)
	s.mergeKnown(m.to, m.known)
	if !n.alive[from] && !m.local {
		n.alive[from] = true // it refutes its death
		delete(n.pending, from)
		if n.unmet[from] {
			delete(n.unmet, from)
			n.knows[from] = true
			n.nextReq = n.local(s.now) // the server's kickLease: the known set grew
		}
		s.logf("%s sees %s alive again", n.name, from)
		met = true
	}
	if met {
		s.rebuild(m.to)
	}
	now := n.local(s.now)
	switch m.kind {
	case simReq:
		granted := n.lease.GrantsAt(now, from, n.alive[from], m.ack)
		fenced := n.lease.AppendFenced(nil)
		var ages []int64
		if simGrantAges {
			ages = n.lease.GrantAgesAt(now, fenced)
			for i := range ages {
				ages[i] = ages[i] / int64(time.Millisecond) * int64(time.Millisecond) // the wire's milliseconds
			}
		}
		var inc uint64
		if simIncarnation {
			inc = n.lease.Incarnation()
		}
		s.send(simMsg{kind: simAns, from: m.to, to: m.from, sent: m.sent, granted: granted,
			deaths: n.lease.Deaths(from), fenced: fenced, ages: ages, inc: inc})
	case simAns:
		n.lease.NoteGrantAgesAt(from, m.sent, now, m.fenced, m.ages)
		n.lease.NoteFencesAt(from, m.sent, m.fenced)
		n.lease.NoteIncarnationAt(now, from, m.sent, m.inc)
		n.lease.AnsweredAt(now, from, m.sent, m.granted, m.deaths, s.known)
		s.confirm(m.to)
	case simDone:
		if s.keepsOwnUnserved(m.to, m) || m.pull && slices.ContainsFunc(m.slots, func(slot int) bool { return s.lostElsewhere(m.to, slot, m.from) }) {
			s.logf("%s refuses %v %v from %s: no lease, and it keeps its own keys; or a slot lost here, held elsewhere", n.name, m.slots, m.vals, from)
			if m.kept {
				s.send(simMsg{kind: simRefused, from: m.to, to: m.from, slots: m.slots, vals: m.vals, replace: m.replace})
			}
			break
		}
		if s.thirdOwner(m.to, m) {
			s.logf("%s refuses done %v %v from %s: a slot is a third node's here", n.name, m.slots, m.vals, from)
			if !simThirdDrops {
				s.importBeforeDone(m.to, m)
			}
			switch {
			case m.kept:
				s.send(simMsg{kind: simRefused, from: m.to, to: m.from, slots: m.slots, vals: m.vals, replace: m.replace})
			case !m.pull:
				s.send(simMsg{kind: simHandBack, from: m.to, to: m.from, slots: m.slots, vals: m.vals})
			}
			break
		}
		s.logf("%s gets done %v %v from %s", n.name, m.slots, m.vals, from)
		for k, slot := range m.slots {
			im, importing := n.importing[slot]
			if _, ok := m.behind[slot]; ok && importing {
				if m.vals[k] >= 0 && (!im.keep || m.replace || simJoinKept) {
					n.takeKept(slot, m.vals[k]) // stored, the import goes on: its holder may hold newer keys
				}
				n.gotFrom[slot] = m.from
				continue
			}
			if importing && im.peer != m.from {
				if m.pull {
					if m.vals[k] >= 0 && ((!im.keep || m.replace) && simKeptPush || simJoinKept) {
						if m.kept || simJoinKept {
							n.takeKept(slot, m.vals[k])
						} else {
							n.cnt[slot] = m.vals[k] // the IMPORT came first, and stored its keys (peerImport)
						}
					}
					continue // the server's takeSlots: only the old owner it imports from ends an import
				}
				im.peer = m.from // a handoff's reset IMPORT came first: the server's importingFrom
			}
			_, out := n.out[slot]
			if _, ad := n.adopted[slot]; m.pull && simHandedNotAdopted && !importing && !out && !n.gated[slot] && !ad {
				if h, ok := n.holder[slot]; ok && h == m.from && n.view.Table.Owner(slot).Name == s.nodes[m.from].name {
					if m.vals[k] >= 0 && simJoinKept {
						n.takeKept(slot, m.vals[k]) // the IMPORT stored its keys (peerImport)
					}
					continue // the server's takeSlots: handed to m.from, which serves it (handedNotAdopted)
				}
			}
			_, has := n.cnt[slot]
			handed := !m.pull && simHandoffUnloses && n.tk.Lost(slot) // a live handoff of a slot lost here: its keys are the state (the server's servedSlots)
			replace := m.replace && (!m.pull || importing)            // a PULL's answer in mode handback replaces only what the node waits for
			notOwn := n.view.Table.Owner(slot).Name != n.name && !simNotOwnKeeps
			if m.vals[k] >= 0 && m.pull && simJoinKept {
				n.takeKept(slot, m.vals[k]) // joined, imported or served
			} else if m.vals[k] >= 0 && (importing && !im.keep || replace || !has || handed || notOwn) { // see peerImport: reset, replace, a key it lacks, a lost slot's handoff, or a slot it does not own (importHanded)
				n.cnt[slot] = m.vals[k]
			}
			delete(n.importing, slot)
			delete(n.gotFrom, slot)
			// the server's noteHanded
			n.took[[2]int{m.from, slot}] = true
			if h, ok := n.holder[slot]; simHolder && n.tk.Lost(slot) && (ok && h == m.from || handed) { // the server's unloseLocked: the holder's state came, or a live handoff's
				s.unlose(m.to, slot)
			}
			if !n.tk.Lost(slot) {
				delete(n.holder, slot)
			}
			if n.view.Table.Owner(slot).Name != n.name {
				n.adopted[slot] = m.from // the server's takeSlots: adopted ahead of the table
			}
		}
		if !m.pull && simSeedCopies {
			s.seedOut(m)
		}
		if m.kept && !simKeptClears { // the IMPORT's answer, after a fixed delay: it draws nothing from the schedule's randomness
			s.msgs = append(s.msgs, simMsg{kind: simKeptOK, from: m.to, to: m.from, slots: m.slots, at: s.now + simStep})
		}
		if !m.kept && !m.pull && !simMovedStays { // the DONE's answer, the same way
			s.msgs = append(s.msgs, simMsg{kind: simDoneOK, from: m.to, to: m.from, slots: m.slots, at: s.now + simStep, local: true}) // on the handoff's connection: memberlist hears nothing
		}
	case simHandBack: // the server's migration: a refused last copy serves on, and settle hands it by the table
		for k, slot := range m.slots {
			delete(n.moved, slot)
			delete(n.gated, slot)
			if _, has := n.cnt[slot]; !has && m.vals[k] >= 0 {
				n.cnt[slot] = m.vals[k]
			}
			if h, ok := n.holder[slot]; ok && h == m.from {
				delete(n.holder, slot)
			}
			if owner := n.view.Table.Owner(slot).Name; owner != n.name {
				_, importing := n.importing[slot]
				n.out[slot] = simOut{to: s.index(owner), since: now, replace: n.died[owner] && !importing}
			} else if im, ok := n.importing[slot]; ok && im.peer == m.from && !im.keep && simHandBackServes {
				delete(n.importing, slot) // see simHandBackServes
				s.logf("%s serves %d on: %s refused its DONE", n.name, slot, from)
			}
		}
	case simDoneOK: // the server's cut: a moved slot keeps its mark only while the table names this node
		for _, slot := range m.slots {
			delete(n.gated, slot)
			if n.view.Table.Owner(slot).Name != n.name {
				delete(n.moved, slot)
			}
		}
	case simKeptOK: // the server's sendKept: taken, the keys go
		for _, slot := range m.slots {
			if _, ok := n.keptFlight[slot]; !ok {
				continue
			}
			delete(n.keptFlight, slot)
			if _, importing := n.importing[slot]; n.view.Table.Owner(slot).Name == n.name || importing || s.hasState(m.to, slot) && simKeptStateless {
				delete(n.kept, slot) // its own again, or moving: the table's handoff settles it
				delete(n.disownBy, slot)
				continue
			}
			delete(n.kept, slot)
			delete(n.disownBy, slot)
			n.holder[slot] = m.from
			s.noteHandedInc(m.to, slot, m.from)
			if p, ok := n.keptBehind[slot]; ok {
				n.holder[slot] = p // RELEASED: ASK the node that took it over; its keys stay here (the server's sendKept)
				if !n.view.Table.Has(s.known[p]) && simBehindDead {
					n.behindDead[slot] = [2]int{m.from, p} // named only while the owner they went to holds the slot (the server's forgetBehindDead)
				}
			}
			if _, ok := n.keptBehind[slot]; !ok || simBehindDrops {
				delete(n.cnt, slot)
			} else if simBehindBack {
				n.sentBehind[slot] = n.keptBehind[slot]
			}
			delete(n.keptBehind, slot)
		}
	case simRefused: // the server's sendKept: an IMPORT that failed keeps the slots again
		for k, slot := range m.slots {
			delete(n.keptFlight, slot)
			_, importing := n.importing[slot]
			if n.view.Table.Owner(slot).Name == n.name || importing {
				continue // its own again: the table's handoff settles it
			}
			n.kept[slot] = m.replace
			if _, has := n.cnt[slot]; !has && m.vals[k] >= 0 {
				n.cnt[slot] = m.vals[k]
			}
			if h, ok := n.holder[slot]; ok && h == m.from {
				delete(n.holder, slot)
			}
		}
	case simCopy:
		if !m.held && n.ended[m.from] {
			s.logf("%s refuses %s's shipment %v %v: its stream is from before its death (-RESYNC)", n.name, from, m.slots, m.vals)
			s.r.IntN(30) // the acknowledgement's draw, as if it went: the schedule's randomness is unchanged
			break
		}
		if m.held {
			delete(n.ended, m.from) // a full sync: a new stream
		}
		for _, slot := range m.drop { // RL.PEER SYNC's drop: whoever's copies they were
			delete(n.copies, slot)
			delete(n.copyFrom, slot)
			delete(n.lostAt, slot)
		}
		for slot, h := range m.lost {
			n.lostAt[slot] = [2]int{m.from, h}
		}
		for k, slot := range m.slots {
			if !m.held && n.copyFrom[slot] != from {
				continue // a delta on no full sync of the sender's held here: refused (-RESYNC), and the sync waits for the lease
			}
			n.copies[slot] = m.vals[k]
			n.copyFrom[slot] = from // a shipment names its slots (RL.PEER SYNC's backed bitmap)
		}
		s.msgs = append(s.msgs, simMsg{kind: simCopied, from: m.to, to: m.from, sent: m.sent, gen: m.gen, drop: m.drop,
			at: s.now + time.Duration(s.r.IntN(30))*time.Millisecond}) // on the shipment's stream: not dropped
	case simCopied:
		if m.gen != n.gen {
			break
		}
		if m.sent+int64(simMaxLag) > n.fresh[m.from] {
			n.fresh[m.from] = m.sent + int64(simMaxLag)
		}
		for _, slot := range m.drop {
			delete(n.former[m.from], slot)
		}
	case simAsk:
		if !n.lease.ServesAt(now) {
			break // the server's peerReleased: a node that may not serve knows nothing newer
		}
		s.knownLate(m.to)
		if m.relay { // asked on m.asker's behalf (simRelay): answered as m.asker would be
			m.from, from = m.asker, s.nodes[m.asker].name
		}
		var released, newProc []int
		var ask map[int][]int
		for _, slot := range m.slots {
			if h, ok := n.holder[slot]; simHolder && ok && h != m.from && h != m.to {
				if ask == nil {
					ask = map[int][]int{}
				}
				ask[h] = append(ask[h], slot)
				continue
			}
			h, hok := n.holder[slot]
			if hok && h == m.from && s.handedNewProcess(m.to, slot, m.from) && !(simHandedClaim && slices.Contains(m.handed, slot)) {
				if s.handedNone == nil {
					s.handedNone = map[[2]int]bool{}
				}
				s.handedNone[[2]int{m.from, slot}] = true
				if n.copyFrom[slot] == from {
					newProc = append(newProc, slot) // the old process's copies, held here: see simHandedPull
				}
				continue // handed to from's old process, which died with it: see simHandedInc
			}
			back := m.keep && hok && h == m.from // lost here when from died, and from's rejoin has its keys
			if !simAskForgone && (n.view.Table.Owner(slot).Name != from || n.forgone[slot] && !back) {
				continue // the server's releasedLocked: not from's by its table, or lost here (unless back); no answer
			}
			if back && n.forgone[slot] && n.lostOwn[slot] && n.died[from] && (n.seenDied[from] || n.keptLost[slot]) && simBackKeeps {
				n.kept[slot] = simKeptDied // the server's backKeeps: its keys, served since from's death, go to from
				delete(n.lostOwn, slot)
				delete(n.keptLost, slot)
				continue
			}
			if _, moving := n.out[slot]; simHeldFirst && (moving && !simAskMoving || n.gated[slot] && !simAskGated) {
				continue // the server's heldFirst: served here until its cut, named to nobody else
			}
			if _, adopted := n.adopted[slot]; simHeldFirst && adopted && !simAskAdopted {
				continue // the server's heldFirst: adopted here, named to nobody else
			}
			if _, kept := n.kept[slot]; kept && simKeptFirst {
				continue // the server's keptFirst: its keys are on their way, and it names nobody else
			}
			if g, ok := n.guessPrev[slot]; ok && g == n.deadPrev[slot] && (m.keep && !simAskChainKeep || slices.Contains(m.past, g)) {
				// It sent this import here already: named back, the import
				// goes round (the server's askChain). As if it named no one.
			} else if d, ok := n.deadPrev[slot]; simDeadPrev && ok && d != m.from && n.view.Table.Owner(slot).Name == from && n.copyFrom[slot] != from && !s.restartedSince(m.to, slot, d) {
				if ask == nil {
					ask = map[int][]int{}
				}
				ask[d] = append(ask[d], slot) // cause A: the slot's state was the dead owner's, and this node holds none of from's
				continue
			}
			if la, ok := n.lostAt[slot]; ok && la[0] == m.from && la[1] != m.to && la[1] != m.from {
				if la[1] >= 0 {
					if ask == nil {
						ask = map[int][]int{}
					}
					ask[la[1]] = append(ask[la[1]], slot) // the asker lost it from that holder (the server's lostHolder)
				}
				continue
			}
			if _, moving := n.out[slot]; moving && !simAskMoving {
				continue // the server's peerReleased: a slot it is handing over is served here until its cut
			}
			if n.gated[slot] && !simAskGated {
				continue // the server's releasedLocked: its DONE is on its way (ModeGated), or refused, and it serves on
			}
			if _, adopted := n.adopted[slot]; adopted && !simAskAdopted {
				continue // the server's releasedLocked: an adopted slot is held here (ModeAdopted)
			}
			_, kept := n.kept[slot]
			if h, ok := n.holder[slot]; simAskBackup && n.view.Table.Owner(slot).Name == from && !n.forgone[slot] && !kept && !(ok && h == m.from) {
				if ru, ok := n.view.Table.RunnerUp(slot); ok && ru.Name != n.name && ru.Name != from && n.pending[ru.Name] {
					if ask == nil {
						ask = map[int][]int{}
					}
					ask[s.index(ru.Name)] = append(ask[s.index(ru.Name)], slot) // not its backup, nor handed it: the backup knows
					continue
				}
			}
			if simVouch && s.neverSaw(m.to) && !(hok && h == m.from) {
				if s.withheld == nil {
					s.withheld = map[[2]int]bool{}
				}
				s.withheld[[2]int{m.from, slot}] = true
				continue // a new process that never saw a known member vouches only for what it handed the asker: see simVouch
			}
			if n.view.Table.Owner(slot).Name == from && (!n.forgone[slot] || back) && !kept {
				released = append(released, slot)
			}
		}
		switch {
		case m.relay && len(released) > 0:
			s.sendFixed(simMsg{kind: simRelayed, from: m.to, to: m.sender, slots: released, asker: m.asker})
		case m.relay:
		case len(released) > 0 || len(ask) > 0:
			s.send(simMsg{kind: simReleased, from: m.to, to: m.from, slots: released, ask: ask})
		}
		if done := s.backedUp(m.to, from, newProc); simHandedPull && done.vals != nil {
			s.send(done) // the server's handedPull: as the new process's PULL is answered
		}
	case simRelayed:
		s.relayed(m.to, m)
	case simJoin: // memberlist's push-pull: the joiner learns this node's members too
		s.send(simMsg{kind: simJoined, from: m.to, to: m.from, members: s.gossip(m.to), known: s.knownOf(m.to)})
	case simReleased:
		s.logf("%s: %s released %v, ask %v", n.name, from, m.slots, m.ask)
		for _, slot := range m.slots {
			if im, ok := n.importing[slot]; ok && im.peer == m.from {
				delete(n.importing, slot)
				delete(n.holder, slot)
			}
		}
		for _, h := range slices.Sorted(maps.Keys(m.ask)) { // the server's askElsewhere
			for _, slot := range m.ask[h] {
				im, ok := n.importing[slot]
				if !ok || im.peer != m.from || h == m.to || n.view.Table.Owner(slot).Name != n.name {
					continue
				}
				if g, ok := n.gotFrom[slot]; ok && g == h {
					delete(n.importing, slot) // the holder never had it: the keys that came are the state
					delete(n.gotFrom, slot)
					delete(n.holder, slot)
					continue
				}
				n.holder[slot] = h
				delete(n.handedInc, slot)
				switch {
				case n.view.Table.Has(s.known[h]):
					n.importing[slot] = simImport{peer: h, until: now + int64(simRelease), keep: im.keep, past: append(slices.Clip(im.past), m.from)}
				case n.copyFrom[slot] == s.known[h]:
					delete(n.importing, slot)
					n.tk = n.tk.With([]int{slot}, now, s.waitFor(n, s.known[h]))
				default:
					delete(n.importing, slot)
					was := n.tk.Lost(slot)
					s.lose(m.to, slot, h)
					if im.keep && simBackKeeps && !(was && simRejoinLost) {
						n.lostOwn[slot] = true // the server's askElsewhere: a rejoin's own slot, its keys may be the state
					}
				}
			}
		}
	case simPull:
		s.knownLate(m.to)
		if !n.lease.ServesAt(now) {
			if s.cold {
				s.logf("%s: no lease for %s's PULL", n.name, from)
			}
			break // the server's backedUpFor: a node that may not serve knows nothing newer
		}
		if done := s.backedUp(m.to, from, m.slots); done.vals != nil {
			s.send(done)
		}
	}
}

// tick runs each node's timers: lease requests, failure detection,
// import timeouts.
func (s *sim) tick(i int) {
	n := s.nodes[i]
	if !n.up || n.paused {
		return
	}
	now := n.local(s.now)
	if simNaive {
		s.naive(i)
	}
	if sv := n.lease.ServesAt(now); s.cold && sv != n.leased {
		n.leased = sv
		s.logf("%s holds its lease: %v", n.name, sv)
	}
	if now >= n.nextReq {
		n.lease.SentAt(now, s.known)
		for j := range s.nodes {
			if j != i && !n.unmet[s.known[j]] { // the server asks the members it knows (Known)
				s.send(simMsg{kind: simReq, from: i, to: j, sent: now, ack: n.lease.AckFor(s.known[j]), members: s.gossip(i), known: s.knownOf(i)})
			}
		}
		n.nextReq = now + int64(simTerm/5)
	}
	s.joins(i)
	s.relayAsks(i)
	outs := map[int]*simMsg{}
	for _, slot := range slices.Sorted(maps.Keys(n.out)) {
		o := n.out[slot]
		switch {
		case n.lease.ServesAt(now) && !s.unreachable(i, o.to):
			if outs[o.to] == nil {
				outs[o.to] = &simMsg{kind: simDone, from: i, to: o.to, replace: true}
			}
			outs[o.to].replace = outs[o.to].replace && o.replace
			outs[o.to].slots = append(outs[o.to].slots, slot)
			outs[o.to].vals = append(outs[o.to].vals, n.cnt[slot])
			n.holder[slot] = o.to
			s.noteHandedInc(i, slot, o.to)
			n.moved[slot] = !simNoMoved
			n.gated[slot] = true
		case now-o.since > int64(simMigrate): // the server's abandon
			if simAbandonKeeps {
				delete(n.out, slot)
				n.kept[slot] = o.replace // its keys go once it holds its lease, and it releases nothing meanwhile
				continue
			}
		default:
			continue
		}
		delete(n.out, slot)
		delete(n.cnt, slot)
	}
	for _, to := range slices.Sorted(maps.Keys(outs)) {
		m := outs[to]
		s.logf("%s hands %v %v to %s once it holds its lease", n.name, m.slots, m.vals, s.nodes[to].name)
		s.send(*m)
	}
	if len(n.kept) > 0 && n.lease.ServesAt(now) { // the server's pushKept: a PULL's answer, unasked
		pushes := map[[2]int]*simMsg{}
		for _, slot := range slices.Sorted(maps.Keys(n.kept)) {
			to := s.index(n.view.Table.Owner(slot).Name)
			if to == i || s.unreachable(i, to) && !simKeptCut {
				continue // across a cut the server's sendKept fails and keeps them again
			}
			if s.hasState(i, slot) && simKeptStateless {
				continue // the server's takeKept: a slot with a handoff state is not pushed (an adopted one is served here)
			}
			if at, ok := n.keptFlight[slot]; ok {
				if s.now-at < simKeptRTT {
					continue // one push at a time (the server's pushing): its answer comes first
				}
				delete(n.keptFlight, slot) // no answer (a cut): sendKept's error keeps them
			}
			k := [2]int{to, 0}
			if n.kept[slot] {
				k[1] = 1
			}
			if pushes[k] == nil {
				pushes[k] = &simMsg{kind: simDone, from: i, to: to, pull: true, replace: n.kept[slot], kept: true}
			}
			if p, ok := n.disownBy[slot]; ok {
				delete(n.disownBy, slot)
				if s.known[p] != n.view.Table.Owner(slot).Name && n.view.Table.Has(s.known[p]) && n.lease.MayBeConfirmed(s.known) {
					n.keptBehind[slot] = p // see simDisownBehind
				}
			}
			if p, ok := n.keptBehind[slot]; ok {
				if pushes[k].behind == nil {
					pushes[k].behind = map[int]int{}
				}
				pushes[k].behind[slot] = p
			}
			to2 := k
			c, ok := n.cnt[slot]
			if !ok {
				c = -1
			}
			pushes[to2].slots = append(pushes[to2].slots, slot)
			pushes[to2].vals = append(pushes[to2].vals, c)
			if !simKeptClears {
				n.keptFlight[slot] = s.now // still kept until the owner's answer (the server's sendKept)
				continue
			}
			n.holder[slot] = to
			s.noteHandedInc(i, slot, to)
			delete(n.kept, slot)
			delete(n.disownBy, slot)
			delete(n.cnt, slot)
		}
		keys := slices.SortedFunc(maps.Keys(pushes), func(a, b [2]int) int { return a[0]*2 + a[1] - b[0]*2 - b[1] })
		for _, k := range keys {
			m := pushes[k]
			s.logf("%s sends %v %v it keeps to %s (replace %v)", n.name, m.slots, m.vals, s.nodes[m.to].name, m.replace)
			s.send(*m)
		}
	}
	if now >= n.nextShip {
		s.ship(i)
		n.nextShip = now + int64(simShip)
	}
	type askKind struct { // by peer, twice over for a rejoin's imports (keep), and by past: the server's one question per kind
		k    int
		past string
	}
	asks, pasts := map[askKind][]int{}, map[askKind][]int{}
	for slot, im := range n.importing {
		if now >= im.until {
			k := askKind{k: 2 * im.peer, past: fmt.Sprint(im.past)}
			if im.keep && simLostBack {
				k.k++
			}
			asks[k], pasts[k] = append(asks[k], slot), im.past
			n.importing[slot] = simImport{peer: im.peer, until: now + int64(simRelease), keep: im.keep && simLostBack, guess: im.guess, past: im.past}
		}
	}
	kinds := slices.SortedFunc(maps.Keys(asks), func(a, b askKind) int { return cmp.Or(cmp.Compare(a.k, b.k), strings.Compare(a.past, b.past)) })
	for _, k := range kinds {
		slots := asks[k]
		slices.Sort(slots)
		if p := pasts[k]; len(p) > 0 {
			s.logf("%s asks %s whether it released %v (keep %v), past %v", n.name, s.known[k.k/2], slots, k.k%2 == 1, p)
		} else {
			s.logf("%s asks %s whether it released %v (keep %v)", n.name, s.known[k.k/2], slots, k.k%2 == 1)
		}
		var handed []int
		for _, slot := range slots {
			if n.took[[2]int{k.k / 2, slot}] {
				handed = append(handed, slot)
			}
		}
		s.send(simMsg{kind: simAsk, from: i, to: k.k / 2, slots: slots, keep: k.k%2 == 1, past: pasts[k], handed: handed})
	}
	for j, m := range s.known {
		if j != i && n.alive[m] && s.now-n.heard[m] > simDetect {
			s.declare(i, j)
		}
	}
}

// declare: node i declares j dead, and the death reaches every node i
// reaches that still has j alive.
func (s *sim) declare(i, j int) {
	dead := s.nodes[j].name
	for k, n := range s.nodes {
		if k == j || !n.up || n.paused || !n.alive[dead] || (k != i && s.cut[i][k]) {
			continue
		}
		n.alive[dead], n.pending[dead] = false, true
		n.lease.NoteDeath(dead)
		s.logf("%s declares %s dead", n.name, dead)
		s.rebuild(k)
		s.confirm(k)
	}
}

// confirm is the membership's confirmDeaths: node i's table stops dealing
// slots to a member declared dead once a majority of the known members
// fence it.
func (s *sim) confirm(i int) {
	n := s.nodes[i]
	changed := false
	for _, name := range s.known {
		if n.pending[name] && n.lease.ConfirmedAt(name, s.known, n.local(s.now)) {
			delete(n.pending, name)
			s.logf("%s: a majority confirms %s dead", n.name, name)
			changed = true
		}
	}
	if changed {
		s.rebuild(i)
	}
}

// check asserts the rule: no slot served by two nodes.
func (s *sim) check(seed uint64) {
	if s.servedBy == nil {
		s.servedBy = map[int]string{}
	}
	for _, slot := range s.slots {
		var by []string
		for i, n := range s.nodes {
			if s.serves(i, slot) {
				by = append(by, n.name)
			}
		}
		if w := fmt.Sprint(by); w != s.servedBy[slot] {
			s.servedBy[slot] = w
			s.logf("slot %d served by %v", slot, w)
		}
		if len(by) > 1 {
			s.fail(seed, fmt.Sprintf("slot %d served by %v at %v", slot, by, s.now))
		}
	}
}

func (s *sim) fail(seed uint64, what string) {
	tail := s.log[max(0, len(s.log)-40):]
	if os.Getenv("RL_SIM_TRACE") != "" {
		tail = s.log
	}
	line := fmt.Sprintf("%d\n", seed)
	if out := os.Getenv("RL_SIM_SEEDS_OUT"); out != "" { // a test never writes into the checkout
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, _ = f.WriteString(line)
			_ = f.Close()
		}
	}
	s.failed = true
	report := s.t.Fatalf
	if os.Getenv("RL_SIM_ALL") == "1" { // a search: report every failing schedule, one line each
		report, tail = s.t.Errorf, nil
	}
	kind, file := "seed", "sim-failing-seeds.txt"
	if s.cold {
		kind, file = "cold seed", "sim-cold-failing-seeds.txt" // replayed with RL_SIM_COLD=only
	}
	report("%s %d: %s (keep it: add the line %q to testdata/%s)\n%s",
		kind, seed, what, strings.TrimSpace(line), file, strings.Join(tail, "\n"))
}

// step advances the clock by simStep: faults, deliveries, timers, check.
func (s *sim) step(seed uint64) {
	s.now += simStep
	s.coldStarts()
	if !s.cold || s.now >= s.calm {
		s.fault()
	}
	var later []simMsg
	due := s.msgs
	s.msgs = nil
	for _, m := range due {
		if m.at <= s.now {
			s.deliver(m)
		} else {
			later = append(later, m)
		}
	}
	s.msgs = append(s.msgs, later...)
	for i := range s.nodes {
		s.tick(i)
	}
	s.check(seed)
	s.noteFormed()
	s.watch()
	s.load(seed)
}

// simWatch (RL_SIM_WATCH=slot) logs, whenever it changes, each node's
// state of one slot: its table's owner, handoff state, holder, deadPrev,
// counter and copy, to trace a schedule.
var simWatch, simWatching = func() (int, bool) {
	n, err := strconv.Atoi(os.Getenv("RL_SIM_WATCH"))
	return n, err == nil
}()

// watch logs simWatch's slot on every node, when it changed.
func (s *sim) watch() {
	if !simWatching {
		return
	}
	slot := simWatch
	var b strings.Builder
	for _, n := range s.nodes {
		if !n.up || n.view == nil {
			fmt.Fprintf(&b, " %s:down", n.name)
			continue
		}
		fmt.Fprintf(&b, " %s:{own %s", n.name, n.view.Table.Owner(slot).Name)
		if ru, ok := n.view.Table.RunnerUp(slot); ok {
			fmt.Fprintf(&b, " bk %s", ru.Name)
		}
		if im, ok := n.importing[slot]; ok {
			fmt.Fprintf(&b, " imp %s keep %v guess %v", s.known[im.peer], im.keep, im.guess)
		}
		if o, ok := n.out[slot]; ok {
			fmt.Fprintf(&b, " out %s", s.known[o.to])
		}
		if h, ok := n.holder[slot]; ok {
			fmt.Fprintf(&b, " h %s", s.known[h])
		}
		if d, ok := n.deadPrev[slot]; ok {
			fmt.Fprintf(&b, " dp %s", s.known[d])
		}
		if k, ok := n.kept[slot]; ok {
			fmt.Fprintf(&b, " kept %v", k)
		}
		if n.tk != nil && n.tk.Lost(slot) {
			fmt.Fprint(&b, " lost")
		}
		if n.forgone[slot] {
			fmt.Fprint(&b, " forgone")
		}
		if c, ok := n.cnt[slot]; ok {
			fmt.Fprintf(&b, " cnt %d", c)
		}
		if c, ok := n.copies[slot]; ok {
			fmt.Fprintf(&b, " cp %d of %s", c, n.copyFrom[slot])
		}
		if n.paused {
			fmt.Fprint(&b, " paused")
		}
		b.WriteString("}")
	}
	if w := b.String(); w != s.watched {
		s.watched = w
		s.logf("slot %d:%s", slot, w)
	}
}

// fault makes one scripted fault now and then: a partition (1/N, or an
// even split), a heal, a pause or its end, a crash, a restart.
func (s *sim) fault() {
	if s.r.IntN(100) >= 2 {
		return
	}
	n := len(s.nodes)
	i := s.r.IntN(n)
	switch s.r.IntN(6) {
	case 0, 1: // partition: a random side against the rest
		side := map[int]bool{i: true}
		for range s.r.IntN(n / 2) {
			side[s.r.IntN(n)] = true
		}
		for a := range n {
			for b := range n {
				if side[a] != side[b] {
					s.cut[a][b] = true
				}
			}
		}
		s.logf("partition %v", side)
	case 2: // heal
		for a := range n {
			clear(s.cut[a])
		}
		s.logf("heal")
	case 3: // pause, or resume
		nd := s.nodes[i]
		if nd.paused {
			nd.paused = false
			s.logf("%s resumes", nd.name)
			held := nd.held
			nd.held = nil
			for _, m := range held {
				s.receive(m)
			}
		} else if nd.up {
			nd.paused = true
			s.logf("%s pauses", nd.name)
		}
	case 4: // crash
		if s.nodes[i].up {
			held := s.nodes[i].held
			s.nodes[i].up, s.nodes[i].paused, s.nodes[i].held = false, false, nil // a paused process killed never resumes
			for _, m := range held {
				if !simHeldLost {
					s.unsent(m) // never answered: a handoff's sender serves on and retries (the server's migration)
				}
			}
			for _, slot := range s.slots {
				if s.last[slot] == i {
					s.lossOK[slot] = true // a crash loses what it decided after its last shipment, and all of it if its backups are gone too
				}
			}
			s.logf("%s crashes", s.nodes[i].name)
		}
	case 5: // restart: a joiner imports every slot it owns
		nd := s.nodes[i]
		if !nd.up && nd.started {
			s.start(i)
			s.logf("%s restarts", nd.name)
			s.joinView(i)
			slots := s.importOwn(i)
			for _, slot := range slots {
				im := nd.importing[slot]
				im.guess = true // the server's importFrom on a first view
				nd.importing[slot] = im
			}
			s.pull(i, slots)
		}
	}
}

// joinView gives a restarted node i the member states of the first member
// it reaches, as memberlist's join does (a push-pull of every member's
// state, the dead ones included); with none reachable, it keeps every
// member alive, and no majority grants it a lease until it reaches some.
func (s *sim) joinView(i int) {
	n := s.nodes[i]
	for j, m := range s.nodes {
		if j == i || !m.up || m.paused || s.cut[i][j] {
			continue
		}
		for name, alive := range m.alive {
			if name != n.name {
				n.alive[name] = alive
			}
		}
		n.alive[m.name] = true
		s.logf("%s joins through %s: alive %v", n.name, m.name, n.alive)
		n.view = nil
		s.rebuild(i)
		n.unseen = map[string]bool{}
		for _, name := range s.known {
			if !n.view.Table.Has(name) {
				n.unseen[name] = true
			}
		}
		s.seedDeadPrev(i)
		return
	}
}

// thirdOwner reports whether node i refuses DONE m whole (the server's
// takeSlots): its table gives one of m's slots to neither i nor m's
// sender. The model took it before, its slots going nowhere (seed 4052:
// n4 handed slot 12850 to n1 as n0 came back, n1's table gave it to n0,
// and n1 kept the keys, answering n0's PULL with no copy: n0 served its
// older keys). RL_SIM_DONETHIRD=1 takes it, as before.
func (s *sim) thirdOwner(i int, m simMsg) bool {
	if simDoneThird {
		return false
	}
	tb := s.nodes[i].view.Table
	for _, slot := range m.slots {
		if o := tb.Owner(slot).Name; o != s.known[i] && o != s.known[m.from] {
			return true
		}
	}
	return false
}

var simDoneThird = os.Getenv("RL_SIM_DONETHIRD") == "1"

// importBeforeDone stores at node i the keys of m, a DONE it refuses
// (thirdOwner), as the server's IMPORT that came before the DONE did
// (peerImport): a slot it serves as its own keeps its keys and takes only
// those it lacks, any other takes the sender's. Seed 3983: n1's last
// handoff of slot 6425 to n4 was refused, the refusal lost in a cut, and
// n1, its DONE unanswered, sent the slot's requests to n4 and released it
// to n4's question; the model's n4 had dropped the keys with the DONE and
// served its older ones, where the server's had stored the last copy.
// RL_SIM_THIRDDROPS=1 drops them, as before.
func (s *sim) importBeforeDone(i int, m simMsg) {
	n := s.nodes[i]
	for k, slot := range m.slots {
		if m.vals[k] < 0 {
			continue
		}
		im, importing := n.importing[slot]
		_, has := n.cnt[slot]
		if own := n.view.Table.Owner(slot).Name == n.name && (!importing || im.keep && !m.replace); !own || !has {
			n.cnt[slot] = m.vals[k]
		}
	}
}

var simThirdDrops = os.Getenv("RL_SIM_THIRDDROPS") == "1"

// simNoMoved (RL_SIM_NOMOVED=1): a node answers a PULL for a slot it has
// just handed over, as the model did before; the server's cut leaves the
// slot ModeMoved until the next table change, and backedUpFor answers
// only for slots with no handoff state. Seed 1154 (once DONEs for a third
// node's slot were refused): n1's handoff of slot 11308 to n0 was refused
// and sent again each tick, and between two sends n1 answered n0's PULL
// for it with a DONE without copies: n0 served its older keys.
var simNoMoved = os.Getenv("RL_SIM_NOMOVED") == "1"

// simMovedStays (RL_SIM_MOVEDSTAYS=1): a slot handed over stays marked
// moved until the next table change, as the model had it; the server's
// cut unmarks it once the new owner took the DONE (unmark: the table
// gives it the new owner), and its backedUpFor answers a PULL for it
// again. Seed 299: n3 handed 3598 to n4's new process and kept its keys
// as n4's copy (KeepHanded); n4 crashed, and its next process's PULL got
// no DONE from n3 in the model (still marked moved), which then released
// the slot: n4 served it from 0 where n3 left 10. A model artifact.
var simMovedStays = os.Getenv("RL_SIM_MOVEDSTAYS") == "1"

// simPullAdopted (RL_SIM_PULLADOPTED=1): a node answers a PULL for a slot
// it adopted (handed here ahead of its table, which still names the
// sender) with its copy, as the model did; the server's backedUpFor
// answers only for a slot with no handoff state, and ModeAdopted is one.
// Seed 1061 (once simMovedStays was fixed): n1 handed 11822 (76) to n3,
// whose table still named n1, then took it back by its own table and
// crashed; its new process's PULL got n3's older copy (40) in the model,
// and when n3's table gave n3 the slot, n3 served its adopted 76 while n1
// served on: the slot on two nodes. A model artifact.
var simPullAdopted = os.Getenv("RL_SIM_PULLADOPTED") == "1"

// simNotOwnKeeps (RL_SIM_NOTOWNKEEPS=1): a DONE in mode pull (a PULL's
// answer, or kept keys) for a slot the receiver's table gives another
// node keeps the receiver's keys, as the model had it; the server's
// importHanded replaces every key but in a slot the receiver serves as
// its own. Seed 890 (once simMovedStays was fixed): n3 held 11822's 155
// from a refused handoff's IMPORT, and n1's kept keys (170), pushed while
// n3's table still named n1, left the model's n3 with 155, which it
// served once its table gave it the slot. A model artifact.
var simNotOwnKeeps = os.Getenv("RL_SIM_NOTOWNKEEPS") == "1"

// simKeptBackReset (RL_SIM_KEPTBACKRESET=1): a slot whose keys a node
// kept for another owner, and that the next table gives back to it, is
// imported from its old owner as any gained slot, and what comes replaces
// its keys, as before; now the import keeps them (the server's
// handoffHook: SlotState.keep), so a PULL's answer or kept keys in mode
// pull only fill keys it lacks, and only a handback replaces them. Seed
// 2456: n3 took slot 11822 over at n1's confirmed death and served it to
// 30; at the heal its handback to n1 was disowned by n3's rejoin (kept),
// and the next table gave n3 the slot again: n1's kept keys (16, from
// before its cut) replaced n3's 30.
var simKeptBackReset = os.Getenv("RL_SIM_KEPTBACKRESET") == "1"

// simKeptBackHolder (RL_SIM_KEPTBACKHOLDER=1): such an import records its
// old owner as the slot's holder, as any gained slot's does, so when the
// table moves the slot on before the import ends the node keeps nothing
// for the new owner (the holder, not it, has the state) and releases the
// slot; now the node is the holder (the server's keepImport). Seed 2360:
// n4's kept keys of 14392 (48) came back with a table, went on with the
// next one, and n4 released the slot to n1, which served it from 0.
var simKeptBackHolder = os.Getenv("RL_SIM_KEPTBACKHOLDER") == "1"

// simHeldLost (RL_SIM_HELDLOST=1): the messages a paused node holds are
// lost with it when it is killed, a handoff's DONE among them, whose
// sender had dropped its keys, as the model had it; the server's
// migration gets no answer to its IMPORT from a paused process, serves
// the slots on and retries (or keeps their keys for the owner: abandon),
// so such a DONE now comes back to its sender as one that was never sent
// (unsent). Seed 2672: n1 handed 11822 (43) to n3, paused; n3 was killed
// and its new process served the slot from 0. A model artifact.
var simHeldLost = os.Getenv("RL_SIM_HELDLOST") == "1"

// simAskAdopted (RL_SIM_ASKADOPTED=1): a node releases a slot it adopted
// (handed here while its table named the sender) to the sender's
// RELEASED, as the model had it; the server's releasedLocked answers no
// slot in ModeAdopted. Seed 2732: n1 handed 11822 (51) to n3 as its
// table gave the slot back to n1, imported it from n3, and n3, which had
// adopted it, released it: n1 served it from 0. A model artifact.
var simAskAdopted = os.Getenv("RL_SIM_ASKADOPTED") == "1"

// simForgoneLost (RL_SIM_FORGONELOST=0 leaves it out, as before): a
// slot lost here at its holder's death, forgone when the table gave it
// to another live node, and given back while the holder is still away,
// is lost again (the server's noteLost); before, it was imported from
// the table's old owner as any gained slot. Seed 3665 of 2000..4999: n4
// had 12850 lost from n0, paused with 19, forgone to n1 and back; n1
// released it, and n4 served it from 0. seeds12 took it out because it
// moved seed 1463 of sim-failing-seeds.txt (3000 steps) over the
// admissions bound (lostBack's assumption: a rejoin that served a slot
// since its owner's death had it lost from that owner, and released it
// to the owner's RELEASED KEEP); on the model since seeds13's thirdPrev,
// 1463 no longer reaches that shape (the gap stays open).
var simForgoneLost = os.Getenv("RL_SIM_FORGONELOST") != "0"

// simShipLost (RL_SIM_SHIPLOST=1): a node ships the keys of a slot it has
// lost to the slot's backup, which holds them as its copies, as before;
// now its full sync drops the backup's copies of such a slot and ships
// none (the replicas' fullSync). Seed 2363: n4's rejoin had 5911 lost
// from n3 (cut off, serving it to 36) and shipped its 23 to n2, which
// promoted them at n4's death and served from 23.
var simShipLost = os.Getenv("RL_SIM_SHIPLOST") == "1"

// simSyncLost (RL_SIM_SYNCLOST=0 leaves it out): the full sync that
// leaves a lost slot out names it lost, with its holder (RL.PEER SYNC's
// LOST), and the backup answers the owner's PULL for it with no DONE and
// its RELEASED with "ASK" the holder (the server's LostAt). Without it a
// restarted owner's PULL got a DONE without copies from the backup,
// which knew nothing of the slot.
var simSyncLost = os.Getenv("RL_SIM_SYNCLOST") != "0"

// simKeptBehind (RL_SIM_KEPTBEHIND=0 leaves it out, as the server did
// before): a rejoin's kept keys of a slot whose import was from the node
// that took it over at its death (alive, not the new owner) go to the new
// owner without a DONE; the rejoin then names that node (RELEASED: ASK),
// and the new owner serves the keys that came only when that node points
// back at the rejoin (the server's keptBehind and askElsewhere). Seed
// 4229: n2's kept 42 of 11565 ended n0's import while n4, paused, held 48.
var simKeptBehind = os.Getenv("RL_SIM_KEPTBEHIND") != "0"

// simBehindDead (RL_SIM_BEHINDDEAD=0 leaves it out, as the server did
// before): simKeptBehind also when the node the rejoin's import was from
// died in the very table change that moves the slot on (confirmed, so out
// of the table): its keys go without a DONE, and the rejoin names that
// dead node, so the new owner has the slot lost until it is back. Cold
// seed 863: n1's rejoin waited for slot 11822 from n3, which had taken it
// over at n1's death and served it to 53, then paused; n3's confirmed
// death moved the slot to n2, whose import n1's kept 41 ended with a DONE.
// The dead node stays the holder only while the owner the keys went to
// holds the slot: once the table moves it off that owner, the holder is
// that owner, as after a DONE. Seed 407 with the dead node kept: n2 took
// 11822 over from its dead old owner n3 (which never served it) and
// served the keys that came to 96; the table gave the slot back to n1,
// which imported it from n3, its holder, and handed it its 66.
var simBehindDead = os.Getenv("RL_SIM_BEHINDDEAD") != "0"

// simHeldFirst (RL_SIM_HELDFIRST=0 leaves it out, as the server did
// before): a node asked RELEASED for a slot it hands over or adopted
// answers nothing for it before any rule that names another node
// (deadPrev, lostAt) is read: the slot's keys are here (the server's
// heldFirst). Cold seed 1181 at a 1 s import wait, on a model that also
// mirrored the server's got (not this one): n1, resumed from a pause with
// a stale table, adopted n4's handoff of 14392 (140); n4 imported the slot
// back from n1, which answered "ASK n2" (its deadPrev), n2 released it,
// and n4 served it from 0.
var simHeldFirst = os.Getenv("RL_SIM_HELDFIRST") != "0"

// simKeptLost (RL_SIM_KEPTLOST=0 leaves it out, as the server did before):
// a slot whose keys this node kept for its owner in mode replace (it saw
// the owner's death confirmed and served the slot since), which the table
// gives back to it at the owner's next death and which is lost here (no
// copies of the owner's), is marked as its own slot lost keeping its keys
// (the server's ownLost), so that backKeeps sends its keys to the owner's
// rejoin rather than releasing the slot to it (lostBack). Cold seed 47 at a
// 1 s import wait: n4 served 5654 to 78 after n0's confirmed death, its
// handoff to n0 at the heal was disowned by its rejoin (kept, replace),
// n0's next death gave the slot back to n4, lost (holder n0), and n0's
// rejoin then had it released (RELEASED KEEP) and served its 51.
var simKeptLost = os.Getenv("RL_SIM_KEPTLOST") != "0"

// simJoinKept (RL_SIM_JOIN=0 leaves it out, as the server did before): the
// keys of a PULL's answer or kept keys (IMPORT mode pull or handback) are
// joined with the node's, the larger count, whether it imports the slot or
// serves it (the server's peerImport, shard.Map.ImportJoin). Before, a
// handback replaced what the node had and a PULL's answer filled only the
// keys it lacked, so two handbacks of one slot replaced each other in the
// order they came: cold seed 1418, n2's rejoin waited for slot 15420 from
// n0; n4, which had served it after n0's death, pushed 130 first, then
// n0's 121 replaced them and its DONE ended the import, and the key
// admitted 157 against a bound of 156 (and 833 and 1274, the same kind).
var simJoinKept = os.Getenv("RL_SIM_JOIN") != "0"

// simKeptStateless (RL_SIM_KEPTSTATELESS=0 leaves it out, as the model did
// before): kept keys of a slot that has a handoff state here (adopted,
// imported, moving) are not pushed, and a push's answer finding one drops
// the kept mark, as the server's takeKept and sendKept do. Settled seed
// 5147 at a 1 s import wait: n1 kept 77 of slot 11822, adopted n3's kept
// 76 for it (their tables disagreed), and pushed its 77 to n3 anyway; n3
// forwent them, n1's adopted mark outlived the push, and n3's death made
// n1 hand n2 the slot with no keys, which ended n2's loss: n2 served it
// from 0.
var simKeptStateless = os.Getenv("RL_SIM_KEPTSTATELESS") != "0"

// simKeptFirst (RL_SIM_KEPTFIRST=0 leaves it out, as the server did
// before): a node asked RELEASED for a slot whose keys it keeps for the
// asker names no other node (its deadPrev, or the asker's lost holder):
// its keys are the slot's newest state, on their way (the server's
// keptFirst). Settled seed 5765 at a 1 s import wait: n2 kept 62 of slot
// 4626 for n3, which refused them while it had no lease; n2 answered n3's
// question "ASK n0", its deadPrev, which had never held the keys since
// and released the slot: n3 served it from 0.
var simKeptFirst = os.Getenv("RL_SIM_KEPTFIRST") != "0"

// simHandedNotAdopted (RL_SIM_HANDEDNOTADOPTED=0 leaves it out, as the
// server did before): a DONE that ends a PULL's answer (or kept keys)
// adopts no slot that this node handed to the sender, neither imports nor
// holds in a handoff, and whose owner by its table is the sender: the
// sender serves it (the server's handedNotAdopted). Cold seed 3704 at a 1 s
// import wait: n1 pulled twice; n4's first answer's DONE ended n1's guess
// import of slot 14392, n1's table then gave the slot to n4 and n1 handed
// it over, and n4's second answer's DONE, sent before n4 took that
// handoff, made n1 adopt it; 6.4 s later n2's death gave the slot to n1,
// which served it at once while n4 did too.
var simHandedNotAdopted = os.Getenv("RL_SIM_HANDEDNOTADOPTED") != "0"

// simDisownBehind (RL_SIM_DISOWNBEHIND=0 leaves it out, as the server did
// before): the kept keys of a handoff a rejoin disowned go without a DONE
// (simKeptBehind), naming the slot's backup in the table the node held it
// by, when the members whose reported deaths the rejoin acknowledged are a
// quorum of the known ones (Lease.MayBeConfirmed, read as the push goes):
// that backup may have taken the slot over at the node's confirmed death
// and served it since (the server's disownedBy). Cold seed 1535 at a 1 s
// import wait: n4 took 5654 over at n0's confirmed death and served it to
// 97; cut off, its death was confirmed and n1 took the slot over from its
// copy and served it to 102; at the heal n4's rejoin disowned its handoff
// to n0, and its kept 97 ended n0's import (from n4) with their DONE while
// n1 still kept 102.
var simDisownBehind = os.Getenv("RL_SIM_DISOWNBEHIND") != "0"

// takeKept stores v, keys pushed for slot, as the node's count (simJoinKept:
// unless its own is larger).
func (n *simNode) takeKept(slot, v int) {
	if c, ok := n.cnt[slot]; ok && simJoinKept && c > v {
		return
	}
	n.cnt[slot] = v
}

// simBehindDrops (RL_SIM_BEHINDDROPS=1): keys sent without a DONE
// (simKeptBehind) are dropped by their sender, as other kept keys are;
// the server's sendKept keeps them. Seed 3986: n4's 66 of 14392 sat in
// n0's import, n0 lost the slot at its holder's death, the table gave it
// back to n4, which imported it from that holder, was released, and
// served from 0.
var simBehindDrops = os.Getenv("RL_SIM_BEHINDDROPS") == "1"

// simBehindBack (RL_SIM_BEHINDBACK=0 leaves it out): a slot whose kept
// keys went without a DONE (simKeptBehind), that the table gives back to
// this node while the owner they went to still owned it, and whose import
// from the holder it named the table moves on to that very holder, keeps
// its keys for it (the server's backBehind). Seed 254 at
// RL_SIM_IMPORTWAIT=1s: n4 sent 73 of slot 14392 behind to n0 (holder
// n1), n0 crashed, n4 got the slot back, imported it from n1 (a new
// process), kept nothing when the table moved it on to n1, and released
// it to n1, which served it from 0. A first form, which made the import
// one that keeps (as a kept slot back), broke seed 341: n0 had served the
// keys sent to it, and its handoff back (mode reset) only filled n4's.
var simBehindBack = os.Getenv("RL_SIM_BEHINDBACK") != "0"

// simForgetMoved (RL_SIM_FORGETMOVED=0 leaves it out): a table change that
// moves a slot off the owner whose shipment brought this node's copy of
// it forgets whose it was (the server's forgetMoved); the copy stays, not
// held, until a shipment or seed of the slot's owner. Tables deal slots
// out with bounded loads: in seed 941, n2 leaving the table moved slot
// 14392 from n4 to n3, with n0 its backup in both, and n2's return gave
// it back to n4. Without it, the record outlived the move, and once the
// table gave the slot back to that owner its old copy read as the owner's
// shipment of its new ownership: seedIn left the seed of what the other
// owner handed back out. Seed 26 at
// RL_SIM_IMPORTWAIT=1s showed the skip (n3 kept n1's 97 of slot 11822 as
// n1's while n2 served it to 135), there through a cut, whose rejoin
// forgets every record (ForgetHeld) rather than this. Over 0–1999 it
// forgets a record in about 100 schedules, and changes no seed: the
// interim owner's shipments replace the record first.
var simForgetMoved = os.Getenv("RL_SIM_FORGETMOVED") != "0"

// simAskMoving (RL_SIM_ASKMOVING=1): a node answers RELEASED for a slot it
// is handing over (n.out) as for any other, as the model did before; the
// server's peerReleased skips a slot copying or gated. Seed 3983 (once a
// refused DONE kept a handoff waiting): n1's handoff of slots 6425 and
// 6682 to n4 was refused for 6 s (another of its slots was a third
// node's at n4), and n1 released them to n4's RELEASED question: n4
// served them from its older keys.
var simAskMoving = os.Getenv("RL_SIM_ASKMOVING") == "1"

// simKeptClears (RL_SIM_KEPTCLEARS=1) clears a kept slot's mark and keys
// as its push is sent, as the model did before; the server's sendKept now
// keeps them until the push's answer (takeKept no longer clears the
// marks), so a RELEASED question meanwhile releases nothing. Seed 7721:
// n1 refused n2's pushes of slot 2313's keys (43) each tick, a RELEASED
// question in between found no kept mark and released the slot, and n1
// served it from 16. simKeptRTT bounds the wait for an answer lost in a
// cut (sendKept's transport error).
var simKeptClears = os.Getenv("RL_SIM_KEPTCLEARS") == "1"

const simKeptRTT = 500 * time.Millisecond

// simForgetFences (RL_SIM_FORGETFENCES=1) starts a restarted process
// with no death counts, as a node without a data dir does: it forgets whom
// it fenced (docs/cluster.md, "Fences survive a restart"). The model
// stopped such schedules as outside the assumptions before; seeds 152
// (of 0–999 then), 6330 and 6868 broke the bound so: a member that fenced
// a node, restarted, granted it a lease, or cleared its rejoin's proof.
var simForgetFences = os.Getenv("RL_SIM_FORGETFENCES") == "1"

// simDiedGoes (RL_SIM_DIEDGOES=1) forgets a member's confirmed death as
// a handoff to it starts, as the server did; now the death is forgotten
// only when the member is gone again (the server's noteDeaths), so every
// handoff to it goes in mode replace. Seed 4052: n4 handed n0's slots back
// in mode replace as n0 came back, then re-aimed at n0 slot 12850, whose
// handoff to n1 that n0's return refused, in mode reset: n0, not yet
// aware of its death, kept its older 22 where n4 left 27.
var simDiedGoes = os.Getenv("RL_SIM_DIEDGOES") == "1"

// simNoGuessAim (RL_SIM_NOGUESSAIM=1): a new process's import from the
// runner-up of its first table stays with that guess, as the model did
// before; the server's slotChange aims it at the slot's backup once a
// later table has one that differs (SlotState.guess). Seed 1028, with a
// faster takeover (not on main): n1's new process joined while n4, which
// served 13107, was cut off, and imported it from its guess n0, which
// released it; n4's kept keys came after the import had ended, to n1
// without its lease, which refused them (errKeepsOwn) and then served
// 13107 from 0. The server asks n4, which keeps the slot and never says
// it released it, and sends its keys as the import's answer. A model
// artifact.
var simNoGuessAim = os.Getenv("RL_SIM_NOGUESSAIM") == "1"

// simNoAdopt (RL_SIM_NOADOPT=1): a DONE that comes before the receiver's
// table names it the slot's owner leaves nothing behind, as the model did
// before; the server's takeSlots adopts the slot (ModeAdopted) and its
// slotChange serves it once the table names this node, or hands it on to
// the owner a later table names. Seed 1724 (with the takeover from grant
// ages): n1 handed 12850 to n4 ahead of n4's table, which then imported
// it from n1 (that had cut it), and when n0 came back, n4 neither handed
// it over nor held copies for n0's PULL: n0 served it from 0. A model
// artifact. The model still serves no adopted slot before the table names
// the node, where the server does: that only serves less. With it, seed
// 779 reached a gap of the lease's (fixed: a first answer is history only
// before the process first holds its lease, Lease.declaredLocked): n0's new
// process (1.2 s) held its lease from n2's and n4's grants and was cut
// off (1.36 s) before it had heard n1 and n3; they declared it dead and,
// with n4, confirmed it, and n3 served its slot 4369. At the heal, n1's
// and n3's first answers reported that death, acknowledged at once as an
// earlier process's history: n0 never rejoined, got their grants, and
// served its older keys (13, n3 left 39).
var simNoAdopt = os.Getenv("RL_SIM_NOADOPT") == "1"

// simLivePrevForgot (RL_SIM_LIVEPREVFORGOT=1): a node whose own import of
// a slot had not ended when its table moved the slot on to another node
// records nothing of it, as before; now it records the import's peer as
// the slot's deadPrev (the server's noteDeadPrev), and answers the new
// owner's PULL without the owner's copies with no DONE and its RELEASED
// with "ASK" that peer. Seed 4934: n4's new process, importing slot 8224
// from n1 (a guess), lost it to n3; n1 kept the keys for n3, n4 answered
// n3's rejoin PULL with a DONE without copies, and n3 served its 8 where
// n1 left 86.
var simLivePrevForgot = os.Getenv("RL_SIM_LIVEPREVFORGOT") == "1"

// simThirdPrevForgot (RL_SIM_THIRDPREV=0): a node whose table moves a
// slot between two other nodes, the old owner alive, records nothing of
// it, as before; now it records the old owner as the slot's deadPrev
// where it holds the old owner's copies of the slot (the owner served it:
// the server's HeldBy), unless it holds the slot's state itself (holds),
// so it answers the new
// owner's RELEASED with "ASK" that node, and its PULL without the owner's
// copies with no DONE (the server's thirdPrev). Seed 1985: n1 released
// 11822 to n3's new process after n2 had taken it over and served it to
// 87. Seed 1304 stays open: n0 released 14392 to n1's new process while
// n3, its old owner, imported it from n4 (paused with 61), and n0 held
// no copies of n3's (naming any old owner closed it, but on a cold start
// the server's nodes named each other forever). The node names no one once the old owner
// answers the lease from a new process (restartedSince). The server's
// other exception, for a restarted process's restored keys
// (unnameGuesses: in TestRestartedFencerRemembers the guess and the
// process named each other), has nothing to mirror here: a process of the
// model starts with an empty store.
var simThirdPrevForgot = os.Getenv("RL_SIM_THIRDPREV") == "0"

// simAskChain (RL_SIM_ASKCHAIN=0 leaves it out): a node whose table moves
// a slot between two other nodes names the old owner to the new owner's
// RELEASED even where it holds none of that owner's copies (the owner may
// have held the slot without serving it: an import of its own), unless
// the question's past (the nodes whose "ASK" sent the import on) has it:
// then it answers as if it named no one. Seed 1304: n0's table moved
// 14392 from n3, itself importing it from n4 (paused with 61), to n1's
// new process; n0 released it, and n1 served it from 0. Named, n3 answers
// "ASK n4", its import's peer, and n1 has the slot lost until n4 is back.
// Naming any old owner without the past (seeds13's f036ac8) sent a cold
// start's imports round two nodes that each named the other forever (the
// server's askChain; TestColdStartAtOnce). A rejoin's question (KEEP) is
// named no such owner (simAskChainKeep).
var simAskChain = os.Getenv("RL_SIM_ASKCHAIN") != "0"

// simAskChainKeep (RL_SIM_ASKCHAINKEEP=1): simAskChain's guesses are
// named to a rejoin's question (KEEP) too, which the server does not do:
// with RL_SIM_IMPORTWAIT=1s it breaks 113, 1868 and 1895 (a rejoin's
// import sent on by a guess drops its keep when the table gives the slot
// to the node named, which is released it and serves from 0). On
// 2956a8a's model it also changed 1463's schedule (3000 steps) into one
// where n0's new process released 1799 to n3's rejoin while n2, which
// took it over at n3's death and served it to 129, kept it for n3, cut
// off (the vouch rule, simVouch, closes that since).
var simAskChainKeep = os.Getenv("RL_SIM_ASKCHAINKEEP") == "1"

// restartedSince is the server's: the live third node d that node i's
// deadPrev of slot names (thirdPrev) answers the lease from another
// process than the one i's table gave the slot to, so i names no one for
// it: that process keeps what its data dir restored and answers for it
// itself, or has nothing of it, and names its own import's guess (i)
// back. In the server's TestRestartedFencerRemembers, without it, the
// paused member's imports went round that circle to the end.
// RL_SIM_THIRDRESTART=0 leaves it out (no seed of 0–1999 needs it; the
// process test does).
func (s *sim) restartedSince(i, slot, d int) bool {
	n := s.nodes[i]
	was, now := n.deadPrevInc[slot], n.lease.IncarnationOf(s.known[d])
	if was == 0 {
		was = n.deadOwnerInc[slot] // a dead owner's: see simDeadRestart
	}
	return was != 0 && now != 0 && now != was && !simThirdRestartForgot
}

var simThirdRestartForgot = os.Getenv("RL_SIM_THIRDRESTART") == "0"

// holds reports whether node i holds slot's state by a handoff of its own:
// it hands it over (out), has adopted it, or keeps its keys (the server's
// handoff.holds).
func (s *sim) holds(i, slot int) bool {
	n := s.nodes[i]
	_, out := n.out[slot]
	_, adopted := n.adopted[slot]
	_, kept := n.kept[slot]
	return out || adopted || kept
}

// hasState reports whether slot has a handoff state on node i, as the
// server's handoff.state(slot) != nil: imported, adopted, moving, cut
// and gated, or moved.
func (s *sim) hasState(i, slot int) bool {
	n := s.nodes[i]
	_, importing := n.importing[slot]
	_, out := n.out[slot]
	_, adopted := n.adopted[slot]
	return importing || out || adopted || n.gated[slot] || n.moved[slot]
}

// simSettleImports (RL_SIM_SETTLEIMPORTS=1): a slot whose handover had
// not started (no lease, or the new owner cut off) and that the next
// table gives back to this node is imported from the node it was being
// handed to, as the model did before; the server's slotChange leaves a
// slot being copied alone and its migration's settle serves it here on,
// from its keys. Seed 3335: n4, handing 14392 to n1 (crashed), got it
// back when n2 came back, imported it from n1 in the model, and later
// released it to n1's new process, which served it from 0 where n4 left
// 80: a model artifact.
var simSettleImports = os.Getenv("RL_SIM_SETTLEIMPORTS") == "1"

// simOldStreams (RL_SIM_OLDSTREAMS=1): a backup takes a dead member's
// shipments on the connection it shipped on before its death, as the
// model and the server did before; now the death ends that stream (the
// replicas' endStreams: -RESYNC until a full sync, which waits for the
// member's lease). Seed 3138: n2, back from a pause without its lease,
// shipped its pre-pause 10 of slot 1028 while n0's handback of 47 was on
// its way; n0 kept the 47 as n2's copy (KeepHanded), took the late
// shipment over it, and promoted 10 at n2's next death.
var simOldStreams = os.Getenv("RL_SIM_OLDSTREAMS") == "1"

// keepsOwnUnserved is the server's keepsOwnUnserved: node i, without its
// lease, refuses a PULL's answer or kept keys (m) of which it would keep
// its own keys for a slot it serves as its owner, importing nothing.
func (s *sim) keepsOwnUnserved(i int, m simMsg) bool {
	n := s.nodes[i]
	if !m.pull || simKeptNoLease || n.lease.ServesAt(n.local(s.now)) {
		return false
	}
	for _, slot := range m.slots {
		if _, importing := n.importing[slot]; n.view.Table.Owner(slot).Name == n.name && !importing && !(simHandoffUnloses && n.tk.Lost(slot)) { // a lost slot is not served: see simHandoffUnloses
			return true
		}
	}
	return false
}

// seedDeadPrev is the server's seedDeadPrev: a new process whose join
// shows members dead records, per slot such a member would own with every
// known member in the table, that member as the slot's deadPrev, as if it
// had seen that death; and per slot a member it sees would own so, and
// its table gives another, that member (livePrev).
func (s *sim) seedDeadPrev(i int) {
	n := s.nodes[i]
	if !simJoinDeadPrev {
		return
	}
	var all []Node
	for _, m := range s.known {
		all = append(all, Node{Name: m})
	}
	full, err := NewTable(0, all)
	require.NoError(s.t, err)
	for _, slot := range s.slots {
		switch d := full.Owner(slot).Name; {
		case d == n.name:
		case !n.view.Table.Has(d):
			n.deadPrev[slot] = s.index(d)
			delete(n.relayed, slot)
			delete(n.deadPrevInc, slot)
			delete(n.deadOwnerInc, slot)
			delete(n.guessPrev, slot)
		case d != n.view.Table.Owner(slot).Name && !simSeedLiveForgot:
			delete(n.deadPrevInc, slot)
			delete(n.deadOwnerInc, slot)
			delete(n.guessPrev, slot)
			n.deadPrev[slot] = s.index(d) // a member it sees, whose slot its table gives another: it may hold it (the server's seedDeadPrev)
			delete(n.relayed, slot)
		}
	}
	for _, m := range s.known {
		if m != n.name && !n.view.Table.Has(m) && !simUnseenReset {
			n.died[m] = true // as if it had seen that death: what it serves of the member's slots is newer than the member's keys
		}
	}
}

// simSeedLiveForgot (RL_SIM_SEEDLIVEFORGOT=1): a new process records, of
// the slots each known member would own with every known member in the
// table, only those of members its join shows dead, as before; now also
// those of a member it sees whose slot its table gives another node (the
// server's seedDeadPrev, livePrev). Seed 3092: n0's new process, whose
// first table lacked n1, n2 and n3, guessed n4 (paused, cut off, serving
// 14392 to 33) for its import, which its next table aimed at n1's new
// process as the slot's backup; n1, which never held the slot, released
// it, and n0 served it from 0.
var simSeedLiveForgot = os.Getenv("RL_SIM_SEEDLIVEFORGOT") == "1"

// simVouch (RL_SIM_VOUCH=0 leaves it out): a new process that has not
// yet had every known member in a table answers RELEASED with no slot
// but those it handed the asker (its holder record): a member it never
// saw may have taken any slot over and served it. Seeds 362 and 1276 at
// RL_SIM_IMPORTWAIT=1s: a new process released to another new process a
// slot that the paused member out of both tables had taken over at its
// owner's death and served (n4 released 10023, n0's 82; n1 released 771,
// n2's 60).
var simVouch = os.Getenv("RL_SIM_VOUCH") != "0"

// simColdVouch (RL_SIM_COLDVOUCH=0 leaves it out, as the model was): a
// cold start's first process vouches as a new process does (simVouch),
// over the server's known set, which grows as members meet and merge
// their sets (Known, msgKnown): while a member of it has not been in a
// table it shared with another (the server's handoff.had), it answers
// RELEASED with no slot but those it handed the asker, and relays no
// guess's question (the server's neverSawLocked, which every process
// runs). The model applied the rule only to a restarted process, whose
// data dir remembers every member. Cold seed 3548 at a 1 s import wait:
// {n0, n1} were cut off from {n2, n3, n4} before they first met; n2
// served 6168 to 11 and n4 14392 to 16, then n3 crashed; at the heal n0,
// which never had n3 in a table (dead at n2's and n4's), released 6168
// to n1 and n1 released 14392 to n0, which each served from 0, and n4,
// whose table kept the unconfirmed n3, served 14392 too once its lease
// came back.
var simColdVouch = os.Getenv("RL_SIM_COLDVOUCH") != "0"

// neverSaw is the server's neverSawLocked for node i: a known member has
// not been in any of its process's tables shared with another.
func (s *sim) neverSaw(i int) bool {
	n := s.nodes[i]
	if len(n.unseen) > 0 {
		return true
	}
	if !simColdVouch {
		return false
	}
	for m := range n.knows {
		if !n.had[m] {
			return true
		}
	}
	return false
}

// simColdSeed (RL_SIM_COLDSEED=0 leaves it out, as the model was): a
// cold start's process records, at each table change, deadPrev for the
// slots its known members never seen in a table would own with them, and
// for those a member it sees would own so that its table gives another,
// as a restarted process does at its join (seedDeadPrev): the server's
// seedDeadPrev runs in every process, at every table change, over its
// known set.
var simColdSeed = os.Getenv("RL_SIM_COLDSEED") != "0"

// simKnownLate (RL_SIM_KNOWNLATE=0 leaves it out, as the server was): a
// member that joins a cold process's known set with no table change
// (another member's set names it) gets its marks before the process
// answers a PULL or a RELEASED, as if the table change had come after
// the merge (the server's seedKnownLocked). Before, they waited for the
// next table change: the shape of cold seed 3548, where n1, had n3
// reached its known set just after its heal's table, would have answered
// n0's PULL for 14392 with a DONE without copies while n4 served it.
var simKnownLate = os.Getenv("RL_SIM_KNOWNLATE") != "0"

// coldSeed is the server's seedDeadPrev in a cold start's process i, for
// its table tb: the members its known set gained since its last call
// (simColdSeed).
func (s *sim) coldSeed(i int, tb *Table) {
	n := s.nodes[i]
	if !simColdSeed || n.knows == nil || len(tb.Nodes()) < 2 {
		return
	}
	all := slices.Clone(tb.Nodes())
	for _, m := range all {
		n.seen[m.Name] = true
	}
	unseen := map[string]bool{}
	for _, m := range s.known {
		if n.knows[m] && !n.seen[m] {
			n.seen[m], unseen[m] = true, true
			all = append(all, Node{Name: m})
		}
	}
	if len(unseen) == 0 {
		return
	}
	full, err := NewTable(0, all)
	require.NoError(s.t, err)
	for _, slot := range s.slots {
		if d := full.Owner(slot).Name; unseen[d] || d != n.name && d != tb.Owner(slot).Name {
			n.deadPrev[slot] = s.index(d)
			delete(n.deadPrevInc, slot)
			delete(n.guessPrev, slot)
			delete(n.relayed, slot)
		}
	}
	for name := range unseen {
		n.died[name] = true // as if it had seen that death (the server's seedDeadPrev)
	}
	s.logf("%s never saw %v: their slots' state is theirs", n.name, slices.Sorted(maps.Keys(unseen)))
}

// knownLate is the server's seedKnownLocked in node i, before it answers
// a PULL or a RELEASED (simKnownLate).
func (s *sim) knownLate(i int) {
	if n := s.nodes[i]; simKnownLate && n.view != nil {
		s.coldSeed(i, n.view.Table)
	}
}

// knownOf is the known set node i sends in a cold schedule: its
// process's Known, or every member for a process whose data dir
// remembers them (nil in a settled schedule).
func (s *sim) knownOf(i int) []int {
	if !s.cold {
		return nil
	}
	var known []int
	for j, m := range s.known {
		if n := s.nodes[i]; n.knows == nil || n.knows[m] {
			known = append(known, j)
		}
	}
	return known
}

// mergeKnown merges the known set a message brought into node i's (the
// server's Known.Merge of a msgKnown).
func (s *sim) mergeKnown(i int, known []int) {
	n := s.nodes[i]
	if n.knows == nil {
		return
	}
	for _, j := range known {
		n.knows[s.known[j]] = true
	}
}

// simAskGated (RL_SIM_ASKGATED=1, as the model did before) answers
// RELEASED for a slot whose handoff's DONE is in flight: the model drops
// its handoff when it sends the DONE, where the server's migration holds
// the slot gated until the DONE's answer, and a refused one serves on
// (releasedLocked skips ModeGated). Seed 1985 at RL_SIM_IMPORTWAIT=1s:
// n1's DONE of slot 11308 (115) to n0, refused each step, and n1 released
// the slot to n0's RELEASED between a send and its refusal; n0 served it
// from its older keys, and the slot admitted 141 of 138 plus 2.
var simAskGated = os.Getenv("RL_SIM_ASKGATED") == "1"

// simTakeoverHolder (RL_SIM_TAKEOVERHOLDER=1, as the model did before)
// keeps a slot's holder record when the node takes the slot over from its
// dead owner's copies, where the server's importFrom clears it
// (takesOverFromCopies: served here from now on). Seed 1697 at
// RL_SIM_IMPORTWAIT=1s: n0 had handed slot 1799 to n3, took it over from
// n3's copies at n3's death and served it to 73; its rejoin's import,
// moved on to n3 by the table, kept nothing (the stale holder n3 said n0
// had handed it on), and n3 served its 65.
var simTakeoverHolder = os.Getenv("RL_SIM_TAKEOVERHOLDER") == "1"

// simUncutPromotes (RL_SIM_UNCUTPROMOTES=1, as before): a node whose
// handoff of a slot to a member never sent its DONE (it waited for its
// lease, or the member was cut off), and whose table gives the slot back
// at that member's death, promotes its copies of the slot over its own
// keys, which no node served after; now it keeps its keys. Seed 527 at
// RL_SIM_IMPORTWAIT=1s: n3 imported 11822 from n1 by a live handoff,
// taking n1's shipments as copies meanwhile (87), served it to 103, and
// promoted the 87 when n1's death gave it back.
var simUncutPromotes = os.Getenv("RL_SIM_UNCUTPROMOTES") == "1"

// simUncutHeld (RL_SIM_UNCUTHELD=0 leaves it out): such a slot is not lost
// either, though the node holds none of the dead member's copies (the
// server's uncutHeld). The model counts any shipment held, so none of its
// seeds needs it; with it, seed 2804 of 2000–4999 takes another path to
// 2363's shape (closed since by simHandedInc).
var simUncutHeld = os.Getenv("RL_SIM_UNCUTHELD") != "0"

// simHandedInc (RL_SIM_HANDEDINC=0 leaves it out): a node that handed a
// slot to a member's process releases it to no later process of that
// member: the slot's state went with the old process (its store, and the
// copies its backups hold), and the new one lost it. Seeds 2363 at
// RL_SIM_IMPORTWAIT=1s and 2804: n1 took slot 6939 over at n2's death,
// handed 65 to n2 and kept them as n2's copy, learned it was declared
// dead (ForgetHeld), and released the slot to n2's new process (n2 had
// crashed with the 65), which served it from 0. The import waits for a
// backup's PULL answer instead (the server's handedTo).
var simHandedInc = os.Getenv("RL_SIM_HANDEDINC") != "0"

// simHandedPull (RL_SIM_HANDEDPULL=0 leaves it out): such a RELEASED is
// answered, for the slots whose copies this node holds from the old
// process (copyFrom, the server's HeldBy) and backs up for from, as the
// new process's PULL is (backedUp: the copies and a DONE), which no later
// table change may bring: an import the PULL's answer skipped (it was from
// another node then) and that an ASK sent here would wait to its end.
// Copies not held (forgotten at this node's rejoin) go nowhere: the old
// process may have served the slot since and shipped it to another
// backup. Seed 3983 with a DONE sent without held copies: n4's new process
// served slot 6682 from 0 where n1 left 35.
var simHandedPull = os.Getenv("RL_SIM_HANDEDPULL") != "0"

// simHandedClaim (RL_SIM_HANDEDCLAIM=0 leaves it out): the asker names
// the slots whose DONE from the asked node this process took (the
// server's HANDED), and such a slot is released though its mark names an
// older process: the mark is the lease's latest word at the cut, which
// can be the process before a restart the lease has not heard from yet.
// The model's data dirs keep no keys, so the server's RESTORED has no
// mirror.
var simHandedClaim = os.Getenv("RL_SIM_HANDEDCLAIM") != "0"

// simHanded is a slot's handoff: the node it went to, and that node's
// process by this node's lease (0: unknown).
type simHanded struct {
	to  int
	inc uint64
}

// noteHandedInc records that node i handed slot to node to's process of now.
func (s *sim) noteHandedInc(i, slot, to int) {
	n := s.nodes[i]
	n.handedInc[slot] = simHanded{to: to, inc: n.lease.IncarnationOf(s.known[to])}
}

// handedNewProcess reports whether node i handed slot to another process
// of from than the one now asking (see simHandedInc).
func (s *sim) handedNewProcess(i, slot, from int) bool {
	n := s.nodes[i]
	h, ok := n.handedInc[slot]
	now := n.lease.IncarnationOf(s.known[from])
	if simHandedUnknown && simHandedInc && ok && h.to == from && h.inc == 0 {
		return true // not known to be the asker's process: only its claim releases it (see simHandedUnknown)
	}
	return simHandedInc && ok && h.to == from && h.inc != 0 && now != 0 && now != h.inc
}

// simHandedUnknown (RL_SIM_HANDEDUNKNOWN=0 leaves it out): a slot handed
// to a member before this node's lease knew the member's process (its
// mark's incarnation unknown) is released only to a process that claims
// it took the handoff (HANDED), as one handed to an older process is: the
// member may have crashed since, and its new process lost the slot's
// state (the server's handedOldLocked). Cold seed 1733 at
// RL_SIM_IMPORTWAIT=1s: n2 handed slot 11051 (7) to n4 20 ms after n4's
// cold start, before its lease heard from n4; n4 crashed, n2 forgot its
// copies at its rejoin (ForgetHeld), and released the slot to n4's next
// process, which served it from 0.
var simHandedUnknown = os.Getenv("RL_SIM_HANDEDUNKNOWN") != "0"

// simBackKeeps (RL_SIM_BACKKEEPS=0 leaves it out): a rejoin's own slot,
// lost while it waited keeping its keys (an ASK named a dead holder, or
// its import's peer died: the server's ownLost), and forgone since the
// table gave it to that holder, whose death it saw confirmed before its
// rejoin, is not released to the holder's RELEASED KEEP (lostBack): its
// keys, which this node served after that death, go to the holder as
// kept keys, in mode handback (the server's backKeeps). Seeds 293, 953, 1928 and 3648 at
// RL_SIM_IMPORTWAIT=1s: n4 took n1's slot 13107 over at n1's death and
// served it to 50; rejoining, its import was told to ASK n1 (a third
// node's deadPrev), dead: lost; n1 resumed, the table gave it the slot
// back, and n4 released it to n1's RELEASED KEEP: n1 served its 32.
var simBackKeeps = os.Getenv("RL_SIM_BACKKEEPS") != "0"

// simUnseenReset (RL_SIM_UNSEENRESET=1): a new process hands slots to a
// known member it never had in a table in mode reset, and its kept keys
// go in mode pull, as before; now it counts that member's death as one it
// saw confirmed (the server's seedDeadPrev records it in died), so they go
// in mode replace and handback. Seed 2222 (on a model that drew less):
// n2's new process, whose join showed n4 dead, got n4's slot 11051 handed
// back by n0 (62) and served it to 83; when the paused n4 resumed, n2's
// kept keys went in mode pull, and n4, waiting for its handback keeping
// its keys, kept its 50.
var simUnseenReset = os.Getenv("RL_SIM_UNSEENRESET") == "1"

func runSim(t *testing.T, seed uint64, steps int, open, lossOpen, cold bool) *sim {
	s := newSim(t, seed, 3+int(seed%3), cold)
	s.open, s.lossOpen = open, lossOpen
	for range steps {
		if s.step(seed); s.failed {
			break
		}
	}
	return s
}

// TestSimulationSafety runs a thousand random schedules (a hundred with
// -short, fifty under -race, which only slows this single-goroutine
// arithmetic down; RL_SIM_SCHEDULES and RL_SIM_FIRST pick others: CI runs
// 2000 without -race, .ci/run), and
// first every seed that once failed (testdata/sim-failing-seeds.txt), each
// for 60 s of simulated time. After every step no slot may be served by
// two nodes, and no key may have admitted more than its limit plus the
// losses docs/cluster.md documents (a crash's unshipped decisions, a
// takeover's copies behind their owner). The schedules in
// testdata/sim-admission-seeds.txt are known to break that bound, by
// causes docs/cluster.md lists ("Safety"; open): for them it is logged,
// not asserted, and any other schedule that breaks it fails the test.
// RL_SIM_ADMISSIONS=1 asserts it for those too. Nor may a node serve a key
// from less than the node that served it last left, beyond those losses
// (a count that decreases at a heal: "heal merges, never resets"), whether
// or not admissions above the bound follow; the schedules in
// testdata/sim-loss-seeds.txt are known to, and RL_SIM_LOSSES=1 asserts it
// for them too. RL_SIM_STEPS=3000 runs each random schedule for 60 s
// too. RL_SIM_SEED=n replays
// schedule n alone (RL_SIM_COLD=only replays cold schedule n:
// sim_cold_test.go; RL_SIM_STEPS=3000 as the failing seeds run; with
// RL_SIM_TRACE=1, its whole log if it fails; RL_SIM_TRACE=all logs it
// when it holds too). A failing
// schedule's seed is logged, and appended to the file $RL_SIM_SEEDS_OUT
// names when set: the test never writes into the checkout.
func TestSimulationSafety(t *testing.T) {
	open := readSeeds(t, "sim-admission-seeds.txt")
	if os.Getenv("RL_SIM_ADMISSIONS") == "1" {
		open = nil
	}
	losses := readSeeds(t, "sim-loss-seeds.txt")
	if os.Getenv("RL_SIM_LOSSES") == "1" {
		losses = nil
	}
	if one, err := strconv.ParseUint(os.Getenv("RL_SIM_SEED"), 10, 64); err == nil { // replay one schedule
		steps := 1000
		if n, err := strconv.Atoi(os.Getenv("RL_SIM_STEPS")); err == nil {
			steps = n // 3000 for a seed of sim-failing-seeds.txt
		}
		if s := runSim(t, one, steps, false, false, simCold == "only"); !s.failed && os.Getenv("RL_SIM_TRACE") == "all" {
			t.Log(strings.Join(s.log, "\n")) // a schedule that holds, traced all the same (to compare two models)
		}
		return
	}
	var over []string
	coldLosses := readSeeds(t, "sim-cold-loss-seeds.txt")
	if os.Getenv("RL_SIM_LOSSES") == "1" {
		coldLosses = nil
	}
	run := func(seed uint64, steps int, cold bool) {
		if cold {
			// A listed cold seed's loss lets its key admit more than the
			// bound after it: logged too, unless RL_SIM_ADMISSIONS=1.
			noteCold(runSim(t, seed, steps, coldLosses[seed] && open != nil, coldLosses[seed], true))
			return
		}
		s := runSim(t, seed, steps, open[seed], losses[seed], false)
		if s.over != "" {
			over = append(over, fmt.Sprintf("seed %d: %s", seed, s.over))
		}
		for _, n := range s.nodes {
			if n.up {
				simCounts.importing += len(n.importing)
			}
		}
		for w := range s.handedNone {
			simCounts.handed++
			if _, ok := s.nodes[w[0]].importing[w[1]]; ok && s.nodes[w[0]].up {
				simCounts.handedWaiting++
			}
		}
		for w := range s.withheld {
			simCounts.withheld++
			if _, ok := s.nodes[w[0]].importing[w[1]]; ok && s.nodes[w[0]].up {
				simCounts.waiting++
			}
		}
	}
	settled, cold := simCold != "only", simCold == "1" || simCold == "only"
	for _, seed := range slices.Sorted(maps.Keys(readSeeds(t, "sim-failing-seeds.txt"))) {
		if settled {
			run(seed, 3000, false)
		}
	}
	for _, seed := range slices.Sorted(maps.Keys(readSeeds(t, "sim-cold-failing-seeds.txt"))) {
		if cold {
			run(seed, 3000, true)
		}
	}
	schedules, first := 1000, uint64(0)
	switch {
	case testing.Short():
		schedules = 100
	case underRace:
		schedules = 50
	}
	if n, err := strconv.Atoi(os.Getenv("RL_SIM_SCHEDULES")); err == nil { // a longer search
		schedules = n
	}
	if n, err := strconv.ParseUint(os.Getenv("RL_SIM_FIRST"), 10, 64); err == nil {
		first = n
	}
	steps := 1000 // 20 s of simulated time each
	if n, err := strconv.Atoi(os.Getenv("RL_SIM_STEPS")); err == nil {
		steps = n // a longer search: 3000 as the failing seeds run
	}
	for seed := first; seed < first+uint64(schedules); seed++ {
		if settled {
			run(seed, steps, false)
		}
		if cold {
			run(seed, steps, true)
		}
	}
	t.Logf("rejoins %d, proved unconfirmed %d; their waiting slots served from own keys %d, lost ones %d",
		simCounts.rejoins, simCounts.proofs, simCounts.waits, simCounts.lost)
	t.Logf("relayed questions (simRelay) cleared %d livePrev marks, and sent %d slots' DONE to their owners", simCounts.relayed, simCounts.relayDone)
	t.Logf("a new process answered RELEASED with NONE, not having seen every known member (simVouch), for %d importer slots; %d still waited at their schedule's end, of %d slots imported then",
		simCounts.withheld, simCounts.waiting, simCounts.importing)
	t.Logf("not released to a new process of the member they were handed to (simHandedInc): %d importer slots, %d of them still waiting at the end",
		simCounts.handed, simCounts.handedWaiting)
	t.Logf("%d schedules served a key from less than the documented losses allow (those of testdata/sim-loss-seeds.txt; any other fails): %v",
		len(simCounts.undocumented), simCounts.undocumented)
	if c := simColdCounts; cold {
		t.Logf("cold starts (simCold): %d schedules; of the %d calm for %v, every slot served after the last start within 1 s in %d, 1-3 s in %d, 3 s-the import wait in %d, later in %d, not before the faults in %d; %d served a key from less than the documented losses allow: %v",
			c.schedules, c.calm, simColdCalm, c.under1s, c.under3s, c.underWait, c.overWait, c.never, len(c.undocumented), c.undocumented)
	}
	if len(over) > 0 {
		t.Logf("%d schedules known to break the admissions bound (testdata/sim-admission-seeds.txt) still do:\n%s", len(over), strings.Join(over, "\n"))
	}
}

// simDuration reads the duration the environment variable name sets,
// or def when it is unset; a malformed one panics (a test's mistake).
func simDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		panic(fmt.Sprintf("%s=%q: want a positive Go duration", name, v))
	}
	return d
}

// readSeeds reads a testdata file of seeds, one or more a line, each
// line's text after a # a comment.
func readSeeds(t *testing.T, name string) map[uint64]bool {
	seeds := map[uint64]bool{}
	// Every list is in testdata/: a run from another directory fails
	// rather than replay nothing and exempt nothing.
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err, "run the test from cluster/")
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "#") // a comment says why
		for _, field := range strings.Fields(line) {
			seed, err := strconv.ParseUint(field, 10, 64)
			require.NoError(t, err)
			seeds[seed] = true
		}
	}
	return seeds
}

// lose makes slot lost on node i, imported from h, which died (the
// server's fromDeadLocked).
func (s *sim) lose(i, slot, h int) {
	n := s.nodes[i]
	var lost [Slots / 64]uint64
	for sl := range Slots {
		if n.tk.Lost(sl) {
			lost[sl/64] |= 1 << (sl % 64)
		}
	}
	lost[slot/64] |= 1 << (slot % 64)
	n.tk = n.tk.WithLost(&lost)
	n.lostFrom[slot] = h
	s.logf("%s: slot %d's holder %s is dead: lost", n.name, slot, s.known[h])
}

// unlose ends slot's loss on node i (the server's unloseLocked).
func (s *sim) unlose(i, slot int) {
	n := s.nodes[i]
	var lost [Slots / 64]uint64
	for sl := range Slots {
		if n.tk.Lost(sl) && sl != slot {
			lost[sl/64] |= 1 << (sl % 64)
		}
	}
	n.tk = n.tk.WithLost(&lost)
	delete(n.lostFrom, slot)
	delete(n.lostOwn, slot)
	delete(n.keptLost, slot)
}

// simRelayAsk is a relayed question still unanswered (simRelay): which
// of slots the guess released to owner, on owner's behalf.
type simRelayAsk struct {
	guess, owner int
	slots        []int
	tries        int
	next         int64 // when to ask again, on the node's clock
}

// relayAsks sends node i's relayed questions that are due (the server's
// relayGuess): at once, then every 100 ms, 15 times at most, for the
// slots whose mark stands.
func (s *sim) relayAsks(i int) {
	n := s.nodes[i]
	now := n.local(s.now)
	keep := n.relays[:0]
	for _, r := range n.relays {
		r.slots = slices.DeleteFunc(r.slots, func(slot int) bool { return !n.relayed[slot] || n.deadPrev[slot] != r.guess })
		if len(r.slots) == 0 || r.tries >= 15 {
			continue
		}
		if now >= r.next {
			s.sendFixed(simMsg{kind: simAsk, from: i, to: r.guess, slots: slices.Clone(r.slots), past: []int{i}, relay: true, asker: r.owner, sender: i})
			r.tries++
			r.next = now + int64(100*time.Millisecond)
		}
		keep = append(keep, r)
	}
	n.relays = keep
}

// relayed is node i's end of a relayed question (the server's
// relayGuess): the guess released m's slots to their owner, so it held
// none of them; i drops its marks and answers for them as the owner's
// backup, as a PULL's answer.
func (s *sim) relayed(i int, m simMsg) {
	n := s.nodes[i]
	var answered []int
	for _, slot := range m.slots {
		if n.relayed[slot] && n.deadPrev[slot] == m.from && n.view.Table.Owner(slot).Name == s.known[m.asker] {
			delete(n.deadPrev, slot)
			delete(n.relayed, slot)
			answered = append(answered, slot)
		}
	}
	s.logf("%s: %s released %v to %s (relayed)", n.name, s.known[m.from], answered, s.known[m.asker])
	simCounts.relayed += len(answered)
	if len(answered) == 0 || !n.lease.ServesAt(n.local(s.now)) {
		return
	}
	if done := s.backedUp(i, s.known[m.asker], answered); done.vals != nil {
		simCounts.relayDone += len(done.slots)
		s.send(done)
	}
}

// sendFixed sends m as send does, but it arrives in 15 ms and draws
// nothing from the schedule's randomness: a relayed question and its
// answer (simRelay) leave every other draw of the schedule as it was, so
// a schedule changes only through what they change.
func (s *sim) sendFixed(m simMsg) { s.sendAfter(m, 15*time.Millisecond) }

// sendAfter is sendFixed with a delay of d.
func (s *sim) sendAfter(m simMsg, d time.Duration) {
	m.at = s.now + d
	s.msgs = append(s.msgs, m)
}
