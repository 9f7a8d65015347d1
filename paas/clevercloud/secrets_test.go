package clevercloud

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/reapergw/reaper/internal/conf"
	"github.com/reapergw/reaper/paas"
	"github.com/reapergw/reaper/paas/clevercloud/fakeclever"
)

// Every error path, with recognisable credentials: none of their values may show
// in a log line or an error, whatever the credential kind.
func TestSecrets_NeverInLogsOrErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	// Rate limits last: they close the gate, and the calls after them are refused
	// by the gate (a path of its own).
	faults := []fakeclever.Fault{
		{Kind: fakeclever.Fault5xx},
		{Kind: fakeclever.FaultSlow, Count: 3, Delay: time.Minute},
		{Kind: fakeclever.FaultNeverDeployed4014},
		{Kind: fakeclever.FaultLocked},
		{Kind: fakeclever.FaultRateLimit403, Count: 1},
		{Kind: fakeclever.FaultTooMany429, Count: 1, RetryAfter: time.Second},
	}
	creds := map[string]func(f *fakeclever.Fake, c *Config, o *Options){
		"token": func(_ *fakeclever.Fake, c *Config, o *Options) { c.Timeout = conf.Duration(50 * time.Millisecond) },
		"oauth": func(f *fakeclever.Fake, c *Config, o *Options) {
			oauthConfig(f, c)
			c.Timeout = conf.Duration(50 * time.Millisecond)
		},
	}
	var texts []string
	for kind, mod := range creds {
		for _, variant := range []string{"good", "wrong host", "refused port"} {
			e := newEnv(t, fakeclever.Options{}, func(f *fakeclever.Fake, c *Config, o *Options) {
				mod(f, c, o)
				o.GateWait = 10 * time.Millisecond
				switch variant {
				case "wrong host": // 401: the credential goes to the host that refuses it
					if c.OAuth != nil {
						c.APIURL = f.BridgeURL()
					} else {
						c.APIURL = f.APIURL()
					}
				case "refused port":
					c.APIURL = closed
				}
			})
			ctx := context.Background()
			a := e.f.AddApp(fakeclever.App{Owner: orga})
			app := paas.App{ID: a.ID, Owner: orga}
			run := func() {
				_, err1 := e.c.Observe(ctx, app)
				_, err2 := e.c.ObserveAll(ctx, []paas.App{app})
				_, err3 := e.c.LastDeployment(ctx, app)
				err4 := e.c.Start(ctx, app)
				err5 := e.c.Stop(ctx, app)
				_, err6 := e.c.Observe(ctx, paas.App{ID: "app_missing", Owner: orga})
				_, err7 := e.c.Owner(ctx, "app_missing")
				_, err8 := e.c.Prices(ctx, "nowhere", "")
				for _, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
					if err != nil {
						texts = append(texts, err.Error(), fmt.Sprintf("%+v %#v", err, err))
					}
				}
			}
			run()
			for _, fault := range faults {
				e.f.ClearFaults()
				e.f.Inject("", fault)
				run()
			}
			logs := e.logs.String()
			texts = append(texts, logs)
			if variant == "good" && !strings.Contains(logs, "rate limited") {
				t.Errorf("%s: the logs do not show the error paths ran:\n%s", kind, logs)
			}
			texts = append(texts, fmt.Sprintf("%v %+v %#v", e.c.cfg, e.c.cfg, e.c.cfg))
		}
	}
	joined := strings.Join(texts, "\n")
	for _, s := range secretValues() {
		if strings.Contains(joined, s) {
			t.Errorf("a secret (%.6s…) shows in logs or errors", s)
		}
	}
	for _, must := range []string{"the API token was refused", "the OAuth credentials were refused", "HTTP 503",
		"never deployed", "locked", "no answer within", "cannot reach the API", "not found", "rate limited (HTTP 403",
		"the driver is backing off"} {
		if !strings.Contains(joined, must) {
			t.Errorf("no error says %q: a path did not run", must)
		}
	}
}

func TestRedactor_CleansEchoedValues(t *testing.T) {
	r := newRedactor(Config{Token: testToken, OAuth: &OAuth{ConsumerSecret: conf.Secret(testOAuth.ConsumerSecret), Secret: "abc"}})
	got := r.clean("echo " + testToken + " and " + percentEncode(testOAuth.ConsumerSecret) + " and abc")
	if got != "echo [redacted] and [redacted] and abc" {
		t.Errorf("clean = %q", got)
	}
}
