package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/reapergw/reaper/config"
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
	admin, err := nodeAdmin(f.config, env, stderr)
	if err != nil {
		return err
	}
	req, err := clusterRequest(sub, f, stderr)
	if err != nil {
		return err
	}
	code, out, err := admin.call(ctx, req.method, req.path, req.body)
	if err != nil {
		fmt.Fprintf(stderr, "reaper cluster %s: the node at %s could not be reached: %v\n", sub, admin.base, err)
		return exitCode(1)
	}
	return printClusterAnswer(sub, code, out, stdout, stderr)
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
	config, id, raftAddr, apiAddr string
}

// parseClusterFlags parses the options of `reaper cluster sub`; --config is
// required by every command.
func parseClusterFlags(sub string, args []string, stdout, stderr io.Writer) (clusterFlags, error) {
	fs := newFlags("cluster "+sub, "cluster "+sub+" --config FILE [options]", stdout, stderr)
	path := fs.String("config", "", "the configuration of the node to ask (required)")
	id := fs.String("id", "", "join, remove: the member's node id")
	raftAddr := fs.String("raft-addr", "", "join: the member's Raft address")
	apiAddr := fs.String("api-addr", "", "join: the member's admin listener address")
	if err := parseFlags(fs, args, stdout); err != nil {
		return clusterFlags{}, err
	}
	if *path == "" {
		fmt.Fprintf(stderr, "reaper cluster %s: --config is required\n", sub)
		return clusterFlags{}, exitCode(2)
	}
	return clusterFlags{config: *path, id: *id, raftAddr: *raftAddr, apiAddr: *apiAddr}, nil
}

// nodeAdmin loads the node's configuration at path and returns a client of its
// admin listener, which the commands need, with its token.
func nodeAdmin(path string, env func(string) (string, bool), stderr io.Writer) (adminClient, error) {
	cfg, err := loadConfig(path, env)
	if err != nil {
		printConfigErrors(stderr, path, err)
		return adminClient{}, exitCode(1)
	}
	if cfg.Node.AdminListen == "" || !cfg.Node.AdminToken.IsSet() {
		fmt.Fprintln(stderr, "reaper cluster: the node needs node.admin_listen and node.admin_token for these commands")
		return adminClient{}, exitCode(1)
	}
	a, err := newAdminClient(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "reaper cluster: %v\n", err)
		return adminClient{}, exitCode(1)
	}
	return a, nil
}

// newAdminClient is a client of the node's admin listener: over HTTPS, trusting
// cluster.tls.ca, when the cluster has TLS.
func newAdminClient(cfg *config.Config) (adminClient, error) {
	host, port, _ := net.SplitHostPort(cfg.Node.AdminListen)
	// A node listening on every address is asked on loopback.
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, port)
	a := adminClient{base: "http://" + addr, token: cfg.Node.AdminToken.Reveal(), client: http.DefaultClient}
	if cfg.Cluster == nil || cfg.Cluster.TLS == nil {
		return a, nil
	}
	cas, err := leader.LoadCAs(cfg.Cluster.TLS.CA)
	if err != nil {
		return adminClient{}, fmt.Errorf("cluster.tls.ca: %w", err)
	}
	a.base = "https://" + addr
	a.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    cas,
		ServerName: adminName(cfg, host),
	}}}
	return a, nil
}

// adminName is the name the node's certificate is checked against: the host the
// other nodes dial for its API (its api_addr in cluster.peers), which the
// configuration check makes sure it names; for a node not in its own peers, the
// host dialled.
func adminName(cfg *config.Config, dialled string) string {
	for _, p := range cfg.Cluster.Peers {
		if p.ID == cfg.Node.ID {
			if host, _, err := net.SplitHostPort(p.APIAddr); err == nil {
				return host
			}
		}
	}
	return dialled
}

// clusterReq is the admin API call that a cluster command makes.
type clusterReq struct {
	method, path string
	body         any // sent as JSON when not nil
}

// clusterRequest checks that f has the options the command sub needs and returns
// its call; an unknown command or a missing option is a usage error (status 2).
func clusterRequest(sub string, f clusterFlags, stderr io.Writer) (clusterReq, error) {
	switch sub {
	case "status":
		return clusterReq{method: http.MethodGet, path: "/api/cluster"}, nil
	case "join":
		if f.id == "" || f.raftAddr == "" || f.apiAddr == "" {
			fmt.Fprintln(stderr, "reaper cluster join: --id, --raft-addr and --api-addr are required")
			return clusterReq{}, exitCode(2)
		}
		body := map[string]string{"id": f.id, "raft_addr": f.raftAddr, "api_addr": f.apiAddr}
		return clusterReq{method: http.MethodPost, path: "/api/cluster/members", body: body}, nil
	case "remove":
		if f.id == "" {
			fmt.Fprintln(stderr, "reaper cluster remove: --id is required")
			return clusterReq{}, exitCode(2)
		}
		return clusterReq{method: http.MethodDelete, path: "/api/cluster/members/" + url.PathEscape(f.id)}, nil
	default:
		fmt.Fprintf(stderr, "reaper cluster: unknown command %q\n\n%s", sub, clusterUsage)
		return clusterReq{}, exitCode(2)
	}
}

// adminClient calls a node's admin API.
type adminClient struct {
	base   string // http://host:port, or https:// with cluster.tls
	token  string
	client *http.Client
}

// call sends the request, with body as JSON unless it is nil, and returns the
// status and up to 1 MiB of the answer. It gives up after 15 s.
func (a adminClient) call(ctx context.Context, method, p string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+p, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, out, err
}

// printClusterAnswer prints the cluster's status that the node answered to the
// command sub; any other answer is an error (status 1).
func printClusterAnswer(sub string, code int, out []byte, stdout, stderr io.Writer) error {
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
