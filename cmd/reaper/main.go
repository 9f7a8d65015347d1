// Command reaper is the scale-to-zero gateway: it proxies requests to apps, puts
// the ones nobody uses to sleep and wakes them on the next request.
//
//	reaper serve --config FILE    run the gateway
//	reaper check --config FILE    check a configuration file and exit
//	reaper stop-apps --config FILE  stop the local apps the process driver started
//	reaper apps, app, wake, …     operate the apps through a node's admin API
//	reaper health                 exit 0 when a node's /healthz answers 200
//	reaper version                print the version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	var code exitCode
	switch {
	case err == nil:
	case errors.As(err, &code):
		os.Exit(int(code))
	default:
		fmt.Fprintln(os.Stderr, "reaper:", err)
		os.Exit(1)
	}
}

// exitCode ends the program with a status and no further message (the command has
// said what was wrong).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

const usage = `reaper — a scale-to-zero gateway

Usage:
  reaper serve --config FILE [--log-format text|json] [--log-level LEVEL]
  reaper check --config FILE
  reaper cluster status|join|remove --config FILE [options]
  reaper health [--url URL | --config FILE] [--timeout 2s]
  reaper import-otoroshi FILE
  reaper stop-apps --config FILE [--force]   stop the local apps reaper started
  reaper version

Operating the apps, through a node's admin API:
  reaper apps                            every app: status, clocks, holds
  reaper app ID                          one app
  reaper groups                          the groups, their members and when they sleep
  reaper wake ID [--wait]                wake it (and wait until it is Up)
  reaper sleep ID [--force]              put it to sleep now
  reaper hold ID DURATION [--reason …]   keep it awake for DURATION (6h, 90m, 2d)
  reaper release ID                      end its hold
  reaper reset ID                        put it (in Error) back to WaitingForInit
  reaper history ID [--page N]           its history, newest first
  reaper events [--app ID]               follow the node's events
  reaper savings                         what sleeping saved

They find the admin API with --admin URL and --token (or $REAPER_ADMIN_URL and
$REAPER_ADMIN_TOKEN), or with --config FILE, a node's configuration. --json
prints the API's JSON. A job that needs an app awake:
  reaper hold db 6h --reason backup --wait && backup; reaper release db

Exit status of these: 0 done, 1 refused by the API, 2 usage error, 3 admin API
unreachable or failing (5xx), 4 not found, 5 conflict (e.g. sleep refused),
6 wake --wait timed out, 7 wake --wait: the app is in Error.

wake, sleep, hold and release take a group's id too: they act on each member.

Run 'reaper COMMAND --help' for a command's options.
`

// adminCommands are the commands on the admin API, by name.
var adminCommands = map[string]func(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error{
	"apps": appsCmd, "app": appCmd, "groups": groupsCmd, "wake": wakeCmd, "sleep": sleepCmd, "hold": holdCmd,
	"release": releaseCmd, "reset": resetCmd, "history": historyCmd, "events": eventsCmd, "savings": savingsCmd,
}

// run is the whole program, with its environment passed in so that tests can run
// it: ctx ends on SIGTERM or SIGINT.
func run(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(2)
	}
	if cmd, ok := adminCommands[args[0]]; ok {
		return cmd(ctx, args[1:], env, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return serveCmd(ctx, args[1:], env, stdout, stderr)
	case "check":
		return checkCmd(args[1:], env, stdout, stderr)
	case "cluster":
		return clusterCmd(ctx, args[1:], env, stdout, stderr)
	case "health":
		return healthCmd(ctx, args[1:], env, stdout, stderr)
	case "import-otoroshi":
		return importCmd(args[1:], stdout, stderr)
	case "stop-apps":
		return stopAppsCmd(ctx, args[1:], env, stdout, stderr)
	case "version", "--version":
		return versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "reaper: unknown command %q\n\n%s", args[0], usage)
		return exitCode(2)
	}
}

// newFlags returns a flag set that prints its usage to stderr (or stdout for
// --help) and never exits the process.
func newFlags(name, synopsis string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: reaper %s\n", synopsis)
		has := false
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprint(fs.Output(), "\nOptions:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args, which hold options only; see parseArgs.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	_, err := parseArgs(fs, args, stdout, 0, 0)
	return err
}

// parseArgs parses options and positional arguments in any order (options may
// follow the arguments: `reaper hold db 6h --reason backup`; after "--" all are
// arguments) and returns the arguments. --help prints the usage once, to stdout,
// and ends with status 0; an unknown option, or fewer than least or more than
// most arguments (most < 0: any number), prints the problem and the usage once,
// to stderr, and ends with status 2.
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer, least, most int) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {} // the flag package would print it on every error; it is printed once below
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				usage()
				return nil, exitCode(0)
			}
			usage()
			return nil, exitCode(2)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	switch {
	case len(pos) < least:
		fmt.Fprintf(fs.Output(), "missing argument: %d needed\n", least)
	case most >= 0 && len(pos) > most:
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", pos[most])
	default:
		return pos, nil
	}
	usage()
	return nil, exitCode(2)
}

func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "version", stdout, stderr)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reaper %s\n", version)
	return nil
}

func checkCmd(args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := newFlags("check", "check --config FILE", stdout, stderr)
	path := fs.String("config", "", "the configuration file to check (required)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *path == "" {
		fmt.Fprintln(stderr, "reaper check: --config is required")
		return exitCode(2)
	}
	cfg, err := loadConfig(*path, env)
	if err != nil {
		printConfigErrors(stderr, *path, err)
		return exitCode(1)
	}
	if problem := dataDirProblem(cfg.Node.DataDir); problem != "" {
		fmt.Fprintf(stderr, "%s: 1 problem:\n  node.data_dir: %s (serve creates it and writes its state there)\n", *path, problem)
		return exitCode(1)
	}
	if empty, err := emptyFile(*path); err == nil && empty {
		fmt.Fprintf(stderr, "%s: warning: the file is empty: every setting is its default, and without routes the gateway answers 404 to every request\n", *path)
	} else if len(cfg.Routes) == 0 {
		fmt.Fprintf(stderr, "%s: warning: no routes: the gateway answers 404 to every request\n", *path)
	}
	routes := "routes"
	if len(cfg.Routes) == 1 {
		routes = "route"
	}
	if n := len(cfg.TCPRoutes); n > 0 {
		routes += fmt.Sprintf(", %d tcp route", n)
		if n > 1 {
			routes += "s"
		}
	}
	fmt.Fprintf(stdout, "%s: ok (%d %s, driver %s, store %s)\n", *path, len(cfg.Routes), routes, cfg.PaaS.Driver, cfg.Store.Driver)
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stdout, "warning: "+w)
	}
	for _, n := range cfg.ReadinessNotes() {
		fmt.Fprintln(stdout, "note: "+n)
	}
	if lines := cfg.DockerReadiness(env); len(lines) > 0 {
		fmt.Fprintln(stdout, "container readiness, probed at each start:")
		for _, l := range lines {
			fmt.Fprintln(stdout, "  "+l)
		}
	}
	checkKube(cfg, env, stdout)
	return nil
}
