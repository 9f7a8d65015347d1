package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/reapergw/reaper/adminapi"
	"github.com/reapergw/reaper/config"
	"github.com/reapergw/reaper/leader"
)

// defaultAdmin is where the admin commands look for the admin API when nothing
// says otherwise: node.admin_listen's default.
const defaultAdmin = "http://127.0.0.1:9090"

// adminTarget is how a command finds the admin API: --admin URL with --token, or
// a node's configuration file (--config), or the environment.
type adminTarget struct {
	url, token, config, cacert string
}

// addAdminFlags adds the options that say where the admin API is.
func addAdminFlags(fs *flag.FlagSet) *adminTarget {
	t := &adminTarget{}
	fs.StringVar(&t.url, "admin", "", "the admin API's URL (else node.admin_listen of --config, else $REAPER_ADMIN_URL, else "+defaultAdmin+")")
	fs.StringVar(&t.token, "token", "", "the admin token (else node.admin_token of --config, else $REAPER_ADMIN_TOKEN)")
	fs.StringVar(&t.config, "config", "", "a node's configuration file: ask its admin listener, with its token (and cluster.tls.ca)")
	fs.StringVar(&t.cacert, "cacert", "", "a PEM file of the CA to trust for an https:// admin API (default cluster.tls.ca of --config)")
	return t
}

// client resolves the target into a client, the first that is set winning: the
// URL from --admin, --config, $REAPER_ADMIN_URL, then defaultAdmin; the token
// from --token, --config, then $REAPER_ADMIN_TOKEN. A configuration that cannot
// be loaded, or no token at all, is a usage error (status 2), said on stderr
// after prog.
func (t *adminTarget) client(prog string, env func(string) (string, bool), stderr io.Writer) (adminClient, error) {
	var a adminClient
	if t.config != "" {
		cfg, err := loadConfig(t.config, env)
		if err != nil {
			printConfigErrors(stderr, t.config, err)
			return adminClient{}, exitCode(2)
		}
		if cfg.Node.AdminListen == "" {
			fmt.Fprintf(stderr, "%s: %s has no admin listener (node.admin_listen)\n", prog, t.config)
			return adminClient{}, exitCode(2)
		}
		if a, err = newAdminClient(cfg); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return adminClient{}, exitCode(2)
		}
	}
	if a.client == nil {
		a.client = http.DefaultClient
	}
	if t.url != "" {
		a.base = ""
	}
	if a.base == "" {
		if err := a.setURL(t.url, env); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return adminClient{}, exitCode(2)
		}
	}
	if t.cacert != "" {
		if err := a.trust(t.cacert); err != nil {
			fmt.Fprintf(stderr, "%s: --cacert: %v\n", prog, err)
			return adminClient{}, exitCode(2)
		}
	}
	if t.token != "" {
		a.token = t.token
	} else if a.token == "" && env != nil {
		a.token, _ = env("REAPER_ADMIN_TOKEN")
	}
	if a.token == "" {
		if t.config != "" {
			// The configuration was given and read: what lacks is its token.
			fmt.Fprintf(stderr, "%s: no admin token: %s has no node.admin_token (its node serves no admin API then); set it, or give --token or REAPER_ADMIN_TOKEN\n", prog, t.config)
		} else {
			fmt.Fprintf(stderr, "%s: no admin token: give --token, set REAPER_ADMIN_TOKEN, or --config a node's configuration\n", prog)
		}
		return adminClient{}, exitCode(2)
	}
	return a, nil
}

// setURL sets the API's base from u, else $REAPER_ADMIN_URL, else defaultAdmin;
// a URL without a scheme is taken as http://.
func (a *adminClient) setURL(u string, env func(string) (string, bool)) error {
	if u == "" && env != nil {
		u, _ = env("REAPER_ADMIN_URL")
	}
	if u == "" {
		u = defaultAdmin
	}
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("the admin API's URL %q is not an http:// or https:// URL", u)
	}
	a.base = strings.TrimSuffix(p.Scheme+"://"+p.Host+p.Path, "/")
	return nil
}

// trust makes the client trust the CA of the PEM file path (only).
func (a *adminClient) trust(path string) error {
	cas, err := leader.LoadCAs(path)
	if err != nil {
		return err
	}
	a.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cas}}}
	return nil
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
	a := adminClient{base: "http://" + addr, client: http.DefaultClient}
	if cfg.Node.AdminToken.IsSet() {
		a.token = cfg.Node.AdminToken.Reveal()
	}
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

// adminClient calls a node's admin API.
type adminClient struct {
	base   string // http://host:port, or https://
	token  string
	client *http.Client
}

// api is the typed client of the admin API: each call bounded to 15 s (the
// event stream excepted) and its answer to 1 MiB.
func (a adminClient) api() *adminapi.Client {
	return &adminapi.Client{Base: a.base, Token: a.token, HTTP: a.client, Timeout: 15 * time.Second, MaxAnswer: 1 << 20}
}

// redact removes the token from a message, in case an error ever quotes it.
func (a adminClient) redact(msg string) string {
	if a.token == "" {
		return msg
	}
	return strings.ReplaceAll(msg, a.token, "<token>")
}
