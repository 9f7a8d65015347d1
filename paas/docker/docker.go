// Package docker is reaper's driver for containers on one or several Docker
// engines (paas.driver: docker). It puts a container to sleep by stopping, pausing
// or killing it, and wakes it by starting (or unpausing) it, mapping that world onto
// the Clever Cloud vocabulary of package paas as the process driver does:
//
//   - not running (exited, created, paused): SHOULD_BE_DOWN;
//   - started, readiness not passed yet: WANTS_TO_BE_UP, deployment WIP DEPLOY;
//   - running and ready: SHOULD_BE_UP, deployment OK DEPLOY;
//   - exited before it was ready, or its start refused: SHOULD_BE_DOWN, deployment
//     FAIL DEPLOY with the cause (exit status, OOM kill, the engine's error);
//   - put to sleep by Stop: SHOULD_BE_DOWN, deployment OK UNDEPLOY.
//
// Readiness is probed at the container's own address, read after each start: a
// tcp probe naming a port the container publishes goes to its IP and the
// container port that port maps to, since the engine's port proxy accepts on the
// published port before the app listens; without ready, its first published
// port is probed there (target.go, ready.go).
//
// Apps are declared in the file (paas.docker.apps[]) or discovered from the labels
// of the containers that opt in (reaper.enable=true). One goroutine per engine
// follows its event stream, so that a container started or stopped by hand, or
// brought back by its restart policy, is seen at once and pushed to watchers
// (paas.Watcher); the stream is reconnected with a back-off when it drops, and
// every container is listed again on reconnection. Containers that already run
// when the driver starts are adopted: probed once, not restarted.
//
// Least privilege: the driver lists, inspects and watches containers, reads their
// memory, starts, stops, kills, pauses and unpauses them, and nothing else; before
// every start or stop it reads the container again and refuses to touch one that
// no longer opted in (or no longer exists). docs/docker.md shows a socket proxy
// that allows exactly these calls.
package docker

import (
	"errors"
	"log/slog"
)

// Options configure a Driver.
type Options struct {
	// Config is the paas.docker section, validated again by New.
	Config Config
	// Logger receives the driver's events; nil discards them.
	Logger *slog.Logger
	// UserAgent is sent to the engines; empty: "reaper".
	UserAgent string
	// Lookup reads reaper's environment (DOCKER_HOST); nil: os.LookupEnv.
	Lookup func(string) (string, bool)
}

// Errors of the driver, besides those of package paas.
var (
	// ErrClosed: the driver was closed; it starts and stops nothing any more.
	ErrClosed = errors.New("docker: driver closed")
)
