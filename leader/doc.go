// Package leader elects one reaper node of a cluster to run the reaper's job, with Raft
// (github.com/hashicorp/raft) used for election only.
//
// Every node takes traffic; the Raft leader alone starts and stops apps. Node.Run calls a function each time
// this node wins leadership, with the term it won and a context cancelled the moment leadership is lost.
// Records the leader writes carry that term, and the datastore refuses writes of an older term, so a deposed
// leader that has not noticed yet cannot overwrite the new leader's work.
//
// The replicated state is small: the map node id → API address of the admin listener, so that any node can
// tell where the leader's internal API is (Raft membership itself stores only id and Raft address). The
// node's Peers configuration seeds the map on every node; members added later get their entry through the
// log, and the log is snapshotted like any Raft state. The Raft log, the stable store (a bolt file) and the
// snapshots live under <data_dir>/raft.
//
// # HTTP API
//
// API serves two things on a node's admin listener: the internal calls other nodes make (wake asks and
// membership changes, signed with the cluster secret for the node they are for, with a nonce that node
// takes once, see Sign and Verify, and with Config.TLS sent over HTTPS with the calling node's
// certificate), which only the leader takes
// and any other node refuses with 421; and the operator's /api/cluster endpoints, which the admin listener
// puts behind its token and which a node that does not lead forwards to the leader. Asker is the sending
// half of wake asks. The package declares AskHandler, the one method of the reaper's job it calls.
//
// # Security
//
// Every Raft connection starts with a mutual challenge–response: each side sends a random nonce and proves
// knowledge of the cluster secret with an HMAC-SHA256 over both nonces and both node ids, under a deadline.
// A connection that fails is closed and logged (remote address, never the secret), so a host that can reach
// the Raft port but lacks the secret can neither vote nor append entries. The secret is required.
//
// With Config.TLS (see TLS), every Raft connection is a TLS 1.3 connection first, both ends checking the
// other's certificate against the cluster's CAs (the dialer also checks that it names the host dialled),
// and the challenge–response and Raft's traffic run inside it; internal calls go over HTTPS the same way.
// Without it, only the opening of a Raft connection is authenticated: Raft traffic is neither encrypted nor
// integrity-protected after it, and internal calls are signed but readable (a captured one cannot be
// replayed: its nonce was taken, and it names the node it was for), so the Raft port and the admin
// listener must then stay on a private network.
//
// # Bootstrap
//
// List the initial members (id, Raft address, API address) in the peers of every initial node, the same
// list everywhere, and start them. A node whose data directory holds no Raft state and that finds itself in
// the list bootstraps the cluster with exactly that list; the members then elect a leader (a single-node
// list elects itself). A node that already has Raft state never bootstraps again: on restart it rejoins with
// the membership it has, and its peers list only supplies API addresses. Bootstrapping the same list on
// several empty nodes is safe; bootstrapping different lists is not.
//
// # Join
//
// Start the new node with an empty data directory and an advertise address, without itself in its peers
// list (it may list the current members, or nothing). It does not bootstrap: it waits, and elects nobody.
// Then call AddVoter on the leader with the new node's id, Raft address and API address. The leader first
// replicates the API address, then the membership change; the new node receives the log, including every
// member's API address (each new leader writes the ones its peers list knows), and votes from then on. To
// change a member's address, call AddVoter again. A node whose data directory was lost rejoins the same way:
// remove it, then add it again as a new node.
//
// # Remove
//
// Call RemoveServer on the leader with the member's id, then stop that node. Removing the leader itself
// makes it step down once the change commits, and the others elect a new leader. Keep a majority of the
// voters running while changing membership: with three voters one may be down; a cluster that has lost its
// majority elects no leader until enough members return.
package leader
