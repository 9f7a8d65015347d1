package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// defaultHealthURL is what `reaper health` asks when nothing says otherwise:
// /healthz on node.admin_listen's default.
const defaultHealthURL = defaultAdmin + "/healthz"

const healthSynopsis = `health [--url URL | --config FILE] [--timeout 2s]

Asks a node's /healthz and exits 0 when it answers 200 within the timeout, 1
otherwise, with the reason on one line (2: a usage error). It needs nothing
but the binary: it is the HEALTHCHECK of the container image (FROM scratch,
without curl). --config FILE asks the admin listener of that configuration
(node.admin_listen, on 127.0.0.1 when it listens on every address; over HTTPS
trusting cluster.tls.ca when the cluster has TLS). A URL without a path asks
/healthz. Default: ` + defaultHealthURL

// healthCmd is `reaper health`: a probe for container engines and scripts.
func healthCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := newFlags("health", healthSynopsis, stdout, stderr)
	rawURL := fs.String("url", "", "the URL to ask (default "+defaultHealthURL+")")
	path := fs.String("config", "", "a node's configuration: ask /healthz on its admin listener")
	cacert := fs.String("cacert", "", "a PEM file of the CA to trust for an https:// --url")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer, connecting included")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *rawURL != "" && *path != "" {
		fmt.Fprintln(stderr, "reaper health: give --url or --config, not both")
		return exitCode(2)
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "reaper health: --timeout must be positive")
		return exitCode(2)
	}
	target, client, err := healthTarget(*rawURL, *path, *cacert, env)
	if err != nil {
		fmt.Fprintf(stderr, "reaper health: %v\n", err)
		return exitCode(1)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := probeHealth(ctx, client, target); err != nil {
		fmt.Fprintf(stderr, "reaper health: %s: %v\n", target, err)
		return exitCode(1)
	}
	fmt.Fprintf(stdout, "%s: ok\n", target)
	return nil
}

// healthTarget returns the URL to ask and the client to ask it with: from
// rawURL, else from the admin listener of the configuration at path, else the
// default.
func healthTarget(rawURL, path, cacert string, env func(string) (string, bool)) (string, *http.Client, error) {
	a := adminClient{client: &http.Client{}}
	if path != "" {
		cfg, err := loadConfig(path, env)
		if err != nil {
			// The first problem is enough for a health check, on one line.
			return "", nil, fmt.Errorf("%s: %s", path, firstLine(err.Error()))
		}
		if cfg.Node.AdminListen == "" {
			return "", nil, fmt.Errorf("%s has no admin listener (node.admin_listen)", path)
		}
		if a, err = newAdminClient(cfg); err != nil {
			return "", nil, err
		}
		rawURL = a.base + "/healthz"
	}
	if rawURL == "" {
		rawURL = defaultHealthURL
	}
	if !strings.Contains(rawURL, "://") {
		rawURL = "http://" + rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", nil, fmt.Errorf("--url %q is not an http:// or https:// URL", rawURL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/healthz"
	}
	if cacert != "" {
		if err := a.trust(cacert); err != nil {
			return "", nil, fmt.Errorf("--cacert: %w", err)
		}
	}
	// A copy, so that the shared default client is never changed; a redirect is
	// an answer other than 200, not something to follow.
	client := *a.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return u.String(), &client, nil
}

// probeHealth asks target and returns nil when it answers 200 before ctx ends.
func probeHealth(ctx context.Context, client *http.Client, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("no answer before the timeout (--timeout)")
		}
		return errors.New(firstLine(unwrapURLError(err).Error()))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s, not 200", resp.Status)
	}
	return nil
}

// unwrapURLError drops the "Get URL:" prefix the HTTP client adds: the caller
// prints the URL already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
