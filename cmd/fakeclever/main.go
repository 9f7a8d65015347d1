// Command fakeclever runs a fake Clever Cloud on loopback, so that reaper can be tried
// on the Clever Cloud path without an account: the API's bridge host (API token), its
// API host (OAuth 1), the apps' domains (the edge) and a control API to act as the
// console, inject faults and read the calls. See docs/clevercloud.md.
//
// It prints the URLs, the environment lines to give reaper, and the apps. It serves
// until SIGINT or SIGTERM.
//
// Exit status: 0 after a signal or --help, 1 when it cannot listen, 2 for a bad
// command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, errUsage) {
		fmt.Fprintln(os.Stderr, err)
	}
	switch {
	case err == nil:
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		os.Exit(1)
	}
}

// run parses args, starts the fake, prints how to use it to stdout and serves
// until ctx ends. Log lines (one per call with --verbose) go to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	f := fakeclever.New(fakeclever.Options{
		BootTime: o.bootTime, DeployDelay: o.deployDelay, StopLinger: o.stopLinger, EdgeDelay: o.edgeDelay,
		Token: o.token, OAuth: &o.oauth,
		Logger:     slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
		BridgeAddr: o.bridge, APIAddr: o.api, EdgeAddr: o.edge, AdminAddr: o.admin,
	})
	for i, a := range o.apps {
		if o.appEdgeBase > 0 {
			a.EdgeAddr = fmt.Sprintf("127.0.0.1:%d", o.appEdgeBase+i)
		}
		f.AddApp(a)
	}
	if err := f.Start(); err != nil {
		return err
	}
	defer f.Close()
	printUsage(stdout, f, o)
	<-ctx.Done()
	return nil
}

func printUsage(w io.Writer, f *fakeclever.Fake, o options) {
	oa := f.OAuth()
	fmt.Fprintf(w, `fakeclever: a fake Clever Cloud (not the real one), transitions: deploy delay %s, boot %s, stop linger %s
  bridge (API token, Bearer):  %s
  api    (OAuth 1, PLAINTEXT): %s
  edge   (the apps' domains):  %s
  admin  (control, /_fake/):   %s

# reaper, paas.clevercloud with an API token (token: ${CLEVER_CLOUD_API_TOKEN}, api_url: ${CLEVER_CLOUD_API_URL}):
export CLEVER_CLOUD_API_URL=%s
export CLEVER_CLOUD_API_TOKEN=%s
# or with OAuth 1 (oauth: {…}, api_url: the api line above):
export CC_CONSUMER_KEY=%s CC_CONSUMER_SECRET=%s CC_OAUTH_TOKEN=%s CC_OAUTH_SECRET=%s

apps (owner, state, then how to reach the app's domain):
`, o.deployDelay, o.bootTime, o.stopLinger, f.BridgeURL(), f.APIURL(), f.EdgeURL(), f.AdminURL(),
		f.BridgeURL(), shellQuote(f.Token()), shellQuote(oa.ConsumerKey), shellQuote(oa.ConsumerSecret),
		shellQuote(oa.Token), shellQuote(oa.Secret))
	for _, st := range f.Apps() {
		reach := fmt.Sprintf("curl -H 'Host: %s' %s/", st.Domain, f.EdgeURL())
		if u := f.AppEdgeURL(st.ID); u != "" {
			reach = "curl " + u + "/"
		}
		fmt.Fprintf(w, "  %s  %-12s %s  %s  %s\n", st.ID, st.Name, st.Owner, st.State, reach)
	}
	fmt.Fprintf(w, "\ncontrol: curl %s/_fake/  (stop an app from the console: curl -X POST %s/_fake/apps/ID/console/stop)\n",
		f.AdminURL(), f.AdminURL())
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
