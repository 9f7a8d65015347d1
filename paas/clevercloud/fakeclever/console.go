package fakeclever

import "fmt"

// Console acts on one app from outside reaper, as a user of the Clever Cloud
// console (or of clever-tools) would. Its actions follow the platform's rules (a
// locked app refuses a start or a stop) and are not counted in Starts or Restarts.
// Every method returns ErrUnknownApp for an app the fake does not have.
type Console struct {
	f  *Fake
	id string
}

// Console returns the console of an app (which need not exist yet).
func (f *Fake) Console(appID string) *Console { return &Console{f: f, id: appID} }

func (c *Console) with(fn func(a *app) error) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	a := c.f.apps[c.id]
	if a == nil {
		return fmt.Errorf("%w: %s", ErrUnknownApp, c.id)
	}
	return fn(a)
}

// Stop stops the app (the console's stop button). Stopping an app that is down
// does nothing; a locked app returns ErrLocked.
func (c *Console) Stop() error {
	return c.with(func(a *app) error {
		_, err := a.stop(c.f.opts.Now(), c.f.tm)
		return err
	})
}

// Start starts an app that is down, with the usual delays. On an app that is up or
// starting it does nothing: the console offers no start button there.
func (c *Console) Start() error {
	return c.with(func(a *app) error {
		v := a.view(c.f.opts.Now(), c.f.tm)
		if d := a.last(); v.up || v.locked && d.action == ActionDeploy {
			return nil // up, or already starting
		}
		_, _, err := a.start(c.f.opts.Now(), c.f.tm)
		return err
	})
}

// Redeploy deploys the app again: a restart when it is up (the old instance serves
// until the new one is up), a start when it is down. An app never deployed counts
// as deployed from then on (as after a git push).
func (c *Console) Redeploy() error {
	return c.with(func(a *app) error {
		a.NeverDeployed = false
		_, _, err := a.start(c.f.opts.Now(), c.f.tm)
		return err
	})
}

// FailNextDeployment makes the app's next deployment end FAIL after BootTime.
func (c *Console) FailNextDeployment() error {
	return c.with(func(a *app) error { a.failNext, a.cancelNext = true, false; return nil })
}

// CancelNextDeployment makes the app's next deployment end CANCELLED after BootTime.
func (c *Console) CancelNextDeployment() error {
	return c.with(func(a *app) error { a.cancelNext, a.failNext = true, false; return nil })
}

// SetState forces the state the API reports: MODERATED or DEFAULT_OF_PAYMENT; ""
// lifts it. While forced, starts and stops are refused.
func (c *Console) SetState(state string) error {
	switch state {
	case "", StateModerated, StateDefaultOfPayment:
	default:
		return fmt.Errorf("fakeclever: SetState: %q cannot be forced (MODERATED, DEFAULT_OF_PAYMENT or empty)", state)
	}
	return c.with(func(a *app) error { a.override = state; return nil })
}

// SetShutdownable sets deployment.shutdownable.
func (c *Console) SetShutdownable(ok bool) error {
	return c.with(func(a *app) error { a.NotShutdownable = !ok; return nil })
}

// Delete removes the app: the API answers 404 for it from then on and its domains
// answer the "not running" 404.
func (c *Console) Delete() error {
	return c.with(func(a *app) error {
		delete(c.f.apps, c.id)
		for i, id := range c.f.order {
			if id == c.id {
				c.f.order = append(c.f.order[:i:i], c.f.order[i+1:]...)
				break
			}
		}
		return nil
	})
}
