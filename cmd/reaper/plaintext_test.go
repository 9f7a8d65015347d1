package main

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/internal/logtest"
)

func TestWarnPlaintextCluster(t *testing.T) {
	cluster := func(raft, admin, peer string) *config.Config {
		return &config.Config{
			Node: config.Node{ID: "n1", AdminListen: admin},
			Cluster: &config.Cluster{
				RaftListen: raft,
				Peers: []config.Peer{
					{ID: "n1", RaftAddr: raft, APIAddr: admin},
					{ID: "n2", RaftAddr: peer + ":7000", APIAddr: peer + ":9090"},
				},
			},
		}
	}
	withTLS := cluster("10.0.0.11:7000", "10.0.0.11:9090", "10.0.0.12")
	withTLS.Cluster.TLS = &config.ClusterTLS{Cert: "n1.crt", Key: "n1.key", CA: "ca.crt"}
	cases := []struct {
		name    string
		cfg     *config.Config
		exposed []string // nil: no warning
	}{
		{"every address on loopback", cluster("127.0.0.1:7001", "127.0.0.1:9091", "127.0.0.2"), nil},
		{"localhost and IPv6 loopback", cluster("localhost:7001", "[::1]:9091", "localhost"), nil},
		{"a peer on the network", cluster("127.0.0.1:7001", "127.0.0.1:9091", "10.0.0.12"),
			[]string{"10.0.0.12:7000", "10.0.0.12:9090"}},
		{"listening on every address", cluster("0.0.0.0:7001", ":9091", "127.0.0.2"),
			[]string{"0.0.0.0:7001", ":9091"}},
		{"on the network with cluster.tls", withTLS, nil},
		{"peers by host name", cluster("127.0.0.1:7001", "127.0.0.1:9091", "n2.cluster.test"),
			[]string{"n2.cluster.test:7000", "n2.cluster.test:9090"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs logtest.Buffer
			warnPlaintextCluster(logs.Logger(slog.LevelInfo), tc.cfg)
			n := logs.Lines("level=WARN", "cluster traffic is not encrypted", "set cluster.tls {cert, key, ca}")
			if tc.exposed == nil {
				if logs.String() != "" {
					t.Errorf("a warning for a cluster on loopback or with TLS:\n%s", logs.String())
				}
				return
			}
			if want := fmt.Sprintf("addresses=%q", "["+strings.Join(tc.exposed, " ")+"]"); n != 1 || logs.Lines(want) != 1 {
				t.Errorf("want one warning naming %s, got:\n%s", want, logs.String())
			}
		})
	}
}
