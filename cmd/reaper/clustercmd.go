package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/reapergw/reaper/leader"
)

const clusterUsage = `Usage:
  reaper cluster status --config FILE
  reaper cluster join   --config FILE --id ID --raft-addr HOST:PORT --api-addr HOST:PORT
  reaper cluster remove --config FILE --id ID

The commands talk to the admin listener of the node whose configuration FILE is
(node.admin_listen, with node.admin_token); that node forwards membership changes
to the leader.
`

func clusterCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
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
	sub := args[0]
	fs := newFlags("cluster "+sub, "cluster "+sub+" --config FILE [options]", stdout, stderr)
	path := fs.String("config", "", "the configuration of the node to ask (required)")
	id := fs.String("id", "", "join, remove: the member's node id")
	raftAddr := fs.String("raft-addr", "", "join: the member's Raft address")
	apiAddr := fs.String("api-addr", "", "join: the member's admin listener address")
	if err := parseFlags(fs, args[1:], stdout); err != nil {
		return err
	}
	if *path == "" {
		fmt.Fprintf(stderr, "reaper cluster %s: --config is required\n", sub)
		return exitCode(2)
	}
	cfg, err := loadConfig(*path, env)
	if err != nil {
		printConfigErrors(stderr, *path, err)
		return exitCode(1)
	}
	if cfg.Node.AdminListen == "" || !cfg.Node.AdminToken.IsSet() {
		fmt.Fprintln(stderr, "reaper cluster: the node needs node.admin_listen and node.admin_token for these commands")
		return exitCode(1)
	}
	host, port, _ := net.SplitHostPort(cfg.Node.AdminListen)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	base := "http://" + net.JoinHostPort(host, port)
	call := func(method, p string, body any) (int, []byte, error) {
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, base+p, r)
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+cfg.Node.AdminToken.Reveal())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, out, err
	}

	var code int
	var out []byte
	switch sub {
	case "status":
		code, out, err = call(http.MethodGet, "/api/cluster", nil)
	case "join":
		if *id == "" || *raftAddr == "" || *apiAddr == "" {
			fmt.Fprintln(stderr, "reaper cluster join: --id, --raft-addr and --api-addr are required")
			return exitCode(2)
		}
		code, out, err = call(http.MethodPost, "/api/cluster/members", map[string]string{"id": *id, "raft_addr": *raftAddr, "api_addr": *apiAddr})
	case "remove":
		if *id == "" {
			fmt.Fprintln(stderr, "reaper cluster remove: --id is required")
			return exitCode(2)
		}
		code, out, err = call(http.MethodDelete, "/api/cluster/members/"+url.PathEscape(*id), nil)
	default:
		fmt.Fprintf(stderr, "reaper cluster: unknown command %q\n\n%s", sub, clusterUsage)
		return exitCode(2)
	}
	if err != nil {
		fmt.Fprintf(stderr, "reaper cluster %s: the node at %s could not be reached: %v\n", sub, base, err)
		return exitCode(1)
	}
	if code != http.StatusOK {
		fmt.Fprintf(stderr, "reaper cluster %s: %d %s\n", sub, code, bytes.TrimSpace(out))
		return exitCode(1)
	}
	var st leader.Status
	if err := json.Unmarshal(out, &st); err != nil {
		fmt.Fprintf(stderr, "reaper cluster %s: unexpected answer: %s\n", sub, out)
		return exitCode(1)
	}
	printStatus(stdout, st)
	return nil
}

func printStatus(w io.Writer, st leader.Status) {
	fmt.Fprintf(w, "node %s: %s, term %d, leader %s\n\n", st.ID, st.State, st.Term, orDash(st.LeaderID))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT\tAPI\tVOTER\tLEADER")
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%v\n", m.ID, m.RaftAddr, orDash(m.APIAddr), m.Voter, m.Leader)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
