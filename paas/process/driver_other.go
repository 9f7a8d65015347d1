//go:build !linux

package process

import (
	"context"

	"github.com/reapergw/reaper/paas"
)

var (
	_ paas.Client  = (*Driver)(nil)
	_ paas.Watcher = (*Driver)(nil)
	_ paas.Owner   = (*Driver)(nil)
)

// Driver would run apps as local processes; it needs Linux (see the package doc).
type Driver struct{}

// New checks the configuration, then returns ErrUnsupported: this system lacks what
// the driver needs.
func New(opts Options) (*Driver, error) {
	if err := validateAll(opts.Apps); err != nil {
		return nil, err
	}
	return nil, ErrUnsupported
}

// Observe returns ErrUnsupported.
func (d *Driver) Observe(context.Context, paas.App) (paas.Observation, error) {
	return paas.Observation{}, ErrUnsupported
}

// Start returns ErrUnsupported.
func (d *Driver) Start(context.Context, paas.App) error { return ErrUnsupported }

// Stop returns ErrUnsupported.
func (d *Driver) Stop(context.Context, paas.App) error { return ErrUnsupported }

// Watch does nothing.
func (d *Driver) Watch(context.Context, func(appID string)) {}

// Close does nothing.
func (d *Driver) Close() error { return nil }

// Cost returns ErrUnsupported.
func (d *Driver) Cost(context.Context, paas.App) (paas.Cost, error) {
	return paas.Cost{}, ErrUnsupported
}

// StopApps returns ErrUnsupported.
func StopApps(context.Context, StopOptions) (StopReport, error) { return StopReport{}, ErrUnsupported }

// Measured measures nothing.
func (d *Driver) Measured(paas.App) paas.Measures { return paas.Measures{} }

// Owns reports false: this system runs no process app.
func (d *Driver) Owns(string) bool { return false }
