package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// errUsage marks a command line that cannot be parsed; main exits with status 2.
var errUsage = errors.New("fakeclever: bad usage")

// options is the parsed command line.
type options struct {
	bridge, api, edge, admin string
	token                    string
	oauth                    fakeclever.OAuthCreds
	bootTime, deployDelay    time.Duration
	stopLinger, edgeDelay    time.Duration
	apps                     []fakeclever.App
	appEdgeBase              int
	verbose                  bool
}

const usageHead = `Usage: fakeclever [flags]

fakeclever serves a fake Clever Cloud on loopback: the API (bridge host for API tokens,
API host for OAuth 1), the apps' domains, and control endpoints (/_fake/ on --admin).
Apps start as SHOULD_BE_UP unless their state says otherwise; a start makes them
SHOULD_BE_DOWN for --deploy-delay, WANTS_TO_BE_UP for --boot-time, then SHOULD_BE_UP.

Durations accept Go syntax (90s, 1m30s) or a bare number of seconds.

Flags:
`

// durationFlag is a flag.Value taking Go syntax or seconds.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	v, err := conf.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = v
	return nil
}

// appFlag collects --app id[:name[:state]].
type appFlag struct{ apps *[]fakeclever.App }

func (f appFlag) String() string { return "" }

func (f appFlag) Set(s string) error {
	parts := strings.SplitN(s, ":", 3)
	a := fakeclever.App{ID: parts[0]}
	if !strings.HasPrefix(a.ID, "app_") || len(a.ID) < 5 {
		return fmt.Errorf("%q: the id must start with app_", parts[0])
	}
	if len(parts) > 1 {
		a.Name = parts[1]
	}
	if len(parts) > 2 {
		a.State = strings.ToUpper(parts[2])
		switch a.State {
		case fakeclever.StateShouldBeUp, fakeclever.StateShouldBeDown, fakeclever.StateWantsToBeUp,
			fakeclever.StateModerated, fakeclever.StateDefaultOfPayment:
		default:
			return fmt.Errorf("%q: unknown state %s", s, parts[2])
		}
	}
	*f.apps = append(*f.apps, a)
	return nil
}

// parseOptions parses args. For --help it prints the usage to stdout and returns
// flag.ErrHelp; for a bad command line it prints the error to stderr and returns an
// error wrapping errUsage.
func parseOptions(args []string, stdout, stderr io.Writer) (options, error) {
	o := options{
		bridge: "127.0.0.1:7801", api: "127.0.0.1:7802", edge: "127.0.0.1:7803", admin: "127.0.0.1:7804",
		token: fakeclever.DefaultToken, oauth: fakeclever.DefaultOAuth,
		bootTime: 20 * time.Second, deployDelay: 5 * time.Second, stopLinger: 10 * time.Second,
	}
	var n int
	var owner, state string
	var named []fakeclever.App
	fs := flag.NewFlagSet("fakeclever", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.bridge, "bridge", o.bridge, "listen address of the bridge host (API token)")
	fs.StringVar(&o.api, "api", o.api, "listen address of the API host (OAuth 1)")
	fs.StringVar(&o.edge, "edge", o.edge, "listen address of the apps' domains (routed by Host)")
	fs.StringVar(&o.admin, "admin", o.admin, "listen address of the control endpoints")
	fs.StringVar(&o.token, "token", o.token, "the API token the bridge accepts")
	fs.StringVar(&o.oauth.ConsumerKey, "consumer-key", o.oauth.ConsumerKey, "OAuth 1 consumer key the API host accepts")
	fs.StringVar(&o.oauth.ConsumerSecret, "consumer-secret", o.oauth.ConsumerSecret, "OAuth 1 consumer secret")
	fs.StringVar(&o.oauth.Token, "oauth-token", o.oauth.Token, "OAuth 1 token")
	fs.StringVar(&o.oauth.Secret, "oauth-secret", o.oauth.Secret, "OAuth 1 token secret")
	fs.Var(durationFlag{&o.bootTime}, "boot-time", "how long a deployment runs (WANTS_TO_BE_UP) (default 20s)")
	fs.Var(durationFlag{&o.deployDelay}, "deploy-delay", "how long an app still says SHOULD_BE_DOWN after a start (default 5s)")
	fs.Var(durationFlag{&o.stopLinger}, "stop-linger", "how long an app still says SHOULD_BE_UP after a stop (default 10s)")
	fs.Var(durationFlag{&o.edgeDelay}, "edge-delay", "how long an app's domain still answers 404 once it says SHOULD_BE_UP (default 0s)")
	fs.IntVar(&n, "apps", 0, "add N apps app_00000000-0000-4000-8000-00000000000N named app-N (default 1 when no --app)")
	fs.Var(appFlag{&named}, "app", "add an app `id[:name[:state]]` (repeatable)")
	fs.StringVar(&owner, "owner", fakeclever.DefaultOrganisation, "owner of the apps (orga_… or user_…)")
	fs.StringVar(&state, "state", fakeclever.StateShouldBeUp, "initial state of the --apps apps")
	fs.IntVar(&o.appEdgeBase, "app-edge-base", 0, "when set, app i (from 0) also answers on 127.0.0.1:(base+i) whatever the Host")
	fs.BoolVar(&o.verbose, "verbose", false, "log every call to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return o, err
		}
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	bad := func(format string, a ...any) (options, error) {
		fmt.Fprintf(stderr, "fakeclever: "+format+"\n", a...)
		return o, fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q", fs.Arg(0))
	case n < 0 || n > 10000:
		return bad("--apps must be between 0 and 10000")
	case !strings.HasPrefix(owner, "orga_") && !strings.HasPrefix(owner, "user_"):
		return bad("--owner %q must start with orga_ or user_", owner)
	case o.token == "":
		return bad("--token must not be empty")
	}
	state = strings.ToUpper(state)
	switch state {
	case fakeclever.StateShouldBeUp, fakeclever.StateShouldBeDown, fakeclever.StateWantsToBeUp,
		fakeclever.StateModerated, fakeclever.StateDefaultOfPayment:
	default:
		return bad("--state %q is not a Clever Cloud state", state)
	}
	if n == 0 && len(named) == 0 {
		n = 1
	}
	for i := 1; i <= n; i++ {
		o.apps = append(o.apps, fakeclever.App{ID: fmt.Sprintf("app_00000000-0000-4000-8000-%012d", i),
			Name: fmt.Sprintf("app-%d", i), Owner: owner, State: state})
	}
	for _, a := range named {
		a.Owner = owner
		o.apps = append(o.apps, a)
	}
	return o, nil
}
