package leader

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{
		NodeID:     "n1",
		RaftListen: "127.0.0.1:7001",
		Peers: []Peer{
			{ID: "n1", RaftAddr: "127.0.0.1:7001", APIAddr: "127.0.0.1:9001"},
			{ID: "n2", RaftAddr: "127.0.0.1:7002", APIAddr: "127.0.0.1:9002"},
		},
		Secret:  []byte("s3cret-s3cret-s3cret"),
		DataDir: "/tmp/x",
	}
}

func TestConfig_ResolveRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"no secret":            {func(c *Config) { c.Secret = nil }, "cluster.secret is required"},
		"no node id":           {func(c *Config) { c.NodeID = "" }, "NodeID is required"},
		"long node id":         {func(c *Config) { c.NodeID = strings.Repeat("n", maxIDLen+1) }, "NodeID is longer"},
		"no listen":            {func(c *Config) { c.RaftListen = "" }, "RaftListen is required"},
		"no data dir":          {func(c *Config) { c.DataDir = "" }, "DataDir is required"},
		"peer without id":      {func(c *Config) { c.Peers[1].ID = "" }, "Peers[1].ID is required"},
		"peer without address": {func(c *Config) { c.Peers[1].RaftAddr = "" }, "Peers[1].RaftAddr is required"},
		"duplicate id":         {func(c *Config) { c.Peers[1].ID = "n1" }, "listed twice"},
		"duplicate address":    {func(c *Config) { c.Peers[1].RaftAddr = c.Peers[0].RaftAddr }, "listed twice"},
		"advertise mismatch":   {func(c *Config) { c.Advertise = "127.0.0.1:7999" }, "differs from this node's RaftAddr"},
		"unspecified advertise": {func(c *Config) {
			c.Peers = nil
			c.RaftListen = "0.0.0.0:7001"
		}, "unspecified"},
		"advertise without port": {func(c *Config) { c.Peers, c.Advertise = nil, "host-only" }, "Advertise"},
		"lease above heartbeat": {func(c *Config) {
			c.HeartbeatTimeout, c.LeaderLeaseTimeout = 100*time.Millisecond, 200*time.Millisecond
		}, "LeaderLeaseTimeout"},
		"election below heartbeat": {func(c *Config) {
			c.HeartbeatTimeout, c.ElectionTimeout = time.Second, 100*time.Millisecond
		}, "ElectionTimeout"},
	} {
		t.Run(name, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			_, err := c.resolve()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resolve = %v, want ErrConfig mentioning %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), string(validConfig().Secret)) {
				t.Fatalf("error contains the secret: %v", err)
			}
		})
	}
}

func TestConfig_ResolveDefaults(t *testing.T) {
	c, err := validConfig().resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.Advertise != "127.0.0.1:7001" || c.Logger == nil {
		t.Fatalf("Advertise %q, Logger %v", c.Advertise, c.Logger)
	}
	if c.HeartbeatTimeout != DefaultHeartbeatTimeout || c.ElectionTimeout != DefaultElectionTimeout || c.LeaderLeaseTimeout != DefaultLeaderLeaseTimeout {
		t.Fatalf("timeouts %s %s %s", c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout)
	}

	joiner := validConfig()
	joiner.NodeID, joiner.RaftListen = "n3", "10.1.2.3:7003"
	if c, err := joiner.resolve(); err != nil || c.Advertise != "10.1.2.3:7003" {
		t.Fatalf("joiner Advertise %q, %v: want RaftListen", c.Advertise, err)
	}

	// The resolved config owns its slices.
	in := validConfig()
	out, _ := in.resolve()
	in.Secret[0], in.Peers[0].APIAddr = 'X', "changed"
	if out.Secret[0] == 'X' || out.Peers[0].APIAddr == "changed" {
		t.Fatal("resolve kept the caller's slices")
	}
}

func TestTimeouts(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		in, want [3]time.Duration // heartbeat, election, lease
	}{
		{[3]time.Duration{}, [3]time.Duration{ms(2000), ms(2000), ms(1000)}},
		{[3]time.Duration{ms(100), 0, 0}, [3]time.Duration{ms(100), ms(100), ms(50)}},
		{[3]time.Duration{ms(2000), 0, 0}, [3]time.Duration{ms(2000), ms(2000), ms(1000)}},
		{[3]time.Duration{0, ms(200), 0}, [3]time.Duration{ms(200), ms(200), ms(100)}},
		{[3]time.Duration{0, ms(900), 0}, [3]time.Duration{ms(900), ms(900), ms(450)}},
		{[3]time.Duration{0, ms(3000), 0}, [3]time.Duration{ms(2000), ms(3000), ms(1000)}},
		{[3]time.Duration{ms(300), ms(600), ms(100)}, [3]time.Duration{ms(300), ms(600), ms(100)}},
	} {
		h, e, l := Timeouts(tc.in[0], tc.in[1], tc.in[2])
		if got := [3]time.Duration{h, e, l}; got != tc.want {
			t.Errorf("timeouts%v = %v, want %v", tc.in, got, tc.want)
		}
	}
}
