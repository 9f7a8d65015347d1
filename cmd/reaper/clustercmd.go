package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/leader"
)

const clusterUsage = `Usage:
  reaper cluster status --config FILE
  reaper cluster join   --config FILE --id ID --raft-addr HOST:PORT --api-addr HOST:PORT
  reaper cluster remove --config FILE --id ID

The commands talk to the admin listener of the node whose configuration FILE is
(node.admin_listen, with node.admin_token); that node forwards membership changes
to the leader. With cluster.tls, they talk HTTPS and trust cluster.tls.ca; the
node's certificate must name the host of its api_addr in cluster.peers (else the
host of node.admin_listen, 127.0.0.1 when it listens on every address).
status probes every member from that node (over the cluster's internal API,
2 s at most): whether it answers (REACH), the round trip (RTT), its role and,
for a follower, how long ago the leader last contacted it. A killed member is
still a voter until it is removed: it shows as unreachable, with why below.
status exits 8 when a member does not answer, or sees another leader or term.
Instead of --config, --admin URL and --token (or $REAPER_ADMIN_URL and
$REAPER_ADMIN_TOKEN; --cacert FILE for https://) name any node's admin API.
`

// clusterCmd asks the node of a configuration for the cluster's status, or to
// add or remove a member, and prints the status the node answers.
func clusterCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		return clusterHelp(args, stdout, stderr)
	}
	sub := args[0]
	f, err := parseClusterFlags(sub, args[1:], stdout, stderr)
	if err != nil {
		return err
	}
	admin, err := f.target.client("reaper cluster "+sub, env, stderr)
	if err != nil {
		return err
	}
	call, err := clusterRequest(sub, f, stderr)
	if err != nil {
		return err
	}
	st, err := call(ctx, admin.api())
	var e *adminapi.Error
	switch {
	case errors.As(err, &e):
		fmt.Fprintf(stderr, "reaper cluster %s: %d %s\n", sub, e.Status, bytes.TrimSpace(e.Body))
		return exitCode(1)
	case errors.Is(err, adminapi.ErrAnswer):
		fmt.Fprintf(stderr, "reaper cluster %s: %s\n", sub, strings.TrimPrefix(err.Error(), "adminapi: "))
		return exitCode(1)
	case err != nil:
		fmt.Fprintf(stderr, "reaper cluster %s: the node at %s could not be reached: %s\n", sub, admin.base, admin.redact(err.Error()))
		return exitCode(1)
	}
	printStatus(stdout, st)
	if sub == "status" && !allAnswer(st) {
		return exitCode(8) // the table says which member and why
	}
	return nil
}

// clusterHelp prints the usage: to stdout, for --help, and to stderr with status
// 2 when no command is given.
func clusterHelp(args []string, stdout, stderr io.Writer) error {
	w := stderr
	if len(args) > 0 {
		w = stdout
	}
	fmt.Fprint(w, clusterUsage)
	if len(args) == 0 {
		return exitCode(2)
	}
	return nil
}

// clusterFlags are the options of the cluster commands; which ones a command
// needs is checked by clusterRequest.
type clusterFlags struct {
	target                *adminTarget
	id, raftAddr, apiAddr string
}

// parseClusterFlags parses the options of `reaper cluster sub`.
func parseClusterFlags(sub string, args []string, stdout, stderr io.Writer) (clusterFlags, error) {
	fs := newFlags("cluster "+sub, "cluster "+sub+" --config FILE [options]", stdout, stderr)
	target := addAdminFlags(fs)
	id := fs.String("id", "", "join, remove: the member's node id")
	raftAddr := fs.String("raft-addr", "", "join: the member's Raft address")
	apiAddr := fs.String("api-addr", "", "join: the member's admin listener address")
	if err := parseFlags(fs, args, stdout); err != nil {
		return clusterFlags{}, err
	}
	return clusterFlags{target: target, id: *id, raftAddr: *raftAddr, apiAddr: *apiAddr}, nil
}

// clusterCall is the admin API call that a cluster command makes: each
// answers the cluster's status.
type clusterCall func(context.Context, *adminapi.Client) (leader.Status, error)

// clusterRequest checks that f has the options the command sub needs and returns
// its call; an unknown command or a missing option is a usage error (status 2).
func clusterRequest(sub string, f clusterFlags, stderr io.Writer) (clusterCall, error) {
	switch sub {
	case "status":
		// Probed: each member says whether it answers, and what it sees.
		return func(ctx context.Context, api *adminapi.Client) (leader.Status, error) { return api.Cluster(ctx, true) }, nil
	case "join":
		if f.id == "" || f.raftAddr == "" || f.apiAddr == "" {
			fmt.Fprintln(stderr, "reaper cluster join: --id, --raft-addr and --api-addr are required")
			return nil, exitCode(2)
		}
		m := leader.MemberRequest{ID: f.id, RaftAddr: f.raftAddr, APIAddr: f.apiAddr}
		return func(ctx context.Context, api *adminapi.Client) (leader.Status, error) { return api.Join(ctx, m) }, nil
	case "remove":
		if f.id == "" {
			fmt.Fprintln(stderr, "reaper cluster remove: --id is required")
			return nil, exitCode(2)
		}
		return func(ctx context.Context, api *adminapi.Client) (leader.Status, error) { return api.Remove(ctx, f.id) }, nil
	default:
		fmt.Fprintf(stderr, "reaper cluster: unknown command %q\n\n%s", sub, clusterUsage)
		return nil, exitCode(2)
	}
}

// allAnswer reports whether every member of a probed status answered, without
// an error, and sees the leader and term of the node asked.
func allAnswer(st leader.Status) bool {
	for _, m := range st.Members {
		p := m.Probe
		if p == nil || m.ID == st.ID {
			continue
		}
		if !p.Reachable || p.Error != "" || p.Self == nil || p.Self.LeaderID != st.LeaderID || p.Self.Term != st.Term {
			return false
		}
	}
	return st.LeaderID != ""
}

// printStatus prints the node's view, and for a probed status each member's
// reachability, round trip, role and last contact from the leader, then why a
// member did not answer or what it sees differently.
func printStatus(w io.Writer, st leader.Status) {
	fmt.Fprintf(w, "node %s: %s, term %d, leader %s\n\n", st.ID, st.State, st.Term, orDash(st.LeaderID))
	probed := slices.ContainsFunc(st.Members, func(m leader.Member) bool { return m.Probe != nil })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if probed {
		fmt.Fprintln(tw, "ID\tRAFT\tAPI\tVOTER\tLEADER\tREACH\tRTT\tSTATE\tLAST CONTACT")
	} else {
		fmt.Fprintln(tw, "ID\tRAFT\tAPI\tVOTER\tLEADER")
	}
	var notes []string
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%v", m.ID, m.RaftAddr, orDash(m.APIAddr), m.Voter, m.Leader)
		if probed {
			cols, note := probeColumns(st, m)
			fmt.Fprint(tw, "\t"+cols)
			if note != "" {
				notes = append(notes, m.ID+": "+note)
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}
}

// probeColumns are the REACH, RTT, STATE and LAST CONTACT columns of member m
// (tab-separated), and a note when it did not answer or sees another leader or
// term than the node asked.
func probeColumns(st leader.Status, m leader.Member) (string, string) {
	p := m.Probe
	if p == nil {
		return "-\t-\t-\t-", ""
	}
	reach, rtt := "ok", fmt.Sprintf("%.1fms", p.RTTMS)
	switch {
	case m.ID == st.ID:
		reach, rtt = "self", "-"
	case !p.Reachable:
		reach, rtt = "unreachable", "-"
	}
	if p.Self == nil {
		note := p.Error
		if p.LastAnswerMS != nil {
			note += fmt.Sprintf(" (last answered %v ago)", time.Duration(*p.LastAnswerMS)*time.Millisecond)
		}
		return reach + "\t" + rtt + "\t-\t-", note
	}
	s, contact := p.Self, "-"
	if s.LastContactMS != nil {
		contact = (time.Duration(*s.LastContactMS) * time.Millisecond).String() + " ago"
	}
	note := p.Error
	if note == "" && (s.LeaderID != st.LeaderID || s.Term != st.Term) {
		note = fmt.Sprintf("sees leader %s at term %d", orDash(s.LeaderID), s.Term)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s", reach, rtt, s.State, contact), note
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
