package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reapergw/reaper/paas/process"
)

const stopAppsHelp = `Stops the apps that reaper's process driver started for the configuration's
node.data_dir, and only those: the processes its pid files name, each checked to
be the very process reaper started (its start time: a pid reused by another
program is never signalled), and the processes that lost their pid file but
carry reaper's REAPER_APP marker for this data directory. Each app's process
group gets its stop_signal, then SIGKILL after its stop_timeout. One line per
app: stopped, not running, refused: not ours (a stale pid file), or failed.
Exit status 1 if an app could not be stopped.

A reaper node that runs on the data directory has adopted these apps and would
start them again on the next request: stop-apps refuses while one runs (put an
app to sleep through it with 'reaper sleep ID'), unless --force.`

func stopAppsCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := newFlags("stop-apps", "stop-apps --config FILE [--force]\n\n"+stopAppsHelp, stdout, stderr)
	path := fs.String("config", "", "the node's configuration file (required): its node.data_dir and paas.apps")
	force := fs.Bool("force", false, "stop the apps even while a reaper node runs on the data directory")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *path == "" {
		fmt.Fprintln(stderr, "reaper stop-apps: --config is required")
		return exitCode(2)
	}
	cfg, err := loadConfig(*path, env)
	if err != nil {
		printConfigErrors(stderr, *path, err)
		return exitCode(1)
	}
	dir := filepath.Clean(cfg.Node.DataDir)
	rep, err := process.StopApps(ctx, process.StopOptions{DataDir: dir, Apps: cfg.PaaS.Apps, Force: *force})
	switch {
	case errors.Is(err, process.ErrNodeRunning):
		fmt.Fprintf(stderr, "reaper stop-apps: refused: %s is running on %s: it has adopted the apps and would start them again on the next request.\n"+
			"Stop that node first (Ctrl-C or SIGTERM), or put an app to sleep through it (reaper sleep ID --config %s), or pass --force.\n",
			nodeName(rep.NodePIDs), dir, *path)
		return exitCode(1)
	case err != nil:
		return err
	}
	if rep.NodeRunning {
		fmt.Fprintf(stderr, "reaper stop-apps: warning: %s is running on %s: it sees the apps stopped as crashed, and starts them again on the next request.\n",
			nodeName(rep.NodePIDs), dir)
	}
	if len(rep.Apps) == 0 {
		fmt.Fprintf(stdout, "no app started by reaper for %s is running\n", dir)
	}
	for _, r := range rep.Apps {
		fmt.Fprintln(stdout, r)
	}
	if rep.Failed() {
		return exitCode(1)
	}
	return nil
}

// nodeName names the reaper nodes that hold a data directory: "a reaper node (pid
// 4242)".
func nodeName(pids []int) string {
	if len(pids) == 0 {
		return "a reaper node"
	}
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return "a reaper node (pid " + strings.Join(s, ", ") + ")"
}
